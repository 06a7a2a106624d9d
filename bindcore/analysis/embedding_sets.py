"""The embedding sets of §4 and appendix D and the binding data of §5.1, made from the
book's datasets and the encoders a chapter passes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
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
from bindcore.io import atomic_savez
from bindcore.store import CorruptRecord, Kind, ResultStore

from .geometry_sets import EmbeddingSet
from .probes import PROBE_TRAIN_FRACTION, BindingData, LinearProbes, data_origin, scene_split

# The version of the code that turns datasets into the sets and binding data here (the
# probes fitted on the embeddings, the scenes chosen). Its value is the code fingerprint it
# had when the published records keyed by it were made (before versions replaced
# fingerprints), so that they keep their keys; set any other value when this code's
# results change.
ORIGIN_CODE = "54190935e827d569"
PROBES_KIND = Kind("probes-1", data=("probes.npz",))  # §5.1's frozen probes, keyed by their binding data's origin


def embedded(encoder: Any, ds: Any, modality: str) -> dict[str, Any]:
    """The store key of ``ds``'s embeddings by ``encoder``, the same on every machine."""
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
    """CLEVR-2D and CLEVR-like 3-D two-object scenes (the first ``image_scenes``, or all) with
    their single-object scenes; 3-D only when ``clevr3d_width`` is set."""
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
    """The two-object (and single-object) scenes of each ``{name: SceneDataset}`` embedded by
    each ``(encoder, pretrained)`` image encoder."""
    out = []
    for name, ds in datasets.items():
        pairs, singles = _split_singles(ds)
        out += [_from_dataset(pairs, enc, "image", name, "image", pre, singles) for enc, pre in encoders]
    return out


def controlled_set(data: BindingData) -> EmbeddingSet:
    """A controlled model's binding data as an embedding set, each concept's present values
    renumbered 0..k-1 (names keep the model's values) so that the permuted-ID controls never
    send a value to one no scene shows."""
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
    """Gaussian embeddings with the size, mean and singular spectrum of ``Z`` ``[n, d]``, no
    label structure."""
    z = np.asarray(Z, dtype=np.float64)
    if z.ndim != 2 or len(z) < 2:
        raise ValueError(f"Z must be [n >= 2, d], got {z.shape}")
    mu = z.mean(0)
    _, sv, vt = np.linalg.svd(z - mu, full_matrices=False)
    g = np.random.default_rng(seed).standard_normal((len(z), len(sv)))
    return (mu + (g * (sv / np.sqrt(len(z) - 1))) @ vt).astype(np.asarray(Z).dtype)


def gaussian_null(s: EmbeddingSet, seed: int = 0) -> EmbeddingSet:
    """The null of a set for the §4.1 and appendix D claims: same labels, :func:`gaussian_like`
    embeddings."""
    singles = gaussian_like(s.Z_single, seed + 1) if s.Z_single is not None and len(s.Z_single) > 1 else s.Z_single
    origin = None if s.origin is None else {"null": "gaussian", "seed": seed, "of": s.origin}
    return EmbeddingSet(s.dataset, s.encoder + NULL_SUFFIX, s.source, s.pretrained, gaussian_like(s.Z, seed),
                        s.objects, list(s.values_per_concept), list(s.concept_names), list(s.value_names),
                        singles, s.objects_single, origin)


def three_object_datasets(params: dict[str, Any], progress: bool = False) -> dict[bool, Any]:
    """``{occlusion: dataset}`` of ``three_object_scenes`` CLEVR-like scenes, ``clevr3d_width``
    pixels wide, without and with one object partly hidden."""
    n, w = params["three_object_scenes"], params["clevr3d_width"]
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"three_object_scenes must be an integer >= 2, got {n!r}")
    if not isinstance(w, (int, np.integer)) or w < 8:
        raise ValueError(f"clevr3d_width must be an integer >= 8 (pixels), got {w!r}")
    return {occ: make_clevr3d_three(int(n), occlusion=occ, seed=THREE_OBJECT_SEED, size=(int(w), int(w) * 3 // 4),
                                    progress=progress) for occ in (False, True)}


def three_object_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]],
                      datasets: dict[bool, Any] | None = None, progress: bool = False) -> list[EmbeddingSet]:
    """One set per (occlusion, encoder) of the three-object scenes, all three slots kept
    (objects left to right)."""
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
    """D.4's substitute: ordered pairs of ``natural_patterns x natural_types`` patterned objects."""
    from bindcore.data.patterned import make_patterned

    w = params["natural_width"]
    return make_patterned(int(params["natural_types"]), int(params["natural_patterns"]), size=(int(w), int(w) * 3 // 4))


def natural_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]], dataset: Any = None
                 ) -> list[EmbeddingSet]:
    """:func:`natural_dataset` (unless given) embedded by each image encoder."""
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
    """Neither a random-init control nor a controlled model (which ``s.pretrained`` counts)."""
    return s.source != "controlled" and bool(s.pretrained)


def frame_row(frame: pd.DataFrame, kind: str, estimator: str, required: bool = True) -> pd.Series | None:
    """The decomposition frame's row of ``kind`` and ``estimator``; if none, ``IndexError``
    (``required``) or None."""
    rows = frame[(frame["kind"] == kind) & (frame["estimator"] == estimator)]
    if len(rows) or required:
        return rows.iloc[0]
    return None


def visibility_frame(datasets: dict[bool, Any]) -> pd.DataFrame:
    """One row per object: ``occlusion, scene, slot, visible_fraction, hidden`` (the least
    visible object of its scene)."""
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
def pretrained_binding(params: dict[str, Any], encoders: dict[str, Any], datasets: dict[str, Any] | None = None,
                       store: Any = None):
    """§5.1: two-object captions (or the image ``datasets``) embedded by each encoder, probes
    fitted on 40 % of the scenes and frozen (stored: :func:`stored_probes`). Returns
    ``({"<encoder>[ | <dataset>]": BindingData}, probe accuracies on the other 60 %)``."""
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
            origin = data_origin({"embeddings": embedded(enc, space, modality),
                                  "probes": {"epochs": params["probe_epochs"], "lr": params["probe_lr"], "seed": 0,
                                             "train_fraction": PROBE_TRAIN_FRACTION, "split_seed": 0}},
                                 ORIGIN_CODE)

            def fit(emb=emb, space=space, tr=tr, te=te):
                probes = LinearProbes(space.values_per_concept, epochs=params["probe_epochs"],
                                      lr=params["probe_lr"], seed=0).fit(emb[tr], space.objects[tr])
                return probes, probes.scores(emb[te], space.objects[te])

            probes, s = stored_probes(origin, space.values_per_concept, fit, store)
            rows.append({"encoder": key, "dim": emb.shape[1], "probe concept recognition (test scenes)": s["concept"],
                         "probe object recognition (test scenes)": s["object"]})
            binding[key] = probes.binding_data(space.objects, emb, name=key, origin=origin)
    return binding, pd.DataFrame(rows)


def stored_probes(origin: dict[str, Any], values_per_concept: Sequence[int], fit: Any, store: Any = None):
    """``fit()``'s ``(LinearProbes, scores)``, stored under ``origin`` (weights in ``probes.npz``) and read
    back from the store when there, so that a chapter and the report fit each set's probes once."""

    def compute(folder: Path) -> dict[str, Any]:
        probes, scores = fit()
        weights = {f"concept_{i}": w for i, w in enumerate(probes.concept_weights_)}
        atomic_savez(folder / "probes.npz", object=probes.object_weights_, **weights)
        return {"scores": {k: float(v) for k, v in scores.items()}}

    def read(folder: Path) -> list[np.ndarray]:
        """The weights ``[object, concept_0, ...]``, each ``[values, d]``."""
        path, vpc = folder / "probes.npz", list(values_per_concept)
        rows = {"object": int(np.prod(vpc)), **{f"concept_{i}": v for i, v in enumerate(vpc)}}
        with np.load(path, allow_pickle=False) as z:
            w = {n: z[n] for n in z.files}
        if any(n not in w or w[n].shape != (v, *w["object"].shape[-1:]) for n, v in rows.items()):
            raise CorruptRecord(path, f"holds {({n: a.shape for n, a in w.items()})}, not probes of {vpc} values "
                                "(rows) of one width")
        return [w[n] for n in rows]

    entry = (store or ResultStore()).cached_entry(PROBES_KIND, origin, compute, check=read)
    probes = LinearProbes(list(values_per_concept))
    probes.object_weights_, *probes.concept_weights_ = read(entry.path)
    return probes, entry.result["scores"]
