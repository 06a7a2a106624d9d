"""The models §5.3 and §5.4 analyse on the quick profile: the scale sweep's models that
bind, chosen on validation objects among the points whose weights are stored."""

from __future__ import annotations

import pytest
import torch

from bindcore.controlled.recipes import scale_plan
from bindcore.controlled.training import STORE_KIND
from bindcore.experiments.generalization import binding_scale_runs
from bindcore.store import ResultStore


def _store(tmp_path, points, task=1.0):
    """A store with runs of the scale plan: {(V, coverage): (validation swap pairs, test swap pairs, weights)},
    every run at training-task recognition ``task`` ({(V, coverage): task} per point)."""
    store = ResultStore(tmp_path / "results", published=None)
    for cfg in scale_plan():
        if (cfg.n_values, cfg.coverage) not in points or cfg.split_seed:
            continue
        val, test, weights = points[(cfg.n_values, cfg.coverage)]
        entry = store.prepare(STORE_KIND, cfg.to_dict())
        if weights:
            torch.save({"w": torch.zeros(1)}, entry.path / "model.pt")
        store.finish(entry, {"hash": entry.path.name, "config": cfg.to_dict(),
                             "metrics": {"val_swap_pair": val + 0.01 * cfg.seed, "test_swap_pair": test,
                                         "task_object_2": task.get((cfg.n_values, cfg.coverage), 1.0)
                                         if isinstance(task, dict) else task}})
    return store


def test_the_models_that_bind_are_chosen_on_validation_objects_with_their_weights(tmp_path):
    store = _store(tmp_path, {(20, 0.7): (0.9, 0.1, False),  # binds on validation objects, but no weights
                              (20, 0.8): (0.7, 0.2, True), (20, 0.9): (0.6, 0.99, True),
                              (50, 0.5): (0.3, 0.9, True)})  # does not bind on validation objects
    runs = binding_scale_runs(store)
    assert [(r["config"]["n_values"], r["config"]["coverage"], r["config"]["seed"]) for r in runs] == \
        [(20, 0.8, s) for s in range(3)] + [(20, 0.9, s) for s in range(3)]  # test swap pairs choose nothing
    assert binding_scale_runs(_store(tmp_path / "none", {(20, 0.8): (0.4, 0.9, True)})) == []
    # one point a size: the largest median validation swap pairs among those with weights
    chosen = binding_scale_runs(store, per_size="chosen")
    assert [(r["config"]["coverage"], r["config"]["seed"]) for r in chosen] == [(0.8, s) for s in range(3)]
    tie = _store(tmp_path / "tie", {(20, 0.8): (0.7, 0.0, True), (20, 0.9): (0.7, 0.0, True)})
    assert {r["config"]["coverage"] for r in binding_scale_runs(tie, per_size="chosen")} == {0.8}  # the smaller
    with pytest.raises(ValueError, match="per_size"):
        binding_scale_runs(store, per_size="best")


def test_a_point_whose_runs_have_not_fitted_their_training_task_does_not_serve(tmp_path):
    points = {(20, 0.8): (0.7, 0.2, True), (20, 0.9): (0.9, 0.2, True)}
    # 0.9 binds best on validation objects but its runs' median training task is 0.90 < FIT_TARGET (0.95)
    store = _store(tmp_path, points, task={(20, 0.8): 0.96, (20, 0.9): 0.9})
    assert {r["config"]["coverage"] for r in binding_scale_runs(store)} == {0.8}
    assert {r["config"]["coverage"] for r in binding_scale_runs(store, per_size="chosen")} == {0.8}
    fitted = _store(tmp_path / "fitted", points, task=0.95)
    assert {r["config"]["coverage"] for r in binding_scale_runs(fitted, per_size="chosen")} == {0.9}


def test_a_point_whose_budget_was_raised_serves_with_its_binding_runs_at_the_earlier_budget(tmp_path):
    from bindcore.controlled.recipes import SCALE_STEPS

    store = ResultStore(tmp_path / "results", published=None)
    plan = [c for c in scale_plan() if (c.n_values, c.coverage) == (50, 0.5) and not c.split_seed]
    assert plan and plan[0].steps > SCALE_STEPS[(2, 50)]  # the fit rule raised this point's budget
    for cfg in plan:
        cfg = cfg.with_(steps=cfg.steps // 2)
        entry = store.prepare(STORE_KIND, cfg.to_dict())
        torch.save({"w": torch.zeros(1)}, entry.path / "model.pt")
        store.finish(entry, {"hash": entry.path.name, "config": cfg.to_dict(),
                             "metrics": {"val_swap_pair": 0.7, "test_swap_pair": 0.1, "task_object_2": 0.97}})
    runs = binding_scale_runs(store)
    assert [(r["config"]["steps"], r["earlier_budget"]) for r in runs] == [(plan[0].steps // 2, True)] * 3
