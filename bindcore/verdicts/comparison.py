"""The paper's numbers beside ours, each item in one group: :data:`LIKE` (same data, weights,
protocol), :data:`SUBSTITUTE` (named) or :data:`NOT_RUN` (reason and command). A random-init
encoder never stands in for a pretrained one."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bindcore.controlled.search import BINDS_AT
from bindcore.paper import (
    PAPER_APPROXIMATOR_PROTOCOL,
    PAPER_APPROXIMATOR_WIDTHS,
    PAPER_DATASET_SIZES,
    PAPER_EDITING_CASE,
    PAPER_PRETRAINED_CONCEPTS,
    RELEASE,
    PaperItem,
    fmt_objects,
    fmt_range,
    paper_items,
)
from bindcore.parameters import chapter_parameters, run_command

LIKE = "like for like"
SUBSTITUTE = "substitute, named"
NOT_RUN = "not run here"
GROUPS = (LIKE, SUBSTITUTE, NOT_RUN)
COLUMNS = ["group", "section", "data", "model", "metric", "paper", "ours", "our data | encoder",
           "what differs, or why not run", "command", "source"]

AUTHORS_CLEVR = "CLEVR (authors' images)"
NOTEBOOK = {"§4.1": "04_1_geometry", "D.2": "04_1_geometry", "§4.2": "04_2_component_attribution",
            "D.3": "d_additional", "D.4": "d_additional", "D.5": "d_additional", "§5.1": "05_1_pretrained_binding_complexity",
            "§5.2": "05_2_binding_generalization", "§5.3": "05_3_binding_function_complexity",
            "§5.4": "05_4_functional_form"}


@dataclass
class Build:
    """What a book build ran: each chapter's parameters (``geometry``, ``pretrained_params``,
    ``additional_params``, ``sweep_params``), tables and frames, the ``claims`` frames by
    chapter and the book's ``chapters``."""

    profile: str
    geometry: dict[str, Any]
    sets: list[Any]
    decomposition: list[pd.DataFrame]
    attribution: list[pd.DataFrame]
    editing: list[pd.DataFrame]
    pretrained: pd.DataFrame
    pretrained_params: dict[str, Any]  # §5.1's
    three: pd.DataFrame
    natural: pd.DataFrame
    grid: pd.DataFrame
    additional_params: dict[str, Any]  # appendix D's
    sweep_params: dict[str, Any]
    claims: dict[str, pd.DataFrame] = field(default_factory=dict)
    chapters: list[str] = field(default_factory=list)


def _book(section: str, args: str = "") -> str:
    """The papermill command that runs the chapter of ``section`` (with ``args``)."""
    return run_command(next(nb for key, nb in NOTEBOOK.items() if section.startswith(key)), args)


# ---------------------------------------------------------------------------------
# which of our embedding sets stands for the paper's (data, model)
# ---------------------------------------------------------------------------------
def _is_clip(s: Any) -> bool:
    return s.pretrained and s.encoder.startswith("CLIP")


def _is_dino(s: Any) -> bool:
    return s.pretrained and s.encoder.startswith("DINOv2")


def _probe_diff(b: Build) -> list[str]:
    """How §4's probes differ from the release's (none: ``[]``)."""
    epochs, lr = int(b.geometry["probe_epochs"]), float(b.geometry["probe_lr"])
    if epochs == RELEASE["probe epochs"] and lr == RELEASE["probe lr"]:
        return []
    return [f"probes: {epochs:,} epochs at lr {lr:g} (release: {RELEASE['probe epochs']:,} at {RELEASE['probe lr']:g})"]


def _data_difference(s: Any, b: Build) -> list[str]:
    if s.source == "text":
        a, n = b.geometry["text_space"]
        return [f"our adjective and noun lists, {a} x {n} (the release's lists differ)"]
    if s.dataset == "CLEVR-like 3-D":
        return ["CLEVR-like scenes ray-cast here (the authors': Blender renders)"]
    if s.dataset == "CLEVR-2D":
        return [f"CLEVR-2D drawn here (the release's {PAPER_DATASET_SIZES['CLEVR-2D']['scenes']} label pairs)"]
    return []


def find_set(b: Build, data: str, model: str) -> tuple[int | None, list[str], str, str]:
    """``(index of our set standing for the paper's (data, model) or None, what differs, why
    none runs, command)``."""
    sets = b.sets
    pretrained = model != "random init"
    text = data == "text"
    if text:
        cand = [i for i, s in enumerate(sets) if s.source == "text" and s.pretrained == pretrained]
        cand.sort(key=lambda i: not _is_clip(sets[i]))  # CLIP first
        if not cand:
            return None, [], "no text encoder of this kind here", ""
        i = cand[0]
        diff = _data_difference(sets[i], b)
        if pretrained and not _is_clip(sets[i]):
            diff.append(f"{sets[i].encoder} for CLIP's text tower (CLIP's weights need the Hugging Face Hub)")
        return i, diff, "", ""
    names = {"CLEVR": [AUTHORS_CLEVR, "CLEVR-like 3-D"], "CLEVR-2D": ["CLEVR-2D"], "PUG:SPARE": ["PUG:SPARE"]}[data]
    want = _is_dino if model == "DINOv2" else _is_clip
    for name in names:
        for i, s in enumerate(sets):
            if s.source == "image" and s.dataset == name and want(s):
                return i, _data_difference(s, b), "", ""
    have_data = any(s.dataset in names for s in sets)
    reasons, args = [], []
    if not have_data:
        key = "pug_dir" if data == "PUG:SPARE" else "clevr_dir"
        reasons.append(f"the authors' {data} images are not here")
        args.append(f"-p {key} /path/to/folder")
    if model == "DINOv2" and not any(_is_dino(s) for s in sets):
        reasons.append("no DINOv2 weights here")
        args.append("-p dinov2 facebook/dinov2-base")
    if model != "DINOv2" and not any(_is_clip(s) for s in sets):
        reasons.append("no pretrained CLIP image encoder here (its weights need the Hugging Face Hub, e.g. Colab; "
                       "the random-init control is no substitute)")
    return None, [], "; ".join(reasons) or "not measured", " ".join(args)


def _value(df: pd.DataFrame, metric: str, **where: Any) -> float:
    sub = df
    for k, v in where.items():
        sub = sub[np.isclose(sub[k], v)] if isinstance(v, float) else sub[sub[k] == v]
    return float(sub[metric].iloc[0]) if len(sub) and metric in sub else float("nan")


def _row(item: PaperItem, group: str, ours: Any = "", label: str = "", note: str = "", command: str = ""
         ) -> dict[str, Any]:
    """One row of :data:`COLUMNS`; ``ours``: a number, range or text (:func:`~bindcore.paper.fmt_range`
    writes it in :func:`comparison_table`)."""
    if group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
    return dict(zip(COLUMNS, (group, item.section, item.data, item.model, item.metric, item.shown, ours, label,
                              note, command, item.source)))


def _set_row(b: Build, item: PaperItem, ours_of: Any, protocol: list[str] | None = None, data: str = ""
             ) -> dict[str, Any]:
    """A row for an item measured on the §4 embedding set standing for ``data`` (default the item's)."""
    i, diff, why, args = find_set(b, data or item.data, item.model)
    if i is None:
        return _row(item, NOT_RUN, note=why, command=_book(item.section, args) if args else
                    f"run {_book(item.section)} where the weights are (e.g. Colab)")
    ours = ours_of(i)
    if ours is None or (isinstance(ours, float) and not np.isfinite(ours)):
        return _row(item, NOT_RUN, label=b.sets[i].label, note="not measured on this set (no single-object images)")
    diff = diff + (protocol or [])
    return _row(item, SUBSTITUTE if diff else LIKE, ours, b.sets[i].label, "; ".join(diff))


# ---------------------------------------------------------------------------------
# the measures: one function per name of PaperItem.measure, called with its arguments
# ---------------------------------------------------------------------------------
def _release_labels(b: Build, item: PaperItem, what: str) -> dict[str, Any]:
    """C.1, CLEVR and CLEVR-2D: a count of the release's own label set, the same data for a count
    whatever the images (named in the row)."""
    from bindcore.data.vocab import CLEVR_COLORS, CLEVR_SHAPES, clevr_release_order

    order = clevr_release_order()
    ours = {"scenes": len(order), "colours": len(CLEVR_COLORS), "shapes": len(CLEVR_SHAPES),
            "objects": len({tuple(o) for o in order.reshape(-1, 2).tolist()})}[what]
    if item.data == "CLEVR" and any(s.dataset == AUTHORS_CLEVR for s in b.sets):
        return _row(item, LIKE, ours, "the authors' labels")
    images = "CLEVR-like scenes ray-cast here" if item.data == "CLEVR" else "CLEVR-2D drawn here"
    return _row(item, LIKE, ours, f"the release's label pairs ({images})")


def _pug_images(b: Build, item: PaperItem, what: str) -> dict[str, Any]:
    pug = [s for s in b.sets if s.dataset == "PUG:SPARE"]
    if not pug:
        return _row(item, NOT_RUN, note="the authors' PUG:SPARE images are not here",
                    command=_book("§4.1", "-p pug_dir /path/to/folder"))
    s = pug[0]
    ours = {"scenes": len(s.Z), "species": s.values_per_concept[0], "colours": s.values_per_concept[1]}[what]
    return _row(item, LIKE, ours, "the authors' images")


def _caption_space(b: Build, item: PaperItem, a: int, n: int, what: str) -> dict[str, Any]:
    from bindcore.data import make_text_space

    ds = make_text_space(a, n)
    two = int((ds.n_objects_per_scene == 2).sum())
    ours = {"two-object scenes": two, "single-object scenes": len(ds) - two, "adjectives": a, "nouns": n}[what]
    return _row(item, SUBSTITUTE, ours, f"make_text_space({a}, {n})", "our adjective and noun lists")


def _patterned(b: Build, item: PaperItem, what: str) -> dict[str, Any]:
    """D.4's counts on the patterned-object substitute."""
    t, p = int(b.additional_params["natural_types"]), int(b.additional_params["natural_patterns"])
    ours = {"images": (t * p) ** 2, "object types": t, "patterns": p}[what]
    return _row(item, SUBSTITUTE, ours, "patterned objects ray-cast here (bindcore.data.patterned)",
                "a substitute of the generated natural images")


CLOSED_FORM = [f"components by closed-form least squares (release: AdamW, {RELEASE['component steps']:,} steps, "
               "which stops short of the least-squares solution)"]


def _decomposition(b: Build, item: PaperItem, estimator: str, column: str) -> dict[str, Any]:
    return _set_row(b, item, lambda i: _value(b.decomposition[i], column, kind="objects", estimator=estimator),
                    _probe_diff(b) if column == "probe_object" else [])


def _concept_r2(b: Build, item: PaperItem) -> dict[str, Any]:
    """§4.1: the best R² of the bag of concepts over the four estimators."""
    return _set_row(b, item, lambda i: max(_value(b.decomposition[i], "r2_eval", kind="concepts", estimator=e)
                                           for e in ("avg", "pos-avg", "lstsq", "pos-lstsq")), CLOSED_FORM)


def _objects_over_concepts(b: Build, item: PaperItem, data: str) -> dict[str, Any]:
    def gap(i: int) -> float:
        return (_value(b.decomposition[i], "r2_eval", kind="objects", estimator="pos-lstsq")
                - _value(b.decomposition[i], "r2_eval", kind="concepts", estimator="pos-lstsq"))

    return _set_row(b, item, gap, CLOSED_FORM, data)


def _editing(b: Build, item: PaperItem, column: str, bank: str, data: str = "") -> dict[str, Any]:
    """§4.1 and D.2: editing at k = 1 on the release's case, read as the release reads it."""
    probing = column == "probe_concepts"
    row = _set_row(b, item, lambda i: _value(b.editing[i], column, bank=bank, k=1.0, case=PAPER_EDITING_CASE),
                   _probe_diff(b) if probing else [], data)
    if row["group"] != NOT_RUN:
        row["our data | encoder"] += (f" ({PAPER_EDITING_CASE} edits, "
                                      + ("the joint concept probes" if probing else "exact-order hit") + " as the release)")
    return row


def _attribution(b: Build, item: PaperItem, variant: str, column: str) -> dict[str, Any]:
    controls = ["controls: the mean over derangements (release: one permutation)"] \
        if variant.startswith("permuted") else []

    def ours(i: int) -> float:
        a = b.attribution[i]
        return _value(a.assign(name=a["variant"].str.replace(" (control)", "", regex=False)), column, name=variant)

    return _set_row(b, item, ours, CLOSED_FORM + _probe_diff(b) + controls)


def _pretrained_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["weights"] == "pretrained"] if len(table) and "weights" in table else table.iloc[:0]


NO_IMAGE = ("no pretrained image encoder here (CLIP's weights need the Hugging Face Hub; the random-init control "
            "is no substitute)")


def _no_image(item: PaperItem) -> dict[str, Any]:
    return _row(item, NOT_RUN, note=NO_IMAGE, command=f"run {_book(item.section)} where the weights are (e.g. Colab)")


THREE_OBJECTS = "CLEVR-like three-object scenes ray-cast here (the authors': Blender)"


def _three(b: Build, occluded: bool) -> tuple[Any, str]:
    pre = _pretrained_rows(b.three)
    r = pre[pre["occlusion"] == occluded].iloc[0] if (pre["occlusion"] == occluded).any() else None
    return r, (f"{r['dataset']} | {r['encoder']}" if r is not None else "")


def _three_objects(b: Build, item: PaperItem, occluded: bool, column: str) -> dict[str, Any]:
    if not len(_pretrained_rows(b.three)):
        return _no_image(item)
    r, label = _three(b, occluded)
    return _row(item, SUBSTITUTE, r[column] if r is not None else np.nan, label,
                THREE_OBJECTS + ("; the object probe" if column == "probing objects" else ""))


def _three_objects_r2(b: Build, item: PaperItem) -> dict[str, Any]:
    pre = _pretrained_rows(b.three)
    if not len(pre):
        return _no_image(item)
    ours = "; ".join(f"{'occluded' if x['occlusion'] else 'no occlusion'}: objects "
                     f"{fmt_range(x['R² held-out objects (avg)'])} vs concepts {fmt_range(x['R² held-out concepts (avg)'])}"
                     for _, x in pre.iterrows())
    return _row(item, SUBSTITUTE, ours, _three(b, False)[1], THREE_OBJECTS + "; held-out R² (§4.1: in-sample)")


def _natural(b: Build, item: PaperItem) -> dict[str, Any]:
    pre = _pretrained_rows(b.natural)
    if not len(pre):
        return _no_image(item)
    r = pre.iloc[0]
    ours = (f"retrieval {fmt_range(r['retrieval'])} (chance {r['retrieval chance']:.3f}), edits "
            f"{fmt_range(r['edit retrieval'])} (chance {r['edit chance']:.3f})")
    return _row(item, SUBSTITUTE, ours, f"{r['dataset']} | {r['encoder']}", "patterned objects ray-cast here")


def _mds(b: Build, item: PaperItem) -> dict[str, Any]:
    pre = _pretrained_rows(b.grid)
    if not len(pre) or pre["dataset"].str.startswith("captions").all():
        return _no_image(item)
    col = "grid-neighbour recall (full d)"
    ours = "; ".join(f"{r['dataset']} | {r['encoder']}: {fmt_range(r[col])} (chance {fmt_range(r['chance'])})"
                     for _, r in pre.iterrows())
    return _row(item, SUBSTITUTE, ours, "the §4 sets", "grid-neighbour recall for the MDS picture")


def _approximators(b: Build, item: PaperItem, key: str) -> dict[str, Any]:
    """§5.1's approximator protocol (``key`` of the chapter's parameters) beside the paper's."""
    ours = b.pretrained_params[key]
    ours = (min(ours), max(ours)) if isinstance(ours, (list, tuple)) else ours
    same = ours == item.value
    shown = "–".join(f"{v:g}" for v in ours) if isinstance(ours, tuple) else "full batch" if ours is None else ours
    return _row(item, LIKE if same else SUBSTITUTE, shown, f"profile '{b.profile}'",
                "" if same else f"the '{b.profile}' profile's protocol (the 'paper' profile has the paper's)")


def _pretrained(b: Build, item: PaperItem, what: str) -> dict[str, Any]:
    """§5.1 on the first pretrained text encoder: the widest MLP's lowest held-out concepts above the
    paper's fraction (``what`` "concepts"), its held-out objects at the largest fraction
    ("objects"), or every family's best at the largest fraction ("families")."""
    t, p = b.pretrained, b.pretrained_params
    pre = [n for n in dict.fromkeys(t["encoder"] if len(t) else []) if "random init" not in n]
    if not pre:
        return _row(item, NOT_RUN, note="no pretrained text encoder here", command=_book("§5.1"))
    sub = t[t["encoder"] == pre[0]]
    diff = [] if pre[0].startswith("CLIP") else [f"{pre[0]} for CLIP's text tower"]
    diff += [f"our adjective and noun lists, {p['text_space'][0]} x {p['text_space'][1]}"]
    if p["steps"] != PAPER_APPROXIMATOR_PROTOCOL["steps"] or max(p["widths"]) != PAPER_APPROXIMATOR_WIDTHS[1]:
        diff.append(f"the '{b.profile}' protocol: {p['steps']:,} steps, widths up to {max(p['widths']):,}")
    mlp = sub[sub["family"] == "MLP"]
    wide = mlp[mlp["width"] == mlp["width"].max()]
    if what == "concepts":
        above = wide[wide["fraction"] > PAPER_PRETRAINED_CONCEPTS["above fraction"]]
        ours = above["heldout_concept"].min() if len(above) else np.nan
    elif what == "objects":
        top = wide[wide["fraction"] == wide["fraction"].max()]
        ours = top["heldout_object"].iloc[0] if len(top) else np.nan
    else:
        top = sub[sub["fraction"] == sub["fraction"].max()]
        ours = "; ".join(f"{f}: objects {fmt_range(o)}, concepts {fmt_range(c)}" for f, o, c in
                         top.groupby("family")[["heldout_object", "heldout_concept"]].max().itertuples())
        diff.append("DINOv2 only where §5.1 runs on the authors' images with its weights")
    return _row(item, SUBSTITUTE, ours, pre[0], "; ".join(diff))


def _recipe(b: Build, where: str = "") -> str:
    """The training recipe of the §5.2 numbers read ``where``."""
    if where.startswith("scale"):
        return "the scale training recipe (the paper's Table 9 is not available)"
    return f"the '{b.profile}' training recipe (the paper's Table 9 is not available)"


def _sizes(b: Build) -> list[int]:
    return sorted({v ** c for c, v in b.sweep_params["sizes"]})


def _coverages(b: Build, item: PaperItem) -> dict[str, Any]:
    covs = list(b.sweep_params["coverages"])
    same = (min(covs), max(covs)) == item.value
    return _row(item, LIKE if same else SUBSTITUTE, f"{min(covs):g}–{max(covs):g}", f"profile '{b.profile}'",
                "" if same else f"coverages {covs}")


def _in_section_5_2(b: Build, item: PaperItem) -> dict[str, Any]:
    return _row(item, SUBSTITUTE, "in the §5.2 section below", f"|O| in {_sizes(b)}", _recipe(b))


def _at_chosen_coverage(b: Build, item: PaperItem) -> dict[str, Any]:
    """§5.2's "near 1.0": per size, strict held-out recognition beside the bag ceiling the rule
    reads, and swap pairs, at the coverage chosen on validation objects."""
    summary, where = _generalization_summary(b)
    if summary is None:
        return _in_section_5_2(b, item)
    ours = "; ".join(f"{fmt_objects(r['objects'])}: strict {fmt_range(r['objects at chosen coverage'])} (bag ceiling "
                     f"{fmt_range(r['bag ceiling at chosen coverage'])}), swap pairs "
                     f"{fmt_range(r['swap pairs at chosen coverage'])} at coverage {r['chosen coverage']:g}"
                     for _, r in summary.iterrows())
    return _row(item, SUBSTITUTE, ours, where, _recipe(b, where))


def _transition(b: Build, item: PaperItem, objects: int, at_least: bool) -> dict[str, Any]:
    """§5.2: the transition coverage of the size ``objects`` (``at_least``: of every size from it on)."""
    summary, where = _generalization_summary(b)
    if summary is not None:
        picked = summary[summary["objects"] >= objects] if at_least else summary[summary["objects"] == objects]
        if len(picked):
            ours = "; ".join(
                f"{fmt_objects(r['objects'])}: swap pairs >= {BINDS_AT:g} from coverage {r['transition coverage']:g}"
                if np.isfinite(r["transition coverage"]) else
                f"{fmt_objects(r['objects'])}: no transition up to coverage {r['largest coverage']:g}"
                for _, r in picked.iterrows())
            return _row(item, SUBSTITUTE, ours, where, _recipe(b, where))
    sizes = _sizes(b)
    have = [s for s in sizes if s >= objects] if at_least else [s for s in sizes if s == objects]
    if have:
        return _row(item, SUBSTITUTE, "in the §5.2 section below", ", ".join(fmt_objects(s) for s in have), _recipe(b))
    paper = chapter_parameters("binding_generalization", "paper")
    c, v = next(((c, v) for v in sorted({v for _, v in paper["sizes"]}, reverse=True)
                 for c in range(1, 8) if v ** c == objects), max(paper["sizes"], key=lambda cv: cv[1] ** cv[0]))
    return _row(item, NOT_RUN, note=f"no object space of {fmt_objects(objects)} in this build (sizes {sizes})",
                command=f"`bindcore sweep --profile paper --concepts {c} --values {v} --coverages "
                        + " ".join(f"{x:g}" for x in paper["coverages"]) + "` (GPU hours)")


def _claim_counts(b: Build, item: PaperItem, key: str) -> dict[str, Any]:
    """§5.3, §5.4, figure 9: how many of the chapter's claims have each status."""
    frame = b.claims.get(key)
    if frame is None or not len(frame):
        return _row(item, NOT_RUN, note="no claim frame in this build", command=_book(item.section))
    ours = ", ".join(f"{v} {k}" for k, v in frame["status"].value_counts().to_dict().items())
    return _row(item, SUBSTITUTE, ours, "the controlled models of §5.2", f"the '{b.profile}' training recipe")


def _pixel_chapter(b: Build, item: PaperItem) -> dict[str, Any]:
    pixels = [c for c in b.chapters if c.startswith("e_")]
    if not pixels:
        return _row(item, NOT_RUN, note="no chapter of this book trains encoders on pixels yet",
                    command="(appendix E is not implemented here)")
    return _row(item, SUBSTITUTE, f"see the chapter {pixels[0]}", pixels[0], "its own comparison")


MEASURES = {
    "release_labels": _release_labels, "pug_images": _pug_images, "caption_space": _caption_space,
    "patterned": _patterned, "decomposition": _decomposition, "concept_r2": _concept_r2,
    "objects_over_concepts": _objects_over_concepts, "editing": _editing, "attribution": _attribution,
    "three_objects": _three_objects, "three_objects_r2": _three_objects_r2, "natural": _natural, "mds": _mds,
    "approximators": _approximators, "pretrained": _pretrained, "coverages": _coverages,
    "at_chosen_coverage": _at_chosen_coverage, "transition": _transition, "in_section_5_2": _in_section_5_2,
    "claim_counts": _claim_counts, "pixel_chapter": _pixel_chapter,
}


def _generalization_summary(b: Build) -> tuple[pd.DataFrame | None, str]:
    """The §5.2 summary the claims were judged on (scale records first) and its source."""
    for key, where in (("§5.2 (scale)", "scale recipe (published records)"), ("§5.2", f"profile '{b.profile}'")):
        frame = b.claims.get(key)
        records = frame.attrs.get("summary") if frame is not None else None
        if records:
            return pd.DataFrame(records).sort_values("objects"), where
    return None, ""


def comparison_table(b: Build) -> pd.DataFrame:
    """One row (:data:`COLUMNS`) per item of :func:`~bindcore.paper.paper_items`, from its measure."""
    rows = [MEASURES[item.measure[0]](b, item, *item.measure[1:]) for item in paper_items()]
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["ours"] = [fmt_range(v) if isinstance(v, (numbers.Number, tuple)) else v for v in df["ours"]]
    return df


def group_counts(table: pd.DataFrame) -> dict[str, int]:
    return {g: int((table["group"] == g).sum()) for g in GROUPS}


def summary_line(table: pd.DataFrame, profile: str) -> str:
    """The report's opening count in words, the datasets' counts apart."""
    counts = np.array([item.kind == "dataset" for item in paper_items()])
    if len(counts) == len(table):
        datasets, table = int(counts.sum()), table[~counts]
    else:
        datasets = 0
    c = group_counts(table)
    return (f"Of the paper's {len(table)} numbers and claims (`bindcore.paper`), **{c[LIKE]}** are compared like for "
            f"like (same data, same weights, same protocol), **{c[SUBSTITUTE]}** with a substitute encoder, data or "
            f"protocol, named in each row, and **{c[NOT_RUN]}** are not run in this build, each with its reason and "
            f"the command that runs it (profile '{profile}')"
            + (f"; {datasets} counts of the datasets besides, in their own table" if datasets else "") + ".")
