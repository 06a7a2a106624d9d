"""Tables of the chapters and the reproduction report: our numbers, each paper number
beside the one of ours it stands for (:mod:`bindcore.paper`), every row naming its data
and encoder.

The paper's numbers stand only beside rows of the same kind: pretrained beside CLIP,
random init beside the paper's random-init row, our CLEVR-like 3-D scenes beside the
authors' CLEVR (:data:`PAPER_DATA`); nothing stands beside the controlled models, for
which the paper gives no such number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bindcore.analysis.approximators import select_best
from bindcore.analysis.complexity import protocol_for, stored_sweeps, tree_grid
from bindcore.analysis.embedding_sets import is_occluded
from bindcore.analysis.geometry_sets import EmbeddingSet, three_object_analysis
from bindcore.paper import (
    EDIT_BANKS,
    NOTES,
    PAPER_ATTRIBUTION,
    PAPER_CONCEPT_R2,
    PAPER_EDITING,
    PAPER_OBJECTS_OVER_CONCEPTS,
    PAPER_RECONSTRUCTION,
    PAPER_THREE_OBJECTS,
    SUMMARY,
    SUMMARY_AND_NOTES,
)

# our datasets standing for the paper's
PAPER_DATA = {"CLEVR-like 3-D": "CLEVR", "CLEVR-2D": "CLEVR-2D"}


# ---------------------------------------------------------------------------------
# §4.1, §4.2 / D.1 and D.2
# ---------------------------------------------------------------------------------
def sets_frame(sets: Sequence[EmbeddingSet]) -> pd.DataFrame:
    """One row per set: what it is and how big."""
    return pd.DataFrame([{"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s),
                          "scenes": len(s.Z), "d": s.Z.shape[1],
                          "objects": int(np.prod(s.values_per_concept)),
                          "single-object scenes": 0 if s.Z_single is None else len(s.Z_single)} for s in sets])


def weights_label(s: EmbeddingSet) -> str:
    """What a set's weights are, in words."""
    if s.source == "controlled":
        return "trained here (§5.2)"
    return "pretrained" if s.pretrained else "random init (control)"


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
    retrieval and probing of the object reconstructions, each paper number beside ours."""
    rows = []
    for s, df in zip(sets, frames):
        c, o = _pick(df, "concepts", "avg"), _pick(df, "objects", "avg")
        cp, op = _pick(df, "concepts", "pos-avg"), _pick(df, "objects", "pos-avg")
        paper = _paper_decomposition(s) or {}
        rows.append({
            "dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s),
            "paper: model": paper.get("model", "–"),
            "R² concepts avg / pos": f"{c['r2_eval']:.2f} / {cp['r2_eval']:.2f}",
            "R² objects avg / pos": f"{o['r2_eval']:.2f} / {op['r2_eval']:.2f}",
            "paper: R² objects avg / pos": f"{paper['r2_avg']:.2f} / {paper['r2_pos']:.2f}" if paper else "–",
            "held-out R² concepts / objects (pos-lstsq)":
                f"{_pick(df, 'concepts', 'pos-lstsq')['r2_heldout']:.2f} / "
                f"{_pick(df, 'objects', 'pos-lstsq')['r2_heldout']:.2f}",
            "retrieval from objects (concepts)": f"{o['retrieval']:.2f} ({c['retrieval']:.2f})",
            "paper: retrieval": paper.get("retrieval", "–"),
            "retrieval chance": o["retrieval_chance"],
            "probing objects of object recon. (real)":
                f"{o['probe_object']:.2f} ({df.attrs.get('probe_real', {}).get('object', float('nan')):.2f})",
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
            rows.append({"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s), "variant": variant,
                         "concepts": r["concept"], "objects": r["object"],
                         "paper (CLIP): concepts / objects": f"{pc[0]:.2f} / {pc[1]:.2f}" if pc else "–",
                         "removed norm / original": r["removed_norm_ratio"]})
    return pd.DataFrame(rows)


def attribution_variant(row: pd.Series) -> str:
    """The paper's name of a :func:`~bindcore.analysis.geometry.component_attribution` row."""
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
            row = {"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s), "bank": bank}
            for case in ("all", "shared", "different"):
                r = b[b["case"] == case]
                if len(r):
                    row[f"retrieval ({case})"] = r["retrieval"].iloc[0]
                    row[f"probing ({case})"] = r["probe_concepts"].iloc[0]
                if case == "all":  # the paper's numbers are of all edits: beside ours
                    row["paper (CLIP): probing / retrieval"] = (
                        f"{paper['probing'][bank]:.2f} / {paper['retrieval'][bank]:.2f}"
                        if paper and paper["probing"].get(bank) is not None else "–")
            row["edits"] = int(b[b["case"] == "all"]["n"].iloc[0]) if (b["case"] == "all").any() else 0
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
    for data, v in PAPER_CONCEPT_R2.items():
        add("§4.1 variance", SUMMARY, data, "CLIP ViT-B/32", "R² bag of concepts (up to)", v,
            lambda i: max(_frame_value(dec[i], kind="concepts", estimator=e, metric="r2_eval")
                          for e in ("avg", "pos-avg", "lstsq", "pos-lstsq")))
        add("§4.1 variance", SUMMARY, data, "CLIP ViT-B/32", "R² objects minus concepts (about)",
            PAPER_OBJECTS_OVER_CONCEPTS,
            lambda i: _frame_value(dec[i], kind="objects", estimator="pos-lstsq", metric="r2_eval")
            - _frame_value(dec[i], kind="concepts", estimator="pos-lstsq", metric="r2_eval"))
    for modality, data in (("text", "text"), ("image", "CLEVR")):
        for variant, (c, o) in PAPER_ATTRIBUTION[modality].items():
            for metric, v in (("concepts", c), ("objects", o)):
                add("§4.2 / D.1 subtraction", SUMMARY_AND_NOTES, data, "CLIP ViT-B/32", f"{variant}: {metric}", v,
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
# appendix D.3 and D.5
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
            "dataset": s.dataset, "occlusion": is_occluded(s), "encoder": s.encoder, "weights": weights_label(s),
            "scenes": len(s.Z), "objects never seen": occ.get("never_seen", 0),
            "fewest occurrences": occ.get("min", 0),
            "probing concepts": real.get("concept", np.nan), "probing objects": real.get("object", np.nan),
            "paper (CLIP): probing": paper.get("probing", "–"),
            "R² held-out concepts (avg)": ca["r2_heldout"], "R² held-out objects (avg)": oa["r2_heldout"],
            "R² held-out concepts (lstsq)": cl["r2_heldout"], "R² held-out objects (lstsq)": ol["r2_heldout"],
            "paper (CLIP): R²": paper.get("r2", "–"),
            "retrieval objects (all scenes)": oa["retrieval"],
            "paper (CLIP): retrieval": paper.get("retrieval", "–"),
            "retrieval chance (all scenes)": oa["retrieval_chance"],
            "retrieval objects (held-out)": oa["retrieval_heldout"],
            "retrieval chance (held-out)": oa["retrieval_chance_heldout"],
            "held-out scenes": int(oa["n_heldout"]), "n_excluded": int(oa["n_excluded_heldout"]),
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


def mds_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Grid-likeness per set: the share of each object's nearest neighbours sharing a
    concept value with it, in the MDS picture and in the full embedding, against chance
    (the share of all other objects that do): with 2 neighbours (also per concept, in the
    picture) and with as many neighbours as an object has in the grid."""
    rows = []
    for s, df in zip(sets, frames):
        g = df.attrs["grid"]
        row = {"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s),
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


# ---------------------------------------------------------------------------------
# §5.1, §5.3, §5.4 approximator sweeps
# ---------------------------------------------------------------------------------
FAMILY_LABELS = {
    "mlp": "MLP", "additive": "additive (bag of concepts)", "global_product": "global product",
    "sum_global_product": "additive + global product", "within_object_product": "within-object product",
    "sum_within_object_product": "additive + within-object product", "xgboost": "XGBoost",
    "random_forest": "random forest",
}


def approximator_table(records: Sequence[dict[str, Any]], **columns: Any):
    """One row per family x width x fraction (x seed), the learning rate or tree
    configuration chosen on the validation scenes (never on held-out objects), with
    concept / object recognition and R² on held-out, training and mixed scenes at
    the selected step. Extra ``columns`` (e.g. ``encoder="MiniLM"``) are added."""
    rows = []
    for r in select_best(records):
        row = {"family": FAMILY_LABELS.get(r["family"], r["family"]), "width": r["width"], "lr": r["lr"],
               "fraction": r["fraction"], "seed": r["seed"], "fit scenes": r["n_fit"],
               "held-out scenes": r["n_heldout"]}
        for subset in ("heldout", "train", "mixed"):
            for m in ("concept", "object", "r2"):
                row[f"{subset}_{m}"] = r.get(f"selected_{subset}_{m}")
        row["seconds"] = r.get("seconds")
        row.update(columns)
        rows.append(row)
    return pd.DataFrame(rows)


PRETRAINED_FAMILIES = ("mlp", "additive", "global_product", "xgboost", "random_forest")


def pretrained_sweeps(params: dict[str, Any], binding: dict[str, Any], device: str | None = None,
                      executor: Any = None, workers: int | None = None):
    """The §5.1 sweep of every encoder's binding data -> one tidy table (one stored
    sweep per encoder; ``executor``/``workers``: :func:`bindcore.analysis.complexity.stored_sweeps`)."""
    protocol = protocol_for(params)
    jobs = [dict(data=data, fractions=params["fractions"], families=PRETRAINED_FAMILIES, protocol=protocol,
                 widths={"mlp": params["widths"]}, tree_grid=tree_grid(params["tree_grid"])) for data in binding.values()]
    sweeps = stored_sweeps(jobs, device=device, executor=executor, workers=workers)
    return pd.concat([approximator_table(records, encoder=name) for name, records in zip(binding, sweeps)],
                     ignore_index=True)


def controlled_sweeps(datasets: Sequence[Any], params: dict[str, Any], families: Sequence[str],
                      widths: Any, device: str | None = None, executor: Any = None, workers: int | None = None):
    """One tidy table of a stored sweep per controlled model (``executor``/``workers``:
    :func:`bindcore.analysis.complexity.stored_sweeps`)."""
    protocol = protocol_for(params)
    jobs = [dict(data=d, fractions=params["fractions"], families=families, protocol=protocol, widths=widths)
            for d in datasets]
    sweeps = stored_sweeps(jobs, device=device, executor=executor, workers=workers)
    return pd.concat([approximator_table(records, model=d.name, objects=d.n_object_ids)
                      for d, records in zip(datasets, sweeps)], ignore_index=True)
