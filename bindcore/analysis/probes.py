"""Binding data (two-object scenes, embeddings, frozen probes), the object-level split,
functional binding and linear probes (§5.1, §5.3, §5.4, C.2, C.4)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from bindcore.ids import object_ids, object_values
from bindcore.io import config_hash, digest

from .inputs import check_embeddings, check_inputs, check_objects, check_values_per_concept
from .metrics import r2, strict_correct, strict_correct_at


@dataclass
class BindingData:
    """Two-object scenes of one encoder: ``objects`` ``[N, 2, C]``, ``embeddings`` ``[N, d]`` (NaN
    rows allowed; a fit refuses those it reads), bias-free probes ``concept_probes[c]``
    ``[V_c, d]`` and ``object_probe`` ``[U, d]`` (rows by object id)."""

    objects: np.ndarray
    embeddings: np.ndarray
    values_per_concept: list[int]
    concept_probes: list[np.ndarray]
    object_probe: np.ndarray
    name: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    # what made the arrays, as JSON (:func:`data_origin`): the same weights embed to slightly
    # other floats elsewhere, so stored analyses are keyed by it; None: keyed by the arrays
    origin: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        objects = np.asarray(self.objects)
        if objects.ndim != 3 or objects.shape[1] != 2:
            raise ValueError(f"objects must be [N, 2, C] (two-object scenes), got {objects.shape}")
        self.embeddings = check_embeddings(self.embeddings, "embeddings", min_rows=0, rows=[], dtype=np.float32)
        c = objects.shape[2]
        if len(self.values_per_concept) != c or len(self.concept_probes) != c:
            raise ValueError("values_per_concept and concept_probes need one entry per concept")
        self.values_per_concept = check_values_per_concept(self.values_per_concept)
        self.objects = check_objects(objects, self.values_per_concept, n_scenes=len(self.embeddings), present=True,
                                     rows_of="embeddings")
        for ci, (v, w) in enumerate(zip(self.values_per_concept, self.concept_probes)):
            if np.shape(w) != (v, self.dim):
                raise ValueError(f"concept probe {ci} must be [{v}, {self.dim}], got {np.shape(w)}")
            check_embeddings(w, f"concept probe {ci}")
        if np.shape(self.object_probe) != (self.n_object_ids, self.dim):
            raise ValueError(f"object probe must be [{self.n_object_ids}, {self.dim}], got {np.shape(self.object_probe)}")
        check_embeddings(self.object_probe, "object probe")

    @property
    def dim(self) -> int:
        return self.embeddings.shape[1]

    @functools.cached_property
    def embedding_mean(self) -> np.ndarray:
        """The mean embedding of all scenes, float64 (R²'s reference mean; the arrays are
        not changed after construction)."""
        return self.embeddings.astype(np.float64).mean(0)

    @property
    def n_concepts(self) -> int:
        return self.objects.shape[2]

    @property
    def n_object_ids(self) -> int:
        return int(np.prod(self.values_per_concept))

    def object_ids(self) -> np.ndarray:
        """``[N, 2]`` object ids of the two slots."""
        return object_ids(self.objects, self.values_per_concept)

    def slot_codes(self) -> np.ndarray:
        """``[N, 2C]`` concept indices, object-major (o1c1, o1c2, ..., o2c1, ...)."""
        return self.objects.reshape(len(self.objects), -1)

    def subset(self, index: np.ndarray) -> BindingData:
        origin = None if self.origin is None else {**self.origin, "rows": digest(np.asarray(index))}
        return BindingData(self.objects[index], self.embeddings[index], list(self.values_per_concept),
                           self.concept_probes, self.object_probe, self.name, dict(self.info), origin)


# The version of the code that turns a trained model into binding data (its ``origin``'s
# ``code``). Its value is the code fingerprint it had when the published records keyed by it
# were made (before versions replaced fingerprints), so that they keep their keys; set any
# other value when this code's results change.
MODEL_ORIGIN = "5faf114b20f829d6"


def data_origin(source: dict[str, Any], code: str) -> dict[str, Any]:
    """The ``origin`` of arrays computed from a stored ``source`` (JSON naming it: a
    model's config hash and weights digest, or the store key of embeddings, and how they
    were read) by code of version ``code`` (a constant of the module that computes them):
    the analyses keyed by it are computed anew when that version changes, as when the
    arrays' source changes."""
    return {**source, "code": code}


def weights_digest(model: torch.nn.Module) -> str:
    """Hash of a model's parameters and buffers (names, dtypes, shapes, bytes)."""
    state = model.state_dict()
    parts: list[Any] = []
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        parts += [name, str(t.dtype), list(t.shape), t.reshape(-1).view(torch.uint8).numpy()]
    return digest(*parts)


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
        """(fit scenes, validation scenes), both among ``train``: never held-out objects."""
        rng = np.random.default_rng(seed)
        val = rng.random(len(self.train)) < fraction
        return self.train[~val], self.train[val]


def object_level_split(data: BindingData, fraction: float, seed: int = 0) -> ObjectLevelSplit:
    """The first floor(fraction * U) of a seeded permutation of ``data``'s object ids train;
    nested across fractions, as in the release."""
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


def bag_ceiling_of(objects: np.ndarray) -> np.ndarray:
    """Per scene of ``objects`` ``[N, 2, C]``, the bag-of-concepts ceiling ``1 / 2**(m - 1)``
    for objects differing in ``m >= 1`` concepts (metrics.bag_ceiling over every object)."""
    obj = np.asarray(objects)
    if obj.ndim != 3 or obj.shape[1] != 2:
        raise ValueError(f"objects must be [N, 2, C] (two-object scenes), got {obj.shape}")
    m = (obj[:, 0, :] != obj[:, 1, :]).sum(1)
    return 1.0 / 2.0 ** np.maximum(m - 1, 0)


def heldout_bag_ceiling(data: BindingData, fraction: float, seed: int = 0) -> float:
    """Mean bag-of-concepts ceiling of the held-out scenes of :func:`object_level_split`: what
    held-out object recognition must clear to show binding; NaN without held-out scenes."""
    split = object_level_split(data, fraction, seed)
    if not len(split.heldout):
        return float("nan")
    return float(bag_ceiling_of(data.objects[split.heldout]).mean())


def split_by_objects(data: BindingData, train_objects: np.ndarray) -> ObjectLevelSplit:
    """The object-level split training on ``train_objects`` (those that occur in ``data``)."""
    ids = data.object_ids()
    train = np.intersect1d(np.unique(ids), np.asarray(train_objects, dtype=np.int64))
    is_train = np.isin(ids, train)
    both, none = is_train.all(1), ~is_train.any(1)
    return ObjectLevelSplit(train, np.flatnonzero(both), np.flatnonzero(none), np.flatnonzero(~both & ~none))


# ---------------------------------------------------------------------------------
# functional binding: predicted embeddings read by the frozen probes
# ---------------------------------------------------------------------------------
def concept_recognition(data: BindingData, embeddings: np.ndarray | torch.Tensor, index: np.ndarray) -> float:
    """Strict concept recognition, mean over scenes ``index`` and concepts; NaN if empty."""
    if len(index) == 0:
        return float("nan")
    z = torch.as_tensor(np.asarray(embeddings)[index], dtype=torch.float32)
    objs = torch.as_tensor(data.objects[index])
    accs = []
    for c, w in enumerate(data.concept_probes):
        scores = z @ torch.as_tensor(w, dtype=torch.float32).T
        accs.append(strict_correct_at(scores, objs[:, :, c]).float())
    return float(torch.stack(accs).mean())


def object_recognition(data: BindingData, embeddings: np.ndarray | torch.Tensor, index: np.ndarray) -> float:
    """Strict object recognition over all U objects on scenes ``index``; NaN if empty."""
    if len(index) == 0:
        return float("nan")
    z = torch.as_tensor(np.asarray(embeddings)[index], dtype=torch.float32)
    scores = z @ torch.as_tensor(data.object_probe, dtype=torch.float32).T
    return float(strict_correct_at(scores, torch.as_tensor(data.object_ids()[index])).float().mean())


def binding_r2(data: BindingData, embeddings: np.ndarray | torch.Tensor, index: np.ndarray) -> float:
    """R² of ``embeddings`` on scenes ``index``, SST about the mean of all scenes (as the release)."""
    if len(index) == 0:
        return float("nan")
    return r2(data.embeddings[index], np.asarray(embeddings)[index], reference_mean=data.embedding_mean)


def heldout_by_values(data: BindingData, split: ObjectLevelSplit) -> tuple[np.ndarray, np.ndarray]:
    """The held-out scenes of ``split`` as (all values seen in training objects, some value
    unseen): on the latter an approximator predicts from its initialisation."""
    vals = data.objects[split.heldout]  # [n, 2, C]
    train_vals = object_values(split.train_objects, data.values_per_concept)
    seen = np.ones(len(vals), dtype=bool)
    for c in range(data.n_concepts):
        seen &= np.isin(vals[:, :, c], np.unique(train_vals[:, c])).all(1)
    return split.heldout[seen], split.heldout[~seen]


def functional_binding(data: BindingData, predicted: np.ndarray, split: ObjectLevelSplit) -> dict[str, float]:
    """``{part}_concept``, ``{part}_object``, ``{part}_r2`` of ``predicted`` (one row per scene)
    for part ``train, heldout, mixed, heldout_seen, heldout_unseen``, and ``n_heldout_unseen``."""
    rows = np.shape(predicted)[0] if np.ndim(predicted) else None
    if np.ndim(predicted) != 2 or rows != len(data.objects):
        raise ValueError(f"predicted must hold one embedding row per scene of the binding data ([{len(data.objects)}, "
                         f"d]), got shape {tuple(np.shape(predicted))}")
    seen, unseen = heldout_by_values(data, split)
    out: dict[str, float] = {"n_heldout_unseen": float(len(unseen))}
    for name, idx in (("train", split.train), ("heldout", split.heldout), ("mixed", split.mixed),
                      ("heldout_seen", seen), ("heldout_unseen", unseen)):
        out[f"{name}_concept"] = concept_recognition(data, predicted, idx)
        out[f"{name}_object"] = object_recognition(data, predicted, idx)
        out[f"{name}_r2"] = binding_r2(data, predicted, idx)
    return out


# ---------------------------------------------------------------------------------
# linear probes on frozen embeddings (C.2)
# ---------------------------------------------------------------------------------
PROBE_TRAIN_FRACTION = 0.4  # the released code fits linear probes on 40 % of the scenes


def scene_split(n_scenes: int, train_fraction: float = PROBE_TRAIN_FRACTION,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A seeded scene-level split: sorted (train, rest) indices."""
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must lie in (0, 1), got {train_fraction}")
    perm = np.random.default_rng(seed).permutation(n_scenes)
    n_train = int(n_scenes * train_fraction)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


def _soft_targets(index: torch.Tensor, present: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Counts of each class among a scene's present objects, normalised to sum 1."""
    t = torch.zeros(len(index), n_classes)
    t.scatter_add_(1, index.clamp(min=0), present.float())
    return t / t.sum(1, keepdim=True).clamp(min=1.0)


class LinearProbes:
    """Bias-free linear probes per concept and over all objects, fitted jointly (soft-target
    cross-entropy, full-batch Adam, cosine decay), scored by the strict rule; scikit-learn's
    estimator interface. ``objects``: ``[N, O_max, C]``, -1 rows absent."""

    def __init__(self, values_per_concept: list[int] | tuple[int, ...] = (8, 3), fit_objects: bool = True,
                 lr: float = 1e-2, epochs: int = 2000, seed: int = 0) -> None:
        self.values_per_concept = values_per_concept
        self.fit_objects = fit_objects
        self.lr = lr
        self.epochs = epochs
        self.seed = seed

    # -- scikit-learn protocol ----------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("values_per_concept", "fit_objects", "lr", "epochs", "seed")}

    def set_params(self, **params: Any) -> LinearProbes:
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"LinearProbes has no parameter {k!r}")
            setattr(self, k, v)
        return self

    # -- fitting ------------------------------------------------------------------------
    def _object_ids(self, objects: torch.Tensor) -> torch.Tensor:
        return object_ids(objects, self.values_per_concept)  # -1 for absent objects: no target

    def _check_params(self) -> list[int]:
        vpc = check_values_per_concept(self.values_per_concept)
        if isinstance(self.epochs, bool) or not isinstance(self.epochs, (int, np.integer)) or self.epochs < 1:
            raise ValueError(f"LinearProbes.epochs must be an integer >= 1, got {self.epochs!r}")
        if isinstance(self.lr, bool) or not isinstance(self.lr, (int, float)) or not 0 < self.lr < float("inf"):
            raise ValueError(f"LinearProbes.lr must be a finite number > 0, got {self.lr!r}")
        return vpc

    def fit(self, X: np.ndarray, objects: np.ndarray) -> LinearProbes:
        """Fit on finite embeddings ``X`` ``[N, d]`` of the scenes ``objects``."""
        vpc = self._check_params()
        objs = np.asarray(objects)
        if objs.ndim != 3 or objs.shape[2] != len(vpc) or len(objs) != len(np.asarray(X)):
            raise ValueError(f"objects must be [N, O_max, {len(vpc)}] with N={len(np.asarray(X))}, "
                             f"got {tuple(objs.shape)}")
        z, o, _ = check_inputs(X, objs, vpc, name="X", dtype=np.float32)
        x = torch.as_tensor(z)
        obj = torch.as_tensor(o)
        present = obj[..., 0] >= 0
        if not bool(present.any()):
            raise ValueError(f"objects: none of the {len(objs)} scenes has an object (every row is -1): the probes "
                             "would have nothing to learn from")
        gen = torch.Generator().manual_seed(self.seed)
        d = x.shape[1]
        n_obj = int(np.prod(self.values_per_concept))
        heads = [torch.randn(v, d, generator=gen) * d**-0.5 for v in self.values_per_concept]
        if self.fit_objects:
            heads.append(torch.randn(n_obj, d, generator=gen) * d**-0.5)
        params = [h.requires_grad_() for h in heads]
        targets = [_soft_targets(obj[..., c], present, v) for c, v in enumerate(self.values_per_concept)]
        if self.fit_objects:
            targets.append(_soft_targets(self._object_ids(obj), present, n_obj))
        opt = torch.optim.Adam(params, lr=self.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, self.epochs))
        for _ in range(self.epochs):
            loss = sum(-(t * torch.log_softmax(x @ w.T, 1)).sum(1).mean() for w, t in zip(params, targets))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        self.concept_weights_ = [w.detach().numpy().copy() for w in params[: len(self.values_per_concept)]]
        self.object_weights_ = params[-1].detach().numpy().copy() if self.fit_objects else None
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "concept_weights_"):
            raise RuntimeError("LinearProbes is not fitted yet: call fit first")

    # -- prediction ---------------------------------------------------------------------
    def decision_function(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Logits of every probe: ``{"concept_0": [N, V_0], ..., "object": [N, U]}``."""
        self._check_fitted()
        x = check_embeddings(X, "X", min_rows=0, dim=self.concept_weights_[0].shape[1], dtype=np.float32)
        out = {f"concept_{c}": x @ w.T for c, w in enumerate(self.concept_weights_)}
        if self.object_weights_ is not None:
            out["object"] = x @ self.object_weights_.T
        return out

    def predict(self, X: np.ndarray, n_objects: int = 2) -> np.ndarray:
        """The ``n_objects`` highest-scoring object ids per scene ``[N, n_objects]``."""
        self._check_fitted()
        if self.object_weights_ is None:
            raise RuntimeError("fitted with fit_objects=False: no object probe")
        return np.argsort(-self.decision_function(X)["object"], axis=1)[:, :n_objects]

    def scores(self, X: np.ndarray, objects: np.ndarray) -> dict[str, float]:
        """Strict concept recognition (mean over concepts) and object recognition."""
        logits = self.decision_function(X)
        obj = torch.as_tensor(check_objects(objects, self.values_per_concept, n_scenes=len(np.asarray(X)),
                                            rows_of="X"))
        present = obj[..., 0] >= 0
        out = {}
        concept = []
        for c, v in enumerate(self.values_per_concept):
            pos = _soft_targets(obj[..., c], present, v) > 0
            concept.append(strict_correct(torch.as_tensor(logits[f"concept_{c}"]), pos).float().mean())
        out["concept"] = float(torch.stack(concept).mean())
        if "object" in logits:
            pos = _soft_targets(self._object_ids(obj), present, logits["object"].shape[1]) > 0
            out["object"] = float(strict_correct(torch.as_tensor(logits["object"]), pos).float().mean())
        return out

    def score(self, X: np.ndarray, objects: np.ndarray) -> float:
        """Object recognition (concept recognition without an object probe)."""
        s = self.scores(X, objects)
        return s.get("object", s["concept"])

    def binding_data(self, objects: np.ndarray, embeddings: np.ndarray, name: str = "",
                     origin: dict[str, Any] | None = None) -> BindingData:
        """The two-object scenes of ``objects`` with these probes frozen (``origin``: what made them)."""
        self._check_fitted()
        objects = np.asarray(objects)
        two = (objects[..., 0] >= 0).sum(1) == 2
        return BindingData(objects[two][:, :2], np.asarray(embeddings)[two], list(self.values_per_concept),
                           self.concept_weights_, self.object_weights_, name=name, origin=origin)


# ---------------------------------------------------------------------------------
# controlled dual encoders as binding functions (reference-spec §7)
# ---------------------------------------------------------------------------------
def sub_grid_objects(space: Any, max_objects: int) -> torch.Tensor:
    """Sorted object ids of the first ceil(max_objects ** (1/C)) values of each concept."""
    import math

    side = min(space.n_values, math.ceil(max_objects ** (1 / space.n_concepts) - 1e-9))
    grid = torch.cartesian_prod(*[torch.arange(side)] * space.n_concepts).reshape(-1, space.n_concepts)
    return space.object_ids(grid).sort().values


def controlled_binding_data(record: dict[str, Any], objects: str = "all", max_objects: int = 400,
                            device: str = "cpu", renders: int = 1) -> BindingData:
    """All ordered pairs of objects embedded by a trained dual encoder's scene tower, its own
    normalised query embeddings as the probes. ``objects``: "all" (:func:`sub_grid_objects`),
    "train" or "test" (at most ``max_objects``, seeded); ``renders``: images averaged (E)."""

    import torch.nn.functional as F

    from bindcore.controlled.runs import load_model
    from bindcore.controlled.training import TrainConfig, embed_in_chunks

    cfg = TrainConfig.from_dict(record["config"])
    model = load_model(record, map_location=device)
    space = cfg.space
    if objects == "all":
        ids = sub_grid_objects(space, max_objects)
    elif objects in ("train", "test"):
        pool = getattr(cfg.split, objects)
        ids = pool if len(pool) <= max_objects else pool[torch.randperm(len(pool), generator=torch.Generator()
                                                                        .manual_seed(0))[:max_objects]].sort().values
    else:
        raise ValueError(f"objects must be 'all', 'train' or 'test', got {objects!r}")
    pairs = torch.cartesian_prod(ids, ids)
    if cfg.max_objects > 2:
        pairs = F.pad(pairs, (0, cfg.max_objects - 2), value=-1)
    if renders < 1:
        raise ValueError(f"renders must be >= 1, got {renders}")
    with torch.no_grad():
        z = cfg.embed_eval_scenes(model, pairs.to(device))
        for r in range(1, renders):
            z = z + cfg.embed_eval_scenes(model, pairs.to(device), seed=r)
        if renders > 1:
            z = z / renders
        all_ids = torch.arange(space.n_objects, device=device)
        obj_probe = F.normalize(embed_in_chunks(model.query, space.object_query_tokens(all_ids)), dim=1)
        con_probe = F.normalize(embed_in_chunks(
            model.query, space.concept_query_tokens(torch.arange(space.n_value_tokens, device=device))), dim=1)
    V = cfg.n_values
    concept_probes = [con_probe[c * V:(c + 1) * V].cpu().numpy() for c in range(cfg.n_concepts)]
    vals = space.object_values(pairs[:, :2]).numpy()
    origin = data_origin({"model": config_hash(record["config"]), "weights": weights_digest(model),
                          "objects": objects, "max_objects": max_objects, "renders": renders}, MODEL_ORIGIN)
    return BindingData(vals, z.cpu().numpy(), [V] * cfg.n_concepts, concept_probes, obj_probe.cpu().numpy(),
                       name=cfg.short_name(),
                       info={"hash": record.get("hash"), "objects": objects, "n_objects": len(ids), "renders": renders,
                             "swap_pairs": (record.get("metrics") or {}).get("test_swap_pair", float("nan")),
                             "val_swap_pairs": (record.get("metrics") or {}).get("val_swap_pair", float("nan"))},
                       origin=origin)
