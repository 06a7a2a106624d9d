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

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from bindcore.store import Kind

GEOMETRY_STORE_KIND = Kind("geometry-1", ("bindcore.analysis.geometry_sets",))


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
        from bindcore.io import arrays_hash

        return arrays_hash(self.Z, self.objects, self.Z_single, self.objects_single)

    def args(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        return self.Z, self.objects, self.values_per_concept


def _split_singles(ds: Any) -> tuple[Any, Any | None]:
    """(two-object scenes, single-object scenes or None) of a dataset."""
    n = ds.n_objects_per_scene
    pairs, singles = np.flatnonzero(n == 2), np.flatnonzero(n == 1)
    return ds.subset(pairs), (ds.subset(singles) if len(singles) else None)


def _from_dataset(ds: Any, encoder: Any, modality: str, dataset: str, source: str, pretrained: bool,
                  singles: Any | None = None, progress: bool = False) -> EmbeddingSet:
    from bindcore.encoders import embed_dataset

    z = embed_dataset(encoder, ds, modality, progress=progress)
    zs = embed_dataset(encoder, singles, modality, progress=progress) if singles is not None else None
    return EmbeddingSet(dataset, encoder.name, source, pretrained, z, ds.objects[:, :2], ds.values_per_concept,
                        list(ds.concept_names), [list(v) for v in ds.value_names], zs,
                        singles.objects[:, :2] if singles is not None else None)


def geometry_encoders() -> tuple[dict[str, list[tuple[Any, bool]]], str]:
    """({"text": [(encoder, pretrained)], "image": [...]}, note for the top of the page)."""
    from bindcore.encoders import default_encoders, random_init_like

    d = default_encoders()
    if d.pretrained_clip:
        control = random_init_like(d.image, seed=0)
        return {"text": [(d.text, True), (control, False)], "image": [(d.image, True), (control, False)]}, d.note
    return {"text": [(d.text, True), (d.image, False)], "image": [(d.image, False)]}, d.note


def caption_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]]) -> list[EmbeddingSet]:
    """Two-object captions of the adjective-noun space (and its single-object captions)."""
    from bindcore.data import make_text_space

    a, n = params["text_space"]
    pairs, singles = _split_singles(make_text_space(a, n, singles=True))
    return [_from_dataset(pairs, enc, "text", f"captions {a}x{n}", "text", pre, singles) for enc, pre in encoders]


def image_sets(params: dict[str, Any], encoders: Sequence[tuple[Any, bool]]) -> list[EmbeddingSet]:
    """CLEVR-2D and the CLEVR-like 3-D scenes (576 two-object scenes each, or the first
    ``image_scenes`` of them) with their 24 single-object scenes."""
    from bindcore.data import make_clevr2d, make_clevr2d_singles, make_clevr3d, make_clevr3d_singles

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
    from bindcore.store import ResultStore

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
    return {"epochs": int(params["probe_epochs"]), "lr": float(params["probe_lr"])}


def _probe_key(params: dict[str, Any]) -> dict[str, Any]:
    """The probe settings that key a stored analysis."""
    return {"probe_epochs": params["probe_epochs"], "probe_lr": params["probe_lr"]}


def decomposition(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """§4.1 for one set: R² (all scenes and 20 % held out), retrieval and probing of the
    bag-of-concepts and bag-of-objects reconstructions, every estimator."""
    from .geometry import additive_decomposition

    p = {**_probe_key(params), "holdout": 0.2}

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

    p = _probe_key(params)
    return stored_frame(s, "attribution", p,
                        lambda: component_attribution(*s.args(), probe_kw=_probe_kw(params)), store)


def editing(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """D.2 for one set: object-replacement edits for every bank and strength k."""
    from .geometry import editing_sweep

    p = {**_probe_key(params), "ks": list(params["ks"]), "max_edits": params["max_edits"]}

    def compute() -> pd.DataFrame:
        return editing_sweep(*s.args(), Z_single=s.Z_single, objects_single=s.objects_single, ks=params["ks"],
                             max_edits=params["max_edits"], probe_kw=_probe_kw(params))

    return stored_frame(s, "editing", p, compute, store)


# ---------------------------------------------------------------------------------
# the paper's numbers (../shared/paper/numbers.md) and tables beside them
# ---------------------------------------------------------------------------------
NOTES = "as reported in secondary notes"

# §4.1 reconstruction from object components (notes): R² avg, R² avg+pos, retrieval, probing
PAPER_RECONSTRUCTION = {
    ("text", "CLIP ViT-B/32"): (0.90, 0.92, 0.97, 0.99),
    ("PUG:SPARE", "CLIP ViT-B/32"): (0.75, 0.84, 0.93, 0.98),
    ("PUG:SPARE", "DINOv2"): (0.78, 0.86, 0.86, 0.98),
    ("CLEVR", "CLIP ViT-B/32"): (0.78, 0.83, 0.94, 0.96),
    ("text", "random init"): (0.47, 0.69, 0.42, 0.82),
}

# §4.2 / D.1 subtraction, CLIP ViT-B/32: (concept, object) decoding accuracy
PAPER_ATTRIBUTION = {
    "text": {"original": (1.00, 1.00), "minus concepts": (0.06, 0.99), "minus objects": (0.05, 0.04),
             "permuted concepts": (0.92, 0.99), "permuted objects": (0.96, 1.00)},
    "image": {"original": (0.94, 0.96), "minus concepts": (0.05, 0.85), "minus objects": (0.02, 0.01),
              "permuted concepts": (0.99, 0.97), "permuted objects": (0.86, 0.92)},
}

# D.2 editing at k = 1 (notes): probing and retrieval per bank (obj-avg, pos-avg, single;
# None where the paper has no single-object images)
EDIT_BANKS = ("obj-avg", "pos-avg", "single")
PAPER_EDITING = {
    ("CLEVR", "CLIP ViT-B/32"): {"probing": (0.98, 0.98, 0.86), "retrieval": (1.00, 1.00, 0.97)},
    ("CLEVR-2D", "CLIP ViT-B/32"): {"probing": (0.98, 0.98, 0.92), "retrieval": (0.99, 0.99, 0.97)},
    ("PUG:SPARE", "CLIP ViT-B/32"): {"probing": (0.94, 0.95, None), "retrieval": (0.86, 0.94, None)},
    ("PUG:SPARE", "DINOv2"): {"probing": (0.97, 0.97, None), "retrieval": (0.48, 0.76, None)},
}

# our datasets standing for the paper's
PAPER_DATA = {"CLEVR-like 3-D": "CLEVR", "CLEVR-2D": "CLEVR-2D"}


def _paper_decomposition(s: EmbeddingSet) -> dict[str, Any] | None:
    """The paper's row for this set: same modality, and pretrained beside pretrained,
    random init beside random init (the paper's random-init row is text only)."""
    if s.source == "text":
        model = "CLIP ViT-B/32" if s.pretrained else "random init"
        key, label = ("text", model), model
    elif s.source == "image" and s.pretrained and s.dataset in PAPER_DATA:
        key = (PAPER_DATA[s.dataset], "CLIP ViT-B/32")
        label = f"CLIP ViT-B/32 on {key[0]}"
    else:
        return None
    if key not in PAPER_RECONSTRUCTION:
        return None
    r2_avg, r2_pos, retrieval, probing = PAPER_RECONSTRUCTION[key]
    return {"model": label, "r2_avg": r2_avg, "r2_pos": r2_pos, "retrieval": retrieval, "probing": probing}


def _paper_editing(s: EmbeddingSet) -> dict[str, dict[str, float | None]]:
    """{metric: {bank: value}} of the paper's D.2 row for a pretrained image set, else {}."""
    if s.source != "image" or not s.pretrained or s.dataset not in PAPER_DATA:
        return {}
    row = PAPER_EDITING.get((PAPER_DATA[s.dataset], "CLIP ViT-B/32"), {})
    return {metric: dict(zip(EDIT_BANKS, vals)) for metric, vals in row.items()}


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
        paper = _paper_editing(s)
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
                f"{paper['probing'][bank]:.2f} / {paper['retrieval'][bank]:.2f}"
                if paper and paper["probing"].get(bank) is not None else "–")
            rows.append(row)
    return pd.DataFrame(rows)


def _match(sets: Sequence[EmbeddingSet], data: str, pretrained: bool, model: str) -> int | None:
    """Index of our set standing for the paper's (data, model), or None: same data
    (captions; CLEVR -> our CLEVR-like 3-D; CLEVR-2D), same kind of weights, and for
    pretrained image rows only CLIP itself (MiniLM stands in for CLIP's text tower)."""
    if data == "PUG:SPARE" or model == "DINOv2":
        return None
    want = {"text": "text", **{paper: ours for ours, paper in PAPER_DATA.items()}}[data]
    for i, s in enumerate(sets):
        if s.pretrained != pretrained or s.source == "controlled":
            continue
        if want == "text" and s.source == "text":
            return i
        if s.dataset == want and (not pretrained or "CLIP" in s.encoder):
            return i
    return None


def _frame_value(df: pd.DataFrame, **where: Any) -> float:
    sub = df
    for k, v in where.items():
        if k == "metric":
            continue
        sub = sub[np.isclose(sub[k], v)] if isinstance(v, float) else sub[sub[k] == v]
    return float(sub[where["metric"]].iloc[0]) if len(sub) else float("nan")


def paper_section4_table(sets: Sequence[EmbeddingSet], decomposition_frames: Sequence[pd.DataFrame],
                         attribution_frames: Sequence[pd.DataFrame],
                         editing_frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Every number the paper gives for §4.1, §4.2 and D.2 (``numbers.md``), one row each,
    with ours beside it where this build has a matching embedding set (the encoder is
    named), and why not where it has none."""
    rows: list[dict[str, Any]] = []

    def add(group: str, source: str, data: str, model: str, metric: str, paper: float,
            ours: Callable[[int], float]) -> None:
        i = _match(sets, data, model != "random init", model)
        why = ("PUG:SPARE images are the authors' (load them with bindcore.data.load_folder)" if data == "PUG:SPARE"
               else "DINOv2 weights not reachable here" if model == "DINOv2"
               else "no pretrained image encoder here (needs the Hugging Face Hub, e.g. Colab)")
        rows.append({"section": group, "data": data, "paper model": model, "metric": metric, "paper": paper,
                     "ours": ours(i) if i is not None else float("nan"),
                     "our data | encoder": sets[i].label if i is not None else f"not run: {why}",
                     "paper source": source})

    dec = list(decomposition_frames)
    att = list(attribution_frames)
    edi = list(editing_frames)
    for (data, model), vals in PAPER_RECONSTRUCTION.items():
        for metric, v, kw in zip(("R² objects (avg)", "R² objects (avg + pos)", "retrieval", "probing"), vals,
                                 (dict(estimator="avg", metric="r2_eval"), dict(estimator="pos-avg", metric="r2_eval"),
                                  dict(estimator="avg", metric="retrieval"), dict(estimator="avg", metric="probe_object"))):
            add("§4.1 reconstruction", NOTES, data, model, metric, v,
                lambda i, kw=kw: _frame_value(dec[i], kind="objects", **kw))
    for data, v in (("text", 0.84), ("CLEVR", 0.71)):
        add("§4.1 variance", "paper summary", data, "CLIP ViT-B/32", "R² bag of concepts (up to)", v,
            lambda i: max(_frame_value(dec[i], kind="concepts", estimator=e, metric="r2_eval")
                          for e in ("avg", "pos-avg", "lstsq", "pos-lstsq")))
        add("§4.1 variance", "paper summary", data, "CLIP ViT-B/32", "R² objects minus concepts (about)", 0.10,
            lambda i: _frame_value(dec[i], kind="objects", estimator="pos-lstsq", metric="r2_eval")
            - _frame_value(dec[i], kind="concepts", estimator="pos-lstsq", metric="r2_eval"))
    for modality, data in (("text", "text"), ("image", "CLEVR")):
        for variant, (c, o) in PAPER_ATTRIBUTION[modality].items():
            for metric, v in (("concepts", c), ("objects", o)):
                add("§4.2 / D.1 subtraction", "paper summary + notes", data, "CLIP ViT-B/32", f"{variant}: {metric}", v,
                    lambda i, variant=variant, metric=metric: _frame_value(
                        att[i].assign(name=att[i]["variant"].str.replace(" (control)", "", regex=False)),
                        name=variant, metric={"concepts": "concept", "objects": "object"}[metric]))
    for (data, model), row in PAPER_EDITING.items():
        for metric, col in (("probing", "probe_concepts"), ("retrieval", "retrieval")):
            for bank, v in zip(EDIT_BANKS, row[metric]):
                if v is not None:
                    add("D.2 editing (k = 1)", NOTES, data, model, f"{metric} ({bank})", v,
                        lambda i, bank=bank, col=col: _frame_value(edi[i], bank=bank, k=1.0, case="all", metric=col))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------
# appendix D.3 (three-object scenes, occlusion) and D.5 (MDS pictures)
# ---------------------------------------------------------------------------------
THREE_OBJECT_DATASETS = {False: "CLEVR-like 3-D, three objects", True: "CLEVR-like 3-D, three objects, occluded"}
THREE_OBJECT_SEED = 0

# D.3, from the paper summary (not the secondary notes): pretrained CLIP on the authors'
# Blender three-object CLEVR scenes. The summary gives no probing number without occlusion.
PAPER_THREE_OBJECTS = {
    False: {"probing": "–", "retrieval": 0.76, "r2": "objects > concepts"},
    True: {"probing": "0.91–0.93", "retrieval": 0.65, "r2": "objects > concepts"},
}

# D.5, from the paper summary: what the MDS pictures show
PAPER_MDS = ("partial grid-like structure (colour x shape), strongest for text embeddings, more distorted for "
             "CLIP image embeddings; DINOv2 separates shapes and keeps similar colours close")


def three_object_datasets(params: dict[str, Any], progress: bool = False) -> dict[bool, Any]:
    """{occlusion: dataset}: ``three_object_scenes`` three-object CLEVR-like scenes
    (:func:`~bindcore.data.clevr3d.make_clevr3d_three`, seed 0) at ``clevr3d_width``
    pixels wide, without (False) and with (True) one object partly hidden per scene."""
    from bindcore.data.clevr3d import make_clevr3d_three

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
    from bindcore.encoders import embed_dataset

    datasets = datasets if datasets is not None else three_object_datasets(params, progress)
    out = []
    for occ, ds in datasets.items():
        for enc, pre in encoders:
            z = embed_dataset(enc, ds, "image", progress=progress)
            out.append(EmbeddingSet(THREE_OBJECT_DATASETS[bool(occ)], enc.name, "image", bool(pre), z, ds.objects,
                                    list(ds.values_per_concept), list(ds.concept_names),
                                    [list(v) for v in ds.value_names]))
    return out


def is_occluded(s: EmbeddingSet) -> bool:
    """Whether a set of :func:`three_object_sets` holds the occluded scenes."""
    return s.dataset == THREE_OBJECT_DATASETS[True]


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


def object_occurrences(s: EmbeddingSet) -> dict[str, int | float]:
    """How often each of the ``prod V_c`` objects occurs in the set's scenes: objects
    never seen, the fewest and median occurrences among those seen."""
    from .geometry import object_ids

    ids = object_ids(s.objects, s.values_per_concept)
    counts = np.bincount(ids[ids >= 0], minlength=int(np.prod(s.values_per_concept)))
    seen = counts[counts > 0]
    return {"objects": int(len(counts)), "never_seen": int((counts == 0).sum()),
            "min": int(seen.min()) if len(seen) else 0, "median": float(np.median(seen)) if len(seen) else 0.0}


def three_object_analysis(s: EmbeddingSet, params: dict[str, Any], store: Any = None,
                          holdout: float = 0.2) -> pd.DataFrame:
    """D.3 for one set, one row per (kind, estimator) of
    :func:`~bindcore.geometry.additive_decomposition`:

    * on all scenes: ``r2_eval``, ``retrieval`` (reconstructions of every scene, components
      estimated from all scenes, as §4.1) and ``probe_concept, probe_object`` (probes fitted
      on real embeddings of a seeded 0.4 scene split, read on the reconstructions of the
      other scenes); the probes' accuracy on those real scenes is ``attrs["probe_real"]``;
    * with a ``holdout`` share of scenes held out (components estimated from the rest):
      ``r2_heldout``, ``retrieval_heldout``, ``retrieval_chance_heldout``, ``n_heldout`` and
      ``n_excluded_heldout`` (held-out scenes holding an object the rest never shows; they
      are left out of R² and retrieval);
    * ``attrs["occurrences"]``: :func:`object_occurrences`."""
    from .geometry import additive_decomposition

    if not 0.0 < holdout < 1.0:
        raise ValueError(f"holdout must lie in (0, 1), got {holdout}")
    p = {**_probe_key(params), "holdout": holdout}

    def compute() -> pd.DataFrame:
        full = additive_decomposition(*s.args(), probes="fit", probe_kw=_probe_kw(params))
        with np.errstate(divide="ignore", invalid="ignore"):  # R² of < 2 scenes: set to NaN below
            held = additive_decomposition(*s.args(), holdout=holdout)
        for col, new in (("r2_eval", "r2_heldout"), ("retrieval", "retrieval_heldout"),
                         ("retrieval_chance", "retrieval_chance_heldout"), ("n_eval", "n_heldout"),
                         ("n_excluded", "n_excluded_heldout")):
            full[new] = held[col].to_numpy()
        # R² needs at least two held-out scenes left to have a spread (SST > 0)
        few = (full["n_heldout"] - full["n_excluded_heldout"]) < 2
        full.loc[few, "r2_heldout"] = np.nan
        full.attrs["occurrences"] = object_occurrences(s)
        return full

    return stored_frame(s, "three-objects", p, compute, store)


def _paper_three(s: EmbeddingSet) -> dict[str, Any]:
    """The paper's D.3 numbers beside pretrained image encoders only."""
    return PAPER_THREE_OBJECTS[is_occluded(s)] if s.source == "image" and s.pretrained else {}


def three_object_table(sets: Sequence[EmbeddingSet], params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """D.3 side by side, one row per set (numbers, not strings): probing of real
    embeddings (concepts, objects; 0.4 scene split), R² of bag-of-concepts vs
    bag-of-objects on held-out scenes (averaging and least-squares components),
    retrieval of the object reconstructions (all scenes, and held-out scenes) with its
    chance level, how many held-out scenes hold an object the rest never shows, and the
    paper's D.3 numbers beside pretrained encoders only."""
    rows = []
    for s in sets:
        df = three_object_analysis(s, params, store)
        real = df.attrs.get("probe_real", {})
        occ = df.attrs.get("occurrences", {})
        ca, oa = _pick(df, "concepts", "avg"), _pick(df, "objects", "avg")
        cl, ol = _pick(df, "concepts", "lstsq"), _pick(df, "objects", "lstsq")
        paper = _paper_three(s)
        rows.append({
            "dataset": s.dataset, "occlusion": is_occluded(s), "encoder": s.encoder, "weights": _weights(s),
            "scenes": len(s.Z), "objects never seen": occ.get("never_seen", 0),
            "fewest occurrences": occ.get("min", 0),
            "probing concepts": real.get("concept", np.nan), "probing objects": real.get("object", np.nan),
            "R² held-out concepts (avg)": ca["r2_heldout"], "R² held-out objects (avg)": oa["r2_heldout"],
            "R² held-out concepts (lstsq)": cl["r2_heldout"], "R² held-out objects (lstsq)": ol["r2_heldout"],
            "retrieval objects (all scenes)": oa["retrieval"], "retrieval chance (all scenes)": oa["retrieval_chance"],
            "retrieval objects (held-out)": oa["retrieval_heldout"],
            "retrieval chance (held-out)": oa["retrieval_chance_heldout"],
            "held-out scenes": int(oa["n_heldout"]), "n_excluded": int(oa["n_excluded_heldout"]),
            "paper (CLIP): probing": paper.get("probing", "–"),
            "paper (CLIP): retrieval": paper.get("retrieval", "–"),
            "paper (CLIP): R²": paper.get("r2", "–"),
        })
    return pd.DataFrame(rows)


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


def mds_analysis(s: EmbeddingSet, params: dict[str, Any], store: Any = None, n_neighbors: int = 2) -> pd.DataFrame:
    """D.5 for one set: MDS (classical, chord distance of L2-normalised vectors,
    ``mds_components`` dimensions) of the obj-avg object bank (``bank="objects"``, one
    row per object seen, ``value_c`` columns) and of the averaging concept bank
    (``bank="concepts"``, ``concept``/``value`` columns), each computed separately.
    ``attrs["grid"]``: :func:`~bindcore.geometry.grid_likeness` of the objects in the
    MDS coordinates (``"mds"``) and in the full normalised embedding (``"full"``) with
    ``n_neighbors`` neighbours, and the same with as many neighbours as an object has
    grid neighbours, ``sum(V_c - 1)`` (``"mds_grid"``, ``"full_grid"``): a stricter
    reading, 1 only when every object's grid neighbours are its nearest points."""
    from .geometry import average_components, grid_likeness, mds_frame

    n = int(params["mds_components"])
    p = {"mds_components": n, "method": "classical", "distance": "chord", "n_neighbors": n_neighbors,
         "grid_neighbors": "sum(V_c - 1)"}

    def compute() -> pd.DataFrame:
        objects = average_components(*s.args(), kind="objects")
        concepts = average_components(*s.args(), kind="concepts")
        fo = mds_frame(objects, n, position=0).assign(bank="objects")
        fc = mds_frame(concepts, n, position=0).assign(bank="concepts")
        values = fo[[f"value_{c}" for c in range(len(s.values_per_concept))]].to_numpy()
        vec = objects.vectors[0] + objects.intercept
        vec = vec[np.isfinite(vec).all(1)]
        vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
        coords = fo[[f"mds_{i + 1}" for i in range(n)]].to_numpy()
        k = min(n_neighbors, len(fo) - 1)
        kg = max(1, min(int(sum(v - 1 for v in s.values_per_concept)), len(fo) - 1))
        df = pd.concat([fo, fc], ignore_index=True)
        df.attrs["grid"] = {"mds": grid_likeness(coords, values, k), "full": grid_likeness(vec, values, k),
                            "mds_grid": grid_likeness(coords, values, kg), "full_grid": grid_likeness(vec, values, kg)}
        return df

    return stored_frame(s, "mds", p, compute, store)


def mds_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Grid-likeness per set: the share of each object's nearest neighbours sharing a
    concept value with it, in the MDS picture and in the full embedding, against chance
    (the share of all other objects that do): with 2 neighbours (also per concept, in the
    picture) and with as many neighbours as an object has in the grid."""
    rows = []
    for s, df in zip(sets, frames):
        g = df.attrs["grid"]
        row = {"dataset": s.dataset, "encoder": s.encoder, "weights": _weights(s),
               "objects": int(g["mds"]["n_points"]), "neighbours": int(g["mds"]["n_neighbors"]),
               "grid-likeness (MDS)": g["mds"]["score"], "grid-likeness (full d)": g["full"]["score"],
               "grid neighbours": int(g["mds_grid"]["n_neighbors"]),
               "grid-neighbour recall (MDS)": g["mds_grid"]["score"],
               "grid-neighbour recall (full d)": g["full_grid"]["score"], "chance": g["mds"]["chance"]}
        row["concepts 0 / 1"] = " / ".join(s.concept_names[:2]) if s.concept_names else "–"
        for c in range(len(s.values_per_concept)):
            row[f"same concept {c} (MDS)"] = g["mds"][f"concept_{c}"]
            row[f"same concept {c} chance"] = g["mds"][f"concept_{c}_chance"]
        rows.append(row)
    return pd.DataFrame(rows)


_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p"]


def _value_colours(names: Sequence[str]) -> list[Any]:
    """Colours of concept 0's values: the values themselves where all are colour names
    (CLEVR colours, colour adjectives), else a qualitative colour map."""
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    if names and all(mcolors.is_color_like(n) for n in names):
        return [mcolors.to_rgba(n) for n in names]
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(len(names))]


def _names(s: EmbeddingSet, c: int) -> list[str]:
    if c < len(s.value_names) and len(s.value_names[c]) == s.values_per_concept[c]:
        return [str(v) for v in s.value_names[c]]
    return [str(v) for v in range(s.values_per_concept[c])]


def plot_mds(axes: Sequence[Any], s: EmbeddingSet, df: pd.DataFrame, annotate_max: int = 30) -> None:
    """Draw the D.5 picture of one set on two axes: the objects (colour = concept 0,
    marker = concept 1, labelled when there are at most ``annotate_max``) and the
    concept values (labelled). The first two MDS dimensions are drawn."""
    ax_o, ax_c = axes
    objs = df[df["bank"] == "objects"]
    cols = _value_colours(_names(s, 0))
    names0 = _names(s, 0)
    names1 = _names(s, 1) if len(s.values_per_concept) > 1 else [""]
    for v1 in range(len(names1)):
        sub = objs[objs["value_1"].astype(int) == v1] if len(s.values_per_concept) > 1 else objs
        ax_o.scatter(sub["mds_1"], sub["mds_2"], c=[cols[int(v)] for v in sub["value_0"]],
                     marker=_MARKERS[v1 % len(_MARKERS)], s=42, edgecolors="black", linewidths=0.4,
                     label=names1[v1])
        if len(objs) <= annotate_max:
            for _, r in sub.iterrows():
                ax_o.annotate(f"{names0[int(r['value_0'])]} {names1[v1]}".strip(), (r["mds_1"], r["mds_2"]),
                              fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax_o.legend(fontsize=6, title=s.concept_names[1] if len(s.concept_names) > 1 else None, title_fontsize=7,
                loc="best", ncol=2 if len(names1) > 5 else 1)
    ax_o.set_title(f"objects: {s.label}", fontsize=8)
    conc = df[df["bank"] == "concepts"]
    for c in range(len(s.values_per_concept)):
        sub = conc[conc["concept"].astype(int) == c]
        name = s.concept_names[c] if c < len(s.concept_names) else f"concept {c}"
        ax_c.scatter(sub["mds_1"], sub["mds_2"], marker=_MARKERS[c % len(_MARKERS)], s=42, label=name,
                     c=[cols[int(v)] for v in sub["value"]] if c == 0 else "#7f7f7f", edgecolors="black",
                     linewidths=0.4)
        for _, r in sub.iterrows():
            ax_c.annotate(_names(s, c)[int(r["value"])], (r["mds_1"], r["mds_2"]), fontsize=6, xytext=(3, 3),
                          textcoords="offset points")
    ax_c.legend(fontsize=6)
    ax_c.set_title(f"concept values: {s.label}", fontsize=8)
    for ax in axes:
        ax.set_xlabel("MDS 1")
        ax.set_ylabel("MDS 2")


def _who(r: pd.Series) -> str:
    """An encoder and what its weights are, once (no "random init (random init)")."""
    if r["weights"] == "random init (control)":
        return f"{r['encoder']}, control" if "random init" in r["encoder"] else f"{r['encoder']}, random init (control)"
    return f"{r['encoder']}, {r['weights']}"


def additional_claims(three: pd.DataFrame, grid: pd.DataFrame) -> pd.DataFrame:
    """The paper's D.3 and D.5 claims (summary) next to ours: ``three`` from
    :func:`three_object_table`, ``grid`` from :func:`mds_table`. Each line of our cells
    names the encoder it comes from (random-init ones as the control); lines are
    separated by newlines."""
    def three_cell(fmt: Callable[[pd.Series], str]) -> str:
        return "\n".join(f"{'occluded' if r['occlusion'] else 'no occlusion'} ({_who(r)}): {fmt(r)}"
                         for _, r in three.iterrows())

    def r2(r: pd.Series) -> str:
        o, c = "R² held-out objects", "R² held-out concepts"
        return (f"held-out R² objects vs concepts: lstsq {r[o + ' (lstsq)']:.2f} vs {r[c + ' (lstsq)']:.2f}, "
                f"avg {r[o + ' (avg)']:.2f} vs {r[c + ' (avg)']:.2f}")

    def retrieval(r: pd.Series) -> str:
        return (f"{r['retrieval objects (all scenes)']:.2f} all scenes, {r['retrieval objects (held-out)']:.2f} "
                f"held-out (chance {r['retrieval chance (held-out)']:.3f})")

    grid_lines = [f"{r['dataset']} ({_who(r)}): {r['grid-likeness (MDS)']:.2f} "
                  f"({r['grid-neighbour recall (full d)']:.2f}; {r['chance']:.2f})" for _, r in grid.iterrows()]
    rows = [
        {"claim": "D.3 probing stays high with occlusion",
         "paper (summary)": "probing 0.91–0.93 with occlusions (CLIP, Blender CLEVR)",
         "ours": three_cell(lambda r: f"concepts {r['probing concepts']:.2f}, objects {r['probing objects']:.2f}")},
        {"claim": "D.3 object-based beats concept-based reconstruction",
         "paper (summary)": "objects > concepts", "ours": three_cell(r2)},
        {"claim": "D.3 occlusion lowers retrieval", "paper (summary)": "0.76 -> 0.65", "ours": three_cell(retrieval)},
        {"claim": "D.5 partial grid structure, strongest for text",
         "paper (summary)": PAPER_MDS,
         "ours": "\n".join(["grid-likeness of the 2-D picture (grid-neighbour recall in the full embedding; chance):",
                            *grid_lines, "DINOv2 is not run in this book."])},
    ]
    return pd.DataFrame(rows)
