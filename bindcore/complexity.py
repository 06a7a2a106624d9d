"""Binding-function complexity analyses of §5.1, §5.3 and §5.4, as the chapters use
them: which encoders and controlled runs to analyse, the protocol of a profile, and
tidy tables and figures of approximator sweeps (:mod:`bindcore.approximators`)."""

from __future__ import annotations

from typing import Any, Sequence

from .approximators import TREE_GRIDS, get_protocol, select_best
from .plotting import PALETTE

FAMILY_LABELS = {
    "mlp": "MLP", "additive": "additive (bag of concepts)", "global_product": "global product",
    "sum_global_product": "additive + global product", "within_object_product": "within-object product",
    "sum_within_object_product": "additive + within-object product", "xgboost": "XGBoost",
    "random_forest": "random forest",
}


def protocol_for(params: dict[str, Any]):
    """The approximators' training protocol of a chapter's parameters: the paper's
    protocol (Adam, minibatches, lr grid) with the profile's steps, batch and lrs."""
    return get_protocol("paper", steps=params["steps"], lrs=params["lrs"], batch_size=params["batch_size"],
                        eval_every=max(1, params["steps"] // 10))


def tree_grid(name: str) -> dict[str, list[dict[str, Any]]]:
    """``small``: one configuration per tree kind (smoke, quick); ``full``: the grids of
    :data:`bindcore.approximators.TREE_GRIDS`."""
    if name == "full":
        return TREE_GRIDS
    return {"xgboost": [dict(n_estimators=150, learning_rate=0.1, max_depth=4, subsample=0.8, colsample_bytree=0.8)],
            "random_forest": [dict(n_estimators=100, max_features=0.33, min_samples_leaf=1)]}


def approximator_table(records: Sequence[dict[str, Any]], **columns: Any):
    """One row per family x width x fraction (x seed), the learning rate or tree
    configuration chosen on the validation scenes (never on held-out objects), with
    concept / object recognition and R² on held-out, training and mixed scenes at
    the selected step. Extra ``columns`` (e.g. ``encoder="MiniLM"``) are added."""
    import pandas as pd

    rows = []
    for r in select_best(records):
        row = {"family": FAMILY_LABELS.get(r["family"], r["family"]), "width": r["width"], "lr": r["lr"],
               "fraction": r["fraction"], "seed": r["seed"], "fit scenes": r["n_fit"],
               "held-out scenes": r["n_heldout"]}
        for subset in ("heldout", "train", "mixed"):
            for m in ("concept", "object", "r2"):
                row[f"{subset}_{m}"] = r.get(f"selected_{subset}_{m}")
        row["seconds"] = r.get("seconds")
        row.update(columns)
        rows.append(row)
    return pd.DataFrame(rows)


def plot_by_fraction(ax: Any, table: Any, metric: str, ylabel: str, families: Sequence[str] | None = None) -> None:
    """``metric`` against the data fraction, one line per family (the widest width of
    each family, whose capacity is least in doubt)."""
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


def generalizing_runs(profile: str, workers: int | None = None, device: str | None = None) -> list[dict[str, Any]]:
    """The controlled dual encoders of §5.2 trained at the largest coverage of each
    object space of ``profile`` (stored runs are reused)."""
    from .profiles import chapter_parameters
    from .recipes import recipe
    from .sweep import generalization_configs, run_sweep

    p = chapter_parameters("binding_generalization", profile)
    configs = generalization_configs(recipe(profile), {**p, "coverages": [max(p["coverages"])], "seeds": p["seeds"][:1]})
    return run_sweep(configs, workers=workers, device=device, progress=False)
