"""The embedding sets of the geometry chapters (§4.1, §4.2, D.1, D.2, D.3, D.5) and their
tables beside the paper's numbers.

An :class:`EmbeddingSet` is what every function of :mod:`bindcore.geometry` takes: scene
embeddings of one dataset by one encoder, the scene label table, and, where the dataset
has them, single-object scenes. :func:`geometry_sets` makes the sets a chapter shows:

* captions of the adjective-noun space (C.3) by pretrained CLIP's text tower where its
  weights are reachable, else by the pretrained MiniLM sentence encoder, and always by
  CLIP's architecture with random weights (the paper's control);
* CLEVR-2D and the CLEVR-like 3-D scenes (C.1) by pretrained CLIP's image tower where
  reachable, and always by the random-init image tower (the only image encoder this
  machine may have: a control, never shown as a pretrained one);
* the controlled dual encoders of §5.2 that generalize (stored runs): their scene
  encoder on all ordered pairs of a sub-grid of objects.

Each row of every table names its dataset and encoder; the analyses are stored in the
result store under a hash of the set's content and the parameters, so a chapter
re-executes, and the reproduction report reads them, in seconds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

GEOMETRY_STORE_KIND = "geometry-1"


@dataclass
class EmbeddingSet:
    """Scene embeddings of one dataset by one encoder (see the module docstring)."""

    dataset: str
    encoder: str
    source: str  # "text", "image" or "controlled": which of the paper's rows it sits beside
    pretrained: bool  # False for random weights; the controlled models count as trained (True)
    Z: np.ndarray
    objects: np.ndarray
    values_per_concept: list[int]
    concept_names: list[str] = field(default_factory=list)
    value_names: list[list[str]] = field(default_factory=list)
    Z_single: np.ndarray | None = None
    objects_single: np.ndarray | None = None

    @property
    def label(self) -> str:
        return f"{self.dataset} | {self.encoder}"

    def content_hash(self) -> str:
        h = hashlib.sha256()
        for a in (self.Z, self.objects, self.Z_single, self.objects_single):
            if a is not None:
                a = np.ascontiguousarray(a)
                h.update(str((a.shape, a.dtype.str)).encode())
                h.update(a.tobytes())
        return h.hexdigest()[:16]

    def args(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        return self.Z, self.objects, self.values_per_concept


def _split_singles(ds: Any) -> tuple[Any, Any | None]:
    """(two-object scenes, single-object scenes or None) of a dataset."""
    n = ds.n_objects_per_scene
    pairs, singles = np.flatnonzero(n == 2), np.flatnonzero(n == 1)
    return ds.subset(pairs), (ds.subset(singles) if len(singles) else None)


def _from_dataset(ds: Any, encoder: Any, modality: str, dataset: str, source: str, pretrained: bool,
                  singles: Any | None = None, progress: bool = False) -> EmbeddingSet:
    from .encoders import embed_dataset

    z = embed_dataset(encoder, ds, modality, progress=progress)
    zs = embed_dataset(encoder, singles, modality, progress=progress) if singles is not None else None
    return EmbeddingSet(dataset, encoder.name, source, pretrained, z, ds.objects[:, :2], ds.values_per_concept,
                        list(ds.concept_names), [list(v) for v in ds.value_names], zs,
                        singles.objects[:, :2] if singles is not None else None)


def geometry_encoders() -> tuple[dict[str, list[tuple[Any, bool]]], str]:
    """({"text": [(encoder, pretrained)], "image": [...]}, note for the top of the page)."""
    from .encoders import default_encoders, random_init_like

    d = default_encoders()
    if d.pretrained_clip:
        control = random_init_like(d.image, seed=0)
        return {"text": [(d.text, True), (control, False)], "image": [(d.image, True), (control, False)]}, d.note
    return {"text": [(d.text, True), (d.image, False)], "image": [(d.image, False)]}, d.note


def caption_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]]) -> list[EmbeddingSet]:
    """Two-object captions of the adjective-noun space (and its single-object captions)."""
    from .data import make_text_space

    a, n = params["text_space"]
    pairs, singles = _split_singles(make_text_space(a, n, singles=True))
    return [_from_dataset(pairs, enc, "text", f"captions {a}x{n}", "text", pre, singles) for enc, pre in encoders]


def image_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]]) -> list[EmbeddingSet]:
    """CLEVR-2D and the CLEVR-like 3-D scenes (576 two-object scenes each, or the first
    ``image_scenes`` of them) with their 24 single-object scenes."""
    from .data import make_clevr2d, make_clevr2d_singles, make_clevr3d, make_clevr3d_singles

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


def controlled_sets(profile: str, params: dict[str, Any], workers: int | None = None,
                    device: str | None = None) -> list[EmbeddingSet]:
    """The generalizing controlled models of §5.2: scene embeddings of all ordered pairs of
    a sub-grid of at most ``controlled_objects`` objects (no single-object scenes)."""
    from .complexity import generalizing_runs
    from .probes import controlled_binding_data

    out = []
    for rec in generalizing_runs(profile, workers=workers, device=device):
        data = controlled_binding_data(rec, max_objects=params["controlled_objects"], device=device or "cpu")
        vpc = data.values_per_concept
        out.append(EmbeddingSet(data.name, "controlled dual encoder (scene tower)", "controlled", True,
                                data.embeddings, data.objects, vpc, [f"concept {c}" for c in range(len(vpc))],
                                [[str(v) for v in range(V)] for V in vpc]))
    return out


def geometry_sets(profile: str, params: dict[str, Any], workers: int | None = None,
                  device: str | None = None) -> tuple[list[EmbeddingSet], str]:
    """Every set of the §4 chapters and the encoder note for the top of the page."""
    encoders, note = geometry_encoders()
    sets = caption_sets(params, encoders["text"]) + image_sets(params, encoders["image"])
    if params.get("controlled", True):
        sets += controlled_sets(profile, params, workers=workers, device=device)
    return sets, note


def sets_frame(sets: Sequence[EmbeddingSet]) -> pd.DataFrame:
    """One row per set: what it is and how big."""
    return pd.DataFrame([{"dataset": s.dataset, "encoder": s.encoder, "weights": _weights(s),
                          "scenes": len(s.Z), "d": s.Z.shape[1],
                          "objects": int(np.prod(s.values_per_concept)),
                          "single-object scenes": 0 if s.Z_single is None else len(s.Z_single)} for s in sets])


def _weights(s: EmbeddingSet) -> str:
    if s.source == "controlled":
        return "trained here (§5.2)"
    return "pretrained" if s.pretrained else "random init (control)"


# ---------------------------------------------------------------------------------
# stored analyses
# ---------------------------------------------------------------------------------
def stored_frame(s: EmbeddingSet, analysis: str, params: dict[str, Any],
                 compute: Callable[[], pd.DataFrame], store: Any = None) -> pd.DataFrame:
    """``compute()`` for set ``s``, stored under (analysis, set content, params)."""
    from .store import ResultStore

    store = store or ResultStore()
    key = {"analysis": analysis, "set": s.content_hash(), "label": s.label, "params": params}

    def run() -> dict[str, Any]:
        df = compute()
        return {"rows": df.to_dict("records"), "attrs": {k: v for k, v in df.attrs.items()}}

    res = store.cached(GEOMETRY_STORE_KIND, key, run)
    df = pd.DataFrame(res["rows"])
    df.attrs.update(res.get("attrs", {}))
    return df


def _probe_kw(params: dict[str, Any]) -> dict[str, Any]:
    return {"epochs": int(params["probe_epochs"])}


def decomposition(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """§4.1 for one set: R² (all scenes and 20 % held out), retrieval and probing of the
    bag-of-concepts and bag-of-objects reconstructions, every estimator."""
    from .geometry import additive_decomposition

    p = {"probe_epochs": params["probe_epochs"], "holdout": 0.2}

    def compute() -> pd.DataFrame:
        full = additive_decomposition(*s.args(), probes="fit", probe_kw=_probe_kw(params))
        held = additive_decomposition(*s.args(), holdout=0.2, retrieval=False)
        full["r2_heldout"] = held["r2_eval"].to_numpy()
        return full

    return stored_frame(s, "decomposition", p, compute, store)


def attribution(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """§4.2 / D.1 for one set: probes re-fitted after subtracting components, with the
    permuted-ID controls."""
    from .geometry import component_attribution

    p = {"probe_epochs": params["probe_epochs"]}
    return stored_frame(s, "attribution", p,
                        lambda: component_attribution(*s.args(), probe_kw=_probe_kw(params)), store)


def editing(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """D.2 for one set: object-replacement edits for every bank and strength k."""
    from .geometry import editing_sweep

    p = {"probe_epochs": params["probe_epochs"], "ks": list(params["ks"]), "max_edits": params["max_edits"]}

    def compute() -> pd.DataFrame:
        return editing_sweep(*s.args(), Z_single=s.Z_single, objects_single=s.objects_single, ks=params["ks"],
                             max_edits=params["max_edits"], probe_kw=_probe_kw(params))

    return stored_frame(s, "editing", p, compute, store)


# ---------------------------------------------------------------------------------
# the paper's numbers (../shared/paper/numbers.md) and tables beside them
# ---------------------------------------------------------------------------------
NOTES = "as reported in secondary notes"

# §4.1 reconstruction from object components (notes): R² avg / avg+pos, retrieval, probing
PAPER_DECOMPOSITION = {
    ("text", True): {"model": "CLIP ViT-B/32", "r2_avg": 0.90, "r2_pos": 0.92, "retrieval": 0.97, "probing": 0.99},
    ("text", False): {"model": "random init", "r2_avg": 0.47, "r2_pos": 0.69, "retrieval": 0.42, "probing": 0.82},
    ("CLEVR-like 3-D", True): {"model": "CLIP ViT-B/32 on CLEVR", "r2_avg": 0.78, "r2_pos": 0.83,
                               "retrieval": 0.94, "probing": 0.96},
}

# §4.2 / D.1 subtraction, CLIP ViT-B/32: (concept, object) decoding accuracy
PAPER_ATTRIBUTION = {
    "text": {"original": (1.00, 1.00), "minus concepts": (0.06, 0.99), "minus objects": (0.05, 0.04),
             "permuted concepts": (0.92, 0.99), "permuted objects": (0.96, 1.00)},
    "image": {"original": (0.94, 0.96), "minus concepts": (0.05, 0.85), "minus objects": (0.02, 0.01),
              "permuted concepts": (0.99, 0.97), "permuted objects": (0.86, 0.92)},
}

# D.2 editing at k = 1, CLIP ViT-B/32 (notes): probing and retrieval per bank
PAPER_EDITING = {
    "CLEVR-like 3-D": {"probing": {"obj-avg": 0.98, "pos-avg": 0.98, "single": 0.86},
                       "retrieval": {"obj-avg": 1.00, "pos-avg": 1.00, "single": 0.97}},
    "CLEVR-2D": {"probing": {"obj-avg": 0.98, "pos-avg": 0.98, "single": 0.92},
                 "retrieval": {"obj-avg": 0.99, "pos-avg": 0.99, "single": 0.97}},
}


def _paper_decomposition(s: EmbeddingSet) -> dict[str, Any] | None:
    """The paper's row for this set: same modality, and pretrained beside pretrained,
    random init beside random init (the paper's random-init row is text only)."""
    if s.source == "text":
        return PAPER_DECOMPOSITION[("text", s.pretrained)]
    return PAPER_DECOMPOSITION.get((s.dataset, True)) if s.source == "image" and s.pretrained else None


def _pick(df: pd.DataFrame, kind: str, est: str) -> pd.Series:
    return df[(df["kind"] == kind) & (df["estimator"] == est)].iloc[0]


def decomposition_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """§4.1 side by side: one row per set; R² of bag-of-concepts vs bag-of-objects
    (averaging estimators, all scenes, and least squares on 20 % held-out scenes),
    retrieval and probing of the object reconstructions, the paper's numbers beside."""
    rows = []
    for s, df in zip(sets, frames):
        c, o = _pick(df, "concepts", "avg"), _pick(df, "objects", "avg")
        cp, op = _pick(df, "concepts", "pos-avg"), _pick(df, "objects", "pos-avg")
        paper = _paper_decomposition(s) or {}
        rows.append({
            "dataset": s.dataset, "encoder": s.encoder, "weights": _weights(s),
            "R² concepts avg / pos": f"{c['r2_eval']:.2f} / {cp['r2_eval']:.2f}",
            "R² objects avg / pos": f"{o['r2_eval']:.2f} / {op['r2_eval']:.2f}",
            "held-out R² concepts / objects (pos-lstsq)":
                f"{_pick(df, 'concepts', 'pos-lstsq')['r2_heldout']:.2f} / "
                f"{_pick(df, 'objects', 'pos-lstsq')['r2_heldout']:.2f}",
            "retrieval from objects (concepts)": f"{o['retrieval']:.2f} ({c['retrieval']:.2f})",
            "retrieval chance": o["retrieval_chance"],
            "probing objects of object recon. (real)":
                f"{o['probe_object']:.2f} ({df.attrs.get('probe_real', {}).get('object', float('nan')):.2f})",
            "paper: model": paper.get("model", "–"),
            "paper: R² objects avg / pos": f"{paper['r2_avg']:.2f} / {paper['r2_pos']:.2f}" if paper else "–",
            "paper: retrieval": paper.get("retrieval", "–"),
            "paper: probing": paper.get("probing", "–"),
        })
    return pd.DataFrame(rows)


def attribution_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """§4.2 / D.1 side by side: concept / object decoding per variant and set; beside
    pretrained encoders, the paper's CLIP numbers of the same modality (none beside
    random-init controls and the controlled models, for which the paper gives none)."""
    rows = []
    for s, df in zip(sets, frames):
        paper = PAPER_ATTRIBUTION.get(s.source, {}) if s.pretrained else {}
        for _, r in df.iterrows():
            variant = attribution_variant(r)
            pc = paper.get(variant)
            rows.append({"dataset": s.dataset, "encoder": s.encoder, "weights": _weights(s), "variant": variant,
                         "concepts": r["concept"], "objects": r["object"],
                         "removed norm / original": r["removed_norm_ratio"],
                         "paper (CLIP): concepts / objects": f"{pc[0]:.2f} / {pc[1]:.2f}" if pc else "–"})
    return pd.DataFrame(rows)


def attribution_variant(row: pd.Series) -> str:
    """The paper's name of a :func:`~bindcore.geometry.component_attribution` row."""
    return str(row["variant"]).replace(" (control)", "")


def editing_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame], k: float = 1.0) -> pd.DataFrame:
    """D.2 at strength ``k``: probing and retrieval of the intended counterfactual per
    bank (all edits, shared-concept and different-concept scenes), the paper's CLIP
    numbers (all edits) beside pretrained image encoders."""
    rows = []
    for s, df in zip(sets, frames):
        paper = PAPER_EDITING.get(s.dataset, {}) if s.source == "image" and s.pretrained else {}
        sub = df[np.isclose(df["k"], k)]
        for bank, b in sub.groupby("bank", sort=False):
            row = {"dataset": s.dataset, "encoder": s.encoder, "weights": _weights(s), "bank": bank}
            for case in ("all", "shared", "different"):
                r = b[b["case"] == case]
                if len(r):
                    row[f"retrieval ({case})"] = r["retrieval"].iloc[0]
                    row[f"probing ({case})"] = r["probe_concepts"].iloc[0]
            row["edits"] = int(b[b["case"] == "all"]["n"].iloc[0]) if (b["case"] == "all").any() else 0
            row["paper (CLIP): probing / retrieval"] = (
                f"{paper['probing'][bank]:.2f} / {paper['retrieval'][bank]:.2f}" if paper and bank in
                paper["probing"] else "–")
            rows.append(row)
    return pd.DataFrame(rows)
