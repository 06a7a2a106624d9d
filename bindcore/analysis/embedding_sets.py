"""The embeddings the chapters analyse, made from the book's datasets and encoders:
the embedding sets of §4 and appendix D and the binding data of §5.1.

* captions of the adjective-noun space (C.3), embedded by each given text encoder;
* CLEVR-2D and the CLEVR-like 3-D scenes (C.1), by each given image encoder;
* three-object CLEVR-like scenes with and without occlusion (D.3);
* patterned objects, the substitute of D.4's generated natural images;
* the scene tower of a trained controlled dual encoder (§5.2) on all ordered pairs of a
  sub-grid of objects (:func:`controlled_set`);
* §5.1: the two-object captions embedded by each encoder, with linear probes fitted and
  frozen (:func:`pretrained_binding`).

Which encoders run (pretrained CLIP where reachable, the random-init control, MiniLM)
is the chapters' choice (:mod:`bindcore.experiments.inputs`); embeddings are stored
(:func:`bindcore.encoders.embed_dataset`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bindcore.data import (
    make_clevr2d,
    make_clevr2d_singles,
    make_clevr3d,
    make_clevr3d_singles,
    make_text_space,
)
from bindcore.data.clevr3d import make_clevr3d_three
from bindcore.encoders import embed_dataset
from bindcore.encoders.cache import embedding_config

from .geometry_sets import EmbeddingSet
from .probes import PROBE_TRAIN_FRACTION, BindingData, LinearProbes, data_origin, scene_split

# The version of the code that turns datasets into the sets and binding data here (the
# probes fitted on the embeddings, the scenes chosen). Its value is the code fingerprint it
# had when the published records keyed by it were made (before versions replaced
# fingerprints), so that they keep their keys; set any other value when this code's
# results change.
ORIGIN_CODE = "54190935e827d569"


def embedded(encoder: Any, ds: Any, modality: str) -> dict[str, Any]:
    """What names the embeddings of ``ds`` by ``encoder`` wherever they are computed: their
    store key (:func:`bindcore.encoders.cache.embedding_config`: the encoder's identity,
    the dataset's content, the modality)."""
    return embedding_config(encoder.identity, ds.content_hash(), modality)

THREE_OBJECT_DATASETS = {False: "CLEVR-like 3-D, three objects", True: "CLEVR-like 3-D, three objects, occluded"}
THREE_OBJECT_SEED = 0


def _split_singles(ds: Any) -> tuple[Any, Any | None]:
    """(two-object scenes, single-object scenes or None) of a dataset."""
    n = ds.n_objects_per_scene
    pairs, singles = np.flatnonzero(n == 2), np.flatnonzero(n == 1)
    return ds.subset(pairs), (ds.subset(singles) if len(singles) else None)


def _from_dataset(ds: Any, encoder: Any, modality: str, dataset: str, source: str, pretrained: bool,
                  singles: Any | None = None, progress: bool = False) -> EmbeddingSet:
    z = embed_dataset(encoder, ds, modality, progress=progress)
    zs = embed_dataset(encoder, singles, modality, progress=progress) if singles is not None else None
    origin = data_origin({"embeddings": embedded(encoder, ds, modality),
                          "singles": embedded(encoder, singles, modality) if singles is not None else None},
                         ORIGIN_CODE)
    return EmbeddingSet(dataset, encoder.name, source, pretrained, z, ds.objects[:, :2], ds.values_per_concept,
                        list(ds.concept_names), [list(v) for v in ds.value_names], zs,
                        singles.objects[:, :2] if singles is not None else None, origin)


def caption_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]]) -> list[EmbeddingSet]:
    """Two-object captions of the adjective-noun space (and its single-object captions)."""
    a, n = params["text_space"]
    pairs, singles = _split_singles(make_text_space(a, n, singles=True))
    return [_from_dataset(pairs, enc, "text", f"captions {a}x{n}", "text", pre, singles) for enc, pre in encoders]


def image_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]]) -> list[EmbeddingSet]:
    """CLEVR-2D and the CLEVR-like 3-D scenes (576 two-object scenes each, or the first
    ``image_scenes`` of them) with their 24 single-object scenes."""
    out = []
    keep = params.get("image_scenes")
    w3 = params["clevr3d_width"]
    w2 = params["clevr2d_size"]
    makers = [("CLEVR-2D", lambda: make_clevr2d(size=w2), lambda: make_clevr2d_singles(size=w2))]
    if w3:
        size = (w3, w3 * 3 // 4)
        sub = None if keep is None else list(range(min(keep, 576)))
        makers.append(("CLEVR-like 3-D", lambda: make_clevr3d(size=size, subset=sub, progress=False),
                       lambda: make_clevr3d_singles(size=size, progress=False)))
    for name, pairs_fn, singles_fn in makers:
        pairs, singles = pairs_fn(), singles_fn()
        if keep is not None and len(pairs) > keep:
            pairs = pairs.subset(np.arange(keep))
        out += [_from_dataset(pairs, enc, "image", name, "image", pre, singles) for enc, pre in encoders]
    return out


def dataset_sets(datasets: dict[str, Any], encoders: Sequence[tuple[Any, bool]]) -> list[EmbeddingSet]:
    """The two-object scenes of each given image dataset (``{name: SceneDataset}``, e.g.
    the authors' CLEVR or PUG:SPARE folders, :func:`bindcore.data.load_folder`) embedded
    by each ``(encoder, pretrained)`` image encoder; single-object scenes where the
    dataset has them."""
    out = []
    for name, ds in datasets.items():
        pairs, singles = _split_singles(ds)
        out += [_from_dataset(pairs, enc, "image", name, "image", pre, singles) for enc, pre in encoders]
    return out


def controlled_set(data: BindingData) -> EmbeddingSet:
    """A controlled model's binding data (:func:`~bindcore.analysis.probes.controlled_binding_data`)
    as an embedding set (no single-object scenes), over the concept values its scenes
    show: on a sub-grid of a larger object space, each concept's present values are
    renumbered 0..k-1 (names keep the model's values), so that the probes, components and
    permuted-ID controls of §4 range over values a scene shows, not over values none does
    (a control sending a value to an absent one leaves nothing to estimate). A full grid
    is unchanged."""
    objects = np.array(data.objects, copy=True)
    vpc, names = [], []
    for c, V in enumerate(data.values_per_concept):
        col = objects[..., c]
        present = np.unique(col[col >= 0])
        renumber = np.full(V, -1)
        renumber[present] = np.arange(len(present))
        objects[..., c] = np.where(col >= 0, renumber[col.clip(0)], -1)
        vpc.append(len(present))
        names.append([str(v) for v in present])
    origin = None if data.origin is None else {**data.origin, "view": "controlled set"}
    return EmbeddingSet(data.name, "controlled dual encoder (scene tower)", "controlled", True,
                        data.embeddings, objects, vpc, [f"concept {c}" for c in range(len(vpc))], names,
                        origin=origin)


NULL_SUFFIX = " (Gaussian null)"


def gaussian_like(Z: np.ndarray, seed: int = 0) -> np.ndarray:
    """Gaussian embeddings of the same size, mean and spectrum as ``Z`` (``[n, d]``):
    ``mean + G diag(s / sqrt(n - 1)) V^T`` with ``G`` standard normal and ``s``, ``V``
    the singular values and right singular vectors of the centred ``Z``. Every label
    structure is gone; the number of scenes, the width and how the variance spreads
    over directions stay."""
    z = np.asarray(Z, dtype=np.float64)
    if z.ndim != 2 or len(z) < 2:
        raise ValueError(f"Z must be [n >= 2, d], got {z.shape}")
    mu = z.mean(0)
    _, sv, vt = np.linalg.svd(z - mu, full_matrices=False)
    g = np.random.default_rng(seed).standard_normal((len(z), len(sv)))
    return (mu + (g * (sv / np.sqrt(len(z) - 1))) @ vt).astype(np.asarray(Z).dtype)


def gaussian_null(s: EmbeddingSet, seed: int = 0) -> EmbeddingSet:
    """The null of an embedding set for the claims of §4.1 and appendix D: the same
    labels (objects), Gaussian embeddings of the same size and spectrum
    (:func:`gaussian_like`, single-object scenes too)."""
    singles = gaussian_like(s.Z_single, seed + 1) if s.Z_single is not None and len(s.Z_single) > 1 else s.Z_single
    origin = None if s.origin is None else {"null": "gaussian", "seed": seed, "of": s.origin}
    return EmbeddingSet(s.dataset, s.encoder + NULL_SUFFIX, s.source, s.pretrained, gaussian_like(s.Z, seed),
                        s.objects, list(s.values_per_concept), list(s.concept_names), list(s.value_names),
                        singles, s.objects_single, origin)


def three_object_datasets(params: dict[str, Any], progress: bool = False) -> dict[bool, Any]:
    """{occlusion: dataset}: ``three_object_scenes`` three-object CLEVR-like scenes
    (:func:`~bindcore.data.clevr3d.make_clevr3d_three`, seed 0) at ``clevr3d_width``
    pixels wide, without (False) and with (True) one object partly hidden per scene."""
    n, w = params["three_object_scenes"], params["clevr3d_width"]
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"three_object_scenes must be an integer >= 2, got {n!r}")
    if not isinstance(w, (int, np.integer)) or w < 8:
        raise ValueError(f"clevr3d_width must be an integer >= 8 (pixels), got {w!r}")
    return {occ: make_clevr3d_three(int(n), occlusion=occ, seed=THREE_OBJECT_SEED, size=(int(w), int(w) * 3 // 4),
                                    progress=progress) for occ in (False, True)}


def three_object_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]],
                      datasets: dict[bool, Any] | None = None, progress: bool = False) -> list[EmbeddingSet]:
    """The three-object scenes (made by :func:`three_object_datasets` unless given)
    embedded by each ``(encoder, pretrained)`` image encoder: one set per (occlusion,
    encoder), all three object slots kept (objects listed left to right in the image)."""
    datasets = datasets if datasets is not None else three_object_datasets(params, progress)
    out = []
    for occ, ds in datasets.items():
        for enc, pre in encoders:
            z = embed_dataset(enc, ds, "image", progress=progress)
            out.append(EmbeddingSet(THREE_OBJECT_DATASETS[bool(occ)], enc.name, "image", bool(pre), z, ds.objects,
                                    list(ds.values_per_concept), list(ds.concept_names),
                                    [list(v) for v in ds.value_names],
                                    origin=data_origin({"embeddings": embedded(enc, ds, "image")}, ORIGIN_CODE)))
    return out


NATURAL_DATASET = "patterned objects (D.4 substitute)"


def natural_dataset(params: dict[str, Any]) -> Any:
    """D.4's substitute: the ordered pairs of ``natural_patterns x natural_types``
    patterned objects (:func:`~bindcore.data.patterned.make_patterned`, seed 0) at
    ``natural_width`` pixels wide."""
    from bindcore.data.patterned import make_patterned

    w = params["natural_width"]
    return make_patterned(int(params["natural_types"]), int(params["natural_patterns"]), size=(int(w), int(w) * 3 // 4))


def natural_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]], dataset: Any = None
                 ) -> list[EmbeddingSet]:
    """:func:`natural_dataset` (unless given) embedded by each ``(encoder, pretrained)``
    image encoder."""
    ds = dataset if dataset is not None else natural_dataset(params)
    return [_from_dataset(ds, enc, "image", NATURAL_DATASET, "image", pre) for enc, pre in encoders]


def is_occluded(s: EmbeddingSet) -> bool:
    """Whether a set of :func:`three_object_sets` holds the occluded scenes."""
    return s.dataset == THREE_OBJECT_DATASETS[True]


# ---------------------------------------------------------------------------------
# what a set is, and a row of its analyses
# ---------------------------------------------------------------------------------
def weights_label(s: EmbeddingSet) -> str:
    """What a set's weights are, in words."""
    if s.source == "controlled":
        return "trained here (§5.2)"
    return "pretrained" if s.pretrained else "random init (control)"


def is_pretrained_encoder(s: EmbeddingSet) -> bool:
    """Whether a set is embedded by a pretrained encoder: neither a random-init control
    nor a controlled model of §5.2 (which ``s.pretrained`` counts as trained)."""
    return s.source != "controlled" and bool(s.pretrained)


def frame_row(frame: pd.DataFrame, kind: str, estimator: str, required: bool = True) -> pd.Series | None:
    """The row of a set's decomposition frame (:func:`~bindcore.analysis.geometry_sets.decomposition`,
    :func:`~bindcore.analysis.geometry_sets.three_object_analysis`) for one ``kind``
    (``concepts`` or ``objects``) and ``estimator``; where it has none, an ``IndexError``
    (``required``) or None."""
    rows = frame[(frame["kind"] == kind) & (frame["estimator"] == estimator)]
    if len(rows) or required:
        return rows.iloc[0]
    return None


def visibility_frame(datasets: dict[bool, Any]) -> pd.DataFrame:
    """One row per object of every scene: ``occlusion, scene, slot, visible_fraction``
    (the share of the object's image area that no other object hides) and ``hidden``
    (the least visible object of its scene)."""
    rows = []
    for occ, ds in datasets.items():
        vf = np.asarray(ds.info["visible_fraction"], dtype=float)
        least = vf.argmin(1)
        for i in range(vf.shape[0]):
            for j in range(vf.shape[1]):
                rows.append({"occlusion": bool(occ), "scene": i, "slot": j, "visible_fraction": vf[i, j],
                             "hidden": j == least[i]})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------
# §5.1: binding data of pretrained text encoders
# ---------------------------------------------------------------------------------
def pretrained_binding(params: dict[str, Any], encoders: dict[str, Any], datasets: dict[str, Any] | None = None):
    """§5.1's data: two-object scenes embedded by each encoder (stored), linear probes
    fitted on 40 % of the scenes and frozen. Without ``datasets``: the two-object
    captions of the adjective-noun space (``params["text_space"]``) and every encoder;
    with ``datasets`` (``{name: SceneDataset}`` of images, e.g. the authors' folders):
    those images and the encoders that embed images. Returns ({name: BindingData} with
    names "<encoder>" for captions and "<encoder> | <dataset>" for images, table of
    probe accuracies on the other 60 %)."""
    if datasets is None:
        sources = [("", "text", make_text_space(*params["text_space"], singles=False))]
    else:
        sources = [(name, "image", _split_singles(ds)[0]) for name, ds in datasets.items()]
    binding, rows = {}, []
    for dname, modality, space in sources:
        tr, te = scene_split(len(space), PROBE_TRAIN_FRACTION, seed=0)
        for name, enc in encoders.items():
            if modality not in enc.modalities:
                continue
            key = f"{name} | {dname}" if dname else name
            emb = embed_dataset(enc, space, modality, progress=False)
            probes = LinearProbes(space.values_per_concept, epochs=params["probe_epochs"], lr=params["probe_lr"],
                                  seed=0)
            probes.fit(emb[tr], space.objects[tr])
            s = probes.scores(emb[te], space.objects[te])
            rows.append({"encoder": key, "dim": emb.shape[1], "probe concept recognition (test scenes)": s["concept"],
                         "probe object recognition (test scenes)": s["object"]})
            origin = data_origin({"embeddings": embedded(enc, space, modality),
                                  "probes": {"epochs": params["probe_epochs"], "lr": params["probe_lr"], "seed": 0,
                                             "train_fraction": PROBE_TRAIN_FRACTION, "split_seed": 0}},
                                 ORIGIN_CODE)
            binding[key] = probes.binding_data(space.objects, emb, name=key, origin=origin)
    return binding, pd.DataFrame(rows)
