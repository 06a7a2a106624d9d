"""Geometry of scene embeddings (§4.1, §4.2, D.1, D.2, D.5): components, R², retrieval, edits, MDS.
Inputs: ``Z`` ``[N, d]``, ``objects`` ``[N, O_max, C]`` (-1 rows absent), ``values_per_concept``; rows
needing a key never seen (NaN components) are dropped and counted (``n_excluded``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from bindcore.ids import object_ids, object_values, radix

from .components import (  # noqa: F401 (defined in §4.1)
    ESTIMATORS,
    KINDS,
    Components,
    average_components,
    estimate_components,
    fit_additive,
    n_keys,
    single_object_components,
    term_columns,
)
from .inputs import check_embeddings, check_inputs, check_objects, check_values_per_concept
from .metrics import r2, strict_correct
from .probes import PROBE_TRAIN_FRACTION, LinearProbes, scene_split

BANKS = ("obj-avg", "pos-avg", "single")
_MAX_CANDIDATES = 4_000_000  # candidate edits enumerated at most (sample_edits with concept=None)


# ---------------------------------------------------------------------------------
# inputs and labels: checked by bindcore.analysis.inputs, the one input check
# ---------------------------------------------------------------------------------
def _row_codes(ids: np.ndarray, base: int) -> np.ndarray:
    """One int64 per row of ``ids`` (values -1 .. base - 2), order preserved."""
    if float(base) ** ids.shape[1] >= 2**62:
        raise ValueError(f"too many objects ({base - 1}) and slots ({ids.shape[1]}) to encode scenes as integers")
    code = np.zeros(len(ids), dtype=np.int64)
    for j in range(ids.shape[1]):
        code = code * base + (ids[:, j] + 1)
    return code


def scene_codes(objects: np.ndarray, values_per_concept: Sequence[int], any_order: bool = True) -> np.ndarray:
    """``[N]`` int64 codes: equal iff two scenes hold the same multiset of objects
    (``any_order``) or the same objects in the same slots."""
    ids = object_ids(check_objects(objects, values_per_concept), values_per_concept)
    if any_order:
        ids = np.sort(ids, axis=1)
    return _row_codes(ids, int(np.prod(values_per_concept)) + 1)


def _derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform permutation of ``0..n-1`` without fixed point (by rejection); identity if ``n < 2``."""
    if n < 2:
        return np.arange(n)
    while True:
        perm = rng.permutation(n)
        if (perm != np.arange(n)).all():
            return perm


def _value_derangement(vpc: list[int], rng: np.random.Generator, sweeps: int = 20) -> np.ndarray:
    """A permutation of the object ids under which no object keeps any concept value (single-valued
    concepts excepted), mixed by random transpositions so it is not a product permutation."""
    u = int(np.prod(vpc))
    vals = object_values(np.arange(u), vpc)
    start = np.stack([_derangement(v, rng)[vals[:, c]] for c, v in enumerate(vpc)], 1)
    perm = object_ids(start[:, None, :], vpc)[:, 0]
    free = np.array([v > 1 for v in vpc])

    def valid(i: np.ndarray, target: np.ndarray) -> np.ndarray:
        return (vals[i][:, free] != vals[target][:, free]).all(1)

    for _ in range(sweeps):
        i, j = rng.integers(0, u, size=(2, u))
        for a, b in zip(i, j):
            if a != b and valid(np.array([a, b]), np.array([perm[b], perm[a]])).all():
                perm[a], perm[b] = perm[b], perm[a]
    return perm


def permute_labels(objects: np.ndarray, values_per_concept: Sequence[int], kind: str, seed: int = 0,
                   derange: bool = True) -> np.ndarray:
    """The permuted-ID control's relabelling (D.1): one seeded permutation of object ids
    (``kind="objects"``) or of each concept's values; absent rows stay -1. ``derange``: no
    label keeps any value (else uniform permutations with fixed points, as the release)."""
    obj = check_objects(objects, values_per_concept)
    vpc = check_values_per_concept(values_per_concept)
    rng = np.random.default_rng(seed)
    if kind == "objects":
        perm = _value_derangement(vpc, rng) if derange else rng.permutation(int(np.prod(vpc)))
        ids = object_ids(obj, vpc)
        return object_values(np.where(ids >= 0, perm[ids.clip(0)], -1), vpc)
    if kind == "concepts":
        out = obj.copy()
        for c, v in enumerate(vpc):
            perm = _derangement(v, rng) if derange else rng.permutation(v)
            out[..., c] = np.where(obj[..., c] >= 0, perm[obj[..., c].clip(0)], -1)
        return out
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


# ---------------------------------------------------------------------------------
# metrics: R², retrieval, probing
# ---------------------------------------------------------------------------------
def r2_score(Z: np.ndarray, Z_hat: np.ndarray) -> float:
    """R² over the rows where ``Z_hat`` is finite, SST about their own mean; NaN if none."""
    z, zh = check_embeddings(Z), np.asarray(Z_hat, dtype=np.float64)
    if z.shape != zh.shape:
        raise ValueError(f"Z {z.shape} and Z_hat {zh.shape} differ in shape")
    ok = np.isfinite(zh).all(1)
    if not ok.any():
        return float("nan")
    return r2(z[ok], zh[ok])


def nearest_scenes(queries: np.ndarray, gallery: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """Index of each query's cosine nearest neighbour among the gallery rows."""
    gal = check_embeddings(gallery, "gallery", dtype=np.float32)
    qs = check_embeddings(queries, "queries", min_rows=0, dim=gal.shape[1], dtype=np.float32)
    g = torch.nn.functional.normalize(torch.as_tensor(gal), dim=1)
    q = torch.as_tensor(qs)
    out = [(torch.nn.functional.normalize(q[i:i + chunk], dim=1) @ g.T).argmax(1) for i in range(0, len(q), chunk)]
    return torch.cat(out).numpy() if out else np.zeros(0, dtype=np.int64)


def retrieval_hits(queries: np.ndarray, target_objects: np.ndarray, Z: np.ndarray, objects: np.ndarray,
                   values_per_concept: Sequence[int]) -> pd.DataFrame:
    """Cosine top-1 among the scenes ``Z`` of queries meant as ``target_objects`` ``[M, O_max, C]``:
    columns ``query, nearest, hit`` (same objects, any order, C.2), ``hit_exact``. NaN queries dropped."""
    z, obj, vpc = check_inputs(Z, objects, values_per_concept)
    q = np.asarray(queries, dtype=np.float64)
    tobj = check_objects(target_objects, vpc, n_scenes=len(q))
    if tobj.shape[1] != obj.shape[1]:
        raise ValueError(f"target_objects have {tobj.shape[1]} slots, the scenes {obj.shape[1]}")
    ok = np.isfinite(q).all(1)
    top = nearest_scenes(q[ok], z)
    return pd.DataFrame({
        "query": np.flatnonzero(ok), "nearest": top,
        "hit": scene_codes(obj, vpc, True)[top] == scene_codes(tobj[ok], vpc, True),
        "hit_exact": scene_codes(obj, vpc, False)[top] == scene_codes(tobj[ok], vpc, False),
    })


def retrieval_chance(objects: np.ndarray, values_per_concept: Sequence[int], index: np.ndarray | None = None) -> float:
    """Chance of an any-order hit for a nearest scene drawn at random, over the queried scenes."""
    codes = scene_codes(objects, values_per_concept, True)
    _, inv, cnt = np.unique(codes, return_inverse=True, return_counts=True)
    idx = np.arange(len(codes)) if index is None else np.asarray(index)
    return float((cnt[inv[idx]] / len(codes)).mean())


def fit_probes(Z: np.ndarray, objects: np.ndarray, values_per_concept: Sequence[int], **probe_kw: Any) -> LinearProbes:
    """:class:`LinearProbes` (concept and object probes) fitted on ``Z``."""
    z, obj, vpc = check_inputs(Z, objects, values_per_concept)
    return LinearProbes(values_per_concept=vpc, fit_objects=True, **probe_kw).fit(z.astype(np.float32), obj)


def _positives(index: np.ndarray, n_classes: int) -> torch.Tensor:
    """bool ``[N, n_classes]``: the classes in each row of ``index`` ``[N, O]`` (-1 skipped)."""
    pos = np.zeros((len(index), n_classes), dtype=bool)
    rows, cols = np.nonzero(index >= 0)
    pos[rows, index[rows, cols]] = True
    return torch.as_tensor(pos)


def probe_hits(probes: LinearProbes, X: np.ndarray, objects: np.ndarray) -> dict[str, np.ndarray]:
    """Per row of ``X``, whether the probes strictly read ``objects``: ``concept_c``,
    ``concepts_joint`` (all at once: the release's editing criterion), ``object``."""
    x = np.asarray(X, dtype=np.float32)
    obj = check_objects(objects, probes.values_per_concept, n_scenes=len(x))
    logits = probes.decision_function(x)
    out = {f"concept_{c}": strict_correct(torch.as_tensor(logits[f"concept_{c}"]), _positives(obj[..., c], v)).numpy()
           for c, v in enumerate(probes.values_per_concept)}
    out["concepts_joint"] = np.all(list(out.values()), axis=0)
    if "object" in logits:
        ids = object_ids(obj, probes.values_per_concept)
        out["object"] = strict_correct(torch.as_tensor(logits["object"]),
                                       _positives(ids, logits["object"].shape[1])).numpy()
    return out


def probe_accuracy(probes: LinearProbes, X: np.ndarray, objects: np.ndarray) -> dict[str, float]:
    """Strict probing accuracy ``concept`` (mean over concepts), ``concepts_joint``, ``object``;
    NaN rows of ``X`` are dropped, ``n`` counts the rows scored."""
    x = np.asarray(X, dtype=np.float64)
    ok = np.isfinite(x).all(1)
    if not ok.any():
        return {"concept": np.nan, "concepts_joint": np.nan, "object": np.nan, "n": 0}
    hits = probe_hits(probes, x[ok], np.asarray(objects)[ok])
    per = [hits[f"concept_{c}"] for c in range(len(probes.values_per_concept))]
    return {"concept": float(np.mean(per)), "concepts_joint": float(hits["concepts_joint"].mean()),
            "object": float(hits["object"].mean()) if "object" in hits else np.nan, "n": int(ok.sum())}


def _holdout(n: int, holdout: float | tuple | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if holdout is None:
        return np.arange(n), np.arange(n)
    if isinstance(holdout, (float, int)):
        if not 0.0 < holdout < 1.0:
            raise ValueError(f"holdout fraction must lie in (0, 1), got {holdout}")
        return scene_split(n, 1.0 - float(holdout), seed)
    fit, ev = (np.asarray(i, dtype=np.int64) for i in holdout)
    if fit.size == 0 or ev.size == 0 or max(fit.max(), ev.max()) >= n or min(fit.min(), ev.min()) < 0:
        raise ValueError(f"holdout index arrays must be non-empty and lie in 0..{n - 1}")
    return fit, ev


# ---------------------------------------------------------------------------------
# §4.1 additive decomposition
# ---------------------------------------------------------------------------------
def additive_decomposition(Z: np.ndarray, objects: np.ndarray, values_per_concept: Sequence[int], *,
                           kinds: Sequence[str] = ("concepts", "objects"),
                           estimators: Sequence[str] = ("avg", "pos-avg", "lstsq", "pos-lstsq"),
                           holdout: float | tuple | None = None, ridge: float = 0.0, retrieval: bool = True,
                           probes: LinearProbes | str | None = None, probe_train_fraction: float = PROBE_TRAIN_FRACTION,
                           seed: int = 0, probe_kw: dict[str, Any] | None = None) -> pd.DataFrame:
    """How well sums of components reconstruct the scenes (§4.1), one row per (kind, estimator).

    ``holdout``: None (all scenes), a held-out fraction or ``(fit_index, eval_index)``. Columns
    ``kind, estimator, r2_fit, r2_eval, n_fit, n_eval, n_excluded``, with ``retrieval``:
    ``retrieval, retrieval_exact, retrieval_chance``, with ``probes`` (fitted or ``"fit"``):
    ``probe_concept, probe_object``; the probes on the real scenes: ``attrs["probe_real"]``."""
    z, obj, vpc = check_inputs(Z, objects, values_per_concept)
    fit, ev = _holdout(len(z), holdout, seed)
    probe_test = None
    if isinstance(probes, str):
        if probes != "fit":
            raise ValueError(f"probes must be a fitted LinearProbes, 'fit' or None, got {probes!r}")
        probe_train, probe_test = scene_split(len(z), probe_train_fraction, seed)
        probes = fit_probes(z[probe_train], obj[probe_train], vpc, **(probe_kw or {}))
    elif probes is not None:
        probe_test = np.arange(len(z))
    rows, attrs = [], {}
    if probes is not None:
        probe_eval = np.intersect1d(probe_test, ev)
        attrs["probe_real"] = probe_accuracy(probes, z[probe_eval], obj[probe_eval])
    for kind in kinds:
        for est in estimators:
            comps = estimate_components(z[fit], obj[fit], vpc, kind, est, ridge)
            zh_ev = comps.reconstruct(obj[ev])
            row = {"kind": kind, "estimator": est, "r2_fit": r2_score(z[fit], comps.reconstruct(obj[fit])),
                   "r2_eval": r2_score(z[ev], zh_ev), "n_fit": len(fit), "n_eval": len(ev),
                   "n_excluded": int((~np.isfinite(zh_ev).all(1)).sum())}
            if retrieval:
                hits = retrieval_hits(zh_ev, obj[ev], z, obj, vpc)
                row.update(retrieval=hits["hit"].mean(), retrieval_exact=hits["hit_exact"].mean(),
                           retrieval_chance=retrieval_chance(obj, vpc, ev))
            if probes is not None:
                acc = probe_accuracy(probes, comps.reconstruct(obj[probe_eval]), obj[probe_eval])
                row.update(probe_concept=acc["concept"], probe_object=acc["object"])
            rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs.update(attrs)
    return df


# ---------------------------------------------------------------------------------
# D.2 editing scene embeddings with object embeddings
# ---------------------------------------------------------------------------------
def object_banks(Z: np.ndarray, objects: np.ndarray, values_per_concept: Sequence[int],
                 Z_single: np.ndarray | None = None, objects_single: np.ndarray | None = None
                 ) -> dict[str, Components]:
    """The object banks of D.2: ``obj-avg``, ``pos-avg`` and, given ``Z_single``, ``single``."""
    banks = {"obj-avg": average_components(Z, objects, values_per_concept, "objects", False),
             "pos-avg": average_components(Z, objects, values_per_concept, "objects", True)}
    if Z_single is not None:
        if objects_single is None:
            raise ValueError("Z_single needs objects_single")
        banks["single"] = single_object_components(Z_single, objects_single, values_per_concept)
    return banks


def _first_index(codes: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Index of the first row of ``codes`` equal to each query, -1 when none is."""
    uniq, first = np.unique(codes, return_index=True)
    pos = np.searchsorted(uniq, queries).clip(max=len(uniq) - 1)
    return np.where(uniq[pos] == queries, first[pos], -1)


def sample_edits(objects: np.ndarray, values_per_concept: Sequence[int], *, concept: int | None = 0,
                 max_edits: int = 1000, seed: int = 0) -> pd.DataFrame:
    """At most ``max_edits`` seeded replacements ``scene, slot, old, new`` whose counterfactual
    ``target`` occurs; ``new`` differs only in ``concept``, by a value not in the scene (None: any
    object). Flags ``shared_scene`` (the paper's shared case), ``shared_release``, ``shared_swap``."""
    obj = check_objects(objects, values_per_concept)
    vpc = check_values_per_concept(values_per_concept)
    if concept is not None and not 0 <= concept < len(vpc):
        raise ValueError(f"concept must be None or in 0..{len(vpc) - 1}, got {concept}")
    if max_edits < 1:
        raise ValueError(f"max_edits must be >= 1, got {max_edits}")
    ids = object_ids(obj, vpc)
    o_max = ids.shape[1]
    u = int(np.prod(vpc))
    scene, slot = np.nonzero(ids >= 0)
    old = ids[scene, slot]
    if concept is None:
        cap = max(1, _MAX_CANDIDATES // u)  # keep the enumeration bounded: a seeded subset of (scene, slot)
        if len(scene) > cap:
            pick = np.sort(np.random.default_rng(seed).choice(len(scene), cap, replace=False))
            scene, slot, old = scene[pick], slot[pick], old[pick]
        new = np.tile(np.arange(u), (len(scene), 1))
    else:
        place = radix(vpc)[concept]
        vals = np.arange(vpc[concept])
        new = old[:, None] + (vals[None, :] - obj[scene, slot, concept][:, None]) * place
        in_scene = (obj[scene][:, :, concept][:, :, None] == vals[None, None, :]).any(1)
        new = np.where(in_scene, -1, new)
    scene = np.repeat(scene, new.shape[1])
    slot = np.repeat(slot, new.shape[1])
    old = np.repeat(old, new.shape[1])
    new = new.reshape(-1)
    keep = (new >= 0) & (new != old)
    scene, slot, old, new = scene[keep], slot[keep], old[keep], new[keep]
    cf = ids[scene].copy()
    cf[np.arange(len(cf)), slot] = new
    base = u + 1
    ord_all, any_all = _row_codes(ids, base), _row_codes(np.sort(ids, 1), base)
    ord_cf, any_cf = _row_codes(cf, base), _row_codes(np.sort(cf, 1), base)
    first_any = _first_index(any_all, any_cf)
    idx = np.flatnonzero(first_any >= 0)
    if len(idx) > max_edits:
        idx = np.sort(np.random.default_rng(seed).choice(idx, max_edits, replace=False))
    first_ord = _first_index(ord_all, ord_cf[idx])
    target = np.where(first_ord >= 0, first_ord, first_any[idx])
    old_vals, new_vals = object_values(old[idx], vpc), object_values(new[idx], vpc)
    base_obj = obj[scene[idx]]
    shared_by = np.zeros((len(idx), len(vpc)), dtype=bool)  # shares concept c's value with another object
    for j in range(o_max):
        other = (slot[idx] != j) & (base_obj[:, j, 0] >= 0)
        shared_by |= other[:, None] & (base_obj[:, j] == old_vals)
    shared_scene = shared_by.any(1)
    if concept is None:
        release_shared = np.zeros(len(idx), dtype=bool)
    else:
        others = np.delete(shared_by, concept, axis=1)
        release_shared = shared_by[:, concept] & ~others.any(1)
    return pd.DataFrame({"scene": scene[idx], "slot": slot[idx], "old": old[idx], "new": new[idx],
                         "target": target, "target_exact": first_ord >= 0,
                         "shared_scene": shared_scene, "shared_release": release_shared,
                         "shared_swap": (old_vals == new_vals).any(1)})


def counterfactual_objects(objects: np.ndarray, values_per_concept: Sequence[int], edits: pd.DataFrame) -> np.ndarray:
    """``[E, O_max, C]`` the intended scene of each edit (base scene, slot replaced)."""
    obj = check_objects(objects, values_per_concept)
    cf = obj[edits["scene"].to_numpy()].copy()
    cf[np.arange(len(cf)), edits["slot"].to_numpy()] = object_values(edits["new"].to_numpy(), values_per_concept)
    return cf


def edit_embeddings(Z: np.ndarray, edits: pd.DataFrame, bank: Components, k: float = 1.0) -> np.ndarray:
    """``z' = z - k (u(old) - u(new))`` per edit (D.2), the edited slot's bank if positional;
    NaN rows where the bank lacks ``old`` or ``new``."""
    if bank.kind != "objects":
        raise ValueError("editing needs an object bank (kind='objects')")
    z = check_embeddings(Z, dim=bank.dim)
    slot = edits["slot"].to_numpy() if bank.positional else np.zeros(len(edits), dtype=np.int64)
    if slot.size and slot.max() >= bank.vectors.shape[0]:
        raise ValueError(f"edit slot {slot.max()} but the bank has {bank.vectors.shape[0]} slot banks")
    diff = bank.vectors[slot, edits["old"].to_numpy()] - bank.vectors[slot, edits["new"].to_numpy()]
    return z[edits["scene"].to_numpy()] - k * diff


def nearest_after_edit(Z: np.ndarray, objects: np.ndarray, values_per_concept: Sequence[int], bank: Components,
                       scene: int, slot: int, new: int, k: float = 1.0, top: int = 5) -> pd.DataFrame:
    """The ``top`` scenes nearest (cosine) to ``scene`` edited with ``new`` in ``slot``:
    columns ``rank, scene, cosine``."""
    ids = object_ids(check_objects(objects, values_per_concept), values_per_concept)
    edit = pd.DataFrame({"scene": [scene], "slot": [slot], "old": [ids[scene, slot]], "new": [new]})
    z = edit_embeddings(Z, edit, bank, k)[0]
    zn = np.asarray(Z, dtype=np.float64)
    cos = (zn / np.linalg.norm(zn, axis=1, keepdims=True)) @ (z / np.linalg.norm(z))
    order = np.argsort(-cos, kind="stable")[:top]
    return pd.DataFrame({"rank": np.arange(1, len(order) + 1), "scene": order, "cosine": cos[order]})


def evaluate_edits(Z: np.ndarray, objects: np.ndarray, values_per_concept: Sequence[int], edits: pd.DataFrame,
                   bank: Components, k: float = 1.0, probes: LinearProbes | None = None) -> pd.DataFrame:
    """``edits`` plus ``hit``, ``hit_exact`` (nearest scene is the counterfactual) and, with
    ``probes``, ``probe_concepts``, ``probe_object``; edits the bank cannot make are dropped."""
    z, obj, vpc = check_inputs(Z, objects, values_per_concept)
    edited = edit_embeddings(z, edits, bank, k)
    ok = np.isfinite(edited).all(1)
    cf = counterfactual_objects(obj, vpc, edits)
    out = edits[ok].reset_index(drop=True)
    hits = retrieval_hits(edited[ok], cf[ok], z, obj, vpc)
    out["hit"], out["hit_exact"] = hits["hit"].to_numpy(), hits["hit_exact"].to_numpy()
    if probes is not None and ok.any():
        hits = probe_hits(probes, edited[ok], cf[ok])
        out["probe_concepts"] = hits["concepts_joint"]
        if "object" in hits:
            out["probe_object"] = hits["object"]
    return out


def editing_sweep(Z: np.ndarray, objects: np.ndarray, values_per_concept: Sequence[int], *,
                  banks: dict[str, Components] | None = None, Z_single: np.ndarray | None = None,
                  objects_single: np.ndarray | None = None, ks: Sequence[float] = (0.0, 0.5, 1.0, 1.5, 2.0),
                  edits: pd.DataFrame | None = None, concept: int | None = 0, max_edits: int = 1000,
                  probes: LinearProbes | str | None = "fit", probe_train_fraction: float = PROBE_TRAIN_FRACTION,
                  shared: str = "scene", seed: int = 0, probe_kw: dict[str, Any] | None = None) -> pd.DataFrame:
    """Object-replacement editing (D.2), one row per (bank, k, case) with case ``all, shared,
    different`` (and ``shared (release)`` when ``shared="scene"``): ``n, retrieval,
    retrieval_exact, retrieval_chance, probe_concepts, probe_object``. ``shared``: the flag
    ``"scene"`` (the paper's) or ``"swap"``; ``probes``: fitted, ``"fit"`` or None."""
    z, obj, vpc = check_inputs(Z, objects, values_per_concept)
    if shared not in ("scene", "swap"):
        raise ValueError(f"shared must be 'scene' or 'swap', got {shared!r}")
    if banks is None:
        banks = object_banks(z, obj, vpc, Z_single, objects_single)
    if edits is None:
        edits = sample_edits(obj, vpc, concept=concept, max_edits=max_edits, seed=seed)
    if isinstance(probes, str):
        if probes != "fit":
            raise ValueError(f"probes must be a fitted LinearProbes, 'fit' or None, got {probes!r}")
        train, _ = scene_split(len(z), probe_train_fraction, seed)
        probes = fit_probes(z[train], obj[train], vpc, **(probe_kw or {}))
    rows = []
    for name, bank in banks.items():
        for k in ks:
            per = evaluate_edits(z, obj, vpc, edits, bank, float(k), probes)
            flag = per[f"shared_{shared}"].to_numpy(bool)
            cases = [("all", np.ones(len(per), bool)), ("shared", flag), ("different", ~flag)]
            if shared == "scene" and "shared_release" in per:
                cases.append(("shared (release)", per["shared_release"].to_numpy(bool)))
            for case, mask in cases:
                sub = per[mask]
                row = {"bank": name, "k": float(k), "case": case, "n": len(sub),
                       "retrieval": sub["hit"].mean() if len(sub) else np.nan,
                       "retrieval_exact": sub["hit_exact"].mean() if len(sub) else np.nan,
                       "retrieval_chance": retrieval_chance(obj, vpc, sub["target"].to_numpy())
                       if len(sub) else np.nan}
                for col in ("probe_concepts", "probe_object"):
                    row[col] = sub[col].mean() if col in sub and len(sub) else np.nan
                rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------
# D.5 MDS
# ---------------------------------------------------------------------------------
def cosine_distances(X: np.ndarray) -> np.ndarray:
    """``[K, K]`` ``1 - cos``, clipped to [0, 2]."""
    x = check_embeddings(X, "X")
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return np.clip(1.0 - x @ x.T, 0.0, 2.0)


def classical_mds(D: np.ndarray, n_components: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Torgerson MDS: ``(coords [K, n_components], eigenvalues)`` of double-centred ``-D²/2``, descending
    (negative ones: the distances are not Euclidean)."""
    d = np.asarray(D, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"D must be a square distance matrix, got shape {d.shape}")
    if not 1 <= n_components <= len(d):
        raise ValueError(f"n_components must lie in 1..{len(d)}, got {n_components}")
    j = np.eye(len(d)) - 1.0 / len(d)
    b = -0.5 * j @ (d**2) @ j
    evals, evecs = np.linalg.eigh((b + b.T) / 2)
    order = np.argsort(evals)[::-1]
    evals, evecs = evals[order], evecs[:, order]
    coords = evecs[:, :n_components] * np.sqrt(np.clip(evals[:n_components], 0.0, None))
    return coords, evals


def mds(X: np.ndarray, n_components: int = 2, method: str = "classical", distance: str = "chord",
        seed: int = 0) -> np.ndarray:
    """``[K, n_components]`` MDS of the rows of ``X``: ``distance`` ``"chord"`` (``sqrt(2 - 2
    cos)``, exactly Euclidean) or ``"cosine"`` (the release); ``method`` ``"classical"`` or
    ``"smacof"`` (scikit-learn, as the release)."""
    d = cosine_distances(X)
    if distance == "chord":
        d = np.sqrt(2.0 * d)
    elif distance != "cosine":
        raise ValueError(f"distance must be 'chord' or 'cosine', got {distance!r}")
    if method == "classical":
        return classical_mds(d, n_components)[0]
    if method == "smacof":
        import inspect

        from sklearn.manifold import MDS

        params = inspect.signature(MDS).parameters  # scikit-learn >= 1.8 renamed the options
        kw: dict[str, Any] = {"metric_mds": True, "metric": "precomputed", "init": "random"} if "metric_mds" in params \
            else {"dissimilarity": "precomputed"}
        return MDS(n_components=n_components, random_state=seed, n_init=4, max_iter=300, **kw).fit_transform(d)
    raise ValueError(f"method must be 'classical' or 'smacof', got {method!r}")


def mds_frame(components: Components, n_components: int = 2, position: int | None = 0, **mds_kw: Any
              ) -> pd.DataFrame:
    """:meth:`Components.frame` of the seen keys plus ``mds_1 .. mds_n`` of ``mu + u`` (as the
    release's object means); ``position``: the slot bank (None: all)."""
    df = components.frame()
    vec = components.vectors.reshape(-1, components.dim) + components.intercept
    keep = np.isfinite(vec).all(1)
    if position is not None:
        keep &= df["position"].to_numpy() == position
    df = df[keep].reset_index(drop=True)
    coords = mds(vec[keep], n_components, **mds_kw)
    for i in range(n_components):
        df[f"mds_{i + 1}"] = coords[:, i]
    return df


def grid_likeness(coords: np.ndarray, values: np.ndarray, n_neighbors: int = 2) -> dict[str, float]:
    """Share of each point's ``n_neighbors`` nearest neighbours sharing a concept value with
    it (``score``; 1 on a clean grid), ``chance``, and per concept ``concept_c[_chance]``."""
    x = np.asarray(coords, dtype=np.float64)
    v = np.asarray(values)
    if x.ndim != 2 or v.ndim != 2 or len(x) != len(v):
        raise ValueError(f"coords [K, n] and values [K, C] must have the same K, got {x.shape} and {v.shape}")
    if not 1 <= n_neighbors < len(x):
        raise ValueError(f"n_neighbors must lie in 1..{len(x) - 1}, got {n_neighbors}")
    d = ((x[:, None] - x[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    nn = np.argsort(d, axis=1, kind="stable")[:, :n_neighbors]
    same = v[:, None, :] == v[None, :, :]  # [K, K, C]
    off = ~np.eye(len(x), dtype=bool)
    out = {"score": float(same.any(-1)[np.arange(len(x))[:, None], nn].mean()),
           "chance": float(same.any(-1)[off].mean()), "n_points": len(x), "n_neighbors": n_neighbors}
    for c in range(v.shape[1]):
        out[f"concept_{c}"] = float(same[..., c][np.arange(len(x))[:, None], nn].mean())
        out[f"concept_{c}_chance"] = float(same[..., c][off].mean())
    return out
