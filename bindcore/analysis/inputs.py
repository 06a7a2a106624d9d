"""Input checks of the analyses, each a ``ValueError`` that says what is wrong and where.

Embeddings must be finite (one NaN would silently zero every accuracy); labels are integer
indices, never rounded, with -1 rows for absent objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def check_values_per_concept(values_per_concept: Sequence[int]) -> list[int]:
    """``values_per_concept`` as a list of Python ints, each >= 1 (a ``ValueError`` otherwise)."""
    vpc = list(values_per_concept)
    if not vpc or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in vpc):
        raise ValueError(f"values_per_concept must be a non-empty list of positive integers, got {values_per_concept!r}")
    return [int(v) for v in vpc]


def check_objects(objects: Any, values_per_concept: Sequence[int], n_scenes: int | None = None,
                  present: bool = False, name: str = "objects", rows_of: str = "Z") -> np.ndarray:
    """``objects`` as int64 ``[N, O_max, C]``; ``ValueError`` on a wrong shape or dtype, a
    value outside ``-1 .. V_c - 1``, a half-absent object, other than ``n_scenes`` scenes
    or (``present``) any absent object."""
    vpc = check_values_per_concept(values_per_concept)
    obj = np.asarray(objects)
    if obj.ndim != 3:
        raise ValueError(f"{name} must be [N, O_max, C] (-1 rows for absent objects), got shape {obj.shape}")
    if not np.issubdtype(obj.dtype, np.integer):
        raise ValueError(f"{name} must hold integer concept indices, got dtype {obj.dtype} (indices are never "
                         f"rounded or truncated)")
    obj = obj.astype(np.int64)
    if obj.shape[2] != len(vpc):
        raise ValueError(f"{name} must be [N, O_max, {len(vpc)}]: they have C={obj.shape[2]} concepts but "
                         f"values_per_concept has {len(vpc)} entries")
    if n_scenes is not None and len(obj) != n_scenes:
        raise ValueError(f"{name} has {len(obj)} scenes but {rows_of} has {n_scenes} rows")
    absent = obj < 0
    if (absent.any(-1) != absent.all(-1)).any():
        raise ValueError(f"{name}: an object is either absent (all concepts -1) or present (all concepts >= 0)")
    low = 0 if present else -1
    for c, v in enumerate(vpc):
        col = obj[..., c]
        bad = col[(col < low) | (col >= v)]
        if bad.size:
            allowed = f"0..{v - 1}" + ("" if present else ", -1 = absent")
            raise ValueError(f"{name}: concept {c} has {v} values ({allowed}) but holds index {bad[0]}"
                             + ("" if bad[0] < low else ": values_per_concept does not match the labels"))
    return obj


def check_embeddings(Z: Any, name: str = "Z", n_rows: int | None = None, min_rows: int = 1,
                     dim: int | None = None, rows: Any = None, dtype: Any = np.float64) -> np.ndarray:
    """``Z`` as ``dtype`` ``[N, d]``; ``ValueError`` unless 2-D with ``n_rows`` rows, at least
    ``min_rows``, ``dim`` columns and finite entries (in ``rows`` only, when given)."""
    try:
        z = np.asarray(Z, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a matrix of numbers [N, d]: {exc}") from None
    if z.ndim != 2:
        raise ValueError(f"{name} must be a 2-D embedding matrix [N, d], got shape {z.shape}")
    if n_rows is not None and len(z) != n_rows:
        raise ValueError(f"{name} has {len(z)} rows but there are {n_rows} scenes")
    if len(z) < min_rows:
        raise ValueError(f"{name} has {len(z)} rows; at least {min_rows} needed")
    if dim is not None and z.shape[1] != dim:
        raise ValueError(f"{name} has {z.shape[1]} columns, expected d={dim}")
    index = np.arange(len(z)) if rows is None else np.asarray(rows, dtype=np.int64)
    finite = np.isfinite(z[index]).all(1)
    if not finite.all():
        bad = index[~finite]
        raise ValueError(f"{name} holds NaN or infinite entries in {len(bad)} row(s) (first: row {bad[0]})")
    return z


def check_inputs(Z: Any, objects: Any, values_per_concept: Sequence[int], min_rows: int = 1, name: str = "Z",
                 dtype: Any = np.float64) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Validated ``(Z [N, d] as dtype, objects int64 [N, O_max, C], values_per_concept)``."""
    z = check_embeddings(Z, name=name, min_rows=min_rows, dtype=dtype)
    obj = check_objects(objects, values_per_concept, n_scenes=len(z), rows_of=name)
    return z, obj, check_values_per_concept(values_per_concept)
