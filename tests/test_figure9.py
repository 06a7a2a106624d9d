"""Figure 9 (§5.4): the global product fitted on a controlled model's own training
objects, over every stored run, local and published."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from bindcore.analysis.approximators import get_protocol
from bindcore.analysis.complexity import APPROX_STORE_KIND, own_split_fit
from bindcore.analysis.probes import controlled_binding_data, split_by_objects, sub_grid_objects
from bindcore.book.tables import figure9_correlations
from bindcore.controlled.recipes import recipe
from bindcore.controlled.runs import train
from bindcore.controlled.training import STORE_KIND, TrainConfig
from bindcore.experiments.complexity import figure9_runs, figure9_table
from bindcore.store import ResultStore
from bindcore.verdicts import core as CL
from bindcore.verdicts.approximators import figure9_claims

PROTOCOL = get_protocol("paper", steps=10, lrs=[1e-2], batch_size=None, eval_every=5)


def test_own_split_uses_the_models_training_objects(tmp_path):
    rec = train(recipe("smoke", steps=4), store=ResultStore(tmp_path, published=None), progress=False)
    data = controlled_binding_data(rec, max_objects=16)
    train_objects = TrainConfig.from_dict(rec["config"]).split.train.numpy()
    split = split_by_objects(data, train_objects)
    assert set(split.train_objects.tolist()) == set(train_objects.tolist()) & set(data.object_ids().ravel().tolist())
    ids = data.object_ids()
    assert np.isin(ids[split.heldout], train_objects).sum() == 0 and np.isin(ids[split.train], train_objects).all()


def test_figure9_table_local_and_published(tmp_path):
    local, published = tmp_path / "results", tmp_path / "published"
    store = ResultStore(local, published=published)
    cfgs = [recipe("smoke", steps=4, coverage=c) for c in (0.5, 0.75)]
    runs = [train(c, store=store, progress=False) for c in cfgs]
    table = figure9_table(PROTOCOL, 16, figure9_runs("smoke", "chapter", store)[0], store=store)
    assert len(table) == 2 and table["global product: held-out objects"].notna().all()
    assert (table["source"] == "local").all()
    # a run published without weights, with its figure-9 fit published beside it, still counts
    run_dir = local / STORE_KIND / runs[0]["hash"]
    (published / STORE_KIND).mkdir(parents=True)
    shutil.copytree(run_dir, published / STORE_KIND / run_dir.name, ignore=shutil.ignore_patterns("*.pt"))
    fit = own_split_fit(runs[0], PROTOCOL, max_objects=16, store=store)
    for d in (local / APPROX_STORE_KIND).iterdir():
        shutil.copytree(d, published / APPROX_STORE_KIND / d.name)
    shutil.rmtree(local)
    table = figure9_table(PROTOCOL, 16, figure9_runs("smoke", "chapter", store)[0], store=store)
    assert list(table["source"]) == ["published"]
    assert table["global product: held-out objects"].iloc[0] == fit["selected_heldout_object"]
    # a published run without a stored fit: shown, with no probe number
    shutil.rmtree(published / APPROX_STORE_KIND)
    assert np.isnan(figure9_table(PROTOCOL, 16, figure9_runs("smoke", "chapter", store)[0],
                                  store=store)["global product: held-out objects"]).all()


def test_a_run_none_of_whose_training_objects_is_embedded_is_shown_without_a_fit(tmp_path):
    """A smoke build sees published quick models: at 16 embedded objects (the first 4
    values of each concept) a V = 10 model at coverage 0.2 has no training object among
    them, so there is nothing to fit the global product on."""
    store = ResultStore(tmp_path, published=None)
    runs = [train(recipe("smoke", steps=2, n_values=v, coverage=c), store=store, progress=False)
            for v, c in ((10, 0.2), (4, 0.5))]
    for rec in runs:  # the sub-grid read from the config is the set of objects the embedded data shows
        cfg = TrainConfig.from_dict(rec["config"])
        data = controlled_binding_data(rec, max_objects=16)
        assert np.array_equal(np.unique(data.object_ids()), sub_grid_objects(cfg.space, 16).numpy())
    cfg = TrainConfig.from_dict(runs[0]["config"])
    embedded = [np.isin(sub_grid_objects(cfg.space, m).numpy(), cfg.split.train.numpy()).sum() for m in (16, 400)]
    assert embedded[0] == 0 < embedded[1]
    assert own_split_fit(runs[0], PROTOCOL, max_objects=16, store=store) is None
    assert own_split_fit(runs[0], PROTOCOL, max_objects=400, store=store) is not None
    table = figure9_table(PROTOCOL, 16, figure9_runs("smoke", "chapter", store)[0], store=store).set_index("V")
    assert np.isnan(table.loc[10, "global product: held-out objects"])
    assert table.loc[4, "global product: held-out objects"] >= 0


def test_figure9_correlations_need_three_models():
    import pandas as pd

    t = pd.DataFrame({"objects": [16] * 4 + [64] * 2, "model: held-out objects": [0.1, 0.4, 0.6, 0.9, 0.2, 0.8],
                      "global product: held-out objects": [0.0, 0.3, 0.7, 0.8, 0.1, 0.9]})
    c = figure9_correlations(t).set_index("objects")
    assert c.loc[16, "models"] == 4 and c.loc[16, "Spearman rho"] == 1.0 and np.isnan(c.loc[64, "Pearson r"])
    assert figure9_claims(t, "quick")["status"].tolist() == [CL.SHOWN, CL.UNTESTABLE]


def test_figure9_says_the_level_gap_beside_the_rank_relation():
    """A product that orders the models perfectly (Spearman 1) far below their level: the page
    says both, the gap as the median of model - product."""
    import pandas as pd

    from bindcore.book.tables import figure9_level

    t = pd.DataFrame({"objects": [400] * 4, "model: held-out objects": [0.2, 0.5, 0.8, 0.99],
                      "global product: held-out objects": [0.0, 0.05, 0.1, 0.3]})
    c = figure9_correlations(t)
    assert c["Spearman rho"].iloc[0] == 1.0 and c["level gap (median of model - product)"].iloc[0] == pytest.approx(0.57)
    text = figure9_level(c)
    assert "|O| = 400: Spearman 1.00, the models at 0.65 and the product at 0.08 (median gap 0.57)" in text
    assert "orders the models" in text
    assert figure9_level(figure9_correlations(t.iloc[:0])).startswith("No model")


def test_the_quick_figure_9_reads_every_fit_from_published_records(tmp_path, monkeypatch):
    """A model published with its weights needs its own-split fit published too, or a fresh clone's
    first quick build fits it (minutes per model): with the store computing nothing new, every
    published run has its row's fit (or none where its sub-grid holds no training object)."""
    from bindcore.analysis.complexity import protocol_for
    from bindcore.parameters import chapter_parameters
    from bindcore.runtime import CONTEXT_ENV
    from bindcore.store import PUBLISHED_ROOT

    monkeypatch.setenv(CONTEXT_ENV, '{"stored_only": true}')  # a missing record raises NotStored instead of being fitted
    P = chapter_parameters("controlled_complexity", "quick")
    store = ResultStore(tmp_path, published=PUBLISHED_ROOT)
    table = figure9_table(protocol_for(P), P["max_objects"], figure9_runs("quick", P["models"], store)[0], store=store)
    assert len(table) and set(table["source"]) == {"published"}
    assert table["global product: held-out objects"].notna().any()


def test_figure9_reads_the_runs_of_one_recipe_only(tmp_path):
    """Figure 9 names one recipe and reads its runs alone: the profile's own recipe (any grid
    point or budget), never an ablation of it or another depth; with a scale choice, the
    scale plan's runs only."""
    from bindcore.controlled.recipes import PLAN_DEPTH, depth_label, is_recipe

    store = ResultStore(tmp_path, published=None)
    own = [recipe("smoke", steps=2, coverage=c) for c in (0.5, 0.75)]
    others = [recipe("smoke", steps=2, heldout_as_negatives=True), recipe("smoke", steps=2, n_layers=2),
              recipe("smoke", steps=2, concept_loss_start=0.0, concept_loss_trigger=0.0)]
    for cfg in own + others:
        train(cfg, store=store, progress=False)
    runs, name = figure9_runs("smoke", "chapter", store)
    assert name == "smoke recipe" and sorted(r["config"]["coverage"] for r in runs) == [0.5, 0.75]
    assert all(is_recipe(r["config"], "smoke") for r in runs)
    table = figure9_table(PROTOCOL, 16, runs, store=store)
    assert len(table) == 2 and set(table["negatives"]) == {"training objects"}
    scale, label = figure9_runs("smoke", "scale", store)
    assert label == depth_label(PLAN_DEPTH) and scale == []  # the plan's recipe: none of these runs
