"""bindcore.figures: what a figure draws, read back from its axes."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from bindcore.figures import plot_binding_curves, plot_fit_search  # noqa: E402


def _attempt(name, curves, target=0.9):
    return {"name": name, "target": target,
            "runs": [{"seed": s, "curve": [{"step": 500 * (i + 1), "task_object_2": v} for i, v in enumerate(c)]}
                     for s, c in curves.items()]}


def test_fit_search_figure_draws_every_seed_and_their_median_per_attempt():
    a = _attempt("A", {0: [0.1, 0.5, 0.9], 1: [0.2, 0.4, 0.6], 2: [0.0, 0.3]})  # seed 2 stopped early
    b = _attempt("B", {0: [0.3, 0.7]})
    fig = plot_fit_search([a, b], ncols=3)
    axes = fig.axes
    assert [ax.get_title() for ax in axes[:2]] == ["A", "B"] and not axes[2].axison
    lines = {ln.get_label(): ln for ln in axes[0].get_lines()}
    assert {"seed 0", "seed 1", "seed 2", "median"} <= set(lines)
    median = lines["median"]
    assert list(median.get_xdata()) == [500, 1000]  # the steps every seed reached
    assert np.allclose(median.get_ydata(), [0.1, 0.4])
    assert "median" not in {ln.get_label() for ln in axes[1].get_lines()}  # one seed: no median
    assert plot_fit_search([]) is None


def test_fit_search_figure_puts_the_seeds_of_one_recipe_logged_apart_in_one_panel():
    first = {**_attempt("R", {0: [0.2, 0.6]}), "base": "scale", "changes": {"batch_size": 512}}
    rest = {**_attempt("R_s12", {1: [0.4, 0.8], 2: [0.0, 0.2]}), "base": "scale", "changes": {"batch_size": 512}}
    other = {**_attempt("Q", {0: [0.1, 0.1]}), "base": "scale", "changes": {"batch_size": 1024}}
    fig = plot_fit_search([first, other, rest], ncols=2)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["R", "Q"]
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    assert {"seed 0", "seed 1", "seed 2", "median"} <= set(lines)
    assert np.allclose(lines["median"].get_ydata(), [0.2, 0.6])
    assert lines["seed 1"].get_color() != lines["seed 0"].get_color()


def test_fit_search_figure_labels_the_steps_of_a_column_whose_bottom_panel_is_hidden():
    long = _attempt("L", {0: [0.1] * 40})  # 20,000 steps
    fig = plot_fit_search([_attempt("A", {0: [0.2]}), _attempt("B", {0: [0.3]}), long], ncols=2)
    a, b, c, hidden = fig.axes
    assert not hidden.get_visible()
    fig.canvas.draw()
    labels = [t.get_text() for t in b.get_xticklabels() if t.get_visible() and t.get_text()]
    assert labels and all(t == "0" or t.endswith("k") for t in labels)  # thousands: 5k, 10k, ...
    assert b.get_xlabel() == c.get_xlabel() == "step"
    assert not [t for t in a.get_xticklabels() if t.get_visible() and t.get_text()]  # above c: shared


def _run(v, coverage, seed, values):
    return {"config": {"n_values": v, "n_concepts": 2, "coverage": coverage, "seed": seed},
            "history": [{"step": 500 * (i + 1), "test_swap_pair": x} for i, x in enumerate(values)]}


def test_binding_curves_draw_a_panel_per_size_every_seed_and_the_median_per_coverage():
    runs = [_run(10, 0.5, 0, [0.0, 0.2, 0.4]), _run(10, 0.5, 1, [0.0, 0.4, 0.8]), _run(10, 0.5, 2, [0.1, 0.3]),
            _run(10, 0.7, 0, [0.5, 0.9]), _run(20, 0.7, 0, [0.2, 0.6]),
            {"config": {"n_values": 50, "n_concepts": 2, "coverage": 0.7, "seed": 0}, "history": [{"step": 500}]}]
    fig = plot_binding_curves(runs)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in shown] == ["|O| = 100", "|O| = 400"]  # V = 50 has no swap-pair history
    lines = shown[0].get_lines()
    assert len(lines) == 3 + 1 + 1 + 1  # three seeds and their median at 0.5; one seed and its median at 0.7
    medians = {ln.get_label(): ln for ln in lines if not ln.get_label().startswith("_")}
    assert set(medians) == {"coverage 0.5 (3 runs)", "coverage 0.7 (1 run)"}
    m = medians["coverage 0.5 (3 runs)"]
    assert list(m.get_xdata()) == [500, 1000] and np.allclose(m.get_ydata(), [0.0, 0.3])  # steps every seed has
    assert m.get_color() != medians["coverage 0.7 (1 run)"].get_color()
    assert plot_binding_curves(runs[-1:]) is None


def test_figure9_counts_the_models_it_draws_and_names_only_the_sizes_it_draws():
    import matplotlib.pyplot as plt
    import pandas as pd

    from bindcore.figures import plot_figure9

    table = pd.DataFrame({"objects": [100, 100, 100, 2500, 2500],
                          "model: held-out objects": [0.2, 0.5, 0.9, 0.4, 0.6],
                          "global product: held-out objects": [0.1, np.nan, 0.8, np.nan, np.nan]})
    fig, ax = plt.subplots()
    plot_figure9(ax, table, pd.DataFrame({"objects": [100], "Spearman rho": [0.9]}))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # the rank correlation figure 9's verdict reads, named; the 2,500 models have no fit: no dot, no entry
    assert labels == ["|O| = 100 (2 models, rank correlation 0.90)"]
    plt.close(fig)


def test_figure_9_legend_gives_the_correlation_its_verdict_reads():
    """The legend gave Pearson's r (2,500: 0.63) where the verdict reads the rank correlation
    (0.91): the legend's number is the verdict's, named as a rank correlation."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from bindcore.book.tables import figure9_correlations
    from bindcore.figures import plot_figure9
    from bindcore.verdicts.approximators import figure9_claims

    x = np.linspace(0.05, 1.0, 8)
    table = pd.DataFrame({"objects": 2500, "model: held-out objects": x, "global product: held-out objects": x ** 6})
    fig, ax = plt.subplots()
    plot_figure9(ax, table, figure9_correlations(table))
    (label,) = [t.get_text() for t in ax.get_legend().get_texts()]
    verdict = figure9_claims(table, "quick")["ours"].iloc[0]
    assert verdict.startswith("rank correlation 1.00") and label == "|O| = 2,500 (8 models, rank correlation 1.00)"
    plt.close(fig)
