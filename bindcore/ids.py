"""Object ids (§3, B.1): mixed radix with concept 0 least significant, ids ``0 .. prod V_c - 1``;
a row of -1 values (an absent object) is id -1. Numpy in, numpy out; torch in, torch out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def radix(values_per_concept: Sequence[int]) -> list[int]:
    """Place value of each concept's digit: ``[1, V_0, V_0 V_1, ...]``."""
    out, place = [], 1
    for v in values_per_concept:
        out.append(place)
        place *= int(v)
    return out


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def object_ids(values: Any, values_per_concept: Sequence[int]) -> Any:
    """Concept values ``[..., C]`` -> object ids ``[...]``, -1 for absent objects."""
    r = radix(values_per_concept)
    if _is_torch(values):
        import torch

        ids = (values * torch.as_tensor(r, device=values.device)).sum(-1)
        return torch.where(values[..., 0] >= 0, ids, torch.full_like(ids, -1))
    v = np.asarray(values, dtype=np.int64)
    return np.where(v[..., 0] >= 0, (v * np.asarray(r, dtype=np.int64)).sum(-1), -1)


def object_values(ids: Any, values_per_concept: Sequence[int]) -> Any:
    """Object ids ``[...]`` -> concept values ``[..., C]``, -1 rows for negative ids."""
    r = radix(values_per_concept)
    if _is_torch(ids):
        import torch

        place = torch.as_tensor(r, device=ids.device)
        size = torch.as_tensor([int(v) for v in values_per_concept], device=ids.device)
        vals = torch.div(ids.unsqueeze(-1), place, rounding_mode="floor") % size
        return torch.where(ids.unsqueeze(-1) >= 0, vals, torch.full_like(vals, -1))
    i = np.asarray(ids, dtype=np.int64)
    vals = (i[..., None] // np.asarray(r, dtype=np.int64)) % np.asarray(values_per_concept)
    return np.where(i[..., None] >= 0, vals, -1)
