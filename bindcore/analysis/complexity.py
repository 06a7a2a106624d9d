"""Binding-function complexity (paper §5.1, §5.3, §5.4): the approximators' protocol of
a chapter's parameters, approximator sweeps stored under a hash of their inputs (one
after the other, or several at once on an executor: :func:`stored_sweeps`), and the
ceiling the frozen probes set (:mod:`bindcore.analysis.approximators` does the
fitting)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bindcore.io import arrays_hash, atomic_savez, config_hash, digest
from bindcore.store import Kind, ResultStore, has_weights

from .approximators import (
    TREE_GRIDS,
    Protocol,
    fit_trees,
    get_protocol,
    make_specs,
    select_best,
    sweep_fractions,
    train_models,
)
from .probes import BindingData, functional_binding, object_level_split, split_by_objects

# approximator sweeps in the result store: bump the version when their results change
APPROX_STORE_KIND = Kind("approximators-1")


def protocol_for(params: dict[str, Any]):
    """The approximators' training protocol of a chapter's parameters: the paper's
    protocol (Adam, minibatches, lr grid) with the profile's steps, batch and lrs."""
    return get_protocol("paper", steps=params["steps"], lrs=params["lrs"], batch_size=params["batch_size"],
                        eval_every=max(1, params["steps"] // 10))


def tree_grid(name: str) -> dict[str, list[dict[str, Any]]]:
    """``small``: one configuration per tree kind (smoke, quick); ``full``: the grids of
    :data:`bindcore.analysis.approximators.TREE_GRIDS`."""
    if name == "full":
        return TREE_GRIDS
    return {"xgboost": [dict(n_estimators=150, learning_rate=0.1, max_depth=4, subsample=0.8, colsample_bytree=0.8)],
            "random_forest": [dict(n_estimators=100, max_features=0.33, min_samples_leaf=1)]}


def binding_data_hash(data: Any) -> str:
    """The key of a :class:`~bindcore.analysis.probes.BindingData`: its ``origin`` (what
    made the arrays: the same on every machine) with its scenes, where it has one; else
    the content of its arrays (scenes, embeddings, probes)."""
    if data.origin is not None:
        return digest("binding data", data.origin, np.asarray(data.objects))
    return arrays_hash(data.objects, data.embeddings, data.object_probe, *data.concept_probes)


def sweep_key(data: Any, fractions: Sequence[float], families: Sequence[str], protocol: Any, widths: Any = None,
              tree_grid: Any = None, **kwargs: Any) -> dict[str, Any]:
    """What a stored approximator sweep is keyed by: the binding data's content and
    every input of :func:`bindcore.analysis.approximators.sweep_fractions` (JSON)."""
    return {"data": binding_data_hash(data), "name": data.name, "fractions": list(fractions),
            "families": list(families), "widths": widths, "protocol": asdict(protocol), "tree_grid": tree_grid,
            **kwargs}


def _computed(records: list[dict[str, Any]]) -> dict[str, Any]:
    for r in records:
        r.pop("predictions", None)
    return {"records": records}


def stored_sweep(data: Any, fractions: Sequence[float], families: Sequence[str], protocol: Any,
                 widths: Any = None, tree_grid: Any = None, device: str | None = None, store: Any = None,
                 **kwargs: Any) -> list[dict[str, Any]]:
    """:func:`bindcore.analysis.approximators.sweep_fractions`, stored under a hash of its inputs
    (the binding data's content, fractions, families, widths, protocol, tree grid), so
    that a chapter re-executes, and the reproduction report reads it, in seconds."""
    store = store or ResultStore()
    key = sweep_key(data, fractions, families, protocol, widths=widths, tree_grid=tree_grid, **kwargs)

    def compute() -> dict[str, Any]:
        return _computed(sweep_fractions(data, fractions, families, widths=widths, protocol=protocol,
                                         tree_grid=tree_grid, device=device, progress=True, estimate=True, **kwargs))

    return store.cached(APPROX_STORE_KIND, key, compute)["records"]


# ---------------------------------------------------------------------------------
# independent stacked sweeps (one per binding data set) on an executor
# ---------------------------------------------------------------------------------
def save_binding_data(data: BindingData, path: Path) -> Path:
    """The arrays of ``data`` as an ``.npz``, its ``origin`` as a JSON string (no pickle;
    ``info`` is not kept)."""
    probes = {f"concept_probe_{i}": p for i, p in enumerate(data.concept_probes)}
    origin = {} if data.origin is None else {"origin": np.asarray(json.dumps(data.origin, sort_keys=True))}
    return atomic_savez(path, objects=data.objects, embeddings=data.embeddings, object_probe=data.object_probe,
                        values_per_concept=np.asarray(data.values_per_concept), name=np.asarray(data.name),
                        **probes, **origin)


def load_binding_data(path: str | Path) -> BindingData:
    with np.load(path, allow_pickle=False) as z:
        values = [int(v) for v in z["values_per_concept"]]
        origin = json.loads(str(z["origin"])) if "origin" in z.files else None
        return BindingData(z["objects"], z["embeddings"], values, [z[f"concept_probe_{i}"] for i in range(len(values))],
                           z["object_probe"], str(z["name"]), origin=origin)


def approximator_task(payload: dict[str, Any]) -> dict[str, Any]:
    """One stored sweep where a worker runs it (task ``approximators`` of
    :mod:`bindcore.executors`): the binding data from its ``.npz``, the sweep's inputs
    from its key; the records go to the store, under the entry's claim."""
    from bindcore.executors import check_same_version, worker_store

    check_same_version(APPROX_STORE_KIND, payload.get("kind"))
    store, key, data_path = worker_store(payload), payload["key"], Path(payload["data"])
    with store.claim(APPROX_STORE_KIND, key):
        found = store.find(APPROX_STORE_KIND, key)
        if found is None:
            data = load_binding_data(data_path)
            if binding_data_hash(data) != key["data"]:
                raise ValueError(f"{data_path} does not hold the binding data of this sweep (content hash differs)")
            args = {k: v for k, v in key.items() if k not in ("data", "name")}
            proto = args.pop("protocol")
            protocol = Protocol(**{**proto, "lrs": tuple(proto["lrs"])})
            found = store.prepare(APPROX_STORE_KIND, key)
            store.finish(found, _computed(sweep_fractions(data, protocol=protocol, device=payload.get("device"),
                                                          progress=False, estimate=True, **args)))
        data_path.unlink(missing_ok=True)
    return {"path": str(found.path), "models": len(found.result["records"])}


def stored_sweeps(jobs: Sequence[dict[str, Any]], device: str | None = None, store: Any = None,
                  executor: Any = None, workers: int | None = None, progress: bool = False
                  ) -> list[list[dict[str, Any]]]:
    """:func:`stored_sweep` of each job (a dict of its arguments: ``data``, ``fractions``,
    ``families``, ``protocol``, ...), the records of each in order. Each job is one
    stacked sweep, independent of the others. ``executor`` (:func:`bindcore.executors.make_executor`):
    by default they run one after the other in this process (stacking already keeps
    every core busy); ``"local"`` with ``workers`` > 1 runs them as one-thread worker
    processes, ``"ray"`` as one Ray task each (the binding data travels as an ``.npz``
    in the store's entry, removed when the sweep is stored)."""
    from bindcore.executors import Task, make_executor, run_tasks, store_payload, with_workers

    store = store or ResultStore()
    ex = make_executor(executor, workers)
    ex = with_workers(ex, 1) if ex.name == "local" else ex
    if ex.name == "local" and ex.workers == 1:
        return [stored_sweep(**job, device=device, store=store) for job in jobs]
    keys = [sweep_key(**job) for job in jobs]
    where = {**store_payload(store), "device": device, "kind": APPROX_STORE_KIND.name}
    tasks: dict[str, Task] = {}
    for job, key in zip(jobs, keys):
        h = config_hash(key)
        if h in tasks or store.find(APPROX_STORE_KIND, key) is not None:
            continue
        entry = store.prepare(APPROX_STORE_KIND, key)
        data_path = save_binding_data(job["data"], entry.path / "binding.npz")
        tasks[h] = Task("approximators", {"key": key, "data": str(data_path), **where},
                        f"{APPROX_STORE_KIND}/{h}", entry.path / "worker.log")
    run_tasks(list(tasks.values()), ex, progress=progress, desc="approximator sweeps")
    return [store.find(APPROX_STORE_KIND, key).result["records"] for key in keys]


def true_embedding_ceiling(datasets: dict[str, Any], fractions: Sequence[float], key: str = "encoder"):
    """The frozen probes reading the encoder's *own* embeddings on each fraction's
    train / held-out scenes: the most any approximator can show (a tidy table)."""
    rows = []
    for name, data in datasets.items():
        for f in fractions:
            m = functional_binding(data, data.embeddings, object_level_split(data, f))
            rows.append({key: name, "fraction": f, **m})
    return pd.DataFrame(rows)


def tree_components(data: Any, fraction: float, components: Sequence[int | None], grid: dict[str, list[dict]],
                    store: Any = None) -> pd.DataFrame:
    """The tree approximators (D.6) against the number of principal components they
    regress (``None``: all of them; exactly that many, no variance rule), at one data
    fraction, stored: one row per (kind, components) with held-out and training
    recognition and R² (the first grid point of each kind)."""
    store = store or ResultStore()
    split = object_level_split(data, fraction)
    rows = []
    for kind, points in grid.items():
        for k in components:
            n = data.dim if k is None else min(int(k), data.dim)
            key = {"data": binding_data_hash(data), "name": data.name, "fraction": fraction, "kind": kind,
                   "params": points[0], "components": n}

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
    """An approximator of a trained controlled model's binding function fitted on the
    scenes of the model's *own* training objects and read on scenes of its own held-out
    objects (all ordered pairs of the sub-grid of at most ``max_objects`` objects of
    :func:`~bindcore.analysis.probes.controlled_binding_data`), stored under the run's
    config hash, so a record computed where the weights are (published/) serves a build
    that has none. Returns the selected record (learning rate chosen on validation
    scenes), or None when the run's weights are not here and no record is stored, and
    when the embedded sub-grid holds none of the run's training objects (nothing to fit
    on: e.g. 16 objects of a V = 10 space at coverage 0.2)."""
    from bindcore.controlled.training import TrainConfig

    from .probes import controlled_binding_data, sub_grid_objects

    cfg = TrainConfig.from_dict(record["config"])
    if not np.isin(sub_grid_objects(cfg.space, max_objects).numpy(), cfg.split.train.numpy()).any():
        return None
    store = store or ResultStore()
    key = {"analysis": "own split", "run": config_hash(record["config"]), "family": family,
           "protocol": asdict(protocol), "max_objects": max_objects}
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
