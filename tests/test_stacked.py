"""Stacked training (the one model mapped over stacked parameters by torch.func, through the one
training loop; run here on the CPU, where it is slower but the same code): each run of a stack
equals a lone run of its config (float tolerance), mismatched configs are refused, and each run
is stored as its own record. Outside a GPU, train_stacked trains the runs one by one."""

import pytest
import torch
import torch.nn.functional as F

import bindcore.controlled.stacked as stacked
from bindcore.controlled.runs import train
from bindcore.controlled.stacked import masked_soft_target_loss, stackable, stacks, train_stacked
from bindcore.controlled.training import STORE_KIND, TrainConfig, run_training, soft_target_loss, train_runs
from bindcore.io import config_hash
from bindcore.store import ResultStore

# torch has no vmap rule for the CPU's attention kernel: it loops over the runs there, and says so
pytestmark = pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")


@pytest.fixture
def stacking_here(monkeypatch):
    """train_stacked stacks on this machine's CPU too, as it does on a GPU."""
    monkeypatch.setattr(stacked, "STACKING_DEVICES", ("cuda", "cpu"))

TINY = dict(n_values=4, coverage=0.75, d_model=16, n_heads=2, n_layers=1, d_ff=32, d_out=8, steps=12,
            batch_size=32, lr=1e-3, eval_every=6, eval_scenes=32, checkpoint_every=4)
# parameters after 8-16 steps: the mapped forward sums in other orders than the lone packed one, and
# runs the feed-forward on PAD positions too (zero gradient in exact arithmetic, rounding noise in
# practice); Adam divides a gradient near 0 by its own small size (measured: at most 2.5e-5 apart, one
# weight of the two-layer case's first feed-forward; the others within 4.2e-6)
PARAM_ATOL = 1e-4
# normalised embeddings (what the cosine reads) of every object query and of one- and
# two-object scenes (measured: at most 1.1e-6 apart)
OUTPUT_ATOL = 1e-5


def tiny(**kw) -> TrainConfig:
    return TrainConfig(**{**TINY, **kw})


def assert_same_run(got, lone, eval_scenes, cfg):
    for (name, p), q in zip(got.model.state_dict().items(), lone.model.state_dict().values()):
        if name.endswith("qkv.bias"):
            # the key bias adds one constant to every logit of a query, which the softmax
            # ignores: its gradient is 0 in exact arithmetic, rounding noise in practice, and
            # Adam moves it by up to lr per step in the noise's direction, in the lone run as
            # in the stacked one. It changes no output (checked below); left out here.
            d = cfg.d_model
            p, q = torch.cat([p[:d], p[2 * d:]]), torch.cat([q[:d], q[2 * d:]])
        torch.testing.assert_close(p, q, atol=PARAM_ATOL, rtol=0, msg=lambda m, name=name: f"{name}: {m}")
    space = cfg.space
    objects = space.object_query_tokens(torch.arange(space.n_objects))
    ids = torch.arange(space.n_objects)
    scenes = torch.full((space.n_objects, space.max_objects), -1)
    scenes[:, 0] = ids
    if space.max_objects > 1:  # every object alone, and beside the next one
        pairs = scenes.clone()
        pairs[:, 1] = (ids + 1) % space.n_objects
        scenes = torch.cat([scenes, pairs])
    scenes = space.tokenize_scenes(scenes)
    with torch.no_grad():
        for tower, tokens in (("query", objects), ("scene", scenes)):
            torch.testing.assert_close(F.normalize(getattr(got.model, tower)(tokens), dim=1),
                                       F.normalize(getattr(lone.model, tower)(tokens), dim=1), atol=OUTPUT_ATOL, rtol=0)
    assert got.concept_loss_from == lone.concept_loss_from
    assert got.metrics.keys() == lone.metrics.keys()
    for k, v in lone.metrics.items():
        assert abs(got.metrics[k] - v) <= 1 / eval_scenes + 1e-9, k
    assert got.baseline == lone.baseline
    assert [h["step"] for h in got.history] == [h["step"] for h in lone.history]
    for hs, hl in zip(got.history, lone.history):
        assert hs.keys() == hl.keys()
        for k in ("concept_loss", "object_loss"):
            if k in hl:
                assert hs[k] == pytest.approx(hl[k], abs=1e-5), k


def test_masked_loss_equals_the_lone_loss_of_each_run():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 4, generator=gen, requires_grad=True)
    labels = torch.rand(2, 5, 4, generator=gen) < 0.4
    valid = torch.tensor([[True, True, True, False], [True, True, False, False]])
    got = torch.vmap(masked_soft_target_loss)(logits, labels, valid)
    for r, k in enumerate((3, 2)):
        assert got[r].item() == pytest.approx(soft_target_loss(logits[r, :, :k], labels[r, :, :k]).item(), abs=1e-6)
    got.sum().backward()
    assert torch.isfinite(logits.grad).all() and (logits.grad[1, :, 2:] == 0).all()
    # no positive label: zero loss, no gradient, no NaN
    logits.grad = None
    none = masked_soft_target_loss(logits[1], torch.zeros(5, 4, dtype=torch.bool), valid[1])
    assert none.item() == 0.0
    none.backward()
    assert torch.isfinite(logits.grad).all() and (logits.grad == 0).all()


def test_each_run_of_a_stack_equals_its_lone_run():
    cfgs = [tiny(seed=0), tiny(seed=1, coverage=0.5), tiny(seed=2, split_seed=1, near_miss_negatives_per_positive=1)]
    outs = train_runs(cfgs, device="cpu", progress=False)
    for cfg, out in zip(cfgs, outs):
        assert_same_run(out, run_training(cfg, device="cpu", progress=False), cfg.eval_scenes, cfg)
    # the test can fail: another seed's lone run is not the stacked run
    other = run_training(tiny(seed=5), device="cpu", progress=False)
    with pytest.raises(AssertionError):
        assert_same_run(outs[0], other, cfgs[0].eval_scenes, cfgs[0])


def test_deeper_stacks_with_padded_scenes_equal_lone_runs():
    # two layers: the feed-forward block of the first runs on non-PAD tokens only
    cfgs = [tiny(n_layers=2, max_objects=3, steps=8, seed=s, coverage=c) for s, c in ((0, 0.75), (3, 0.5))]
    for cfg, out in zip(cfgs, train_runs(cfgs, device="cpu", progress=False)):
        assert_same_run(out, run_training(cfg, device="cpu", progress=False), cfg.eval_scenes, cfg)


def test_per_run_sampling_fields_and_several_optimiser_steps_per_batch():
    base = dict(steps=8, grad_steps_per_batch=2, n_values=5, coverage=0.6)
    cfgs = [tiny(**base, curriculum_values=2, curriculum_frac=0.5),
            tiny(**base, seed=1, candidates="train_vocab", heldout_as_negatives=True),
            tiny(**base, seed=2, random_negatives_per_positive=2, swaps_per_scene=2, max_object_queries=4,
                 max_concept_queries=3, eval_scenes=16, tau_init=0.5)]
    for cfg, out in zip(cfgs, train_runs(cfgs, device="cpu", progress=False)):
        assert_same_run(out, run_training(cfg, device="cpu", progress=False), cfg.eval_scenes, cfg)


def test_triggered_concept_loss_and_mixed_tasks_per_run():
    # run 0's concept loss joins at an evaluation; run 1 has none; run 2 concept loss from step 0
    cfgs = [tiny(steps=16, eval_every=2, concept_loss_trigger=0.01, max_objects=1, lr=1e-2),
            tiny(steps=16, eval_every=2, max_objects=1, lr=1e-2, seed=1, concept_queries=False),
            tiny(steps=16, eval_every=4, max_objects=1, lr=1e-2, seed=2, concept_loss_weight=0.5,
                 logit_scale_cap=5.0)]
    outs = train_runs(cfgs, device="cpu", progress=False)
    assert outs[0].concept_loss_from is not None and outs[0].concept_loss_from > 0
    for cfg, out in zip(cfgs, outs):
        assert_same_run(out, run_training(cfg, device="cpu", progress=False), cfg.eval_scenes, cfg)


@pytest.mark.parametrize("field,value", [("lr", 3e-3), ("d_model", 32), ("batch_size", 16), ("n_values", 5)])
def test_mismatched_configs_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        stackable([tiny(), tiny(seed=1, **{field: value})])
    stackable([tiny(), tiny(seed=1, coverage=0.5)])


def test_subclasses_and_empty_stacks_are_refused():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Other(TrainConfig):
        pass

    with pytest.raises(ValueError, match="token scenes only"):
        stackable([tiny(), Other(**TINY)])
    with pytest.raises(ValueError, match="at least one"):
        stackable([])


def test_stacks_group_configs_that_can_share_one():
    cfgs = [tiny(seed=s, coverage=c) for c in (0.5, 0.75) for s in (0, 1)] + [tiny(lr=3e-3)]
    groups = stacks(cfgs, 3)
    assert [len(g) for g in groups] == [3, 1, 1]
    for g in groups:
        stackable(g)


def test_records_land_under_each_config_and_train_finds_them(tmp_path, monkeypatch, stacking_here):
    store = ResultStore(tmp_path, published=None)
    cfgs = [tiny(seed=0), tiny(seed=1, coverage=0.5)]
    records = train_stacked(cfgs, store=store, progress=False)
    for cfg, rec in zip(cfgs, records):
        assert rec["hash"] == config_hash(cfg.to_dict())
        assert rec["path"] == str(tmp_path / STORE_KIND.name / rec["hash"])
        assert not any((tmp_path / STORE_KIND.name / rec["hash"]).glob("checkpoint*.pt"))
        assert rec["stacked_with"] == sorted(config_hash(c.to_dict()) for c in cfgs)
    lone_store = ResultStore(tmp_path / "lone", published=None)
    lone = train(tiny(seed=2), store=lone_store, progress=False)
    assert set(records[0]) == set(lone) | {"stacked_with"}

    # a later train() or train_stacked() of these configs trains nothing
    def fail(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr("bindcore.controlled.runs.run_training", fail)
    monkeypatch.setattr("bindcore.controlled.stacked.train_runs", fail)
    for cfg, rec in zip(cfgs, records):
        assert train(cfg, store=store, progress=False)["metrics"] == rec["metrics"]
    assert [r["hash"] for r in train_stacked(cfgs[::-1], store=store, progress=False)] == \
        [r["hash"] for r in records[::-1]]


def test_stacked_resume_is_exact_and_checkpoints_load_alone(tmp_path):
    cfgs = [tiny(seed=0), tiny(seed=1, coverage=0.5)]
    full = train_runs(cfgs, device="cpu", progress=False)
    ckpts = [tmp_path / "a.pt", tmp_path / "b.pt"]
    train_runs(cfgs, device="cpu", checkpoints=ckpts, progress=False, stop_after=7)
    resumed = train_runs(cfgs, device="cpu", checkpoints=ckpts, progress=False)
    assert resumed[0].steps_run == cfgs[0].steps - 7
    for a, b in zip(resumed, full):
        for p, q in zip(a.model.state_dict().values(), b.model.state_dict().values()):
            torch.testing.assert_close(p, q, atol=0, rtol=0)
        assert a.metrics == b.metrics
    # a stacked checkpoint is a lone one: run_training resumes from it
    ckpts = [tmp_path / "c.pt", tmp_path / "d.pt"]
    train_runs(cfgs, device="cpu", checkpoints=ckpts, progress=False, stop_after=5)
    alone = run_training(cfgs[1], device="cpu", checkpoint=ckpts[1], progress=False)
    assert alone.steps_run == cfgs[1].steps - 5
    assert_same_run(full[1], alone, cfgs[1].eval_scenes, cfgs[1])


def test_checkpoints_at_different_steps_start_the_stack_afresh(tmp_path):
    cfgs = [tiny(seed=0), tiny(seed=1, coverage=0.5)]
    ckpts = [tmp_path / "a.pt", tmp_path / "b.pt"]
    train_runs(cfgs, device="cpu", checkpoints=ckpts, progress=False, stop_after=7)
    run_training(cfgs[1], device="cpu", checkpoint=ckpts[1], progress=False, stop_after=2)  # b: step 9
    again = train_runs(cfgs, device="cpu", checkpoints=ckpts, progress=False)
    assert [o.steps_run for o in again] == [cfgs[0].steps] * 2
    for cfg, out in zip(cfgs, again):
        assert_same_run(out, run_training(cfg, device="cpu", progress=False), cfg.eval_scenes, cfg)


def test_the_stack_holds_every_claim_and_keeps_weights(tmp_path, monkeypatch, stacking_here):
    from bindcore.controlled.runs import load_model

    store = ResultStore(tmp_path, published=None)
    cfgs = [tiny(seed=0), tiny(seed=1, coverage=0.5)]
    real = stacked.train_runs
    held = []

    def spy(stack, *a, **kw):
        held.extend(store.holder(STORE_KIND, c.to_dict()) is not None for c in cfgs)
        spy.outs = real(stack, *a, **kw)
        return spy.outs

    monkeypatch.setattr(stacked, "train_runs", spy)
    records = train_stacked(cfgs, store=store, progress=False)
    assert held == [True, True]
    assert all(store.holder(STORE_KIND, c.to_dict()) is None for c in cfgs)
    by_hash = {config_hash(c.to_dict()): o for c, o in zip(sorted(cfgs, key=lambda c: config_hash(c.to_dict())),
                                                           spy.outs)}
    for rec in records:
        model = load_model(rec)
        for p, q in zip(model.state_dict().values(), by_hash[rec["hash"]].model.state_dict().values()):
            assert torch.equal(p, q)


def test_configs_already_stored_are_not_trained_again(tmp_path, stacking_here):
    store = ResultStore(tmp_path, published=None)
    cfgs = [tiny(seed=0), tiny(seed=1, coverage=0.5), tiny(seed=0), tiny(seed=2)]
    lone = train(cfgs[0], store=store, progress=False)
    records = train_stacked(cfgs, store=store, progress=False)
    assert records[0] == records[2] == lone and "stacked_with" not in lone
    assert records[1]["stacked_with"] == records[3]["stacked_with"] == sorted([records[1]["hash"], records[3]["hash"]])


def test_off_a_gpu_the_runs_of_a_stack_train_one_by_one(tmp_path, monkeypatch):
    """On a CPU stacking saves no time (benchmarks/bench_stacked.py): each run is its lone run, exactly."""
    store = ResultStore(tmp_path, published=None)
    cfgs = [tiny(seed=0), tiny(seed=1, coverage=0.5)]
    monkeypatch.setattr(stacked, "train_runs", None)  # never called
    records = train_stacked(cfgs, store=store, progress=False)
    for cfg, rec in zip(cfgs, records):
        assert "stacked_with" not in rec
        assert rec["metrics"] == train(cfg, store=ResultStore(tmp_path / "lone", published=None),
                                       progress=False)["metrics"]


def test_a_sweep_with_stack_trains_stackable_runs_together(tmp_path, stacking_here):
    from bindcore.runner import LocalExecutor
    from bindcore.sweep import run_sweep, train_tasks

    store = ResultStore(tmp_path, published=None)
    seeds = [tiny(seed=s, steps=4) for s in (0, 1, 2)]
    other = tiny(steps=4, d_ff=16)  # another width: a stack of its own, of one, so trained alone
    tasks = train_tasks(seeds + [other], store, stack=2)
    assert [t.fn.__name__ for t in tasks] == ["train_stack_task", "train_task", "train_task"]
    assert [len(t.args[0]) for t in tasks[:1]] == [2]
    recs = run_sweep(seeds + [other], store=store, executor=LocalExecutor(workers=1), progress=False,
                     estimate=False, stack=2)
    assert [r["config"] for r in recs] == [c.to_dict() for c in seeds + [other]]
    stacked = [sorted(r.get("stacked_with") or []) for r in recs]
    pair = sorted(config_hash(c.to_dict()) for c in seeds[:2])
    assert stacked[0] == stacked[1] == pair and not stacked[2] and not stacked[3]
    again = run_sweep(seeds + [other], store=store, executor=LocalExecutor(workers=1), progress=False, stack=2)
    assert [r["finished_at"] for r in again] == [r["finished_at"] for r in recs]  # stored: none trained again


def test_a_diverged_stack_fails_and_stores_no_run_as_finished(tmp_path, stacking_here):
    """lr 1e30 makes the weights NaN: the stack raises Diverged at its first evaluation,
    like a lone run, and no run of it is stored as finished (before, each was stored with
    its NaN weights and accuracy 0.0)."""
    from bindcore.controlled.training import Diverged

    store = ResultStore(tmp_path)
    cfgs = [tiny(seed=s, lr=1e30) for s in (0, 1)]
    with pytest.raises(Diverged, match="diverged"):
        train_stacked(cfgs, store=store, progress=False)
    assert not list((tmp_path / STORE_KIND).glob("*/result.json"))


def test_a_clipped_run_is_refused_a_stack():
    with pytest.raises(ValueError, match="grad_clip"):
        stackable([tiny(grad_clip=1.0), tiny(grad_clip=1.0, seed=1)])
