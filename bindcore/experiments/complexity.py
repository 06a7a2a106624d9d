"""§5.1, §5.3 and §5.4 as the chapters run them: the approximator sweeps of the frozen
encoders' binding data (§5.1) and of the generalizing controlled models of §5.2 (§5.3,
§5.4), each stored (:func:`bindcore.analysis.complexity.stored_sweeps`) and read as one
tidy table (:func:`approximator_table`), and figure 9: the global product fitted on every
stored controlled model's own training objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bindcore.analysis.approximators import select_best
from bindcore.analysis.approximators.labels import FAMILY_LABELS
from bindcore.analysis.complexity import protocol_for, stored_sweeps, tree_grid

from .generalization import generalizing_runs

PRETRAINED_FAMILIES = ("mlp", "additive", "global_product", "xgboost", "random_forest")


def approximator_table(records: Sequence[dict[str, Any]], **columns: Any):
    """One row per family x width x fraction (x seed), the learning rate or tree
    configuration chosen on the validation scenes (never on held-out objects), with
    concept / object recognition and R² on held-out, training and mixed scenes at
    the selected step, and on the held-out scenes whose every concept value occurs in a
    training object (``heldout_seen_*``) or not (``heldout_unseen_*``). Extra
    ``columns`` (e.g. ``encoder="MiniLM"``) are added."""
    rows = []
    for r in select_best(records):
        row = {"family": FAMILY_LABELS.get(r["family"], r["family"]), "width": r["width"], "lr": r["lr"],
               "fraction": r["fraction"], "seed": r["seed"], "fit scenes": r["n_fit"],
               "held-out scenes": r["n_heldout"]}
        for subset in ("heldout", "train", "mixed", "heldout_seen", "heldout_unseen"):
            for m in ("concept", "object", "r2"):
                row[f"{subset}_{m}"] = r.get(f"selected_{subset}_{m}")
        row["held-out scenes with an unseen value"] = r.get("selected_n_heldout_unseen")
        # trained to a plateau (Protocol.patience): where it stopped and why, and the step chosen
        row.update({"stop": r.get("stop"), "steps run": r.get("steps_run"), "chosen step": r.get("selected_step")})
        row["seconds"] = r.get("seconds")
        row.update(columns)
        rows.append(row)
    return pd.DataFrame(rows)


def stop_summary(table: Any) -> str:
    """How the approximators of a table (:func:`approximator_table`) stopped: on their validation
    plateau or at the step cap, and how many chose their last step there (still improving)."""
    trained = table[table["stop"].notna()] if "stop" in table else table.iloc[:0]
    if not len(trained):
        return "every approximator ran its full step budget (no stop rule: `patience` is None)"
    cap = trained[trained["stop"] == "cap"]
    at_cap = int((cap["chosen step"] == cap["steps run"]).sum())
    return (f"{len(trained) - len(cap)} of {len(trained)} approximators stopped on their validation plateau; "
            f"{len(cap)} reached the step cap, {at_cap} of them still improving there (chosen at the cap)")


def pretrained_sweeps(params: dict[str, Any], binding: dict[str, Any], device: str | None = None,
                      executor: Any = None, workers: int | None = None):
    """The §5.1 sweep of every encoder's binding data -> one tidy table (one stored
    sweep per encoder; ``executor``/``workers``: :func:`bindcore.analysis.complexity.stored_sweeps`)."""
    protocol = protocol_for(params)
    jobs = [dict(data=data, fractions=params["fractions"], families=PRETRAINED_FAMILIES, protocol=protocol,
                 widths={"mlp": params["widths"]}, tree_grid=tree_grid(params["tree_grid"])) for data in binding.values()]
    sweeps = stored_sweeps(jobs, device=device, executor=executor, workers=workers)
    return pd.concat([approximator_table(records, encoder=name) for name, records in zip(binding, sweeps)],
                     ignore_index=True)


# ---------------------------------------------------------------------------------
# §5.3, §5.4: the controlled models of §5.2
# ---------------------------------------------------------------------------------
def controlled_datasets(profile: str, params: dict[str, Any], sweep_params: Mapping[str, Any],
                        workers: int | None = None, device: str | None = None, executor: Any = None):
    """(runs, binding data) of the generalizing controlled models of ``profile`` (§5.3,
    §5.4; ``sweep_params``: the §5.2 chapter's parameters,
    :func:`~bindcore.experiments.generalization.generalizing_configs`)."""
    from bindcore.analysis.probes import controlled_binding_data

    runs = generalizing_runs(profile, params, sweep_params, workers=workers, device=device, executor=executor)
    datasets = [controlled_binding_data(r, max_objects=params["max_objects"], device=device or "cpu") for r in runs]
    names = [d.name for d in datasets]
    for d, r in zip(datasets, runs):
        if names.count(d.name) > 1:  # several seeds of one point: each model by its seed
            d.name = f"{d.name} seed={r['config']['seed']}"
    return runs, datasets


def controlled_jobs(datasets: Sequence[Any], params: dict[str, Any], families: Sequence[str], widths: Any,
                    **kwargs: Any) -> list[dict[str, Any]]:
    """The approximator sweep of each controlled model (the arguments of
    :func:`~bindcore.analysis.approximators.sweep_fractions`) at the chapter's ``params``."""
    protocol = protocol_for(params)
    return [dict(data=d, fractions=params["fractions"], families=families, protocol=protocol, widths=widths, **kwargs)
            for d in datasets]


def controlled_sweeps(datasets: Sequence[Any], params: dict[str, Any], families: Sequence[str],
                      widths: Any, device: str | None = None, executor: Any = None, workers: int | None = None,
                      **kwargs: Any):
    """One tidy table of a stored sweep per controlled model, with the bag-of-concepts
    ceiling of each fraction's held-out scenes (``bag ceiling``; ``executor``/``workers``:
    :func:`bindcore.analysis.complexity.stored_sweeps`; ``kwargs``, e.g. ``product_init``,
    go to :func:`~bindcore.analysis.approximators.sweep_fractions`)."""
    from bindcore.analysis.probes import heldout_bag_ceiling

    sweeps = stored_sweeps(controlled_jobs(datasets, params, families, widths, **kwargs), device=device,
                           executor=executor, workers=workers)
    tables = []
    for d, records in zip(datasets, sweeps):
        t = approximator_table(records, model=d.name, objects=d.n_object_ids)
        t["model: swap pairs"] = d.info.get("swap_pairs", np.nan)  # test objects: shown, for the record
        # validation objects: the precondition of §5.3 and §5.4's claims (never read on test objects)
        t["model: validation swap pairs"] = d.info.get("val_swap_pairs", np.nan)
        # the bag-of-concepts ceiling of the same held-out scenes (split seed 0, as the sweeps)
        t["bag ceiling"] = t["fraction"].map({f: heldout_bag_ceiling(d, f) for f in set(t["fraction"])}) \
            if len(t) else []
        tables.append(t)
    return pd.concat(tables, ignore_index=True)


# ---------------------------------------------------------------------------------
# §5.4 figure 9: the global product over every stored controlled model
# ---------------------------------------------------------------------------------
def figure9_runs(profile: str, models: str | None, store: Any = None) -> tuple[list[dict[str, Any]], str]:
    """The runs figure 9 reads, all of one recipe, and the recipe's name: with ``models`` =
    ``"scale"`` or ``"scale-chosen"``, the scale plan's runs (:func:`~bindcore.experiments.
    generalization.scale_records`, stand-ins at an earlier budget marked); else every stored
    run of ``profile``'s recipe (its grid and budgets free; no ablation, no other recipe)."""
    from bindcore.controlled.recipes import PLAN_DEPTH, SCALE_MODELS, depth_label, is_recipe
    from bindcore.controlled.training import STORE_KIND
    from bindcore.store import ResultStore

    from .generalization import scale_records

    store = store or ResultStore()
    if models in SCALE_MODELS:
        return scale_records(store)[0], depth_label(PLAN_DEPTH)
    runs = [r for r in (e.record() for e in store.entries(STORE_KIND)) if is_recipe(r["config"], profile)]
    return runs, f"{profile} recipe"


def figure9_table(protocol: Any, max_objects: int, runs: list[dict[str, Any]], device: str | None = None,
                  store: Any = None) -> pd.DataFrame:
    """One row per training run of ``runs`` (:func:`figure9_runs`: one recipe's): the model's
    own held-out two-object recognition (and swap-pair recognition, validation swap pairs and
    the bag-of-concepts ceiling where the record has them) beside the global-product probe's
    held-out object recognition, the probe fitted on scenes of the model's own training
    objects (:func:`~bindcore.analysis.complexity.own_split_fit`; NaN where neither the
    weights nor a stored fit are here, and where the objects embedded at ``max_objects``
    hold none of the run's training objects: nothing to fit on, e.g. a smoke build's 16
    objects of a published quick model)."""
    from bindcore.analysis.complexity import own_split_fit
    from bindcore.store import ResultStore

    store = store or ResultStore()
    rows = []
    for rec in runs:
        c, m = rec["config"], rec.get("metrics", {})
        fit = own_split_fit(rec, protocol, "global_product", max_objects, device, store)
        rows.append({
            "objects": c["n_values"] ** c["n_concepts"], "C": c["n_concepts"], "V": c["n_values"],
            "coverage": c["coverage"], "seed": c["seed"], "steps": c["steps"],
            "earlier budget": bool(rec.get("earlier_budget")),
            "negatives": "held-out objects (release)" if c.get("heldout_as_negatives") else "training objects",
            "model: held-out objects": m.get("test_object_2", np.nan),
            "model: swap pairs": m.get("test_swap_pair", np.nan),
            "model: validation swap pairs": m.get("val_swap_pair", np.nan),
            "bag-of-concepts ceiling": (rec.get("bag_of_concepts") or {}).get("ceiling_test_object_2", np.nan),
            "global product: held-out objects": fit["selected_heldout_object"] if fit else np.nan,
            "global product: held-out R²": fit["selected_heldout_r2"] if fit else np.nan,
            "source": rec.get("source", "local"), "run": Path(rec["path"]).name if rec.get("path") else rec.get("hash"),
        })
    cols = ["objects", "C", "V", "coverage", "seed", "steps", "earlier budget", "negatives", "model: held-out objects",
            "model: swap pairs", "model: validation swap pairs", "bag-of-concepts ceiling", "global product: held-out objects",
            "global product: held-out R²", "source", "run"]
    return pd.DataFrame(rows, columns=cols).sort_values(["objects", "coverage", "seed"], ignore_index=True)
