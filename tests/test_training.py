"""Objective, schedule, config validation, held-out hygiene, resume and the store."""

import json

import pytest
import torch

from bindcore.controlled.runs import train
from bindcore.controlled.scenes import sample_scenes
from bindcore.controlled.training import (
    STORE_KIND,
    TrainConfig,
    bag_of_concepts_baseline,
    concept_loss_onset,
    concept_weight,
    lr_factor,
    make_eval_set,
    object_candidates,
    run_training,
    soft_target_loss,
    step_generator,
)
from bindcore.store import ResultStore

TINY = dict(n_values=4, coverage=0.75, d_model=16, n_heads=2, n_layers=1, d_ff=32, d_out=8, steps=12,
            batch_size=32, lr=1e-3, eval_every=6, eval_scenes=32, checkpoint_every=4)


def tiny(**kw) -> TrainConfig:
    return TrainConfig(**{**TINY, **kw})


@pytest.mark.parametrize(
    "field,value",
    [("n_values", 1), ("coverage", 0.0), ("coverage", 1.0), ("coverage", 1.2), ("max_objects", 0),
     ("coverage", 0.01), ("coverage", 0.05), ("candidates", "all"), ("d_model", 15), ("lr", 0.0),
     ("precision", "fp8")],
)
def test_bad_configs_fail_naming_the_field(field, value):
    # V=4 -> 16 objects: coverage 0.01 or 0.05 leaves no training object
    with pytest.raises(ValueError, match=field):
        tiny(**{field: value})


def test_config_round_trips_through_json():
    cfg = tiny(coverage=0.5)
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="unknown"):
        TrainConfig.from_dict({**cfg.to_dict(), "nonsense": 1})


def test_lr_schedule_warmup_then_linear_decay():
    f = [lr_factor(s, 100, 0.1) for s in range(101)]
    assert f[0] == 0.0 and f[5] == pytest.approx(0.5) and f[10] == pytest.approx(1.0)
    assert f[55] == pytest.approx(0.5) and f[100] == 0.0
    assert all(a <= b for a, b in zip(f[:10], f[1:11])) and all(a >= b for a, b in zip(f[10:], f[11:]))


def test_two_phase_concept_weight():
    cfg = tiny(steps=100, concept_loss_start=0.45, concept_loss_weight=0.1)
    start = concept_loss_onset(cfg, [])
    assert start == 45
    assert concept_weight(cfg, 44, start) == 0.0 and concept_weight(cfg, 45, start) == 0.1
    assert concept_weight(tiny(), 0, concept_loss_onset(tiny(), [])) == 1.0
    assert concept_weight(tiny(concept_queries=False), 50, 0) == 0.0


def test_concept_loss_trigger_waits_for_training_object_recognition():
    cfg = tiny(steps=100, concept_loss_start=0.1, concept_loss_trigger=0.6, eval_every=5)
    hist = [{"step": 5, "task_object_2": 0.9}, {"step": 10, "task_object_2": 0.3},
            {"step": 15, "task_object_2": 0.61}, {"step": 20, "task_object_2": 0.9}]
    assert concept_loss_onset(cfg, hist[:2]) is None  # step 5 is before concept_loss_start
    assert concept_loss_onset(cfg, hist) == 15
    assert concept_weight(cfg, 14, None) == 0.0
    with pytest.raises(ValueError, match="concept_loss_trigger"):
        tiny(concept_loss_trigger=0.5, eval_every=0)


def test_triggered_run_records_its_onset_and_resumes_exactly(tmp_path):
    cfg = tiny(steps=16, eval_every=2, checkpoint_every=2, concept_loss_trigger=0.01, max_objects=1, lr=1e-2)
    full = run_training(cfg, device="cpu", progress=False)
    assert full.concept_loss_from is not None and full.concept_loss_from % 2 == 0
    ckpt = tmp_path / "c.pt"
    run_training(cfg, device="cpu", checkpoint=ckpt, progress=False, stop_after=7)
    resumed = run_training(cfg, device="cpu", checkpoint=ckpt, progress=False)
    assert resumed.concept_loss_from == full.concept_loss_from
    assert resumed.metrics == full.metrics


def test_soft_target_loss_matches_hand_computation():
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 1.0], [5.0, 5.0, 5.0]])
    labels = torch.tensor([[1, 0, 0], [0, 1, 1], [0, 0, 0]], dtype=torch.bool)
    ls = torch.log_softmax(logits, 1)
    expect = (-ls[0, 0] + -(0.5 * ls[1, 1] + 0.5 * ls[1, 2])) / 2  # row 3 inactive
    assert soft_target_loss(logits, labels).item() == pytest.approx(expect.item())


@pytest.mark.parametrize("mode", ["batch", "train_vocab"])
def test_held_out_objects_never_reach_training_by_default(mode):
    cfg = tiny(n_values=6, coverage=0.5, candidates=mode, swaps_per_scene=3, random_negatives_per_positive=2)
    split = cfg.split
    held = set(split.test.tolist())
    for step in range(30):
        gen = step_generator(cfg, step, torch.device("cpu"))
        scenes = sample_scenes(split.train, cfg.batch_size, cfg.max_objects, gen)
        assert not held & set(scenes[scenes >= 0].tolist())
        assert not held & set(object_candidates(cfg, scenes, split.train, gen).tolist())


def test_release_switch_exposes_held_out_objects_as_negatives():
    cfg = tiny(n_values=6, coverage=0.5, heldout_as_negatives=True)
    split = cfg.split
    held = set(split.test.tolist())
    seen = set()
    for step in range(30):
        gen = step_generator(cfg, step, torch.device("cpu"))
        scenes = sample_scenes(split.train, cfg.batch_size, cfg.max_objects, gen)
        seen |= set(object_candidates(cfg, scenes, torch.arange(36), gen).tolist())
    assert held & seen


def test_training_is_reproducible_and_resume_is_exact(tmp_path):
    cfg = tiny()
    full = run_training(cfg, device="cpu", progress=False)
    again = run_training(cfg, device="cpu", progress=False)
    assert full.metrics == again.metrics
    ckpt = tmp_path / "ckpt.pt"
    part = run_training(cfg, device="cpu", checkpoint=ckpt, progress=False, stop_after=5)  # "killed" at step 5
    assert part.steps_run == 5 and ckpt.exists()
    resumed = run_training(cfg, device="cpu", checkpoint=ckpt, progress=False)
    assert resumed.steps_run == cfg.steps - 5
    for (k, a), b in zip(full.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), k
    assert resumed.metrics == full.metrics
    assert [h["step"] for h in resumed.history] == [6, 12]


def test_store_returns_the_stored_result(tmp_path):
    store = ResultStore(tmp_path / "results", published=tmp_path / "published")
    cfg = tiny()
    first = train(cfg, store=store, device="cpu", progress=False)
    assert first["source"] == "local" and (tmp_path / "results" / STORE_KIND / first["hash"] / "model.pt").exists()
    assert not (tmp_path / "results" / STORE_KIND / first["hash"] / "checkpoint.pt").exists()
    second = train(cfg, store=store, device="cpu", progress=False)
    assert second["metrics"] == first["metrics"] and second["finished_at"] == first["finished_at"]
    # a published record (no weights) is found when no local one exists
    other = tiny(seed=1)
    pub = ResultStore(tmp_path / "published")
    rec = train(other, store=pub, device="cpu", progress=False, keep_weights=False)
    got = train(other, store=store, device="cpu", progress=False)
    assert got["source"] == "published" and got["metrics"] == rec["metrics"]


def test_bag_of_concepts_baseline_uses_the_held_out_scenes():
    cfg = tiny(n_values=10, coverage=0.5, eval_scenes=4000)
    es = make_eval_set(cfg, cfg.split, torch.device("cpu"))
    held = set(cfg.split.test.tolist())
    assert set(es.test[2][es.test[2] >= 0].tolist()) <= held
    base = bag_of_concepts_baseline(cfg, es)
    assert base["test_object_1"] == 1.0
    assert 0.12 < base["test_object_2"] < 0.30  # about 1 - 0.9**2 = 0.19


def test_near_miss_negatives_differ_in_one_concept_and_stay_among_training_objects():
    from bindcore.controlled.training import near_misses

    cfg = tiny(n_values=6, coverage=0.5, near_miss_negatives_per_positive=3)
    space, split = cfg.space, cfg.split
    gen = torch.Generator().manual_seed(0)
    objs = split.train
    miss = near_misses(space, objs, gen, 3)
    diff = (space.object_values(miss) != space.object_values(objs.repeat(3))).sum(1)
    assert (diff == 1).all()
    held = set(split.test.tolist())
    for step in range(20):
        gen = step_generator(cfg, step, torch.device("cpu"))
        scenes = sample_scenes(split.train, cfg.batch_size, cfg.max_objects, gen)
        assert not held & set(object_candidates(cfg, scenes, split.train, gen).tolist())


def test_a_run_resumed_under_other_code_names_every_code_version_that_trained_it(tmp_path, monkeypatch):
    """Killed under one code version and resumed under another, a record says so: its
    ``trained_by`` lists both, in order (it named the last one alone)."""
    from bindcore.controlled import checkpoints

    cfg = tiny()
    ckpt = tmp_path / "ckpt.pt"
    monkeypatch.setattr(checkpoints, "code_label", lambda: "git aaaa (bindcore 0.1.0)")
    run_training(cfg, device="cpu", checkpoint=ckpt, progress=False, stop_after=5)
    monkeypatch.setattr(checkpoints, "code_label", lambda: "git bbbb (bindcore 0.1.0)")
    resumed = run_training(cfg, device="cpu", checkpoint=ckpt, progress=False)
    assert resumed.trained_by == ["git aaaa (bindcore 0.1.0)", "git bbbb (bindcore 0.1.0)"]
    assert run_training(cfg, device="cpu", progress=False).trained_by == ["git bbbb (bindcore 0.1.0)"]


def test_a_checkpoint_save_cut_short_leaves_no_temporary_file_after_the_next_start(tmp_path):
    cfg = tiny()
    ckpt = tmp_path / "ckpt.pt"
    run_training(cfg, device="cpu", checkpoint=ckpt, progress=False, stop_after=5)
    left = tmp_path / ".ckpt.pt.abc123.tmp"  # what a kill during atomic_torch_save leaves
    left.write_bytes(b"partial")
    run_training(cfg, device="cpu", checkpoint=ckpt, progress=False)
    assert not left.exists()


def test_gradient_clipping_is_off_by_default_and_kept_out_of_the_record_then(monkeypatch):
    """``grad_clip`` (a lever of the |O| = 10,000 screen): 0 leaves the config's dict, and so
    every earlier record's hash, as it was; > 0 clips each step's gradient norm to it."""
    from bindcore.io import config_hash

    assert "grad_clip" not in tiny().to_dict()
    clipped = tiny(grad_clip=0.5)
    assert clipped.to_dict()["grad_clip"] == 0.5 and config_hash(clipped.to_dict()) != config_hash(tiny().to_dict())
    assert TrainConfig.from_dict(clipped.to_dict()) == clipped and TrainConfig.from_dict(tiny().to_dict()) == tiny()
    with pytest.raises(ValueError, match="grad_clip"):
        tiny(grad_clip=-1.0)

    norms = []
    real = torch.nn.utils.clip_grad_norm_

    def spy(params, max_norm, *a, **k):
        params = list(params)
        out = real(params, max_norm, *a, **k)
        norms.append((max_norm, float(torch.linalg.vector_norm(torch.stack(
            [p.grad.norm() for p in params if p.grad is not None])))))
        return out

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", spy)
    run_training(tiny(steps=3, eval_every=0), device="cpu", progress=False)
    assert norms == []
    run_training(tiny(steps=3, eval_every=0, grad_clip=1e-3), device="cpu", progress=False)
    assert len(norms) == 3 and all(m == 1e-3 and n <= 1e-3 * (1 + 1e-4) for m, n in norms)
