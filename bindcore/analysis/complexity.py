"""Binding-function complexity (paper §5.1, §5.3, §5.4): the approximators' protocol of
a chapter's parameters, approximator sweeps stored under a hash of their inputs, and
the ceiling the frozen probes set (:mod:`bindcore.analysis.approximators` does the
fitting)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from bindcore.io import arrays_hash
from bindcore.store import Kind, ResultStore

from .approximators import TREE_GRIDS, get_protocol, sweep_fractions
from .probes import functional_binding, object_level_split

# approximator sweeps in the result store (a sweep made by other code is computed again)
APPROX_STORE_KIND = Kind("approximators-1", ("bindcore.analysis.complexity",))


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
    """Content hash of a :class:`~bindcore.analysis.probes.BindingData` (scenes, embeddings, probes)."""
    return arrays_hash(data.objects, data.embeddings, data.object_probe, *data.concept_probes)


def stored_sweep(data: Any, fractions: Sequence[float], families: Sequence[str], protocol: Any,
                 widths: Any = None, tree_grid: Any = None, device: str | None = None, store: Any = None,
                 **kwargs: Any) -> list[dict[str, Any]]:
    """:func:`bindcore.analysis.approximators.sweep_fractions`, stored under a hash of its inputs
    (the binding data's content, fractions, families, widths, protocol, tree grid), so
    that a chapter re-executes, and the reproduction report reads it, in seconds."""
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


def true_embedding_ceiling(datasets: dict[str, Any], fractions: Sequence[float], key: str = "encoder"):
    """The frozen probes reading the encoder's *own* embeddings on each fraction's
    train / held-out scenes: the most any approximator can show (a tidy table)."""
    rows = []
    for name, data in datasets.items():
        for f in fractions:
            m = functional_binding(data, data.embeddings, object_level_split(data, f))
            rows.append({key: name, "fraction": f, **m})
    return pd.DataFrame(rows)
