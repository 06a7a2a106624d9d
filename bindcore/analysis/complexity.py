"""Binding-function complexity (§5.1, §5.3, §5.4): stored approximator sweeps (also on an
executor), tree components, own-split fits, and the ceiling the frozen probes set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from bindcore.io import arrays_hash, config_hash, digest
from bindcore.store import Kind, ResultStore, has_weights

from .approximators import (
    TREE_GRIDS,
    fit_trees,
    get_protocol,
    make_specs,
    select_best,
    sweep_fractions,
    train_models,
)
from .approximators.trees import FOREST_TARGETS
from .probes import functional_binding, object_level_split, split_by_objects

# approximator sweeps in the result store: bump the version when their results change
APPROX_STORE_KIND = Kind("approximators-1")


def protocol_for(params: dict[str, Any]):
    """The "paper" protocol with the chapter's ``steps``, ``lrs``, ``batch_size`` and ``patience``
    (if any: then ``steps`` is the cap, and evaluations come four times as often)."""
    patience = params.get("patience")
    protocol = get_protocol("paper", steps=params["steps"], lrs=params["lrs"],
                            eval_every=max(1, params["steps"] // (40 if patience else 10)), patience=patience)
    return replace(protocol, batch_size=params["batch_size"])  # None too: full batch


def tree_grid(name: str) -> dict[str, list[dict[str, Any]]]:
    """``"full"``: :data:`~bindcore.analysis.approximators.TREE_GRIDS`; else one configuration per kind."""
    if name == "full":
        return TREE_GRIDS
    return {"xgboost": [dict(n_estimators=150, learning_rate=0.1, max_depth=4, subsample=0.8, colsample_bytree=0.8)],
            "random_forest": [dict(n_estimators=100, max_features=0.33, min_samples_leaf=1)]}


def binding_data_hash(data: Any) -> str:
    """The key of a BindingData: its ``origin`` and scenes (the same on every machine), else
    its arrays' content."""
    if data.origin is not None:
        return digest("binding data", data.origin, np.asarray(data.objects))
    return arrays_hash(data.objects, data.embeddings, data.object_probe, *data.concept_probes)


def sweep_key(data: Any, fractions: Sequence[float], families: Sequence[str], protocol: Any, widths: Any = None,
              tree_grid: Any = None, **kwargs: Any) -> dict[str, Any]:
    """A stored sweep's key (JSON): the binding data's hash and every input of ``sweep_fractions``."""
    return {"data": binding_data_hash(data), "name": data.name, "fractions": list(fractions),
            "families": list(families), "widths": widths, "protocol": protocol.key(), "tree_grid": tree_grid,
            **(FOREST_TARGETS if "random_forest" in families else {}), **kwargs}


def _computed(records: list[dict[str, Any]]) -> dict[str, Any]:
    for r in records:
        r.pop("predictions", None)
    return {"records": records}


def stored_sweep(data: Any, fractions: Sequence[float], families: Sequence[str], protocol: Any,
                 widths: Any = None, tree_grid: Any = None, device: str | None = None, store: Any = None,
                 progress: bool = True, **kwargs: Any) -> list[dict[str, Any]]:
    """The records of ``sweep_fractions``, stored under :func:`sweep_key`."""
    store = store or ResultStore()
    key = sweep_key(data, fractions, families, protocol, widths=widths, tree_grid=tree_grid, **kwargs)

    def compute() -> dict[str, Any]:
        return _computed(sweep_fractions(data, fractions, families, widths=widths, protocol=protocol,
                                         tree_grid=tree_grid, device=device, progress=progress, estimate=True,
                                         **kwargs))

    return store.cached(APPROX_STORE_KIND, key, compute)["records"]


# ---------------------------------------------------------------------------------
# independent stacked sweeps (one per binding data set) on an executor
# ---------------------------------------------------------------------------------
def approximator_task(job: dict[str, Any], store: ResultStore, kind: str, device: str | None) -> None:
    """Worker side of :func:`stored_sweeps`: the :func:`stored_sweep` of ``job`` (``kind``: the
    driver's name of :data:`APPROX_STORE_KIND`)."""
    from bindcore.runner import worker_store

    stored_sweep(**job, device=device, store=worker_store(store, APPROX_STORE_KIND, kind), progress=False)


def stored_sweeps(jobs: Sequence[dict[str, Any]], device: str | None = None, store: Any = None,
                  executor: Any = None, workers: int | None = None, progress: bool = False
                  ) -> list[list[dict[str, Any]]]:
    """The records of :func:`stored_sweep` of each job (its keyword arguments), in order: in
    this process by default (stacking keeps the cores busy), else one task each on
    ``executor`` (one-thread local workers or Ray)."""
    from bindcore.runner import Task, make_executor, portable_store, run_tasks, with_workers

    store = store or ResultStore()
    ex = make_executor(executor, workers)
    ex = with_workers(ex, 1) if ex.name == "local" else ex
    if ex.name == "local" and ex.workers == 1:
        return [stored_sweep(**job, device=device, store=store) for job in jobs]
    keys = [sweep_key(**job) for job in jobs]
    there = portable_store(store)
    tasks: dict[str, Task] = {}
    for job, key in zip(jobs, keys):
        h = config_hash(key)
        if h in tasks or store.find(APPROX_STORE_KIND, key) is not None:
            continue
        entry = store.prepare(APPROX_STORE_KIND, key)
        tasks[h] = Task(approximator_task, (job, there, APPROX_STORE_KIND.name, device), f"{APPROX_STORE_KIND}/{h}",
                        entry.path / "worker.log")
    run_tasks(list(tasks.values()), ex, progress=progress, desc="approximator sweeps")
    return [store.find(APPROX_STORE_KIND, key).result["records"] for key in keys]


def true_embedding_ceiling(datasets: dict[str, Any], fractions: Sequence[float], key: str = "encoder"):
    """The frozen probes on the encoder's own embeddings per fraction: the most any
    approximator can show."""
    rows = []
    for name, data in datasets.items():
        for f in fractions:
            m = functional_binding(data, data.embeddings, object_level_split(data, f))
            rows.append({key: name, "fraction": f, **m})
    return pd.DataFrame(rows)


def tree_components(data: Any, fraction: float, components: Sequence[int | None], grid: dict[str, list[dict]],
                    store: Any = None) -> pd.DataFrame:
    """Tree approximators (D.6, each kind's first grid point) against the number of principal
    components regressed (None: all), stored; one row per (kind, components)."""
    store = store or ResultStore()
    split = object_level_split(data, fraction)
    rows = []
    for kind, points in grid.items():
        for k in components:
            n = data.dim if k is None else min(int(k), data.dim)
            key = {"data": binding_data_hash(data), "name": data.name, "fraction": fraction, "kind": kind,
                   "params": points[0], "components": n, **(FOREST_TARGETS if kind == "random_forest" else {})}

            def compute(kind: str = kind, n: int = n, points: list = points) -> dict[str, Any]:
                rec = fit_trees(data, split, kind, grid=points[:1], variance=1.0, max_components=n, progress=False,
                                fraction=fraction)[0]
                rec.pop("curve", None)
                return {"record": rec}

            rec = store.cached(APPROX_STORE_KIND, {"analysis": "tree components", **key}, compute)["record"]
            rows.append({"kind": kind, "components": "all" if k is None else int(k), "n_components": n,
                         "explained variance": rec["explained_variance"], "fraction": fraction,
                         **{m: rec[f"selected_{m}"] for m in ("heldout_object", "heldout_concept", "heldout_r2",
                                                               "train_object", "train_r2")},
                         "seconds": rec["seconds"]})
    return pd.DataFrame(rows)


def own_split_fit(record: dict[str, Any], protocol: Any, family: str = "global_product", max_objects: int = 400,
                  device: str | None = None, store: Any = None) -> dict[str, Any] | None:
    """An approximator of a controlled model fitted on its own training objects' scenes and
    read on its held-out ones, stored under the run's config hash; the selected record, or
    None without weights or stored record, or when the sub-grid holds no training object."""
    from bindcore.controlled.training import TrainConfig

    from .probes import controlled_binding_data, sub_grid_objects

    cfg = TrainConfig.from_dict(record["config"])
    if not np.isin(sub_grid_objects(cfg.space, max_objects).numpy(), cfg.split.train.numpy()).any():
        return None
    store = store or ResultStore()
    key = {"analysis": "own split", "run": config_hash(record["config"]), "family": family,
           "protocol": protocol.key(), "max_objects": max_objects}
    found = store.find(APPROX_STORE_KIND, key)
    if found is not None:
        return found.result["record"]
    if not has_weights(record):  # a run published without its weights
        return None

    def compute() -> dict[str, Any]:
        data = controlled_binding_data(record, max_objects=max_objects, device=device or "cpu")
        split = split_by_objects(data, cfg.split.train.numpy())
        specs = make_specs(data, split, family, None, protocol.lrs, (0,), 0.2, 0)
        recs = select_best(train_models(data, specs, protocol, device=device, progress=False))
        rec = recs[0]
        rec.pop("curve", None)
        rec.update(n_train_objects=len(split.train_objects), n_objects=int(len(np.unique(data.object_ids()))))
        return {"record": rec}

    return store.cached(APPROX_STORE_KIND, key, compute)["record"]
