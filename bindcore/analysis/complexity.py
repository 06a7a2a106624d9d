"""Binding-function complexity analyses of §5.1, §5.3 and §5.4, as the chapters use
them: which encoders and controlled runs to analyse, the protocol of a profile, and
tidy tables and figures of approximator sweeps (:mod:`bindcore.approximators`)."""

from __future__ import annotations

from typing import Any, Sequence

from bindcore.store import Kind

from .approximators import TREE_GRIDS, get_protocol, select_best
from bindcore.book.figures import PALETTE

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
    from bindcore.book.profiles import chapter_parameters
    from bindcore.controlled.recipes import recipe
    from bindcore.sweep import generalization_configs, run_sweep

    p = chapter_parameters("binding_generalization", profile)
    configs = generalization_configs(recipe(profile), {**p, "coverages": [max(p["coverages"])], "seeds": p["seeds"][:1]})
    return run_sweep(configs, workers=workers, device=device, progress=False)


# ---------------------------------------------------------------------------------
# stored sweeps and the data the chapters analyse
# ---------------------------------------------------------------------------------
APPROX_STORE_KIND = Kind("approximators-1", ("bindcore.analysis.complexity",))


def binding_data_hash(data: Any) -> str:
    """Content hash of a :class:`~bindcore.probes.BindingData` (scenes, embeddings, probes)."""
    from bindcore.io import arrays_hash

    return arrays_hash(data.objects, data.embeddings, data.object_probe, *data.concept_probes)


def stored_sweep(data: Any, fractions: Sequence[float], families: Sequence[str], protocol: Any,
                 widths: Any = None, tree_grid: Any = None, device: str | None = None, store: Any = None,
                 **kwargs: Any) -> list[dict[str, Any]]:
    """:func:`bindcore.approximators.sweep_fractions`, stored under a hash of its inputs
    (the binding data's content, fractions, families, widths, protocol, tree grid), so
    that a chapter re-executes, and the reproduction report reads it, in seconds."""
    from dataclasses import asdict

    from .approximators import sweep_fractions
    from bindcore.store import ResultStore

    store = store or ResultStore()
    key = {"data": binding_data_hash(data), "name": data.name, "fractions": list(fractions),
           "families": list(families), "widths": widths, "protocol": asdict(protocol), "tree_grid": tree_grid,
           **kwargs}

    def compute() -> dict[str, Any]:
        records = sweep_fractions(data, fractions, families, widths=widths, protocol=protocol, tree_grid=tree_grid,
                                  device=device, progress=False, **kwargs)
        for r in records:
            r.pop("predictions", None)
        return {"records": records}

    return store.cached(APPROX_STORE_KIND, key, compute)["records"]


def pretrained_binding(params: dict[str, Any], encoders: dict[str, Any]):
    """§5.1's data: the two-object captions of the adjective-noun space, each encoder's
    (cached) embeddings, linear probes fitted on 40 % of the scenes and frozen.
    Returns ({encoder name: BindingData}, table of probe accuracies on the other 60 %)."""
    import pandas as pd

    from bindcore.data import make_text_space
    from bindcore.encoders import embed_dataset
    from .probes import LinearProbes, scene_split

    space = make_text_space(*params["text_space"], singles=False)
    tr, te = scene_split(len(space), 0.4, seed=0)
    binding, rows = {}, []
    for name, enc in encoders.items():
        emb = embed_dataset(enc, space, "text", progress=False)
        probes = LinearProbes(space.values_per_concept, epochs=params["probe_epochs"], lr=params["probe_lr"], seed=0)
        probes.fit(emb[tr], space.objects[tr])
        s = probes.scores(emb[te], space.objects[te])
        rows.append({"encoder": name, "dim": emb.shape[1], "probe concept recognition (test scenes)": s["concept"],
                     "probe object recognition (test scenes)": s["object"]})
        binding[name] = probes.binding_data(space.objects, emb, name=name)
    return binding, pd.DataFrame(rows)


def pretrained_encoders() -> tuple[dict[str, Any], str]:
    """The encoders of §5.1: pretrained CLIP's text tower where reachable, else the
    pretrained MiniLM text encoder; and CLIP's architecture with random weights, the
    paper's control. Returns ({name: encoder}, note for the top of the page)."""
    from bindcore.encoders import RandomInitClipEncoder, default_encoders

    d = default_encoders()
    control = RandomInitClipEncoder("ViT-B-32-quickgelu", seed=0)
    if d.pretrained_clip:
        return {"CLIP ViT-B/32 (pretrained)": d.text, "ViT-B/32 (random init)": control}, d.note
    return {"all-MiniLM-L6-v2 (pretrained text encoder)": d.text,
            "ViT-B/32 text tower (random init)": control}, d.note


def true_embedding_ceiling(datasets: dict[str, Any], fractions: Sequence[float], key: str = "encoder"):
    """The frozen probes reading the encoder's *own* embeddings on each fraction's
    train / held-out scenes: the most any approximator can show (a tidy table)."""
    import pandas as pd

    from .probes import functional_binding, object_level_split

    rows = []
    for name, data in datasets.items():
        for f in fractions:
            m = functional_binding(data, data.embeddings, object_level_split(data, f))
            rows.append({key: name, "fraction": f, **m})
    return pd.DataFrame(rows)


PRETRAINED_FAMILIES = ("mlp", "additive", "global_product", "xgboost", "random_forest")


def pretrained_sweeps(params: dict[str, Any], binding: dict[str, Any], device: str | None = None):
    """The §5.1 sweep of every encoder's binding data -> one tidy table."""
    import pandas as pd

    protocol = protocol_for(params)
    tables = [approximator_table(stored_sweep(data, params["fractions"], PRETRAINED_FAMILIES, protocol,
                                              widths={"mlp": params["widths"]}, tree_grid=tree_grid(params["tree_grid"]),
                                              device=device), encoder=name)
              for name, data in binding.items()]
    return pd.concat(tables, ignore_index=True)


def controlled_datasets(profile: str, params: dict[str, Any], workers: int | None = None, device: str | None = None):
    """(runs, binding data) of the generalizing controlled models of ``profile``."""
    from .probes import controlled_binding_data

    runs = generalizing_runs(profile, workers=workers, device=device)
    return runs, [controlled_binding_data(r, max_objects=params["max_objects"], device=device or "cpu") for r in runs]


def controlled_sweeps(datasets: Sequence[Any], params: dict[str, Any], families: Sequence[str],
                      widths: Any, device: str | None = None):
    """One tidy table of a stored sweep per controlled model."""
    import pandas as pd

    protocol = protocol_for(params)
    return pd.concat([approximator_table(stored_sweep(d, params["fractions"], families, protocol, widths=widths,
                                                      device=device), model=d.name, objects=d.n_object_ids)
                      for d in datasets], ignore_index=True)


def pretrained_claims(table: Any, profile: str):
    """§5.1's claims beside ours: concept recognition above fraction 0.3, object
    recognition at the largest fraction (widest MLP and best family)."""
    import math

    import pandas as pd

    rows = []
    for name, sub in table.groupby("encoder", sort=False):
        above = sub[sub["fraction"] > 0.3]
        mlp_above = above[above["family"] == FAMILY_LABELS["mlp"]]
        top = sub[sub["fraction"] == sub["fraction"].max()]
        mlp_top = top[top["family"] == FAMILY_LABELS["mlp"]]
        rows.append({
            "encoder": name,
            "paper (CLIP)": ">= 0.80 concepts above fraction 0.3; objects about 0.20 at width 4096 and fraction "
                            "0.9 (secondary notes)",
            "concepts above fraction 0.3 (widest MLP)": mlp_above[mlp_above["width"] == mlp_above["width"].max()]
                ["heldout_concept"].min() if len(mlp_above) else math.nan,
            "concepts above fraction 0.3 (worst family)": above["heldout_concept"].min() if len(above) else math.nan,
            "objects, widest MLP, largest fraction": mlp_top.loc[mlp_top["width"].idxmax(), "heldout_object"]
            if len(mlp_top) else math.nan,
            "objects, best family, largest fraction": top["heldout_object"].max(),
            "best family": top.loc[top["heldout_object"].idxmax(), "family"],
            "profile": profile,
        })
    return pd.DataFrame(rows)


def width_claims(table: Any, profile: str):
    """§5.3: at the largest fraction, how small an MLP reaches 90 % of the best held-out
    object recognition, per controlled model."""
    import pandas as pd

    top = table[(table["fraction"] == table["fraction"].max()) & (table["family"] == FAMILY_LABELS["mlp"])]
    rows = []
    for name, sub in top.groupby("model", sort=False):
        small, large = sub.loc[sub["width"].idxmin()], sub.loc[sub["width"].idxmax()]
        good = sub[sub["heldout_object"] >= 0.9 * sub["heldout_object"].max()]
        rows.append({"model": name, "paper": "small MLPs suffice; the gap grows with |O|",
                     f"width {int(small['width'])}: held-out objects": small["heldout_object"],
                     f"width {int(large['width'])}: held-out objects": large["heldout_object"],
                     "smallest width reaching 90 % of the best": int(good["width"].min()), "profile": profile})
    return pd.DataFrame(rows)


def form_claims(table: Any, profile: str):
    """§5.4: additive vs product families at the largest fraction, per controlled model."""
    import pandas as pd

    top = table[table["fraction"] == table["fraction"].max()]

    def best(sub: Any, family: str, metric: str) -> float:
        vals = sub[sub["family"] == FAMILY_LABELS[family]][metric]
        return float(vals.max()) if len(vals) else float("nan")

    rows = []
    for name, sub in top.groupby("model", sort=False):
        rows.append({
            "model": name,
            "paper": "additive: concepts yes, objects no; products recover objects; global product best",
            "additive: concepts": best(sub, "additive", "heldout_concept"),
            "additive: objects": best(sub, "additive", "heldout_object"),
            "global product: objects": best(sub, "global_product", "heldout_object"),
            "additive + global product: objects": best(sub, "sum_global_product", "heldout_object"),
            "best family (objects)": sub.loc[sub["heldout_object"].idxmax(), "family"],
            "profile": profile,
        })
    return pd.DataFrame(rows)
