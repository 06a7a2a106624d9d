"""Binding functions and their evaluation (paper §5.1, §5.3, §5.4, C.2, C.4).

A *binding function* maps a two-object scene's concept values to its embedding. Its
data here is a :class:`BindingData`: for N two-object scenes, the concept indices of
each object slot and the frozen encoder's scene embedding, plus *frozen probes* that
read concepts and objects from an embedding (bias-free linear maps: for a pretrained
encoder, linear probes fitted on its real embeddings; for a controlled dual encoder,
its own query encoder's normalised concept and object embeddings).

The object-level split (§5.1) holds out a fraction of *objects*: approximators are fit
only on scenes whose two objects are both training objects and evaluated on scenes
whose two objects are both held out ("functional binding": the predicted embedding is
fed to the frozen probes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch


@dataclass
class BindingData:
    """Two-object scenes of one encoder: concept indices, embeddings, frozen probes.

    ``objects`` ``[N, 2, C]`` concept indices (object 1, object 2); ``embeddings`` ``[N, d]``;
    ``concept_probes[c]`` ``[V_c, d]`` and ``object_probe`` ``[U, d]`` are the rows of
    bias-free linear probes (``U = prod V_c``, rows indexed by object id: mixed radix,
    concept 0 least significant, as ``SceneDataset.object_ids``)."""

    objects: np.ndarray
    embeddings: np.ndarray
    values_per_concept: list[int]
    concept_probes: list[np.ndarray]
    object_probe: np.ndarray
    name: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.objects = np.asarray(self.objects, dtype=np.int64)
        self.embeddings = np.asarray(self.embeddings, dtype=np.float32)
        if self.objects.ndim != 3 or self.objects.shape[1] != 2:
            raise ValueError(f"objects must be [N, 2, C] (two-object scenes), got {self.objects.shape}")
        if len(self.objects) != len(self.embeddings):
            raise ValueError(f"{len(self.objects)} scenes but {len(self.embeddings)} embeddings")
        c = self.objects.shape[2]
        if len(self.values_per_concept) != c or len(self.concept_probes) != c:
            raise ValueError("values_per_concept and concept_probes need one entry per concept")
        for ci, (v, w) in enumerate(zip(self.values_per_concept, self.concept_probes)):
            if w.shape != (v, self.dim):
                raise ValueError(f"concept probe {ci} must be [{v}, {self.dim}], got {w.shape}")
        if self.object_probe.shape != (self.n_object_ids, self.dim):
            raise ValueError(f"object probe must be [{self.n_object_ids}, {self.dim}], got {self.object_probe.shape}")
        if (self.objects < 0).any() or (self.objects >= np.asarray(self.values_per_concept)).any():
            raise ValueError("concept indices out of range")

    @property
    def dim(self) -> int:
        return self.embeddings.shape[1]

    @property
    def n_concepts(self) -> int:
        return self.objects.shape[2]

    @property
    def n_object_ids(self) -> int:
        return int(np.prod(self.values_per_concept))

    def object_ids(self) -> np.ndarray:
        """``[N, 2]`` object ids of the two slots."""
        radix = np.cumprod([1] + list(self.values_per_concept[:-1]))
        return (self.objects * radix).sum(-1)

    def slot_codes(self) -> np.ndarray:
        """``[N, 2C]`` concept indices per slot, object-major (o1c1, o1c2, ..., o2c1, ...):
        the approximators' input."""
        return self.objects.reshape(len(self.objects), -1)

    def subset(self, index: np.ndarray) -> "BindingData":
        return BindingData(self.objects[index], self.embeddings[index], list(self.values_per_concept),
                           self.concept_probes, self.object_probe, self.name, dict(self.info))


# ---------------------------------------------------------------------------------
# the object-level split (§5.1)
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ObjectLevelSplit:
    """Scene subsets by how many of their objects are training objects."""

    train_objects: np.ndarray  # object ids used for fitting
    train: np.ndarray  # scene indices: both objects are training objects
    heldout: np.ndarray  # scene indices: both objects held out
    mixed: np.ndarray  # one of each

    def validation(self, fraction: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Carve a validation set from the *training objects* (never from held-out ones):
        (fit scenes, validation scenes), both among ``train``."""
        rng = np.random.default_rng(seed)
        val = rng.random(len(self.train)) < fraction
        return self.train[~val], self.train[val]


def object_level_split(data: BindingData, fraction: float, seed: int = 0) -> ObjectLevelSplit:
    """A seeded permutation of the object ids that occur in ``data``; the first
    floor(fraction * U) are training objects. Permutations are nested across fractions
    (the same seed gives the same order), as in the released code."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    ids = data.object_ids()
    present = np.unique(ids)
    n_train = int(len(present) * fraction)
    if n_train < 1 or n_train >= len(present):
        raise ValueError(f"fraction={fraction} of {len(present)} objects leaves an empty side")
    order = np.random.default_rng(seed).permutation(len(present))
    train_objects = np.sort(present[order[:n_train]])
    is_train = np.isin(ids, train_objects)
    both, none = is_train.all(1), ~is_train.any(1)
    return ObjectLevelSplit(train_objects, np.flatnonzero(both), np.flatnonzero(none), np.flatnonzero(~both & ~none))


# ---------------------------------------------------------------------------------
# functional binding: predicted embeddings read by the frozen probes
# ---------------------------------------------------------------------------------
def _strict(scores: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    from .metrics import strict_correct

    return strict_correct(scores, positives)


def concept_recognition(data: BindingData, embeddings: np.ndarray | torch.Tensor, index: np.ndarray) -> float:
    """Mean over scenes and concepts of the strict criterion of each concept probe
    (positives: the values of the scene's two objects)."""
    if len(index) == 0:
        return float("nan")
    z = torch.as_tensor(np.asarray(embeddings)[index], dtype=torch.float32)
    objs = torch.as_tensor(data.objects[index])
    accs = []
    for c, w in enumerate(data.concept_probes):
        scores = z @ torch.as_tensor(w, dtype=torch.float32).T
        pos = torch.zeros_like(scores, dtype=torch.bool)
        pos.scatter_(1, objs[:, :, c], True)
        accs.append(_strict(scores, pos).float())
    return float(torch.stack(accs).mean())


def object_recognition(data: BindingData, embeddings: np.ndarray | torch.Tensor, index: np.ndarray) -> float:
    """Strict criterion of the object probe over all U objects (positives: the scene's
    one or two object ids)."""
    if len(index) == 0:
        return float("nan")
    z = torch.as_tensor(np.asarray(embeddings)[index], dtype=torch.float32)
    scores = z @ torch.as_tensor(data.object_probe, dtype=torch.float32).T
    pos = torch.zeros_like(scores, dtype=torch.bool)
    pos.scatter_(1, torch.as_tensor(data.object_ids()[index]), True)
    return float(_strict(scores, pos).float().mean())


def r2_score(data: BindingData, embeddings: np.ndarray | torch.Tensor, index: np.ndarray) -> float:
    """1 - SSE/SST on ``index``, SST around the mean of all scene embeddings (as in the
    released code)."""
    if len(index) == 0:
        return float("nan")
    y = data.embeddings[index].astype(np.float64)
    pred = np.asarray(embeddings, dtype=np.float64)[index]
    mu = data.embeddings.astype(np.float64).mean(0)
    return float(1.0 - ((y - pred) ** 2).sum() / ((y - mu) ** 2).sum())


def functional_binding(data: BindingData, predicted: np.ndarray, split: ObjectLevelSplit) -> dict[str, float]:
    """Concept and object recognition and R² of ``predicted`` embeddings (one row per
    scene of ``data``) on the train, held-out and mixed scenes of ``split``."""
    out = {}
    for name, idx in (("train", split.train), ("heldout", split.heldout), ("mixed", split.mixed)):
        out[f"{name}_concept"] = concept_recognition(data, predicted, idx)
        out[f"{name}_object"] = object_recognition(data, predicted, idx)
        out[f"{name}_r2"] = r2_score(data, predicted, idx)
    return out
