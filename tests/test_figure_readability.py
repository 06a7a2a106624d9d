"""Figures readable at the book page's width: at most three panels a row, text
of at least 8 pt as displayed on a 790 px page, legends off the data."""

import matplotlib

matplotlib.use("Agg")

from types import SimpleNamespace  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from pagecheck import readability_problems  # noqa: E402

from bindcore.analysis.geometry_sets import EmbeddingSet  # noqa: E402
from bindcore.controlled.scenes import SceneSpace  # noqa: E402
from bindcore.figures import (  # noqa: E402
    draw_token_rows,
    mds_figure,
    plot_attribution,
    plot_decomposition,
    plot_editing_sweep,
    plot_three_objects,
    sample_grid,
    use_style,
)

# the sets of a quick build of §4.1, with their long labels
SETS = [("captions (C.3)", "all-MiniLM-L6-v2", "text", True),
        ("captions (C.3)", "ViT-B/32 text tower (random init)", "text", False),
        ("CLEVR-2D", "ViT-B/32 (random init)", "image", False),
        ("CLEVR-like 3-D", "ViT-B/32 (random init)", "image", False),
        ("controlled |O| = 100", "dual encoder (coverage 0.8, seed 0)", "controlled", True),
        ("controlled |O| = 100", "dual encoder (coverage 0.9, seed 0)", "controlled", True)]
COLOURS, SHAPES = ["red", "green", "blue", "yellow"], ["cube", "sphere", "cone", "cylinder", "torus"]


@pytest.fixture(autouse=True)
def book_style():
    with matplotlib.rc_context():
        use_style()
        yield
        plt.close("all")


def _sets():
    rng = np.random.default_rng(0)
    return [EmbeddingSet(dataset=d, encoder=e, source=src, pretrained=pre, Z=rng.normal(size=(30, 8)),
                         objects=np.stack([rng.integers(0, 4, (30, 2)), rng.integers(0, 5, (30, 2))], axis=-1),
                         values_per_concept=[4, 5], concept_names=["colour", "shape"], value_names=[COLOURS, SHAPES])
            for d, e, src, pre in SETS]


def _ok(fig):
    assert readability_problems(fig) == []


def test_the_check_finds_a_wide_row_small_text_and_a_legend_over_the_data():
    fig, axes = plt.subplots(1, 6, figsize=(18.6, 3.2))  # 04_1's old editing sweep
    axes[0].plot([0, 1], [0, 1], label="obj-avg")
    axes[0].legend(fontsize=7)
    problems = readability_problems(fig)
    assert any("6 panels in a row" in p for p in problems)
    assert any("pt as displayed" in p for p in problems)
    assert any("legend over the data" in p for p in problems)
    fig, ax = plt.subplots(figsize=(13, 4.4))  # 04_2's old bar labels: 6.5 pt on a 13-inch figure
    ax.set_xticks([0, 1], ["a", "b"], fontsize=6.5)
    assert any("pt as displayed" in p for p in readability_problems(fig))


def test_a_page_wide_figure_with_8pt_text_and_its_legend_below_passes():
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot([0, 1], [0, 1], label="line")
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    _ok(fig)


def test_decomposition_and_editing_figures_are_readable():
    sets, rng = _sets(), np.random.default_rng(1)
    frames = [pd.DataFrame([{"kind": k, "estimator": e, "r2_eval": rng.uniform()} for k in ("concepts", "objects")
                            for e in ("avg", "pos-avg")]) for _ in sets]
    _ok(plot_decomposition(sets, frames, title="Concepts vs objects as additive components (profile 'quick')"))
    ks = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0]
    edits = [pd.DataFrame([{"case": "different", "bank": b, "k": k, "retrieval": rng.uniform()}
                           for b in ("obj-avg", "pos-avg", "single") for k in ks]) for _ in sets]
    fig = plot_editing_sweep(sets, edits, title="Retrieval of the counterfactual against the editing strength")
    _ok(fig)
    assert sum(ax.get_visible() for ax in fig.axes) == len(sets)  # a panel per set, in two rows of three


def test_attribution_and_three_object_figures_are_readable():
    sets, rng = _sets(), np.random.default_rng(2)
    variants = ["original", "minus concepts", "minus objects", "permuted concepts", "permuted objects"]
    table = pd.DataFrame([{"dataset": s.dataset, "encoder": s.encoder, "variant": v, "concepts": rng.uniform(),
                           "objects": rng.uniform()} for s in sets for v in variants])
    _ok(plot_attribution(sets, table, title="Component attribution (profile 'quick')"))
    long = pd.DataFrame([{"occlusion": occ, "encoder": "ViT-B/32 (random init)", "kind": k, "estimator": e,
                          "r2_heldout": rng.uniform(), "retrieval": rng.uniform(), "retrieval_heldout": rng.uniform(),
                          "retrieval_chance_heldout": 0.01}
                         for occ in (False, True) for k in ("concepts", "objects") for e in ("avg", "lstsq")])
    _ok(plot_three_objects(long))


@pytest.mark.parametrize("values", [(4, 5), (10, 10)])
def test_mds_figure_is_readable_with_its_legends_off_the_data(values):
    v0, v1 = values
    s = EmbeddingSet(dataset="captions (C.3)", encoder="all-MiniLM-L6-v2", source="text", pretrained=True,
                     Z=np.zeros((4, 3)), objects=np.zeros((4, 2, 2), dtype=int), values_per_concept=[v0, v1],
                     concept_names=["adjective", "noun"],
                     value_names=[[f"adj{i}" for i in range(v0)], [f"noun{i}" for i in range(v1)]])
    rng = np.random.default_rng(3)
    objs = pd.DataFrame([{"bank": "objects", "value_0": a, "value_1": b, "mds_1": rng.normal(), "mds_2": rng.normal()}
                         for a in range(v0) for b in range(v1)])
    conc = pd.DataFrame([{"bank": "concepts", "concept": c, "value": v, "mds_1": rng.normal(), "mds_2": rng.normal()}
                         for c, n in enumerate(values) for v in range(n)])
    _ok(mds_figure(s, pd.concat([objs, conc], ignore_index=True)))


def test_token_rows_and_sample_grids_fit_the_page():
    space = SceneSpace(2, 10, 2)
    import torch

    scenes = torch.tensor([[3, -1], [3, 57]])
    rows = [r.tolist() for r in space.tokenize_scenes(scenes)]
    ax = draw_token_rows(space, rows, ["scene, 1 object", "scene, 2 objects"], concept_names=["colour", "shape"])
    ax.set_title("Token sequences (C=2, V=10; L_max=9); numbers in brackets are token ids")
    _ok(ax.figure)
    data = SimpleNamespace(name="toy", images=np.zeros((8, 16, 16, 3)),
                           captions=["a large red metal cube left of a small blue rubber sphere"] * 8)
    _ok(sample_grid(data, range(8), title="eight scenes"))


def test_training_curves_and_the_fit_search_are_readable():
    from bindcore.figures import plot_binding_curves, plot_fit_search

    rng = np.random.default_rng(4)
    records = [{"config": {"n_values": v, "n_concepts": 2, "coverage": cov},
                "history": [{"step": s, "test_swap_pair": rng.uniform()} for s in (500, 1000, 1500)]}
               for v in (10, 20, 50, 100) for cov in (0.1, 0.3, 0.5, 0.7, 0.9) for _ in range(3)]
    fig = plot_binding_curves(records)
    _ok(fig)
    assert sum(ax.get_visible() for ax in fig.axes) == 4  # a panel per size, three to a row
    attempts = [{"name": f"A{i}", "base": "scale", "changes": {"lr": i}, "target": 0.9,
                 "runs": [{"seed": s, "curve": [{"step": t, "task_object_2": rng.uniform()} for t in (500, 1000)]}
                          for s in range(3)]} for i in range(5)]
    _ok(plot_fit_search(attempts))



@pytest.mark.parametrize("values", [(10, 20, 50, 100), (20, 50), (8, 10)])  # the pages' size sets among them
def test_the_scale_figure_is_readable(values):
    from bindcore.figures import plot_scale

    rng = np.random.default_rng(5)
    table = pd.DataFrame([{"objects": v * v, "C": 2, "V": v, "coverage": cov, "seed": s,
                           "test_object_2": rng.uniform(), "boc_ceiling_test_object_2": 0.5,
                           "release_test_object_2": rng.uniform(), "test_swap_pair": rng.uniform()}
                          for v in values for cov in (0.1, 0.3, 0.5, 0.7) for s in range(3)])
    fig, axes = plt.subplots(1, 3, figsize=(7.0, 3.0))
    plot_scale(axes, table)
    _ok(fig)


@pytest.mark.parametrize("n_models", [2, 6])
def test_a_figure_per_model_wraps_its_models_three_to_a_row(n_models):
    from pagecheck import panels_per_row

    from bindcore.figures import MAX_PANELS_PER_ROW, model_panels

    names = [f"controlled C=2 V=20 coverage=0.{8 + i // 3} seed={i % 3}" for i in range(n_models)]
    fig, panels = model_panels(names, rows_per_model=2)
    assert len(panels) == n_models and all(len(p) == 2 for p in panels)
    for (top, bottom), name in zip(panels, names):
        top.plot([4, 64, 1024], [0.2, 0.8, 0.9], label="fraction 0.8")
        bottom.plot([4, 64, 1024], [0.5, 1.0, 1.0])
        assert top.get_title().replace("\n", " ") == name
    fig.tight_layout()
    assert panels_per_row(fig) == min(n_models, MAX_PANELS_PER_ROW)
    _ok(fig)


def test_figure_9_keeps_the_page_width_however_many_sizes_it_holds():
    from pagecheck import PAGE_WIDTH_PX, displayed_scale

    from bindcore.figures import plot_figure9

    rng = np.random.default_rng(9)
    sizes = (100, 400, 2_500, 10_000)
    table = pd.DataFrame([{"objects": n, "model: held-out objects": rng.uniform(),
                           "global product: held-out objects": rng.uniform()} for n in sizes for _ in range(4)])
    corr = pd.DataFrame({"objects": sizes, "Spearman rho": rng.uniform(-1, 1, len(sizes))})
    fig, ax = plt.subplots(figsize=(6.2, 5))  # the chapter's size
    plot_figure9(ax, table, corr)
    _ok(fig)
    assert displayed_scale(fig) * 1.1 >= 1.0, f"shown at {PAGE_WIDTH_PX} px, the figure is scaled by {displayed_scale(fig):.2f}"


def test_mds_labels_of_nearby_points_do_not_overlap():
    """MiniLM's adjectives sit close together in its concept MDS panel: each label finds a
    place of its own (a line to its point where it moved away), never on another label."""
    adjectives = ["red", "green", "blue", "yellow", "purple", "orange", "brown", "black", "white", "grey"]
    nouns = ["cube", "sphere", "cone", "cylinder", "torus", "ring", "star", "disc", "prism", "wedge"]
    s = EmbeddingSet(dataset="captions (C.3)", encoder="all-MiniLM-L6-v2", source="text", pretrained=True,
                     Z=np.zeros((4, 3)), objects=np.zeros((4, 2, 2), dtype=int), values_per_concept=[10, 10],
                     concept_names=["adjective", "noun"], value_names=[adjectives, nouns])
    rng = np.random.default_rng(4)
    objs = pd.DataFrame([{"bank": "objects", "value_0": a, "value_1": b, "mds_1": rng.normal(), "mds_2": rng.normal()}
                         for a in range(10) for b in range(10)])
    # the adjectives within a few hundredths of each other, the nouns spread over the panel
    conc = pd.DataFrame([{"bank": "concepts", "concept": 0, "value": v, "mds_1": 0.4 + 0.03 * rng.normal(),
                          "mds_2": -0.2 + 0.03 * rng.normal()} for v in range(10)]
                        + [{"bank": "concepts", "concept": 1, "value": v, "mds_1": rng.uniform(-1, 1),
                            "mds_2": rng.uniform(-1, 1)} for v in range(10)])
    fig = mds_figure(s, pd.concat([objs, conc], ignore_index=True))
    _ok(fig)
    assert sorted(t.get_text() for t in fig.axes[1].texts) == sorted(adjectives + nouns)
