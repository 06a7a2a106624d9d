"""The book's figure style and the figures the chapters share (§3, §5, D.5, appendix E)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from bindcore.analysis.approximators.labels import FAMILY_LABELS
from bindcore.analysis.embedding_sets import frame_row
from bindcore.analysis.generalization import transition_coverage
from bindcore.analysis.geometry_sets import EmbeddingSet
from bindcore.controlled.scenes import SceneSpace, sample_scenes
from bindcore.controlled.search import BINDS_AT
from bindcore.data.pixels import LEVEL_LABELS, LEVELS
from bindcore.paper import fmt_objects

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


# -- readable at the page's width (tests/pagecheck.py checks every figure against these) --
PAGE_WIDTH_IN = 7.0  # a figure this wide (at figure.dpi 110: 770 px) shows unscaled on the page
MAX_PANELS_PER_ROW = 3


def _overlap(a: Any, b: Any) -> float:
    """Area (display pixels²) two bounding boxes share."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


# where a point's label may sit, tried in this order: offsets in points from the point
_LABEL_OFFSETS = [(r * dx, r * dy) for r in (4, 9, 15, 22, 30, 40)
                  for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))]


def place_labels(ax: Any, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str], fontsize: float = 8,
                 marker_pt: float = 4.0) -> None:
    """Label each point (``xs``, ``ys``) of ``ax`` where its label covers no label placed before,
    no other point and stays inside the axes: the first free offset of :data:`_LABEL_OFFSETS`
    (else the least covered), with a thin line to its point when it sits away from it. Call it
    once the figure's layout is final (after ``tight_layout``)."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    scale = fig.dpi / 72
    points = ax.transData.transform(np.column_stack([np.asarray(xs, float), np.asarray(ys, float)]))
    r = marker_pt * scale
    marks = [mpl.transforms.Bbox([[x - r, y - r], [x + r, y + r]]) for x, y in points]
    frame = ax.get_window_extent(renderer)
    placed: list[Any] = []
    for i, (x, y, label) in enumerate(zip(xs, ys, labels)):
        best = None
        for dx, dy in _LABEL_OFFSETS:
            text = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                               ha="left" if dx > 0 else "right" if dx < 0 else "center",
                               va="bottom" if dy > 0 else "top" if dy < 0 else "center")
            box = text.get_window_extent(renderer)
            cost = (sum(_overlap(box, b) for b in placed) + sum(_overlap(box, m) for j, m in enumerate(marks) if j != i)
                    + box.width * box.height - _overlap(box, frame))
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, text, box, (dx, dy))
            else:
                text.remove()
            if cost == 0:
                break
        _, text, box, (dx, dy) = best
        if max(abs(dx), abs(dy)) > 9:  # away from its point: a line says whose label it is
            text.remove()
            text = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                               ha=text.get_ha(), va=text.get_va(),
                               arrowprops={"arrowstyle": "-", "color": "#888888", "lw": 0.5, "shrinkA": 0,
                                           "shrinkB": 2})
        placed.append(box)


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
        _, ax = plt.subplots(figsize=(min(PAGE_WIDTH_IN, 0.7 * width + 1.5), 0.75 * len(rows) + 0.6))
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
                    fontsize=8, color=text_colour)
        ax.text(-0.15, y + 0.5, labels[i], ha="right", va="center", fontsize=9)
    for j in range(width):
        ax.text(j + 0.5, len(rows) + 0.1, str(j), ha="center", va="bottom", fontsize=8, color="#666666")
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


def sample_grid(dataset: Any, indices: Sequence[int], ncols: int = MAX_PANELS_PER_ROW, title: str | None = None,
                width: float = PAGE_WIDTH_IN / MAX_PANELS_PER_ROW):
    """Images of ``dataset`` at ``indices`` with captions, ``ncols`` a row, ``width`` inches each."""
    if dataset.images is None:
        raise ValueError(f"dataset {dataset.name!r} has no images")
    indices = list(indices)
    nrows = (len(indices) + ncols - 1) // ncols
    first = np.asarray(dataset.images[indices[0]]) if indices else np.zeros((1, 1))
    aspect = first.shape[0] / first.shape[1]  # the images' height over width: no blank band between rows
    chars = int(width * 72 / (0.6 * 8)) - 2  # a caption line's characters at 8 pt monospace
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, width * (aspect + 0.3) * nrows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, i in zip(axes.flat, indices):
        ax.imshow(np.asarray(dataset.images[i]))
        ax.set_title("\n".join(textwrap.wrap(dataset.captions[i], chars)), fontsize=8, family="monospace",
                     loc="left")
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


def plot_mds(axes: Sequence[Any], s: EmbeddingSet, df: pd.DataFrame) -> None:
    """D.5 on two axes, first two MDS dimensions: objects (colour: concept 0, marker: concept 1) and
    concept values; legends below the axes (the points' labels: :func:`label_mds`)."""
    ax_o, ax_c = axes
    objs = df[df["bank"] == "objects"]
    cols = _value_colours(_names(s, 0))
    names1 = _names(s, 1) if len(s.values_per_concept) > 1 else [""]
    for v1 in range(len(names1)):
        sub = objs[objs["value_1"].astype(int) == v1] if len(s.values_per_concept) > 1 else objs
        ax_o.scatter(sub["mds_1"], sub["mds_2"], c=[cols[int(v)] for v in sub["value_0"]],
                     marker=_MARKERS[v1 % len(_MARKERS)], s=42, edgecolors="black", linewidths=0.4)
        ax_o.scatter([], [], marker=_MARKERS[v1 % len(_MARKERS)], s=42, c="#bbbbbb", edgecolors="black",
                     linewidths=0.4, label=names1[v1])  # the legend's marker, in neutral grey
    if len(s.values_per_concept) > 1:
        ax_o.legend(title=s.concept_names[1] if len(s.concept_names) > 1 else None, fontsize=8,
                    title_fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=min(5, len(names1)),
                    handletextpad=0.2, columnspacing=0.8)
    name0 = s.concept_names[0] if s.concept_names else "concept 0"
    name1 = f", {s.concept_names[1]} as marker" if len(s.concept_names) > 1 and len(s.values_per_concept) > 1 else ""
    ax_o.set_title(f"objects: {name0} as colour{name1}", fontsize=9)
    conc = df[df["bank"] == "concepts"]
    for c in range(len(s.values_per_concept)):
        sub = conc[conc["concept"].astype(int) == c]
        name = s.concept_names[c] if c < len(s.concept_names) else f"concept {c}"
        ax_c.scatter(sub["mds_1"], sub["mds_2"], marker=_MARKERS[c % len(_MARKERS)], s=42, label=name,
                     c=[cols[int(v)] for v in sub["value"]] if c == 0 else "#7f7f7f", edgecolors="black",
                     linewidths=0.4)
    ax_c.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    ax_c.set_title("concept values", fontsize=9)
    for ax in axes:
        ax.set_xlabel("MDS 1", fontsize=9)
        ax.set_ylabel("MDS 2", fontsize=9)
        ax.tick_params(labelsize=8)


def label_mds(axes: Sequence[Any], s: EmbeddingSet, df: pd.DataFrame, annotate_max: int = 16) -> None:
    """The value names of :func:`plot_mds`'s points, placed apart (:func:`place_labels`): every
    concept value, and each object where there are at most ``annotate_max``."""
    ax_o, ax_c = axes
    objs = df[df["bank"] == "objects"]
    if len(objs) <= annotate_max:
        names0 = _names(s, 0)
        names1 = _names(s, 1) if len(s.values_per_concept) > 1 else None
        labels = [f"{names0[int(r['value_0'])]} {names1[int(r['value_1'])] if names1 else ''}".strip()
                  for _, r in objs.iterrows()]
        place_labels(ax_o, objs["mds_1"], objs["mds_2"], labels)
    conc = df[df["bank"] == "concepts"]
    place_labels(ax_c, conc["mds_1"], conc["mds_2"],
                 [_names(s, int(c))[int(v)] for c, v in zip(conc["concept"], conc["value"])])


def mds_figure(s: EmbeddingSet, df: pd.DataFrame, annotate_max: int = 16):
    """:func:`plot_mds` of one set as a figure of the page's width, titled with the set, its
    points labelled once the layout is set (:func:`label_mds`)."""
    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH_IN, 3.8), gridspec_kw={"width_ratios": [1.25, 1]})
    plot_mds(axes, s, df)
    fig.suptitle(s.label, fontsize=10)
    fig.tight_layout()
    label_mds(axes, s, df, annotate_max=annotate_max)
    return fig


# -- §4.1, §4.2, D.2 and D.3: one bar or panel per embedding set --
def _set_label(s: EmbeddingSet, width: int = 24) -> str:
    """The set's dataset over its encoder, each wrapped at ``width`` characters."""
    return "\n".join(textwrap.wrap(s.dataset, width) + textwrap.wrap(s.encoder, width))


def _grouped_hbars(ax: Any, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]],
                   height: float = 0.8) -> None:
    """Horizontal bars, a group per label (first on top) and a bar per ``(name, values)``."""
    n, h = len(series), height / max(1, len(series))
    y = np.arange(len(labels))[::-1]
    for i, (name, vals) in enumerate(series):
        ax.barh(y + (n - 1) / 2 * h - i * h, np.asarray(vals, dtype=float), h, label=name,
                color=PALETTE[i % len(PALETTE)])
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_ylim(-0.5, len(labels) - 0.5)
    ax.grid(axis="y", visible=False)
    ax.tick_params(axis="x", labelsize=8)


def legend_below(fig: Any, ax: Any = None, ncol: int = 2, handles: Sequence[Any] | None = None,
                 fontsize: float = 9) -> None:
    """``ax``'s legend (or one of ``handles``) under the whole figure (call after ``tight_layout``)."""
    if handles is None:
        handles, _ = ax.get_legend_handles_labels()
    fig.legend(handles=list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, fontsize=fontsize)


def model_panels(names: Sequence[str], rows_per_model: int = 1, height: float = 2.2):
    """(figure, panels per model): ``rows_per_model`` panels stacked per model, at most
    :data:`MAX_PANELS_PER_ROW` models a row, each top panel titled with its name."""
    ncols = min(MAX_PANELS_PER_ROW, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = _panel_grid(nrows * rows_per_model * ncols, ncols, PAGE_WIDTH_IN / ncols, height, sharey=True)
    out = []
    for j, name in enumerate(names):
        r0, col = (j // ncols) * rows_per_model, j % ncols
        panels = [axes[r0 + k, col] for k in range(rows_per_model)]
        panels[0].set_title("\n".join(textwrap.wrap(name, 28)), fontsize=9)
        out.append(panels)
    for j in range(len(names), nrows * ncols):
        for k in range(rows_per_model):
            axes[(j // ncols) * rows_per_model + k, j % ncols].set_visible(False)
    return fig, out


def plot_decomposition(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame], title: str | None = None):
    """§4.1: R² of each set's bag-of-concepts and bag-of-objects reconstructions (avg and per slot)."""
    bars = [("concepts", "avg", "bag of concepts (avg)"), ("concepts", "pos-avg", "bag of concepts (per slot)"),
            ("objects", "avg", "bag of objects (avg)"), ("objects", "pos-avg", "bag of objects (per slot)")]
    series = [(name, [frame_row(df, kind, est)["r2_eval"] for df in frames]) for kind, est, name in bars]
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 0.6 * len(sets) + 1.0))
    _grouped_hbars(ax, [_set_label(s) for s in sets], series)
    ax.set_xlabel("R² of the reconstruction (all scenes)", fontsize=9)
    ax.set_xlim(min(0.0, min(min(v) for _, v in series)), 1.0)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    legend_below(fig, ax)
    return fig


def plot_editing_sweep(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame], case: str = "different",
                       title: str | None = None):
    """D.2: counterfactual retrieval against editing strength k, a panel per set, a line per bank."""
    ncols = min(MAX_PANELS_PER_ROW, len(sets))
    fig, axes = _panel_grid(len(sets), ncols, PAGE_WIDTH_IN / MAX_PANELS_PER_ROW, 2.1, sharex=True, sharey=True)
    for ax, s, df in zip(axes.flat, sets, frames):
        for i, (bank, b) in enumerate(df[df["case"] == case].groupby("bank", sort=False)):
            ax.plot(b["k"], b["retrieval"], "o-", color=PALETTE[i], label=bank, ms=3)
        ax.axvline(1.0, color="#999999", ls=":", lw=1)
        ax.set_title(f"{s.dataset}\n{s.encoder}", fontsize=8)
        ax.set_ylim(-0.03, 1.03)
        ax.tick_params(labelsize=8)
    for row in axes:
        row[0].set_ylabel("retrieval", fontsize=9)
    _label_bottom_panels(axes, "strength k")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    legend_below(fig, axes[0, 0], ncol=3)
    return fig


def plot_attribution(sets: Sequence[EmbeddingSet], table: pd.DataFrame, title: str | None = None):
    """§4.2 / D.1: concept and object decoding after each subtraction, a bar group per set; ``table``:
    :func:`bindcore.book.tables.attribution_table`."""
    variants = list(dict.fromkeys(table["variant"]))
    labels = [_set_label(s, 20) for s in sets]
    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH_IN, 0.75 * len(sets) + 1.2), sharey=True)
    for ax, metric in zip(axes, ("concepts", "objects")):
        series = [(v, [table[(table["dataset"] == s.dataset) & (table["encoder"] == s.encoder)
                             & (table["variant"] == v)][metric].iloc[0] for s in sets]) for v in variants]
        _grouped_hbars(ax, labels, series)
        ax.set_title(f"{metric} decoded after subtraction", fontsize=9)
        ax.set_xlim(0, 1.02)
        ax.set_xlabel("probe accuracy (test scenes)", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    legend_below(fig, axes[0], ncol=3)
    return fig


def plot_three_objects(long: pd.DataFrame):
    """D.3: held-out R² of reconstructions and retrieval of object reconstructions, per occlusion and
    encoder."""
    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH_IN, 3.2))
    labels = []
    for i, ((occ, enc), sub) in enumerate(long.groupby(["occlusion", "encoder"], sort=True)):
        labels.append(textwrap.fill(f"{'occluded' if occ else 'no occlusion'}, {enc}", 16))
        for j, (kind, est) in enumerate([("concepts", "avg"), ("objects", "avg"), ("concepts", "lstsq"),
                                         ("objects", "lstsq")]):
            r = frame_row(sub, kind, est)
            axes[0].bar(i + (j - 1.5) * 0.2, r["r2_heldout"], 0.2, color=PALETTE[j],
                        label=f"bag of {kind} ({est})" if i == 0 else None)
        o = frame_row(sub, "objects", "avg")
        axes[1].bar(i - 0.15, o["retrieval"], 0.3, color=PALETTE[4], label="retrieval: all scenes" if i == 0 else None)
        axes[1].bar(i + 0.15, o["retrieval_heldout"], 0.3, color=PALETTE[5],
                    label="retrieval: held-out scenes" if i == 0 else None)
        axes[1].plot([i - 0.3, i + 0.3], [o["retrieval_chance_heldout"]] * 2, color="black", lw=1,
                     label="retrieval: chance (held out)" if i == 0 else None)
    for ax, title in zip(axes, ["held-out R² of the reconstructions", "retrieval of object\nreconstructions (avg)"]):
        ax.set_xticks(range(len(labels)), labels, fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("R²", fontsize=9)
    axes[1].set_ylabel("top-1 retrieval", fontsize=9)
    axes[1].set_ylim(0, 1.05)
    fig.tight_layout()
    handles, names = zip(*[hl for ax in axes for hl in zip(*ax.get_legend_handles_labels())])
    fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8)
    return fig


def plot_pixel_samples(cfg: Any, levels: Sequence[str] = LEVELS, n: int = 6, seed: int = 0):
    """The same ``n`` training scenes of a pixel config at each visual level, titled with their values."""
    import torch

    space = cfg.space
    scenes = sample_scenes(cfg.split.train, n, space.max_objects, torch.Generator().manual_seed(seed))
    fig, axes = plt.subplots(len(levels), n, figsize=(PAGE_WIDTH_IN, PAGE_WIDTH_IN / n * 1.15 * len(levels)),
                             squeeze=False)
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
                ax.set_title(" ".join(f"{o}" for o in objs).replace(" ", ""), fontsize=8)
            if j == 0:
                ax.set_ylabel(LEVEL_LABELS[level], fontsize=8)
    fig.tight_layout()
    return fig


def plot_pixel_levels(table: Any, levels: Sequence[str] | None = None):
    """Per visual level, held-out recognition against coverage, with the bag floor and ceiling."""
    levels = [lv for lv in (levels or LEVELS) if lv in set(table["level"])]
    fig, axes = plt.subplots(1, len(levels), figsize=(PAGE_WIDTH_IN, 3.0), sharey=True, squeeze=False)
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
    legend_below(fig, axes[0, 0], ncol=3, fontsize=8)
    return fig


def plot_figure9(ax: Any, table: pd.DataFrame, correlations: pd.DataFrame) -> None:
    """Figure 9: the global product's held-out recognition against the model's, a colour per size (its
    rank correlation, the one figure 9's verdict reads, in the legend, below the axes)."""
    corr = correlations.set_index("objects")
    drawn = table.dropna(subset=["model: held-out objects", "global product: held-out objects"])
    for i, (objects, sub) in enumerate(drawn.groupby("objects", sort=True)):  # the sizes with a dot, counted
        rho = corr.loc[objects, "Spearman rho"] if objects in corr.index else np.nan
        label = (f"{fmt_objects(objects)} ({len(sub)} models"
                 + (f", rank correlation {rho:.2f})" if np.isfinite(rho) else ")"))
        ax.scatter(sub["model: held-out objects"], sub["global product: held-out objects"], s=36,
                   color=PALETTE[i % len(PALETTE)], edgecolors="black", linewidths=0.4, label=label)
    ax.plot([0, 1], [0, 1], ":", color=REFERENCE_COLOUR, lw=1)
    ax.set_xlabel("the model's held-out object recognition (two-object scenes)")
    ax.set_ylabel("global product: held-out object recognition")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    if len(drawn):
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)


def plot_scale(axes: Sequence[Any], table: pd.DataFrame) -> None:
    """§5.2 at several sizes on three axes (seeds dots, medians lines): strict recognition with bag ceiling
    (and release protocol), swap pairs, and transition coverage against |O| (open: none)."""
    keys = ["objects", "C", "V", "coverage"]
    median = table.groupby(keys, as_index=False).median(numeric_only=True)
    release = "release_test_object_2" in table and table["release_test_object_2"].notna().any()
    trans = []
    for i, ((objects, c, v), sub) in enumerate(median.groupby(["objects", "C", "V"], sort=True)):
        sub = sub.sort_values("coverage")
        runs = table[table["objects"] == objects]
        colour = PALETTE[i % len(PALETTE)]
        label = f"{fmt_objects(objects)} (C = {c}, V = {v})"
        axes[0].plot(sub["coverage"], sub["test_object_2"], "o-", color=colour, label=label)
        axes[0].plot(runs["coverage"], runs["test_object_2"], ".", color=colour, alpha=0.45)
        axes[0].plot(sub["coverage"], sub["boc_ceiling_test_object_2"], ":", color=colour, lw=1.2)
        if release:
            axes[0].plot(sub["coverage"], sub["release_test_object_2"], "--", color=colour, lw=1.2)
        axes[1].plot(sub["coverage"], sub["test_swap_pair"], "o-", color=colour, label=label)
        axes[1].plot(runs["coverage"], runs["test_swap_pair"], ".", color=colour, alpha=0.45)
        t = transition_coverage(sub["coverage"], sub["test_swap_pair"])
        reached = not math.isnan(t)
        trans.append((objects, t if reached else float(sub["coverage"].max()), reached, colour))
    axes[0].set_ylabel("strict, held-out objects")
    axes[0].set_title("dotted: bag ceiling" + ("\ndashed: release protocol" if release else ""), fontsize=9)
    axes[1].axhline(BINDS_AT, color="grey", ls="--", lw=1)
    axes[1].set_ylabel("swap pairs, held-out objects")
    axes[1].set_title("a bag of concepts: 0\ndots: seeds", fontsize=9)
    for ax in axes[:2]:
        ax.set_xlabel("object coverage")
        ax.set_ylim(-0.03, 1.03)
    for objects, cov, reached, colour in trans:
        axes[2].plot([objects], [cov], "o", color=colour, ms=9, mfc=colour if reached else "none")
    hit = [t for t in trans if t[2]]  # a line through the sizes with a transition only
    axes[2].plot([t[0] for t in hit], [t[1] for t in hit], "-", color="grey", lw=1, zorder=0)
    axes[2].set_xscale("log")
    sizes = sorted({t[0] for t in trans})  # ticked at the sizes drawn, none between
    axes[2].set_xticks(sizes, [f"{o / 1000:g}k" if o >= 1000 else f"{o:g}" for o in sizes])
    axes[2].xaxis.set_minor_locator(mpl.ticker.NullLocator())
    if sizes:
        axes[2].set_xlim(sizes[0] / 2, sizes[-1] * 2)
    axes[2].set_xlabel("|O|")
    axes[2].set_ylabel(f"transition (swap pairs >= {BINDS_AT:g})")
    axes[2].set_ylim(0, 1)
    axes[2].set_title("open: no transition up\nto that coverage", fontsize=9)
    fig = axes[0].figure
    fig.tight_layout()
    legend_below(fig, axes[0], ncol=2)


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
    """The x ticks and ``label`` on each column's lowest visible panel."""
    nrows, ncols = axes.shape
    for col in range(ncols):
        visible = [r for r in range(nrows) if axes[r, col].get_visible()]
        if visible:
            axes[visible[-1], col].xaxis.set_tick_params(labelbottom=True)
            axes[visible[-1], col].set_xlabel(label, fontsize=8)


def _median_at_shared_steps(curves: Sequence[pd.Series]) -> pd.Series:
    """The median over ``curves`` (values indexed by step) at the steps every one has."""
    return pd.concat(list(curves), axis=1, join="inner").median(axis=1)


def plot_binding_curves(records: Sequence[dict[str, Any]], metric: str = "test_swap_pair",
                        ncols: int = MAX_PANELS_PER_ROW):
    """``metric`` over training steps, a panel per size, a colour per coverage, thin per run, thick for
    the median; None when no record has ``metric``."""
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
    fig, axes = _panel_grid(len(sizes), min(ncols, len(sizes)), PAGE_WIDTH_IN / MAX_PANELS_PER_ROW, 2.2,
                            sharey=True)
    for ax, objects in zip(axes.flat, sizes):
        for cov in covs:
            mine = [curve for o, cv, curve in runs if o == objects and cv == cov]
            for curve in mine:
                ax.plot(curve.index, curve.values, "-", lw=0.7, alpha=0.6, color=colour[cov])
            if mine:
                median = _median_at_shared_steps(mine)
                ax.plot(median.index, median.values, "-", lw=2.2, color=colour[cov],
                        label=f"coverage {cov:g} ({len(mine)} run{'s' if len(mine) > 1 else ''})")
        ax.set_title(fmt_objects(objects), fontsize=9)
        ax.set_xlabel("training step")
        _steps_axis(ax)
        ax.set_ylim(-0.03, 1.03)
    fig.tight_layout()
    handles = [Line2D([], [], color=colour[cov], lw=2.2, label=f"coverage {cov:g}") for cov in covs]
    handles += [Line2D([], [], color="grey", lw=0.7, label="one run"),
                Line2D([], [], color="grey", lw=2.2, label="median of the runs")]
    legend_below(fig, ncol=min(5, len(handles)), handles=handles, fontsize=8)
    return fig


def _same_recipe(attempts: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]], float]]:
    """Attempts of one recipe (same base and changes) as one ``(first name, runs, target)``."""
    groups: dict[str, tuple[str, list[dict[str, Any]], float]] = {}
    for a in attempts:
        key = repr((a.get("base"), sorted((a.get("changes") or {}).items()))) if a.get("changes") else a["name"]
        name, runs, target = groups.get(key, (a["name"], [], a["target"]))
        groups[key] = (name, runs + list(a["runs"]), target)
    return list(groups.values())


def plot_fit_search(attempts: Sequence[dict[str, Any]], ncols: int = MAX_PANELS_PER_ROW):
    """A fit-search log's ``task_object_2`` curves, a panel per recipe, a line per seed, median black,
    target dashed; None without attempts."""
    if not attempts:
        return None
    recipes = _same_recipe(attempts)
    fig, axes = _panel_grid(len(recipes), ncols, PAGE_WIDTH_IN / ncols, 2.1, sharex=True, sharey=True)
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
        ax.tick_params(labelsize=8)
        _steps_axis(ax)
    for ax in axes[:, 0]:
        ax.set_ylabel("training task", fontsize=8)
    _label_bottom_panels(axes, "step")
    fig.tight_layout()
    seeds = sorted({run["seed"] for _, runs, _ in recipes for run in runs})
    handles = [Line2D([], [], color=PALETTE[s % len(PALETTE)], marker="o", ms=2, lw=1, label=f"seed {s}")
               for s in seeds]
    handles += [Line2D([], [], color="black", lw=2.2, label="median"),
                Line2D([], [], color="grey", ls="--", lw=1, label="target")]
    legend_below(fig, ncol=min(6, len(handles)), handles=handles, fontsize=8)
    return fig
