"""The book's figure style and the figures the chapters share (§3, §5, D.5, appendix E)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bindcore.analysis.approximators.labels import FAMILY_LABELS
from bindcore.analysis.geometry_sets import EmbeddingSet
from bindcore.controlled.scenes import SceneSpace, sample_scenes
from bindcore.data.pixels import LEVEL_LABELS, LEVELS
from bindcore.sweep import transition_coverage

PALETTE = ["#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6c4f9c", "#00798c", "#8c564b", "#7f7f7f"]
REFERENCE_COLOUR = "#555555"  # a paper number drawn as a reference line


def use_style() -> None:
    """The book's matplotlib style: readable in HTML, labelled axes, no chart junk."""
    mpl.rcParams.update({
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "figure.figsize": (6.4, 4.0),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.titlesize": 11,
        "axes.labelsize": 10,
        "legend.fontsize": 9,
        "legend.frameon": False,
        "axes.prop_cycle": mpl.cycler(color=PALETTE),
    })


def token_name(space: SceneSpace, tok: int, concept_names: Sequence[str] | None = None) -> str:
    specials = {space.soo: "SOO", space.eoo: "EOO", space.eos: "EOS", space.pad: "PAD"}
    if tok in specials:
        return specials[tok]
    c, v = divmod(tok, space.n_values)
    name = concept_names[c] if concept_names else f"c{c}"
    return f"{name}={v}\n({tok})"


def draw_token_rows(
    space: SceneSpace,
    rows: Sequence[Sequence[int]],
    labels: Sequence[str],
    concept_names: Sequence[str] | None = None,
    ax: Any = None,
):
    """Token sequences as rows of boxes: value tokens coloured by concept, specials grey."""
    width = max(len(r) for r in rows)
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 * width + 2.2, 0.75 * len(rows) + 0.6))
    for i, row in enumerate(rows):
        y = len(rows) - 1 - i
        for j, tok in enumerate(row):
            if tok < space.n_value_tokens:
                colour = PALETTE[tok // space.n_values % len(PALETTE)]
                alpha, text_colour = 0.85, "white"
            else:
                colour = "#bbbbbb" if tok != space.pad else "#eeeeee"
                alpha, text_colour = 1.0, "black"
            ax.add_patch(mpl.patches.FancyBboxPatch((j + 0.05, y + 0.1), 0.9, 0.8, boxstyle="round,pad=0.02",
                                                    facecolor=colour, alpha=alpha, edgecolor="white"))
            ax.text(j + 0.5, y + 0.5, token_name(space, tok, concept_names), ha="center", va="center",
                    fontsize=7, color=text_colour)
        ax.text(-0.15, y + 0.5, labels[i], ha="right", va="center", fontsize=9)
    for j in range(width):
        ax.text(j + 0.5, len(rows) + 0.1, str(j), ha="center", va="bottom", fontsize=7, color="#666666")
    ax.set_xlim(-0.1, width)
    ax.set_ylim(0, len(rows) + 0.5)
    ax.axis("off")
    return ax


def object_grid(space: SceneSpace, train_ids: np.ndarray) -> np.ndarray:
    """For C=2: a V x V array, 1 where the object (v0, v1) is a training object."""
    if space.n_concepts != 2:
        raise ValueError("object_grid draws two-concept spaces only")
    grid = np.zeros((space.n_values, space.n_values))
    ids = np.asarray(train_ids)
    grid[ids // space.n_values, ids % space.n_values] = 1  # rows: v1, columns: v0
    return grid


def plot_metric_vs_coverage(
    ax: Any,
    table: Any,
    metric: str,
    group: str = "objects",
    baseline: str | None = None,
    label_fmt: str = "|O| = {}",
    ylabel: str = "accuracy",
) -> None:
    """One line per object-space size; a dashed baseline line per size if given."""
    for i, (key, sub) in enumerate(table.groupby(group, sort=True)):
        sub = sub.sort_values("coverage")
        colour = PALETTE[i % len(PALETTE)]
        ax.plot(sub["coverage"], sub[metric], "o-", color=colour, label=label_fmt.format(key))
        if baseline is not None:
            ax.plot(sub["coverage"], sub[baseline], "--", color=colour, alpha=0.6, lw=1.2,
                    label=f"bag of concepts, {label_fmt.format(key)}")
    ax.set_xlabel("object coverage (fraction of objects seen in training)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.03, 1.03)
    ax.legend(loc="best")


def sample_grid(dataset: Any, indices: Sequence[int], ncols: int = 4, title: str | None = None,
                width: float = 2.6):
    """Images of ``dataset`` at ``indices`` with their captions, as the release's sample grid."""
    import textwrap

    if dataset.images is None:
        raise ValueError(f"dataset {dataset.name!r} has no images")
    nrows = (len(indices) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, width * 1.25 * nrows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, i in zip(axes.flat, indices):
        ax.imshow(np.asarray(dataset.images[i]))
        ax.set_title("\n".join(textwrap.wrap(dataset.captions[i], 26)), fontsize=8, family="monospace", loc="left")
    if title:
        fig.suptitle(title, y=1.0)
    fig.tight_layout()
    return fig


def plot_by_fraction(ax: Any, table: Any, metric: str, ylabel: str, families: Sequence[str] | None = None) -> None:
    """``metric`` against the data fraction, one line per family at its widest width."""
    fams = families or list(dict.fromkeys(table["family"]))
    for i, fam in enumerate(fams):
        sub = table[table["family"] == fam]
        if sub.empty:
            continue
        if sub["width"].notna().any():
            sub = sub[sub["width"] == sub["width"].max()]
        sub = sub.groupby("fraction", as_index=False)[metric].mean().sort_values("fraction")
        width = table[table["family"] == fam]["width"].max()
        label = fam if width != width or width is None else f"{fam} (width {int(width)})"
        ax.plot(sub["fraction"], sub[metric], "o-", color=PALETTE[i % len(PALETTE)], label=label)
    ax.set_xlabel("data fraction (objects available for fitting)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.03, 1.03)


def plot_by_width(ax: Any, table: Any, metric: str, ylabel: str, group: str = "fraction") -> None:
    """MLP ``metric`` against hidden width (log scale), one line per ``group`` value."""
    mlp = table[table["family"] == FAMILY_LABELS["mlp"]]
    for i, (key, sub) in enumerate(mlp.groupby(group)):
        sub = sub.groupby("width", as_index=False)[metric].mean().sort_values("width")
        ax.plot(sub["width"], sub[metric], "o-", color=PALETTE[i % len(PALETTE)], label=f"{group} {key:g}"
                if isinstance(key, float) else f"{key}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("MLP hidden width")
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.03, 1.03)


_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p"]


def _value_colours(names: Sequence[str]) -> list[Any]:
    """Colours of concept 0's values: the names themselves if all are colours, else a colour map."""
    if names and all(mcolors.is_color_like(n) for n in names):
        return [mcolors.to_rgba(n) for n in names]
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(len(names))]


def _names(s: EmbeddingSet, c: int) -> list[str]:
    if c < len(s.value_names) and len(s.value_names[c]) == s.values_per_concept[c]:
        return [str(v) for v in s.value_names[c]]
    return [str(v) for v in range(s.values_per_concept[c])]


def plot_mds(axes: Sequence[Any], s: EmbeddingSet, df: pd.DataFrame, annotate_max: int = 30) -> None:
    """The D.5 picture of one set on two axes: objects (colour: concept 0, marker: concept 1;
    labelled up to ``annotate_max``) and concept values, in the first two MDS dimensions."""
    ax_o, ax_c = axes
    objs = df[df["bank"] == "objects"]
    cols = _value_colours(_names(s, 0))
    names0 = _names(s, 0)
    names1 = _names(s, 1) if len(s.values_per_concept) > 1 else [""]
    for v1 in range(len(names1)):
        sub = objs[objs["value_1"].astype(int) == v1] if len(s.values_per_concept) > 1 else objs
        ax_o.scatter(sub["mds_1"], sub["mds_2"], c=[cols[int(v)] for v in sub["value_0"]],
                     marker=_MARKERS[v1 % len(_MARKERS)], s=42, edgecolors="black", linewidths=0.4,
                     label=names1[v1])
        if len(objs) <= annotate_max:
            for _, r in sub.iterrows():
                ax_o.annotate(f"{names0[int(r['value_0'])]} {names1[v1]}".strip(), (r["mds_1"], r["mds_2"]),
                              fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax_o.legend(fontsize=6, title=s.concept_names[1] if len(s.concept_names) > 1 else None, title_fontsize=7,
                loc="best", ncol=2 if len(names1) > 5 else 1)
    ax_o.set_title(f"objects: {s.label}", fontsize=8)
    conc = df[df["bank"] == "concepts"]
    for c in range(len(s.values_per_concept)):
        sub = conc[conc["concept"].astype(int) == c]
        name = s.concept_names[c] if c < len(s.concept_names) else f"concept {c}"
        ax_c.scatter(sub["mds_1"], sub["mds_2"], marker=_MARKERS[c % len(_MARKERS)], s=42, label=name,
                     c=[cols[int(v)] for v in sub["value"]] if c == 0 else "#7f7f7f", edgecolors="black",
                     linewidths=0.4)
        for _, r in sub.iterrows():
            ax_c.annotate(_names(s, c)[int(r["value"])], (r["mds_1"], r["mds_2"]), fontsize=6, xytext=(3, 3),
                          textcoords="offset points")
    ax_c.legend(fontsize=6)
    ax_c.set_title(f"concept values: {s.label}", fontsize=8)
    for ax in axes:
        ax.set_xlabel("MDS 1")
        ax.set_ylabel("MDS 2")


def plot_pixel_samples(cfg: Any, levels: Sequence[str] = LEVELS, n: int = 6, seed: int = 0):
    """The same ``n`` training scenes of a pixel config at each visual level, titled with
    their objects' (fill, border) values."""
    import torch

    space = cfg.space
    scenes = sample_scenes(cfg.split.train, n, space.max_objects, torch.Generator().manual_seed(seed))
    fig, axes = plt.subplots(len(levels), n, figsize=(1.6 * n, 1.75 * len(levels)), squeeze=False)
    for r, level in enumerate(levels):
        imgs = cfg.with_(level=level).render(scenes, torch.Generator().manual_seed(seed))
        for j in range(n):
            ax = axes[r, j]
            ax.imshow(imgs[j].permute(1, 2, 0).numpy(), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            objs = [tuple(space.object_values(o).tolist()) for o in scenes[j] if o >= 0]
            if r == 0:
                ax.set_title(" ".join(f"{o}" for o in objs).replace(" ", ""), fontsize=7)
            if j == 0:
                ax.set_ylabel(LEVEL_LABELS[level], fontsize=8)
    fig.tight_layout()
    return fig


def plot_pixel_levels(table: Any, levels: Sequence[str] | None = None):
    """Per visual level, held-out strict and swap-pair recognition against coverage, with
    the bag-of-concepts floor and ceiling."""
    levels = [lv for lv in (levels or LEVELS) if lv in set(table["level"])]
    fig, axes = plt.subplots(1, len(levels), figsize=(4.6 * len(levels), 3.9), sharey=True, squeeze=False)
    for ax, level in zip(axes[0], levels):
        sub = table[table["level"] == level].groupby("coverage", as_index=False).mean(numeric_only=True)
        sub = sub.sort_values("coverage")
        ax.plot(sub["coverage"], sub["test_object_2"], "o-", color=PALETTE[0], label="held-out scenes, strict")
        if "test_swap_pair" in sub:
            ax.plot(sub["coverage"], sub["test_swap_pair"], "s-", color=PALETTE[1],
                    label="swap pairs (scene and twin)")
        ax.plot(sub["coverage"], sub["test_concept_2"], "^:", color=PALETTE[2], label="concepts, held-out scenes")
        ax.plot(sub["coverage"], sub["boc_ceiling_test_object_2"], "--", color="#555555", lw=1.2,
                label="bag-of-concepts ceiling")
        ax.plot(sub["coverage"], sub["boc_test_object_2"], ":", color="#555555", lw=1.2,
                label="bag-of-concepts oracle (floor)")
        ax.set_title(LEVEL_LABELS[level])
        ax.set_xlabel("object coverage")
        ax.set_ylim(-0.03, 1.03)
    axes[0, 0].set_ylabel("recognition, two-object scenes")
    fig.tight_layout()
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=8, bbox_to_anchor=(0.5, 0.0))
    return fig


def plot_figure9(ax: Any, table: pd.DataFrame, correlations: pd.DataFrame) -> None:
    """Figure 9: the global product's held-out object recognition against the model's own,
    a colour per object-space size (its correlation in the legend)."""
    corr = correlations.set_index("objects")
    drawn = table.dropna(subset=["model: held-out objects", "global product: held-out objects"])
    for i, (objects, sub) in enumerate(drawn.groupby("objects", sort=True)):  # the sizes with a dot, counted
        r = corr.loc[objects, "Pearson r"] if objects in corr.index else np.nan
        label = f"|O| = {objects:,} ({len(sub)} models" + (f", r = {r:.2f})" if np.isfinite(r) else ")")
        ax.scatter(sub["model: held-out objects"], sub["global product: held-out objects"], s=36,
                   color=PALETTE[i % len(PALETTE)], edgecolors="black", linewidths=0.4, label=label)
    ax.plot([0, 1], [0, 1], ":", color=REFERENCE_COLOUR, lw=1)
    ax.set_xlabel("the model's held-out object recognition (two-object scenes)")
    ax.set_ylabel("global product: held-out object recognition")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    if len(drawn):
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)


def plot_scale(axes: Sequence[Any], table: pd.DataFrame, transition: float = 0.5) -> None:
    """§5.2 at several sizes on three axes (seeds as dots, medians as lines): strict held-out
    recognition with its bag ceiling (and the release's protocol), swap pairs, and the
    transition coverage against |O| (open markers: none, drawn at the largest coverage)."""
    keys = ["objects", "C", "V", "coverage"]
    median = table.groupby(keys, as_index=False).median(numeric_only=True)
    release = "release_test_object_2" in table and table["release_test_object_2"].notna().any()
    trans = []
    for i, ((objects, c, v), sub) in enumerate(median.groupby(["objects", "C", "V"], sort=True)):
        sub = sub.sort_values("coverage")
        runs = table[table["objects"] == objects]
        colour = PALETTE[i % len(PALETTE)]
        label = f"|O| = {objects:,} (C = {c}, V = {v})"
        axes[0].plot(sub["coverage"], sub["test_object_2"], "o-", color=colour, label=label)
        axes[0].plot(runs["coverage"], runs["test_object_2"], ".", color=colour, alpha=0.45)
        axes[0].plot(sub["coverage"], sub["boc_ceiling_test_object_2"], ":", color=colour, lw=1.2)
        if release:
            axes[0].plot(sub["coverage"], sub["release_test_object_2"], "--", color=colour, lw=1.2)
        axes[1].plot(sub["coverage"], sub["test_swap_pair"], "o-", color=colour, label=label)
        axes[1].plot(runs["coverage"], runs["test_swap_pair"], ".", color=colour, alpha=0.45)
        t = transition_coverage(sub["coverage"], sub["test_swap_pair"], transition)
        reached = not math.isnan(t)
        trans.append((objects, t if reached else float(sub["coverage"].max()), reached, colour))
    axes[0].set_ylabel("held-out objects, two-object scenes (strict)")
    axes[0].set_title("strict recognition; dotted: bag ceiling" + ("\ndashed: release protocol" if release else ""),
                      fontsize=10)
    axes[1].axhline(transition, color="grey", ls="--", lw=1)
    axes[1].set_ylabel("held-out swap pairs recognised")
    axes[1].set_title("swap pairs (any bag of concepts: 0)\ndots: seeds", fontsize=10)
    for ax in axes[:2]:
        ax.set_xlabel("object coverage")
        ax.set_ylim(-0.03, 1.03)
    axes[0].legend(fontsize=8, loc="upper left")
    for objects, cov, reached, colour in trans:
        axes[2].plot([objects], [cov], "o", color=colour, ms=9, mfc=colour if reached else "none")
    hit = [t for t in trans if t[2]]  # a line through the sizes with a transition only
    axes[2].plot([t[0] for t in hit], [t[1] for t in hit], "-", color="grey", lw=1, zorder=0)
    axes[2].set_xscale("log")
    axes[2].set_xlabel("|O| (objects in the space)")
    axes[2].set_ylabel(f"transition coverage (median swap pairs >= {transition:g})")
    axes[2].set_ylim(0, 1)
    axes[2].set_title("open marker: no transition\nup to that coverage", fontsize=10)


def _panel_grid(n: int, ncols: int, width: float, height: float, **kw: Any):
    """A figure of ``n`` panels, ``ncols`` to a row, ``width`` x ``height`` inches each."""
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)
    for ax in axes.flat[n:]:
        ax.axis("off")
        ax.set_visible(False)
    return fig, axes


def _steps_axis(ax) -> None:
    """A training-step axis with a few ticks in thousands (``5k``)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if x else "0"))


def _label_bottom_panels(axes, label: str) -> None:
    """The x ticks and ``label`` on each column's lowest drawn panel (a shared x axis shows
    none where the bottom panel is hidden)."""
    nrows, ncols = axes.shape
    for col in range(ncols):
        visible = [r for r in range(nrows) if axes[r, col].get_visible()]
        if visible:
            axes[visible[-1], col].xaxis.set_tick_params(labelbottom=True)
            axes[visible[-1], col].set_xlabel(label, fontsize=8)


def _median_at_shared_steps(curves: Sequence[pd.Series]) -> pd.Series:
    """The median over ``curves`` (values indexed by step) at the steps every one has."""
    return pd.concat(list(curves), axis=1, join="inner").median(axis=1)


def plot_binding_curves(records: Sequence[dict[str, Any]], metric: str = "test_swap_pair", ncols: int = 4):
    """``metric`` over training steps, a panel per size, a colour per coverage, thin per run
    and thick for the median; None when no record has ``metric``."""
    runs = []  # (objects, coverage, the metric by step)
    for r in records:
        c, h = r["config"], pd.DataFrame(r["history"])
        if metric in h:
            runs.append((c["n_values"] ** c["n_concepts"], c["coverage"], h.set_index("step")[metric]))
    if not runs:
        return None
    sizes = sorted({objects for objects, _, _ in runs})
    covs = sorted({cov for _, cov, _ in runs})
    cmap = mpl.colormaps["viridis_r"]
    colour = {cov: cmap(0.15 + 0.75 * i / max(1, len(covs) - 1)) for i, cov in enumerate(covs)}
    fig, axes = _panel_grid(len(sizes), min(ncols, len(sizes)), 3.4, 2.8, sharey=True)
    for ax, objects in zip(axes.flat, sizes):
        for cov in covs:
            mine = [curve for o, cv, curve in runs if o == objects and cv == cov]
            for curve in mine:
                ax.plot(curve.index, curve.values, "-", lw=0.7, alpha=0.6, color=colour[cov])
            if mine:
                median = _median_at_shared_steps(mine)
                ax.plot(median.index, median.values, "-", lw=2.2, color=colour[cov],
                        label=f"coverage {cov:g} ({len(mine)} run{'s' if len(mine) > 1 else ''})")
        ax.set_title(f"|O| = {objects:,}", fontsize=10)
        ax.set_xlabel("training step")
        _steps_axis(ax)
        ax.set_ylim(-0.03, 1.03)
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def _same_recipe(attempts: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]], float]]:
    """Attempts of one recipe (same base and changes) as one ``(first name, runs, target)``."""
    groups: dict[str, tuple[str, list[dict[str, Any]], float]] = {}
    for a in attempts:
        key = repr((a.get("base"), sorted((a.get("changes") or {}).items()))) if a.get("changes") else a["name"]
        name, runs, target = groups.get(key, (a["name"], [], a["target"]))
        groups[key] = (name, runs + list(a["runs"]), target)
    return list(groups.values())


def plot_fit_search(attempts: Sequence[dict[str, Any]], ncols: int = 4):
    """The ``task_object_2`` curves of a fit-search log, a panel per recipe, a line per seed,
    the median black and the target dashed; None without attempts."""
    if not attempts:
        return None
    recipes = _same_recipe(attempts)
    fig, axes = _panel_grid(len(recipes), ncols, 3.1, 2.4, sharex=True, sharey=True)
    for ax, (name, runs, target) in zip(axes.flat, recipes):
        curves = {}
        for run in runs:
            steps = [c["step"] for c in run["curve"]]
            values = [c["task_object_2"] for c in run["curve"]]
            curves[run["seed"]] = pd.Series(values, index=steps)
            ax.plot(steps, values, "-o", ms=2, lw=1, color=PALETTE[run["seed"] % len(PALETTE)],
                    label=f"seed {run['seed']}")
        median = _median_at_shared_steps(curves.values()) if len(curves) > 1 else None
        if median is not None and len(median):
            ax.plot(median.index, median.values, "-", lw=2.2, color="black", label="median")
        ax.axhline(target, color="grey", ls="--", lw=1)
        ax.set_title(name, fontsize=8)
        ax.set_ylim(-0.03, 1.03)
        ax.tick_params(labelsize=7)
        _steps_axis(ax)
    for ax in axes[:, 0]:
        ax.set_ylabel("training task (task_object_2)", fontsize=8)
    _label_bottom_panels(axes, "step")
    axes.flat[0].legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    return fig
