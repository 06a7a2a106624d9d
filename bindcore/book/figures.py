"""One figure style for the whole book, and the figures the chapters share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from bindcore.controlled.scenes import SceneSpace

PALETTE = ["#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6c4f9c", "#00798c", "#8c564b", "#7f7f7f"]
PAPER_COLOUR = "#555555"


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
    """Images of ``dataset`` (a :class:`bindcore.data.SceneDataset`) with their captions
    above them, like the sample grid of the authors' release."""
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
