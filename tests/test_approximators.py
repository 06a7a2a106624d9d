"""Binding-function approximators on synthetic binding functions of known form.

Small on purpose (d <= 32, 5 x 5 or 4 x 4 concept values, at most ~1,000 steps): the
whole file runs in well under a minute on two shared cores.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bindcore.analysis import approximators as A
from bindcore.analysis.probes import (
    BindingData,
    concept_recognition,
    functional_binding,
    object_level_split,
    object_recognition,
)

torch.set_num_threads(2)


@pytest.fixture(scope="module")
def additive_data() -> BindingData:
    return A.synthetic_binding_data((5, 5), 32, "additive", seed=0)


@pytest.fixture(scope="module")
def product_data() -> BindingData:
    return A.synthetic_binding_data((5, 5), 16, "product", seed=0)


@pytest.fixture(scope="module")
def small_data() -> BindingData:
    return A.synthetic_binding_data((4, 4), 8, "additive", noise=0.05, seed=1)


def _train(data, specs, protocol="release", **kw):
    kw.setdefault("progress", False)
    return A.train_models(data, specs, protocol, **kw)


# ---------------------------------------------------------------------------------
# synthetic data, codes, modules
# ---------------------------------------------------------------------------------
def test_synthetic_data_matches_its_probes(additive_data, product_data):
    d = additive_data
    ids = d.object_ids()
    assert np.allclose(d.embeddings, d.object_probe[ids[:, 0]] + d.object_probe[ids[:, 1]], atol=1e-5)
    assert (ids[:, 0] != ids[:, 1]).all() and len(d.embeddings) == 25 * 24
    p = product_data
    pid = p.object_ids()
    assert np.allclose(p.embeddings, p.object_probe[pid[:, 0]] * p.object_probe[pid[:, 1]], atol=1e-4)


def test_one_hot_codes(additive_data):
    x = A.one_hot_codes(additive_data)
    assert x.shape == (len(additive_data.embeddings), 20)
    assert (x.sum(1) == 4).all()
    # block s holds slot s's value
    codes = additive_data.slot_codes()
    assert (x[:, 5:10].argmax(1) == codes[:, 1]).all()


@pytest.mark.parametrize("family", A.FAMILIES)
def test_family_shapes_and_seeding(family):
    m1 = A.make_approximator(family, [3, 4], 6, width=5, seed=2)
    m2 = A.make_approximator(family, [3, 4], 6, width=5, seed=2)
    codes = torch.as_tensor(A.global_codes(np.array([[0, 1, 2, 3], [1, 0, 0, 2]]), [3, 4]))
    out = m1(codes[None])
    assert out.shape == (1, 2, 6)
    assert torch.equal(out, m2(codes[None]))
    with pytest.raises(ValueError):
        A.make_approximator("nope", [3, 4], 6)


def test_protocol_presets_and_overrides():
    rel, pap = A.get_protocol("release"), A.get_protocol("paper")
    assert (rel.steps, rel.lrs, rel.batch_size) == (4000, (1e-2,), None)
    assert (pap.steps, pap.lrs, pap.batch_size) == (10_000, (1e-2, 1e-3, 1e-4), 4096)
    assert A.get_protocol("paper", steps=5, lrs=[0.1]).steps == 5
    with pytest.raises(ValueError):
        A.get_protocol("fast")
    with pytest.raises(ValueError):
        A.get_protocol("release", steps=0)


# ---------------------------------------------------------------------------------
# known functional forms
# ---------------------------------------------------------------------------------
def test_additive_family_fits_sums_of_concepts(additive_data):
    d = additive_data
    split = object_level_split(d, 0.6, seed=0)
    (r,) = A.fit_family(d, split, "additive", protocol="release", steps=300, eval_every=100, progress=False,
                        keep_predictions=True)
    truth = functional_binding(d, d.embeddings, split)
    assert r["final_heldout_r2"] > 0.99
    assert r["final_heldout_concept"] > 0.9
    assert r["final_heldout_concept"] >= truth["heldout_concept"] - 0.02
    # objects whose values are swapped between the two objects are not told apart: a bag
    # of concepts scores (a1, b2) as high as (a1, b1)
    ho = split.heldout
    swap = ho[(d.objects[ho, 0] != d.objects[ho, 1]).all(1)]
    assert len(swap) > 10
    assert object_recognition(d, d.embeddings, swap) == 0.0  # ties fail the strict rule
    assert object_recognition(d, r["predictions"], swap) < 0.5


def test_global_product_generalises_where_additive_fails(product_data):
    d = product_data
    split = object_level_split(d, 0.6, seed=0)
    specs = A.make_specs(d, split, "global_product", widths=[64]) + A.make_specs(d, split, "additive")
    gp, add = _train(d, specs, steps=1000, eval_every=250)
    assert gp["final_train_r2"] > 0.95
    assert gp["final_heldout_r2"] > 0.8
    assert add["final_heldout_r2"] < 0.5
    assert gp["final_heldout_r2"] > add["final_heldout_r2"] + 0.3


# ---------------------------------------------------------------------------------
# stacked training
# ---------------------------------------------------------------------------------
def _mixed_specs(d):
    specs = []
    for frac in (0.4, 0.7):
        split = object_level_split(d, frac, seed=0)
        for fam, widths in (("mlp", [4, 16]), ("sum_global_product", [3, 8]), ("within_object_product", [5]),
                            ("additive", None)):
            specs += A.make_specs(d, split, fam, widths=widths, lrs=[1e-2, 1e-3], seeds=[0, 3], fraction=frac)
    return specs


@pytest.mark.parametrize("protocol,batch", [("release", None), ("paper", 32)])
def test_stacked_equals_one_by_one(small_data, protocol, batch):
    d = small_data
    specs = _mixed_specs(d)
    a = _train(d, specs, protocol, steps=25, eval_every=5, batch_size=batch, pad_work=float("inf"),
               keep_predictions=True)
    b = _train(d, specs, protocol, steps=25, eval_every=5, batch_size=batch, stacked=False, keep_predictions=True)
    assert max(r["stack_size"] for r in a) >= 8  # really stacked, widths and rows padded
    assert any(r["padded_width"] > r["width"] for r in a if r["width"])
    assert any(r["padded_rows"] > r["n_fit"] for r in a)
    if batch:
        assert any(r["n_fit"] > batch for r in a)  # some models draw minibatches
    for x, y in zip(a, b):
        np.testing.assert_allclose(x["predictions"], y["predictions"], atol=2e-5, rtol=1e-4)
        np.testing.assert_allclose([c["fit_mse"] for c in x["curve"]], [c["fit_mse"] for c in y["curve"]],
                                   rtol=1e-4, atol=1e-7)
        assert (x["family"], x["width"], x["lr"], x["seed"]) == (y["family"], y["width"], y["lr"], y["seed"])


def test_a_validation_curve_still_falling_never_stops_and_a_flat_one_does():
    """The stop rule: a model stops once its validation MSE has not improved (by PLATEAU_DELTA,
    relative) over ``patience`` evaluations; a curve still falling, however slowly above that
    gain, is never reported as converged."""
    def curve(values):
        return [{"step": 100 * i, "val_mse": v} for i, v in enumerate(values)]

    falling = curve([1.0 * 0.99 ** i for i in range(60)])  # 1% a step: never a plateau
    assert A.plateau_step(falling, patience=3) is None
    flat = curve([1.0, 0.5, 0.4] + [0.4] * 5)
    assert A.plateau_step(flat, patience=3) == 500  # three evaluations without a gain after step 200
    noisy = curve([1.0, 0.5, 0.45, 0.46, 0.44, 0.4501, 0.46, 0.47])  # the best improves at 400, then not
    assert A.plateau_step(noisy, patience=3) == 700
    # gains that add up to less than the threshold over the patience: stops; more: goes on
    assert A.plateau_step(curve([(1 - A.PLATEAU_DELTA / 4) ** i for i in range(10)]), patience=3) == 300
    assert A.plateau_step(curve([(1 - A.PLATEAU_DELTA / 2) ** i for i in range(30)]), patience=3) is None
    assert A.plateau_step(curve([float("nan")] * 5), patience=1) is None  # nothing to stop on


@pytest.mark.parametrize("stacked", [True, False])
def test_with_patience_a_model_stops_on_its_plateau_and_its_stack_mates_go_on(small_data, stacked):
    """Early stopping per model, stacked or alone alike: a model whose validation MSE stops
    improving keeps the weights of the step it stopped at (its record says "plateau" and
    where); one still improving runs to the cap ("cap")."""
    d = small_data
    split = object_level_split(d, 0.7, seed=0)
    specs = (A.make_specs(d, split, "mlp", widths=[16], lrs=[3e-2], seeds=[0], fraction=0.7)
             + A.make_specs(d, split, "mlp", widths=[16], lrs=[1e-5], seeds=[0], fraction=0.7))
    cap = 400
    plain = _train(d, specs, "release", steps=cap, eval_every=10, stacked=stacked)
    assert all("stop" not in r for r in plain)  # without patience: the records of a fixed budget
    recs = _train(d, specs, A.get_protocol("release", steps=cap, eval_every=10, patience=3), stacked=stacked,
                  keep_predictions=True)
    fast, slow = recs
    assert fast["stop"] == "plateau" and fast["steps_run"] < cap and fast["curve"][-1]["step"] == fast["steps_run"]
    assert A.plateau_step(fast["curve"], 3) == fast["steps_run"]
    assert slow["stop"] == "cap" and slow["steps_run"] == cap  # lr 1e-5: still improving at the cap
    assert A.plateau_step(slow["curve"], 3) is None
    # the stopped model's weights are those of its last evaluation
    last = fast["curve"][-1]
    pred = fast["predictions"]
    y = d.embeddings
    np.testing.assert_allclose(((pred[specs[0].fit_index] - y[specs[0].fit_index]) ** 2).mean(), last["fit_mse"],
                               rtol=1e-5)
    # the curve up to the stop is the one a run without patience draws
    assert [c["val_mse"] for c in fast["curve"]] == pytest.approx(
        [c["val_mse"] for c in plain[0]["curve"][:len(fast["curve"])]], rel=1e-5)


@pytest.mark.parametrize("stacked", [True, False])
def test_with_patience_the_chosen_and_last_steps_read_every_metric_of_the_weights_there(small_data, stacked):
    """Evaluations under patience read the MSEs only; the record's selected and final metrics are
    the full metrics of the weights at those steps: those a run without patience, capped where
    the model stopped, reports (it evaluates everything at every step)."""
    d = small_data
    split = object_level_split(d, 0.7, seed=0)
    specs = (A.make_specs(d, split, "mlp", widths=[16], lrs=[3e-2], seeds=[0], fraction=0.7)
             + A.make_specs(d, split, "mlp", widths=[8], lrs=[1e-2], seeds=[0], fraction=0.7))
    patient = _train(d, specs, A.get_protocol("release", steps=400, eval_every=10, patience=3), stacked=stacked)
    for spec, rec in zip(specs, patient):
        for point in rec["curve"]:  # the MSEs alone, but at the chosen and the last step
            full = point["step"] in (rec["selected_step"], rec["final_step"])
            assert ("heldout_object" in point) == full and {"step", "fit_mse", "val_mse"} <= set(point)
        plain = _train(d, [spec], "release", steps=rec["steps_run"], eval_every=10)[0]
        assert plain["selected_step"] == rec["selected_step"] and plain["final_step"] == rec["final_step"]
        for key in ("heldout_object", "heldout_concept", "train_object", "val_object", "val_mse", "heldout_r2"):
            assert rec[f"selected_{key}"] == pytest.approx(plain[f"selected_{key}"], rel=1e-4, abs=1e-6), key
            assert rec[f"final_{key}"] == pytest.approx(plain[f"final_{key}"], rel=1e-4, abs=1e-6), key
    assert any(r["selected_step"] < r["final_step"] for r in patient)  # a best step before the last is read too


def test_the_chapter_counts_the_approximators_that_stopped_and_those_still_improving_at_the_cap(small_data):
    from bindcore.experiments.complexity import approximator_table, stop_summary

    d = small_data
    split = object_level_split(d, 0.7, seed=0)
    specs = (A.make_specs(d, split, "mlp", widths=[16], lrs=[3e-2], seeds=[0], fraction=0.7)
             + A.make_specs(d, split, "mlp", widths=[8], lrs=[1e-5], seeds=[0], fraction=0.7))
    fixed = approximator_table(_train(d, specs, "release", steps=100, eval_every=10))
    assert "no stop rule" in stop_summary(fixed) and fixed["stop"].isna().all()
    stopped = approximator_table(_train(d, specs, A.get_protocol("release", steps=400, eval_every=10, patience=3)))
    assert stop_summary(stopped) == ("1 of 2 approximators stopped on their validation plateau; 1 reached the step "
                                     "cap, 1 of them still improving there (chosen at the cap)")


def test_a_sweep_is_timed_on_the_specs_it_trains_and_its_cap_counts_every_evaluation(small_data):
    """``sweep_specs`` are the torch approximators ``sweep_fractions`` trains, in its order; the
    timing of their stacks extrapolates to the cap with every evaluation the protocol makes."""
    d = small_data
    protocol = A.get_protocol("release", steps=100, eval_every=30)
    specs = A.sweep_specs(d, [0.5, 0.8], ["mlp", "additive", "xgboost"], {"mlp": [8, 16]}, [1e-2, 1e-3])
    recs = A.sweep_fractions(d, [0.5, 0.8], ["mlp", "additive"], {"mlp": [8, 16]}, lrs=[1e-2, 1e-3],
                             protocol=protocol, progress=False)
    assert [(s.family, s.width, s.lr, s.fraction) for s in specs] == \
        [(r["family"], r["width"] or A.default_width("additive", d), r["lr"], r["fraction"]) for r in recs]
    t = A.time_stacks(d, specs, protocol, steps=2)
    assert t["approximators"] == len(specs) == 12 and t["evaluations"] == 5  # steps 0, 30, 60, 90 and 100
    patient = A.time_stacks(d, specs, A.get_protocol(protocol, patience=3), steps=2)
    for clock in ("", "_cpu"):
        assert t[f"per_step{clock}"] > 0 and t[f"per_evaluation{clock}"] == t[f"per_full_evaluation{clock}"] > 0
        assert t[f"at_cap{clock}"] == pytest.approx(100 * t[f"per_step{clock}"] + 5 * t[f"per_evaluation{clock}"])
        # with patience: evaluations of the MSEs alone, and two full ones once training ends
        assert patient[f"at_cap{clock}"] == pytest.approx(100 * patient[f"per_step{clock}"] + 5 * patient[
            f"per_evaluation{clock}"] + 2 * patient[f"per_full_evaluation{clock}"])


def test_a_protocol_without_patience_keeps_the_stored_key_of_a_fixed_budget():
    p = A.get_protocol("paper", steps=1500, lrs=[0.01, 0.001], batch_size=512, eval_every=150)
    assert p.key() == {"name": "paper", "steps": 1500, "lrs": (0.01, 0.001), "batch_size": 512, "eval_every": 150}
    assert A.get_protocol(p, patience=5).key()["patience"] == 5
    with pytest.raises(ValueError, match="patience"):
        A.get_protocol(p, patience=0)


def test_trainer_is_adam_with_each_models_lr(small_data):
    """Two models differing only in lr, stacked, each equal to a plain torch Adam loop."""
    d = small_data
    split = object_level_split(d, 0.7, seed=0)
    specs = A.make_specs(d, split, "mlp", widths=[16], lrs=[3e-2, 1e-3], val_fraction=0.0)
    recs = _train(d, specs, steps=20, eval_every=20, pad_work=float("inf"), keep_predictions=True)
    assert recs[0]["stack_size"] == 2
    codes = torch.as_tensor(A.global_codes(d.slot_codes(), d.values_per_concept))
    fit = specs[0].fit_index
    y = torch.as_tensor(d.embeddings)
    preds = []
    for spec in specs:
        model = A.StackedApproximator("mlp", d.values_per_concept, d.dim, [16], [spec.seed],
                                      output_bias=d.embeddings[fit].astype(np.float64).mean(0))
        opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
        for _ in range(20):
            loss = torch.nn.functional.mse_loss(model(codes[fit][None])[0], y[fit])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            preds.append(model(codes[None])[0].numpy())
    for r, p in zip(recs, preds):
        np.testing.assert_allclose(r["predictions"], p, atol=1e-5, rtol=1e-4)
    assert np.abs(preds[0] - preds[1]).max() > 1e-2  # the lrs really differ


@pytest.mark.parametrize("family", ["mlp", "global_product", "sum_within_object_product"])
def test_padded_units_never_reach_outputs_or_gradients(family):
    vpc, dim = [3, 4], 5
    codes = torch.as_tensor(A.global_codes(np.random.default_rng(0).integers(0, 3, (7, 4)), vpc))
    target = torch.randn(7, dim, generator=torch.Generator().manual_seed(0))
    stack = A.StackedApproximator(family, vpc, dim, [3, 9], [11, 12])
    alone = A.StackedApproximator(family, vpc, dim, [3], [11])
    out = stack(codes[None].expand(2, -1, -1))
    torch.testing.assert_close(out[0], alone(codes[None])[0], rtol=0, atol=0)
    ((out - target) ** 2).sum().backward()
    assert float(stack.table.grad[0, :, 3:].abs().max()) == 0.0
    assert float(stack.head.grad[0, 3:].abs().max()) == 0.0
    if family == "mlp":
        assert float(stack.hidden_bias.grad[0, 3:].abs().max()) == 0.0
        assert float(stack.table.detach()[0, :, 3:].abs().max()) == 0.0
        assert float(stack.head.detach()[0, 3:].abs().max()) == 0.0
    else:  # padded factors are masked: whatever they hold, model 0's output is unchanged
        with torch.no_grad():
            stack.table[0, :, 3:] = torch.randn(stack.table.shape[1], 6)
        torch.testing.assert_close(stack(codes[None].expand(2, -1, -1))[0], out[0].detach(), rtol=0, atol=0)
    # the unpadded state round-trips
    st = stack.model_state(0)
    assert st["table"].shape[1] == 3 and st["head"].shape[0] == 3


def test_plan_stacks_padding_rule(small_data):
    d = small_data
    specs = _mixed_specs(d)
    n_slots = 2 * d.n_concepts
    every = A.plan_stacks(specs, None, d.dim, n_slots, pad_work=float("inf"))
    assert len(every) == 4  # one stack per family
    exact = A.plan_stacks(specs, None, d.dim, n_slots, pad_work=0.0)
    for group in exact:
        shapes = {(specs[i].family, specs[i].width, len(specs[i].fit_index)) for i in group}
        assert len(shapes) == 1
    assert sorted(i for g in exact for i in g) == list(range(len(specs)))


# ---------------------------------------------------------------------------------
# no held-out object is used for fitting or selection
# ---------------------------------------------------------------------------------
def test_validation_split_and_fitting_use_training_objects_only(small_data):
    d = small_data
    split = object_level_split(d, 0.6, seed=0)
    specs = A.make_specs(d, split, "mlp", widths=[8], val_fraction=0.25)
    s = specs[0]
    assert len(s.val_index) > 0
    assert np.intersect1d(s.fit_index, s.val_index).size == 0
    assert np.array_equal(np.sort(np.concatenate([s.fit_index, s.val_index])), np.sort(split.train))
    ids = d.object_ids()
    for index in (s.fit_index, s.val_index):
        assert np.isin(ids[index], split.train_objects).all()
    assert np.intersect1d(s.fit_index, np.concatenate([split.heldout, split.mixed])).size == 0
    with pytest.raises(ValueError):
        A.ModelSpec("mlp", 8, 1e-2, 0, split.heldout[:3], s.val_index, split)


@pytest.mark.parametrize("protocol,batch", [("release", None), ("paper", 16)])
def test_nothing_but_fitting_scenes_reaches_training(small_data, protocol, batch):
    """Poison every non-fitting scene's embedding with NaN: the models stay finite."""
    d = small_data
    split = object_level_split(d, 0.6, seed=0)
    small = object_level_split(d, 0.4, seed=0)
    specs = (A.make_specs(d, split, "mlp", widths=[8], val_fraction=0.25)
             + A.make_specs(d, small, "mlp", widths=[4], val_fraction=0.25)
             + A.make_specs(d, small, "global_product", widths=[4], val_fraction=0.25))
    fit = np.unique(np.concatenate([s.fit_index for s in specs]))
    assert len(fit) < len(split.train)
    y = d.embeddings.copy()
    y[np.setdiff1d(np.arange(len(y)), fit)] = np.nan
    poisoned = BindingData(d.objects, y, d.values_per_concept, d.concept_probes, d.object_probe)
    recs = _train(poisoned, specs, protocol, steps=10, eval_every=5, batch_size=batch, pad_work=float("inf"),
                  keep_predictions=True)
    assert recs[0]["stack_size"] == 2
    if batch is None:
        assert recs[0]["padded_rows"] > recs[1]["n_fit"]
    for r in recs:
        assert np.isfinite(r["predictions"]).all()
        assert np.isfinite(r["final_fit_mse"])
    tree_fit = A.make_specs(d, split, "additive", val_fraction=0.2, val_seed=0)[0].fit_index
    y = d.embeddings.copy()
    y[np.setdiff1d(np.arange(len(y)), tree_fit)] = np.nan
    poisoned = BindingData(d.objects, y, d.values_per_concept, d.concept_probes, d.object_probe)
    (t,) = A.fit_trees(poisoned, split, "random_forest", grid=[dict(n_estimators=5)], val_fraction=0.2, seed=0,
                       progress=False, keep_predictions=True)
    assert np.isfinite(t["predictions"]).all() and t["n_fit"] == len(tree_fit)


def test_selection_never_reads_heldout(small_data):
    d = small_data
    split = object_level_split(d, 0.6, seed=0)
    specs = A.make_specs(d, split, "mlp", widths=[8], lrs=[1e-2, 1e-4], val_fraction=0.25)
    recs = _train(d, specs, steps=30, eval_every=10)
    for r in recs:
        vals = {c["step"]: c["val_mse"] for c in r["curve"]}
        assert r["selected_val_mse"] == min(vals.values())
        assert vals[r["selected_step"]] == r["selected_val_mse"]
        assert [c["step"] for c in r["curve"]] == [0, 10, 20, 30]
        assert "heldout_object" in r["curve"][-1]
    (best,) = A.select_best(recs)
    assert best["selected_val_mse"] == min(r["selected_val_mse"] for r in recs)
    with pytest.raises(ValueError):
        A.select_best(recs, by="selected_heldout_object")


# ---------------------------------------------------------------------------------
# trees, sweeps
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", A.TREE_KINDS)
def test_tree_regressor_beats_the_mean(additive_data, kind):
    d = additive_data
    X, Y = A.one_hot_codes(d), d.embeddings
    rng = np.random.default_rng(0)
    test = rng.random(len(Y)) < 0.3
    params = dict(n_estimators=40, max_depth=4) if kind == "xgboost" else dict(n_estimators=30)
    reg = A.PCATreeRegressor(kind, variance=0.95, max_components=8, seed=0, **params).fit(X[~test], Y[~test])
    pred = reg.predict(X[test])
    assert pred.shape == (test.sum(), d.dim) and pred.dtype == np.float32
    assert 1 <= reg.n_components_ <= 8 and reg.components_.shape == (reg.n_components_, d.dim)
    mse = ((pred - Y[test]) ** 2).mean()
    mse_mean = ((Y[~test].mean(0) - Y[test]) ** 2).mean()
    assert mse < 0.8 * mse_mean
    again = A.PCATreeRegressor(kind, variance=0.95, max_components=8, seed=0, **params).fit(X[~test], Y[~test])
    np.testing.assert_array_equal(again.predict(X[test]), pred)  # seeded


def test_sweep_fractions_stacks_families_and_fits_trees(small_data):
    d = small_data
    recs = A.sweep_fractions(d, [0.5, 0.75], ["mlp", "additive", "xgboost"], widths={"mlp": [8, 16]},
                             steps=10, eval_every=5, progress=False,
                             tree_grid={"xgboost": [dict(n_estimators=10, max_depth=2)]})
    torch_recs = [r for r in recs if r["family"] != "xgboost"]
    assert len(torch_recs) == 2 * 3 and len(recs) == 2 * 4
    assert {r["trainer_models"] for r in torch_recs} == {6}  # one stacked run for the sweep
    assert {r["fraction"] for r in recs} == {0.5, 0.75}
    for r in recs:
        for k in ("final_heldout_object", "selected_heldout_concept", "final_train_r2", "curve", "seconds"):
            assert k in r
    assert len(A.select_best(recs)) == len(recs)  # one lr, one grid point: one record per group


# ---------------------------------------------------------------------------------
# the chapters' helpers (bindcore.analysis.complexity)
# ---------------------------------------------------------------------------------
def test_stored_sweep_is_keyed_by_content(small_data, tmp_path):
    from bindcore.analysis.complexity import stored_sweep
    from bindcore.experiments.complexity import approximator_table
    from bindcore.store import ResultStore

    store = ResultStore(tmp_path, published=None)
    proto = A.get_protocol("release", steps=10, eval_every=5)
    first = stored_sweep(small_data, [0.5], ["additive"], proto, store=store)
    again = stored_sweep(small_data, [0.5], ["additive"], proto, store=store)
    assert first == again and len(list((tmp_path / "approximators-1").iterdir())) == 1
    assert "predictions" not in first[0]  # stored records are JSON, without arrays
    # other embeddings are other data: a new entry, not the stored one
    changed = BindingData(small_data.objects, small_data.embeddings + 1.0, small_data.values_per_concept,
                          small_data.concept_probes, small_data.object_probe, name=small_data.name)
    stored_sweep(changed, [0.5], ["additive"], proto, store=store)
    assert len(list((tmp_path / "approximators-1").iterdir())) == 2
    table = approximator_table(first, encoder="synthetic")
    assert set(table["encoder"]) == {"synthetic"} and len(table) == 1


def test_stored_sweep_is_keyed_by_origin_where_the_data_names_one(small_data, tmp_path):
    """Data that names what made it (a model's weights, stored embeddings) is keyed by
    that name: the same weights embedded on another machine or thread count give other
    last bits, and must find the record stored there; another origin is other data."""
    import pickle
    from dataclasses import replace

    from bindcore.analysis.complexity import binding_data_hash, stored_sweep
    from bindcore.store import ResultStore

    store = ResultStore(tmp_path, published=None)
    proto = A.get_protocol("release", steps=10, eval_every=5)
    origin = {"model": "abc", "weights": "0123", "objects": "all", "code": "f00"}
    named = replace(small_data, origin=origin)
    noisy = replace(small_data, embeddings=small_data.embeddings + np.float32(1e-6), origin=dict(origin))
    assert binding_data_hash(named) == binding_data_hash(noisy) != binding_data_hash(small_data)
    first = stored_sweep(named, [0.5], ["additive"], proto, store=store)
    assert stored_sweep(noisy, [0.5], ["additive"], proto, store=store) == first
    assert len(list((tmp_path / "approximators-1").iterdir())) == 1
    other = replace(small_data, origin={**origin, "weights": "4567"})
    assert binding_data_hash(other) != binding_data_hash(named)
    stored_sweep(other, [0.5], ["additive"], proto, store=store)
    assert len(list((tmp_path / "approximators-1").iterdir())) == 2
    # a subset is other data; its origin says which rows
    assert binding_data_hash(named.subset(np.arange(10))) != binding_data_hash(named)
    # the origin travels with the data to a worker process (pickled with its task) and keys it the same there
    back = pickle.loads(pickle.dumps(named))
    assert back.origin == origin and binding_data_hash(back) == binding_data_hash(named)


def test_true_embedding_ceiling_reads_the_data_itself(additive_data):
    from bindcore.analysis.complexity import true_embedding_ceiling

    c = true_embedding_ceiling({"additive": additive_data}, [0.4, 0.8])
    assert list(c["fraction"]) == [0.4, 0.8]
    # the frozen probes are the true concept vectors: concepts are read almost perfectly
    assert (c["heldout_concept"] > 0.9).all()
    split = object_level_split(additive_data, 0.8)
    assert c["heldout_object"].iloc[1] == pytest.approx(
        object_recognition(additive_data, additive_data.embeddings, split.heldout))
    assert c["heldout_concept"].iloc[1] == pytest.approx(
        concept_recognition(additive_data, additive_data.embeddings, split.heldout))


def test_cost_line_before_the_sweep_runs(small_data, capsys):
    """With ``estimate``, the models, steps and a timed estimate are printed once, after
    the first steps; the result is the same as without it."""
    d = small_data
    specs = A.make_specs(d, object_level_split(d, 0.7, seed=0), "mlp", widths=[8, 16], lrs=[1e-2])
    quiet = _train(d, specs, steps=12, eval_every=4, keep_predictions=True)
    capsys.readouterr()
    loud = _train(d, specs, steps=12, eval_every=4, keep_predictions=True, estimate=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("cost:")]
    assert len(lines) == 1 and "2 approximator(s)" in lines[0] and "12 steps" in lines[0] and "4 evaluations" in lines[0]
    for x, y in zip(quiet, loud):
        np.testing.assert_allclose(x["predictions"], y["predictions"])


def test_a_protocol_prints_in_words_for_the_page():
    from bindcore.analysis.complexity import protocol_for

    text = str(protocol_for({"steps": 1500, "lrs": [0.01, 0.001], "batch_size": 512}))
    assert text.startswith("Adam, 1,500 steps, batch 512, learning rates 0.01, 0.001") and "Protocol(" not in text


@pytest.mark.parametrize("family", A.FAMILIES)
def test_every_model_of_a_padded_stack_equals_the_chapters_definition(family):
    from bindcore.analysis.approximators.reference import approximator_output

    vpc = [3, 4]
    rows = torch.as_tensor(A.global_codes(np.random.default_rng(1).integers(0, 3, (33, 4)), vpc))
    stack = A.StackedApproximator(family, vpc, 6, [2, 5, 9], [3, 4, 5], output_bias=np.ones((3, 6)))
    fast = stack(rows[None].expand(3, -1, -1)).detach()
    for m in range(3):
        torch.testing.assert_close(fast[m], approximator_output(family, stack.model_state(m), rows),
                                   rtol=1e-5, atol=1e-5)
