"""§4 and appendix D as the chapters run them: every embedding set of the §4 chapters
(captions, images, the authors' folders, the controlled models of §5.2), the Gaussian
nulls their claims are judged against (§4.1, D.2), and the tables of D.3 (three objects,
with and without occlusion) and D.4 (the substitute of the generated natural images),
with the paper's D.3 numbers beside the pretrained image encoders."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bindcore.analysis.embedding_sets import frame_row, is_occluded, is_pretrained_encoder, weights_label
from bindcore.analysis.geometry_sets import EmbeddingSet, three_object_analysis
from bindcore.paper import CLIP, PAPER_THREE_OBJECTS, fmt_range

from .generalization import generalizing_runs
from .inputs import authors_data, dinov2_encoder, geometry_encoders


# ---------------------------------------------------------------------------------
# §4.1, §4.2, D.2, D.5: the embedding sets and their nulls
# ---------------------------------------------------------------------------------
def controlled_sets(profile: str, params: dict[str, Any], sweep_params: Mapping[str, Any], workers: int | None = None,
                    device: str | None = None) -> list[Any]:
    """The generalizing controlled models of §5.2 (``sweep_params``: the §5.2 chapter's parameters,
    :func:`~bindcore.experiments.generalization.generalizing_configs`) as embedding sets:
    scene embeddings of all ordered pairs of a sub-grid of at most ``controlled_objects``
    objects."""
    from bindcore.analysis.embedding_sets import controlled_set
    from bindcore.analysis.probes import controlled_binding_data

    return [controlled_set(controlled_binding_data(rec, max_objects=params["controlled_objects"],
                                                   device=device or "cpu"))
            for rec in generalizing_runs(profile, params, sweep_params, workers=workers, device=device)]


def geometry_sets(profile: str, params: dict[str, Any], sweep_params: Mapping[str, Any], workers: int | None = None,
                  device: str | None = None) -> tuple[list[Any], str]:
    """Every embedding set of the §4 chapters and the encoder note for the top of the page:
    captions and images by :func:`~bindcore.experiments.inputs.geometry_encoders` (images
    also by DINOv2 where the ``dinov2`` parameter names it and its weights are here), the
    authors' image folders where given (:func:`~bindcore.experiments.inputs.authors_data`),
    and (``controlled``) the controlled models of §5.2 (:func:`controlled_sets`)."""
    from bindcore.analysis.embedding_sets import caption_sets, dataset_sets, image_sets

    encoders, note = geometry_encoders()
    folders, _ = authors_data(params)
    dino, _ = dinov2_encoder(params)
    images = list(encoders["image"]) + ([(dino, True)] if dino is not None else [])
    sets = caption_sets(params, encoders["text"]) + image_sets(params, images) + dataset_sets(folders, images)
    if params.get("controlled", True):
        sets += controlled_sets(profile, params, sweep_params, workers=workers, device=device)
    return sets, note


def geometry_nulls(sets: Iterable[Any], params: dict[str, Any], store: Any = None, seed: int = 0,
                   judged: Callable[[Any], bool] = is_pretrained_encoder) -> tuple[list[Any], list[Any]]:
    """The nulls the §4.1 / D.2 claims are judged against: per set that the claims judge
    (``judged``; by default a set of a pretrained encoder), the decomposition and editing
    frames of its Gaussian null (:func:`~bindcore.analysis.embedding_sets.gaussian_null`:
    the same labels, Gaussian embeddings of the same size and spectrum); None for the
    other sets (controlled models, random-init controls). Stored like the sets' own."""
    from bindcore.analysis.embedding_sets import gaussian_null
    from bindcore.analysis.geometry_sets import decomposition, editing

    dec, edi = [], []
    for s in sets:
        if not judged(s):
            dec.append(None)
            edi.append(None)
            continue
        n = gaussian_null(s, seed)
        dec.append(decomposition(n, params, store))
        edi.append(editing(n, params, store))
    return dec, edi


# ---------------------------------------------------------------------------------
# appendix D.3: three objects, with and without occlusion
# ---------------------------------------------------------------------------------
def _paper_three(s: EmbeddingSet) -> dict[str, Any]:
    """The paper's D.3 numbers beside pretrained image encoders only."""
    return PAPER_THREE_OBJECTS[is_occluded(s)] if s.source == "image" and s.pretrained else {}


def three_object_table(sets: Sequence[EmbeddingSet], params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """D.3 side by side, one row per set (numbers, not strings): probing of real
    embeddings (concepts, objects; 0.4 scene split), R² of bag-of-concepts vs
    bag-of-objects on held-out scenes (averaging and least-squares components),
    retrieval of the object reconstructions (all scenes, and held-out scenes) with its
    chance level, how many held-out scenes hold an object the rest never shows, and the
    paper's D.3 numbers beside pretrained encoders only; for pretrained encoders also the
    object probing and the held-out R² gap of the set's Gaussian null (``(null)``
    columns, :func:`~bindcore.analysis.embedding_sets.gaussian_null`)."""
    rows = []
    for s in sets:
        df = three_object_analysis(s, params, store)
        real = df.attrs.get("probe_real", {})
        occ = df.attrs.get("occurrences", {})
        ca, oa = frame_row(df, "concepts", "avg"), frame_row(df, "objects", "avg")
        cl, ol = frame_row(df, "concepts", "lstsq"), frame_row(df, "objects", "lstsq")
        paper = _paper_three(s)
        rows.append({
            "dataset": s.dataset, "occlusion": is_occluded(s), "encoder": s.encoder, "weights": weights_label(s),
            "scenes": len(s.Z), "objects never seen": occ.get("never_seen", 0),
            "fewest occurrences": occ.get("min", 0),
            "probing concepts": real.get("concept", np.nan), "probing objects": real.get("object", np.nan),
            "paper: model": CLIP if paper else "–",
            "paper (CLIP): probing": fmt_range(paper.get("probing")),
            "R² held-out concepts (avg)": ca["r2_heldout"], "R² held-out objects (avg)": oa["r2_heldout"],
            "R² held-out concepts (lstsq)": cl["r2_heldout"], "R² held-out objects (lstsq)": ol["r2_heldout"],
            "paper (CLIP): R²": paper.get("r2", "–"),
            "retrieval objects (all scenes)": oa["retrieval"],
            "paper (CLIP): retrieval": paper.get("retrieval", "–"),
            "retrieval chance (all scenes)": oa["retrieval_chance"],
            "retrieval objects (held-out)": oa["retrieval_heldout"],
            "retrieval chance (held-out)": oa["retrieval_chance_heldout"],
            "held-out scenes": int(oa["n_heldout"]), "n_excluded": int(oa["n_excluded_heldout"]),
            **(_three_null(s, params, store) if s.pretrained else {}),
        })
    return pd.DataFrame(rows)


def _three_null(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> dict[str, float]:
    """D.3's statistics on the set's Gaussian null (the same labels, Gaussian embeddings of
    the same size and spectrum): what the D.3 claims must clear."""
    from bindcore.analysis.embedding_sets import gaussian_null

    df = three_object_analysis(gaussian_null(s), params, store)
    ca, oa = frame_row(df, "concepts", "avg"), frame_row(df, "objects", "avg")
    return {"probing objects (null)": df.attrs.get("probe_real", {}).get("object", np.nan),
            "R² held-out gap (null)": oa["r2_heldout"] - ca["r2_heldout"]}


def three_object_long(sets: Sequence[EmbeddingSet], params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """Every (set, kind, estimator) row of :func:`three_object_analysis` with the set's
    dataset, encoder and occlusion: what the D.3 figure draws."""
    frames = []
    for s in sets:
        df = three_object_analysis(s, params, store).copy()
        df.insert(0, "encoder", s.encoder)
        df.insert(0, "occlusion", is_occluded(s))
        df.insert(0, "dataset", s.dataset)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------------------------
# appendix D.4: the substitute of the generated natural images
# ---------------------------------------------------------------------------------
def natural_table(sets: Sequence[EmbeddingSet], params: dict[str, Any], store: Any = None, k: float = 1.0
                  ) -> pd.DataFrame:
    """D.4 per set of :func:`~bindcore.analysis.embedding_sets.natural_sets`: the
    additive decomposition (R² of the bags of concepts and objects, averaging
    estimators; top-1 retrieval of the object reconstructions among all scenes) and the
    edits (obj-avg bank, strength ``k``, all edits: retrieval of the intended scene),
    each with its chance level."""
    from bindcore.analysis.embedding_sets import gaussian_null
    from bindcore.analysis.geometry_sets import decomposition, editing

    def edit_row(ed: pd.DataFrame) -> pd.Series:
        return ed[(ed["bank"] == "obj-avg") & np.isclose(ed["k"], k) & (ed["case"] == "all")].iloc[0]

    rows = []
    for s in sets:
        dec, ed = decomposition(s, params, store), editing(s, params, store)
        c, o = frame_row(dec, "concepts", "avg"), frame_row(dec, "objects", "avg")
        e = edit_row(ed)
        null = {}
        if s.pretrained:  # the claim's null: Gaussian embeddings of the same size and spectrum
            n = gaussian_null(s)
            null = {"retrieval null": frame_row(decomposition(n, params, store), "objects", "avg")["retrieval"],
                    "edit retrieval null": edit_row(editing(n, params, store))["retrieval"]}
        rows.append({"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s), "scenes": len(s.Z),
                     "objects": int(np.prod(s.values_per_concept)),
                     "R² concepts (avg)": c["r2_eval"], "R² objects (avg)": o["r2_eval"],
                     "retrieval": o["retrieval"], "retrieval chance": o["retrieval_chance"],
                     "edit retrieval": e["retrieval"], "edit chance": e["retrieval_chance"], "edits": int(e["n"]),
                     "probing objects (real scenes)": dec.attrs.get("probe_real", {}).get("object", np.nan),
                     "retrieval null": null.get("retrieval null", np.nan),
                     "edit retrieval null": null.get("edit retrieval null", np.nan)})
    return pd.DataFrame(rows)
