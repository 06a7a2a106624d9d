"""Synthetic binding functions with a known form (tests, benchmarks, smoke runs)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bindcore.ids import object_values

from ..probes import BindingData


def synthetic_binding_data(values_per_concept: Sequence[int] = (5, 5), dim: int = 32, kind: str = "additive",
                           noise: float = 0.0, seed: int = 0, n_scenes: int | None = None,
                           spread: float = 1.0) -> BindingData:
    """Ordered pairs of distinct objects (or ``n_scenes`` of them, seeded) with embeddings of
    known form and the true vectors as probes: ``additive`` ``y = sum_o sum_c u_c[x_oc]``, or
    ``product`` ``y = prod_o prod_c v_c[x_oc]`` with ``v = 1 + spread N(0, 1)`` (judge it by
    R²: linear probes read little from it); plus ``N(0, noise^2)`` per entry."""
    if kind not in ("additive", "product"):
        raise ValueError(f"kind must be 'additive' or 'product', got {kind!r}")
    rng = np.random.default_rng(seed)
    vpc = [int(v) for v in values_per_concept]
    objects = object_values(np.arange(int(np.prod(vpc))), vpc)  # row o: the values of object id o
    u_count = len(objects)
    i, j = np.nonzero(~np.eye(u_count, dtype=bool))
    if n_scenes is not None and n_scenes < len(i):
        keep = np.sort(rng.choice(len(i), n_scenes, replace=False))
        i, j = i[keep], j[keep]
    scenes = np.stack([objects[i], objects[j]], 1)
    if kind == "additive":
        vecs = [rng.normal(0, 1 / np.sqrt(dim), (v, dim)).astype(np.float32) for v in vpc]
        obj_vec = sum(vecs[c][objects[:, c]] for c in range(len(vpc)))
        y = obj_vec[i] + obj_vec[j]
    else:
        vecs = [(1 + spread * rng.normal(0, 1, (v, dim))).astype(np.float32) for v in vpc]
        obj_vec = np.prod([vecs[c][objects[:, c]] for c in range(len(vpc))], axis=0)
        y = obj_vec[i] * obj_vec[j]
    if noise > 0:
        y = y + rng.normal(0, noise, y.shape)
    return BindingData(scenes, y.astype(np.float32), vpc, vecs, obj_vec.astype(np.float32),
                       name=f"synthetic-{kind}", info={"kind": kind, "seed": seed, "noise": noise})
