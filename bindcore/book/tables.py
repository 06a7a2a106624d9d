"""Tables of the chapters and the reproduction report: our numbers, each paper number
beside the one of ours it stands for (:mod:`bindcore.paper`), every row naming its data
and encoder.

The paper's numbers stand only beside rows of the same kind: pretrained beside CLIP,
random init beside the paper's random-init row, CLIP's numbers beside CLIP and
DINOv2's beside DINOv2 only, and our CLEVR-like 3-D scenes beside the authors' CLEVR
(:data:`PAPER_DATA`) with the row naming them as substitute data
(:data:`SUBSTITUTE_DATA`); nothing stands beside the controlled models, for which the
paper gives no such number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bindcore.analysis.approximators import FAMILIES, select_best
from bindcore.analysis.complexity import protocol_for, stored_sweeps, tree_grid
from bindcore.analysis.embedding_sets import is_occluded
from bindcore.analysis.geometry_sets import EmbeddingSet, three_object_analysis
from bindcore.data.pixels import LEVELS
from bindcore.paper import (
    EDIT_BANKS,
    PAPER_ATTRIBUTION,
    PAPER_EDITING,
    PAPER_EDITING_CASE,
    PAPER_RECONSTRUCTION,
    PAPER_THREE_OBJECTS,
    fmt_range,
)
from bindcore.sweep import results_table

# our datasets standing for the paper's
PAPER_DATA = {"CLEVR (authors' images)": "CLEVR", "PUG:SPARE": "PUG:SPARE", "CLEVR-like 3-D": "CLEVR",
              "CLEVR-2D": "CLEVR-2D"}
# those of them made here rather than the authors' images: substitute data, named beside the paper's number
SUBSTITUTE_DATA = {"CLEVR-like 3-D": "CLEVR-like scenes ray-cast here", "CLEVR-2D": "CLEVR-2D drawn here"}


def _image_model(s: EmbeddingSet) -> str | None:
    """The paper's image encoder a pretrained set stands beside (CLIP or DINOv2), else None."""
    if not s.pretrained or s.source != "image":
        return None
    return "CLIP ViT-B/32" if s.encoder.startswith("CLIP") else "DINOv2" if s.encoder.startswith("DINOv2") else None


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
        if s.pretrained and not s.encoder.startswith("CLIP"):
            label = f"{model} (ours: {s.encoder}, a substitute)"
    elif _image_model(s) and s.dataset in PAPER_DATA:
        key = (PAPER_DATA[s.dataset], _image_model(s))
        label = f"{key[1]} on {key[0]}" + (f" (ours: {SUBSTITUTE_DATA[s.dataset]}, substitute data)"
                                          if s.dataset in SUBSTITUTE_DATA else "")
    else:
        return None
    if key not in PAPER_RECONSTRUCTION:
        return None
    r2_avg, r2_pos, retrieval, probing = PAPER_RECONSTRUCTION[key]
    return {"model": label, "r2_avg": r2_avg, "r2_pos": r2_pos, "retrieval": retrieval, "probing": probing}


def _paper_editing(s: EmbeddingSet) -> dict[str, dict[str, float | None]]:
    """{metric: {bank: value}} of the paper's D.2 row for a pretrained image set, else {}."""
    if not _image_model(s) or s.dataset not in PAPER_DATA:
        return {}
    row = PAPER_EDITING.get((PAPER_DATA[s.dataset], _image_model(s)), {})
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
    """§4.2 / D.1 side by side: concept / object decoding per variant and set (a
    permuted control: the mean over its derangements, with their range and standard
    deviation); beside pretrained encoders, the paper's CLIP numbers of the same
    modality (none beside random-init controls and the controlled models, for which the
    paper gives none)."""
    rows = []
    for s, df in zip(sets, frames):
        paper = PAPER_ATTRIBUTION.get(s.source, {}) if s.pretrained else {}
        for _, r in df.iterrows():
            variant = attribution_variant(r)
            pc = paper.get(variant)
            n = r.get("permutations")
            spread = (f"{int(n)} derangements: concepts {r['concept_min']:.2f}–{r['concept_max']:.2f} "
                      f"(sd {r['concept_sd']:.3f}), objects {r['object_min']:.2f}–{r['object_max']:.2f} "
                      f"(sd {r['object_sd']:.3f})" if pd.notna(n) else "–")
            rows.append({"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s), "variant": variant,
                         "concepts": r["concept"], "objects": r["object"],
                         "paper (CLIP): concepts / objects": f"{pc[0]:.2f} / {pc[1]:.2f}" if pc else "–",
                         "removed norm / original": r["removed_norm_ratio"], "controls: spread": spread})
    return pd.DataFrame(rows)


def attribution_variant(row: pd.Series) -> str:
    """The paper's name of a :func:`~bindcore.analysis.geometry.component_attribution` row."""
    return str(row["variant"]).replace(" (control)", "")


EDIT_CASES = ("different", "shared (release)", "shared", "all")


def editing_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame], k: float = 1.0) -> pd.DataFrame:
    """D.2 at strength ``k``: probing and retrieval of the intended counterfactual per
    bank and case: ``different`` (the replaced object shares no value with the other
    object: the release's "Different" edits), ``shared (release)`` (it shares only the
    edited colour: the release's "Shared" edits), ``shared`` (any shared value: also the
    same-shape scenes the release skips) and ``all``; retrieval counts the intended
    objects in either order, ``retrieval exact`` only the intended order (the release's
    rule). The paper's CLIP numbers (:data:`~bindcore.paper.PAPER_EDITING_CASE` edits)
    stand beside pretrained image encoders' ``different`` edits."""
    rows = []
    for s, df in zip(sets, frames):
        paper = _paper_editing(s)
        sub = df[np.isclose(df["k"], k)]
        for bank, b in sub.groupby("bank", sort=False):
            row = {"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s), "bank": bank}
            for case in EDIT_CASES:
                r = b[b["case"] == case]
                if len(r):
                    row[f"retrieval ({case})"] = r["retrieval"].iloc[0]
                    row[f"retrieval exact ({case})"] = r["retrieval_exact"].iloc[0]
                    row[f"probing ({case})"] = r["probe_concepts"].iloc[0]
                    row[f"edits ({case})"] = int(r["n"].iloc[0])
                if case == PAPER_EDITING_CASE:  # the paper's numbers are of these edits: beside ours
                    row[f"paper (CLIP, {case}): probing / retrieval"] = (
                        f"{paper['probing'][bank]:.2f} / {paper['retrieval'][bank]:.2f}"
                        if paper and paper["probing"].get(bank) is not None else "–")
            rows.append(row)
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
    paper's D.3 numbers beside pretrained encoders only; for pretrained encoders also the
    object probing and the held-out R² gap of the set's Gaussian null (``(null)``
    columns, :func:`~bindcore.analysis.embedding_sets.gaussian_null`)."""
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
    ca, oa = _pick(df, "concepts", "avg"), _pick(df, "objects", "avg")
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
    "mlp": "MLP", "additive": "additive (per slot)", "global_product": "global product",
    "sum_global_product": "additive + global product", "within_object_product": "within-object product",
    "sum_within_object_product": "additive + within-object product", "xgboost": "XGBoost",
    "random_forest": "random forest",
}


def approximator_table(records: Sequence[dict[str, Any]], **columns: Any):
    """One row per family x width x fraction (x seed), the learning rate or tree
    configuration chosen on the validation scenes (never on held-out objects), with
    concept / object recognition and R² on held-out, training and mixed scenes at
    the selected step, and on the held-out scenes whose every concept value occurs in a
    training object (``heldout_seen_*``) or not (``heldout_unseen_*``). Extra
    ``columns`` (e.g. ``encoder="MiniLM"``) are added."""
    rows = []
    for r in select_best(records):
        row = {"family": FAMILY_LABELS.get(r["family"], r["family"]), "width": r["width"], "lr": r["lr"],
               "fraction": r["fraction"], "seed": r["seed"], "fit scenes": r["n_fit"],
               "held-out scenes": r["n_heldout"]}
        for subset in ("heldout", "train", "mixed", "heldout_seen", "heldout_unseen"):
            for m in ("concept", "object", "r2"):
                row[f"{subset}_{m}"] = r.get(f"selected_{subset}_{m}")
        row["held-out scenes with an unseen value"] = r.get("selected_n_heldout_unseen")
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
                      widths: Any, device: str | None = None, executor: Any = None, workers: int | None = None,
                      **kwargs: Any):
    """One tidy table of a stored sweep per controlled model, with the bag-of-concepts
    ceiling of each fraction's held-out scenes (``bag ceiling``; ``executor``/``workers``:
    :func:`bindcore.analysis.complexity.stored_sweeps`; ``kwargs``, e.g. ``product_init``,
    go to :func:`~bindcore.analysis.approximators.sweep_fractions`)."""
    protocol = protocol_for(params)
    jobs = [dict(data=d, fractions=params["fractions"], families=families, protocol=protocol, widths=widths, **kwargs)
            for d in datasets]
    from bindcore.analysis.probes import heldout_bag_ceiling

    sweeps = stored_sweeps(jobs, device=device, executor=executor, workers=workers)
    tables = []
    for d, records in zip(datasets, sweeps):
        t = approximator_table(records, model=d.name, objects=d.n_object_ids)
        # the bag-of-concepts ceiling of the same held-out scenes (split seed 0, as the sweeps)
        t["bag ceiling"] = t["fraction"].map({f: heldout_bag_ceiling(d, f) for f in set(t["fraction"])}) \
            if len(t) else []
        tables.append(t)
    return pd.concat(tables, ignore_index=True)


# ---------------------------------------------------------------------------------
# appendix E: pixel dual encoders
# ---------------------------------------------------------------------------------
def pixel_results_table(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per pixel run: the §5.2 results table plus its visual level, its CPU
    minutes (all calls that trained it) and its number of held-out objects."""
    table = results_table(list(records))
    table.insert(0, "level", [r["config"]["level"] for r in records])
    table["CPU minutes"] = [r.get("cpu_seconds", float("nan")) / 60 for r in records]
    table["held-out objects"] = [r["n_test_objects"] for r in records]
    return table


def level_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per level, at its largest coverage: strict and swap-pair recognition of held-out
    two-object scenes beside the bag-of-concepts floor and ceiling."""
    rows = []
    for level in [lv for lv in LEVELS if lv in set(table["level"])]:
        sub = table[table["level"] == level]
        top = sub[sub["coverage"] == sub["coverage"].max()].mean(numeric_only=True)
        rows.append({"level": level, "coverage": top["coverage"], "held-out objects, strict": top["test_object_2"],
                     "swap pairs": top.get("test_swap_pair", float("nan")),
                     "swap pairs, twins of held-out objects": top.get("test_swap_pair_heldout", float("nan")),
                     "bag floor": top["boc_test_object_2"], "bag ceiling": top["boc_ceiling_test_object_2"],
                     "held-out concepts": top["test_concept_2"],
                     "training task (training objects)": top["task_object_2"]})
    return pd.DataFrame(rows)


def pixel_approximator_params(params: dict[str, Any]) -> dict[str, Any]:
    """The approximator parameters of the appendix-E chapter's ``params`` under the names
    the §5 sweeps read (``approx_steps`` as ``steps``; ``lrs``, ``batch_size``, ``fractions``)."""
    return {"steps": params["approx_steps"], "lrs": params["lrs"], "batch_size": params["batch_size"],
            "fractions": params["fractions"]}


def pixel_sweeps(datasets: Sequence[Any], params: dict[str, Any], device: str | None = None,
                 executor: Any = None, workers: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Appendix E's approximators on the pixel models' binding data, with the chapter's
    approximator parameters (:func:`pixel_approximator_params`): (MLPs of every width
    (the §5.3 method), every family with the widest MLP (§5.4)); ``executor``/``workers``:
    :func:`bindcore.analysis.complexity.stored_sweeps`."""
    approx = pixel_approximator_params(params)
    mlp = controlled_sweeps(datasets, approx, ["mlp"], widths=params["widths"], device=device, executor=executor,
                            workers=workers)
    forms = controlled_sweeps(datasets, approx, list(FAMILIES), widths={"mlp": [max(params["widths"])]},
                              device=device, executor=executor, workers=workers)
    return mlp, forms


# ---------------------------------------------------------------------------------
# §5.4 figure 9: the global product over every stored controlled model
# ---------------------------------------------------------------------------------
def figure9_table(protocol: Any, max_objects: int, device: str | None = None, store: Any = None) -> pd.DataFrame:
    """One row per stored training run of the controlled models (§5.2 sweeps and their
    ablations; local runs and published records): the model's own held-out two-object
    recognition (and swap-pair recognition and the bag-of-concepts ceiling where the
    record has them) beside the
    global-product probe's held-out object recognition, the probe fitted on scenes of
    the model's own training objects (:func:`~bindcore.analysis.complexity.own_split_fit`;
    NaN where neither the weights nor a stored fit are here)."""
    from bindcore.analysis.complexity import own_split_fit
    from bindcore.controlled.training import STORE_KIND
    from bindcore.store import ResultStore

    store = store or ResultStore()
    rows = []
    for e in store.entries(STORE_KIND):
        rec = e.record()
        c, m = rec["config"], rec.get("metrics", {})
        fit = own_split_fit(rec, protocol, "global_product", max_objects, device, store)
        rows.append({
            "objects": c["n_values"] ** c["n_concepts"], "C": c["n_concepts"], "V": c["n_values"],
            "coverage": c["coverage"], "seed": c["seed"], "steps": c["steps"],
            "negatives": "held-out objects (release)" if c.get("heldout_as_negatives") else "training objects",
            "model: held-out objects": m.get("test_object_2", np.nan),
            "model: swap pairs": m.get("test_swap_pair", np.nan),
            "bag-of-concepts ceiling": (rec.get("bag_of_concepts") or {}).get("ceiling_test_object_2", np.nan),
            "global product: held-out objects": fit["selected_heldout_object"] if fit else np.nan,
            "global product: held-out R²": fit["selected_heldout_r2"] if fit else np.nan,
            "source": e.source, "run": e.path.name,
        })
    cols = ["objects", "C", "V", "coverage", "seed", "steps", "negatives", "model: held-out objects",
            "model: swap pairs", "bag-of-concepts ceiling", "global product: held-out objects",
            "global product: held-out R²", "source", "run"]
    return pd.DataFrame(rows, columns=cols).sort_values(["objects", "coverage", "seed"], ignore_index=True)


def figure9_correlations(table: pd.DataFrame) -> pd.DataFrame:
    """Per object-space size: how many models, and the Pearson and Spearman (rank)
    correlations of the global product's held-out recognition with the model's own
    (NaN with fewer than three models)."""
    rows = []
    for objects, sub in table.groupby("objects", sort=True):
        sub = sub.dropna(subset=["model: held-out objects", "global product: held-out objects"])
        x, y = sub["model: held-out objects"], sub["global product: held-out objects"]
        ok = len(sub) >= 3 and x.nunique() > 1 and y.nunique() > 1
        rows.append({"objects": objects, "models": len(sub), "Pearson r": x.corr(y) if ok else np.nan,
                     "Spearman rho": x.rank().corr(y.rank()) if ok else np.nan})
    return pd.DataFrame(rows, columns=["objects", "models", "Pearson r", "Spearman rho"])


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
        c, o = _pick(dec, "concepts", "avg"), _pick(dec, "objects", "avg")
        e = edit_row(ed)
        null = {}
        if s.pretrained:  # the claim's null: Gaussian embeddings of the same size and spectrum
            n = gaussian_null(s)
            null = {"retrieval null": _pick(decomposition(n, params, store), "objects", "avg")["retrieval"],
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


# ---------------------------------------------------------------------------------
# §5.2: the recipe search log
# ---------------------------------------------------------------------------------
def recipe_search_table(path: Any = None) -> pd.DataFrame:
    """The attempts of the §5.2 recipe search (``benchmarks/recipe_search.py``, logged in
    ``published/recipe-search.json``), failed ones included, with the fields each changed
    from its base recipe and the code version that made each; an empty frame when there
    is no log."""

    from bindcore.controlled.search import read_attempts
    from bindcore.store import code_version

    rows = read_attempts(path, "recipe-search.json")
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame([{
        "attempt": r["name"].split("_")[0],
        "changes": f"{r['base']} + " + ", ".join(f"{k}={v}" for k, v in r["changes"].items()
                                                 if k not in ("n_values", "coverage", "steps")),
        "|O|": r["objects"], "coverage": r["coverage"], "steps": r["step reached"],
        "CPU min": r["cpu minutes"], "strict": r["strict"], "swap pairs": r["swap pairs"],
        "swap pairs (held-out twins)": r["swap pairs, held-out twins"], "bag ceiling": r["bag ceiling"],
        "training task": r["training task"], "status": r["status"],
        "chosen on": r.get("chosen on", RECIPE_SEARCH_CHOSEN_ON),
        "code": code_version(r.get("code")),
    } for r in rows])
    return out


# the first recipe search (published/recipe-search.json) kept attempts by their held-out
# numbers, before the held-out objects were divided into validation and test objects
RECIPE_SEARCH_CHOSEN_ON = "held-out objects (test_*: before the validation split)"


def fit_search_table(path: Any = None) -> pd.DataFrame:
    """The attempts of the §5.2 search on training-task fit (``benchmarks/fit_search.py``,
    logged in ``published/fit-search.json``): per attempt the fields changed, and per
    seed the step at which the training task reached the target (blank: not by the last
    step), its last reading and CPU-minutes; the metric it was judged on. An empty
    frame when there is no log."""

    from bindcore.controlled.search import read_attempts

    rows = []
    for r in read_attempts(path, "fit-search.json"):
        runs = r["runs"]
        rows.append({
            "attempt": r["name"],
            "changes": f"{r['base']} + " + ", ".join(f"{k}={v}" for k, v in r["changes"].items()
                                                     if k not in ("n_values", "coverage")),
            "V": r["changes"].get("n_values"), "coverage": r["changes"].get("coverage"),
            "seeds": " / ".join(str(x["seed"]) for x in runs),
            f"steps to {r['target']:g}": " / ".join("-" if x["steps_to_target"] is None
                                                   else f"{x['steps_to_target']:,}" for x in runs),
            "last reading": " / ".join(f"{x['last_task_object_2']:.2f}" for x in runs),
            "every seed fitted": r["every seed fitted"],
            "CPU min": " / ".join("?" if x["cpu_minutes"] is None else f"{x['cpu_minutes']:.0f}" for x in runs),
            "chosen on": r["chosen on"], "status": r.get("status", "finished"),
        })
    return pd.DataFrame(rows)
