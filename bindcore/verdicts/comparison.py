"""The paper's numbers beside ours, each item in one group: :data:`LIKE` (same data, weights,
protocol), :data:`SUBSTITUTE` (named) or :data:`NOT_RUN` (reason and command). A random-init
encoder never stands in for a pretrained one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bindcore.book.profiles import chapter_parameters
from bindcore.controlled.search import BINDS_AT
from bindcore.paper import (
    PAPER_APPROXIMATOR_PROTOCOL,
    PAPER_APPROXIMATOR_WIDTHS,
    PAPER_COVERAGES,
    PAPER_EDITING_CASE,
    PAPER_PRETRAINED_CONCEPTS,
    RELEASE,
    PaperItem,
    fmt_objects,
    paper_items,
)

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


def _chapter(section: str) -> str:
    for key, nb in NOTEBOOK.items():
        if section.startswith(key) or key in section:
            return nb
    return ""


def _book(section: str, args: str = "") -> str:
    """The papermill command that runs the chapter of ``section`` (with ``args``)."""
    return f"`papermill notebooks/{_chapter(section)}.ipynb out.ipynb{' ' + args if args else ''}`"


# ---------------------------------------------------------------------------------
# which of our embedding sets stands for the paper's (data, model)
# ---------------------------------------------------------------------------------
def _is_clip(s: Any) -> bool:
    return s.pretrained and s.encoder.startswith("CLIP")


def _is_dino(s: Any) -> bool:
    return s.pretrained and s.encoder.startswith("DINOv2")


def _text_space(b: Build) -> list[int]:
    return list(b.geometry["text_space"])


def _probes_as_release(params: dict[str, Any]) -> bool:
    return int(params["probe_epochs"]) == RELEASE["probe epochs"] and float(params["probe_lr"]) == RELEASE["probe lr"]


def _probe_difference(params: dict[str, Any]) -> str:
    return (f"probes: {int(params['probe_epochs']):,} epochs at lr {float(params['probe_lr']):g} (release: "
            f"{RELEASE['probe epochs']:,} at {RELEASE['probe lr']:g})")


def _data_difference(s: Any, b: Build) -> list[str]:
    if s.source == "text":
        a, n = _text_space(b)
        return [f"our adjective and noun lists, {a} x {n} (the release's lists differ)"]
    if s.dataset == "CLEVR-like 3-D":
        return ["CLEVR-like scenes ray-cast here (the authors': Blender renders)"]
    if s.dataset == "CLEVR-2D":
        return ["CLEVR-2D drawn here (the release's 576 label pairs)"]
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
            return None, [], "no text encoder of this kind here", _book("§4.1")
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
    if group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
    return dict(zip(COLUMNS, (group, item.section, item.data, item.model, item.metric, item.shown, ours, label,
                              note, command, item.source)))


def _set_row(b: Build, item: PaperItem, ours_of: Any, protocol: list[str] | None = None) -> dict[str, Any]:
    """A row for an item measured on one of the §4 embedding sets."""
    i, diff, why, args = find_set(b, item.data if item.data != "text and CLEVR" else "text", item.model)
    if i is None:
        return _row(item, NOT_RUN, note=why, command=_book(item.section, args) if args else
                    f"run {_book(item.section)} where the weights are (e.g. Colab)")
    ours = ours_of(i)
    if ours is None or (isinstance(ours, float) and not np.isfinite(ours)):
        return _row(item, NOT_RUN, label=b.sets[i].label, note="not measured on this set (no single-object images)",
                    command="")
    diff = diff + (protocol or [])
    return _row(item, SUBSTITUTE if diff else LIKE, ours, b.sets[i].label, "; ".join(diff))


# ---------------------------------------------------------------------------------
# the items, section by section
# ---------------------------------------------------------------------------------
def _datasets(b: Build, item: PaperItem) -> dict[str, Any]:
    from bindcore.data import make_text_space
    from bindcore.data.vocab import CLEVR_COLORS, CLEVR_SHAPES, clevr_release_order

    if item.data in ("CLEVR", "CLEVR-2D"):
        authors = item.data == "CLEVR" and any(s.dataset == AUTHORS_CLEVR for s in b.sets)
        order = clevr_release_order()
        ours = {"scenes": len(order), "colours": len(CLEVR_COLORS), "shapes": len(CLEVR_SHAPES),
                "objects": len({tuple(o) for o in order.reshape(-1, 2).tolist()})}[item.metric]
        if authors:
            return _row(item, LIKE, ours, "the authors' labels")
        # a count of the release's own label set (clevr_release_order): the same data for a
        # count, whatever the images; the images are named in the row
        what = "CLEVR-like scenes ray-cast here" if item.data == "CLEVR" else "CLEVR-2D drawn here"
        return _row(item, LIKE, ours, f"the release's label pairs ({what})")
    if item.data == "PUG:SPARE":
        pug = [s for s in b.sets if s.dataset == "PUG:SPARE"]
        if not pug:
            return _row(item, NOT_RUN, note="the authors' PUG:SPARE images are not here",
                        command=_book("§4.1", "-p pug_dir /path/to/folder"))
        s = pug[0]
        ours = {"scenes": len(s.Z), "species": s.values_per_concept[0], "colours": s.values_per_concept[1]}[item.metric]
        return _row(item, LIKE, ours, "the authors' images")
    if item.data.startswith("captions"):
        a, n = (10, 10) if "C.3" in item.data else (20, 20)
        ds = make_text_space(a, n)
        two = int((ds.n_objects_per_scene == 2).sum())
        ours = {"two-object scenes": two, "single-object scenes": len(ds) - two, "adjectives": a, "nouns": n}[item.metric]
        return _row(item, SUBSTITUTE, ours, f"make_text_space({a}, {n})", "our adjective and noun lists")
    # D.4: the patterned-object substitute
    t, p = int(b.additional_params["natural_types"]), int(b.additional_params["natural_patterns"])
    ours = {"images": (t * p) ** 2, "object types": t, "patterns": p}[item.metric]
    return _row(item, SUBSTITUTE, ours, "patterned objects ray-cast here (bindcore.data.patterned)",
                "a substitute of the generated natural images")


def _section4(b: Build, item: PaperItem) -> dict[str, Any]:
    dec, att, edi = b.decomposition, b.attribution, b.editing
    probe_diff = [] if _probes_as_release(b.geometry) else [_probe_difference(b.geometry)]
    if item.section == "§4.1 reconstruction":
        est, metric = {"R² objects (avg)": ("avg", "r2_eval"), "R² objects (avg + pos)": ("pos-avg", "r2_eval"),
                       "retrieval": ("avg", "retrieval"), "probing": ("avg", "probe_object")}[item.metric]
        return _set_row(b, item, lambda i: _value(dec[i], metric, kind="objects", estimator=est),
                        probe_diff if item.metric == "probing" else [])
    closed = [f"components by closed-form least squares (release: AdamW, {RELEASE['component steps']:,} steps, which "
              "stops short of the least-squares solution)"]
    if item.section == "§4.1 variance":
        if "minus" in item.metric:
            return _set_row(b, item, lambda i: _value(dec[i], "r2_eval", kind="objects", estimator="pos-lstsq")
                            - _value(dec[i], "r2_eval", kind="concepts", estimator="pos-lstsq"), closed)
        return _set_row(b, item, lambda i: max(_value(dec[i], "r2_eval", kind="concepts", estimator=e)
                                               for e in ("avg", "pos-avg", "lstsq", "pos-lstsq")), closed)
    if item.section == "§4.1 editing":
        bank = "obj-avg" if "averaged" in item.metric else "single"
        data = "CLEVR"
        it = PaperItem(item.section, data, item.model, item.metric, item.value, item.source, item.kind)
        row = _set_row(b, it, lambda i: _value(edi[i], "retrieval_exact", bank=bank, k=1.0, case=PAPER_EDITING_CASE))
        row["data"] = item.data
        if row["group"] != NOT_RUN:
            row["our data | encoder"] += f" ({PAPER_EDITING_CASE} edits, exact-order hit as the release)"
        return row
    if item.section.startswith("§4.2"):
        variant, metric = item.metric.split(": ")
        col = {"concepts": "concept", "objects": "object"}[metric]
        diff = closed + probe_diff + (["controls: the mean over derangements (release: one permutation)"]
                                      if variant.startswith("permuted") else [])

        def ours(i: int) -> float:
            a = att[i].assign(name=att[i]["variant"].str.replace(" (control)", "", regex=False))
            return _value(a, col, name=variant)

        return _set_row(b, item, ours, diff)
    # D.2 editing
    kind, bank = item.metric.split(" (")
    bank = bank.rstrip(")")
    col = "retrieval_exact" if kind == "retrieval" else "probe_concepts"
    row = _set_row(b, item, lambda i: _value(edi[i], col, bank=bank, k=1.0, case=PAPER_EDITING_CASE),
                   probe_diff if kind == "probing" else [])
    if row["group"] != NOT_RUN:
        row["our data | encoder"] += (f" ({PAPER_EDITING_CASE} edits" + (", exact-order hit as the release)"
                                                                          if kind == "retrieval" else
                                                                          ", the joint concept probes as the release)"))
    return row


def _pretrained_rows(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["weights"] == "pretrained"] if len(table) and "weights" in table else table.iloc[:0]


def _appendix_d(b: Build, item: PaperItem) -> dict[str, Any]:
    no_image = "no pretrained image encoder here (CLIP's weights need the Hugging Face Hub; the random-init control " \
               "is no substitute)"
    cmd = f"run {_book(item.section)} where the weights are (e.g. Colab)"
    if item.section == "D.3":
        pre = _pretrained_rows(b.three)
        if not len(pre):
            return _row(item, NOT_RUN, note=no_image, command=cmd)
        occ = "occluded" in item.data
        r = pre[pre["occlusion"] == occ].iloc[0] if (pre["occlusion"] == occ).any() else None
        label = f"{r['dataset']} | {r['encoder']}" if r is not None else ""
        diff = "CLEVR-like three-object scenes ray-cast here (the authors': Blender)"
        if item.value is None:
            ours = "; ".join(f"{'occluded' if x['occlusion'] else 'no occlusion'}: objects "
                             f"{x['R² held-out objects (avg)']:.2f} vs concepts {x['R² held-out concepts (avg)']:.2f}"
                             for _, x in pre.iterrows())
            return _row(item, SUBSTITUTE, ours, label, diff + "; held-out R² (§4.1: in-sample)")
        col = "probing objects" if item.metric == "probing" else "retrieval objects (all scenes)"
        return _row(item, SUBSTITUTE, r[col] if r is not None else np.nan, label,
                    diff + ("; the object probe" if item.metric == "probing" else ""))
    if item.section == "D.4":
        pre = _pretrained_rows(b.natural)
        if not len(pre):
            return _row(item, NOT_RUN, note=no_image, command=cmd)
        r = pre.iloc[0]
        ours = (f"retrieval {r['retrieval']:.2f} (chance {r['retrieval chance']:.3f}), edits {r['edit retrieval']:.2f} "
                f"(chance {r['edit chance']:.3f})")
        return _row(item, SUBSTITUTE, ours, f"{r['dataset']} | {r['encoder']}", "patterned objects ray-cast here")
    # D.5
    pre = _pretrained_rows(b.grid)
    image = pre[~pre["dataset"].str.startswith("captions")] if len(pre) else pre
    if not len(image):
        return _row(item, NOT_RUN, note=no_image, command=cmd)
    col = "grid-neighbour recall (full d)"
    ours = "; ".join(f"{r['dataset']} | {r['encoder']}: {r[col]:.2f} (chance {r['chance']:.2f})"
                     for _, r in pre.iterrows())
    return _row(item, SUBSTITUTE, ours, "the §4 sets", "grid-neighbour recall for the MDS picture")


def _section5(b: Build, item: PaperItem) -> dict[str, Any]:
    t, p = b.pretrained, b.pretrained_params
    if item.kind == "setting" and item.section.startswith("§5.1"):
        ours = {"steps": p["steps"], "batch size": p["batch_size"], "learning rates": (min(p["lrs"]), max(p["lrs"])),
                "MLP widths": (min(p["widths"]), max(p["widths"]))}[item.metric]
        paper = {"steps": PAPER_APPROXIMATOR_PROTOCOL["steps"], "batch size": PAPER_APPROXIMATOR_PROTOCOL["batch_size"],
                 "learning rates": (min(PAPER_APPROXIMATOR_PROTOCOL["lrs"]), max(PAPER_APPROXIMATOR_PROTOCOL["lrs"])),
                 "MLP widths": PAPER_APPROXIMATOR_WIDTHS}[item.metric]
        same = ours == paper
        shown = "–".join(f"{v:g}" for v in ours) if isinstance(ours, tuple) else ("full batch" if ours is None
                                                                                  else f"{ours:,}")
        return _row(item, LIKE if same else SUBSTITUTE, shown, f"profile '{b.profile}'",
                    "" if same else f"the '{b.profile}' profile's protocol (the 'paper' profile has the paper's)")
    if item.section.startswith("§5.1"):
        names = list(dict.fromkeys(t["encoder"])) if len(t) else []
        pre = [n for n in names if "random init" not in n]
        if not pre:
            return _row(item, NOT_RUN, note="no pretrained text encoder here", command=_book("§5.1"))
        sub = t[t["encoder"] == pre[0]]
        diff = [] if pre[0].startswith("CLIP") else [f"{pre[0]} for CLIP's text tower"]
        diff += [f"our adjective and noun lists, {p['text_space'][0]} x {p['text_space'][1]}"]
        if p["steps"] != PAPER_APPROXIMATOR_PROTOCOL["steps"] or max(p["widths"]) != PAPER_APPROXIMATOR_WIDTHS[1]:
            diff.append(f"the '{b.profile}' protocol: {p['steps']:,} steps, widths up to {max(p['widths']):,}")
        mlp = sub[sub["family"] == "MLP"]
        wide = mlp[mlp["width"] == mlp["width"].max()]
        if "concept" in item.metric:
            above = wide[wide["fraction"] > PAPER_PRETRAINED_CONCEPTS["above fraction"]]
            ours = above["heldout_concept"].min() if len(above) else np.nan
        elif "object" in item.metric:
            top = wide[wide["fraction"] == wide["fraction"].max()]
            ours = top["heldout_object"].iloc[0] if len(top) else np.nan
        else:
            top = sub[sub["fraction"] == sub["fraction"].max()]
            ours = "; ".join(f"{f}: objects {o:.2f}, concepts {c:.2f}" for f, o, c in
                             top.groupby("family")[["heldout_object", "heldout_concept"]].max().itertuples())
            diff.append("DINOv2 only where §5.1 runs on the authors' images with its weights")
        return _row(item, SUBSTITUTE, ours, pre[0], "; ".join(diff))
    if item.section == "§5.2":
        sizes = sorted({v ** c for c, v in b.sweep_params["sizes"]})
        covs = list(b.sweep_params["coverages"])
        recipe = f"the '{b.profile}' training recipe (the paper's Table 9 is not available)"
        if item.kind == "setting":
            same = (min(covs), max(covs)) == PAPER_COVERAGES
            return _row(item, LIKE if same else SUBSTITUTE, f"{min(covs):g}–{max(covs):g}", f"profile '{b.profile}'",
                        "" if same else f"coverages {covs}")
        summary, where = _generalization_summary(b)
        scale_recipe = "the scale training recipe (the paper's Table 9 is not available)"
        if item.data.startswith("|O|"):
            need = int(item.data.split()[-1].replace(",", ""))
            if summary is not None:
                picked = summary[summary["objects"] >= need] if ">=" in item.data else \
                    summary[summary["objects"] == need]
                if len(picked):
                    ours = "; ".join(
                        f"{fmt_objects(r['objects'])}: swap pairs >= {BINDS_AT:g} from coverage {r['transition coverage']:g}"
                        if np.isfinite(r["transition coverage"]) else
                        f"{fmt_objects(r['objects'])}: no transition up to coverage {r['largest coverage']:g}"
                        for _, r in picked.iterrows())
                    return _row(item, SUBSTITUTE, ours, where, scale_recipe if where.startswith("scale") else recipe)
            have = [s for s in sizes if s >= need] if ">=" in item.data else [s for s in sizes if s == need]
            if not have:
                paper = chapter_parameters("binding_generalization", "paper")
                c, v = next(((c, v) for v in sorted({v for _, v in paper["sizes"]}, reverse=True)
                             for c in range(1, 8) if v ** c == need), max(paper["sizes"], key=lambda cv: cv[1] ** cv[0]))
                return _row(item, NOT_RUN, note=f"no object space of {fmt_objects(need)} in this build (sizes {sizes})",
                            command=f"`bindcore sweep --profile paper --concepts {c} --values {v} --coverages "
                                    + " ".join(f"{x:g}" for x in paper["coverages"]) + "` (GPU hours)")
            return _row(item, SUBSTITUTE, "in the §5.2 section below", ", ".join(fmt_objects(s) for s in have), recipe)
        if summary is not None and "high coverage" in item.metric:
            ours = "; ".join(f"{fmt_objects(r['objects'])}: strict {r['objects at chosen coverage']:.2f} (bag ceiling "
                             f"{r['bag ceiling at chosen coverage']:.2f}), swap pairs "
                             f"{r['swap pairs at chosen coverage']:.2f} at coverage {r['chosen coverage']:g}"
                             for _, r in summary.iterrows())
            return _row(item, SUBSTITUTE, ours, where, scale_recipe if where.startswith("scale") else recipe)
        return _row(item, SUBSTITUTE, "in the §5.2 section below", f"|O| in {sizes}", recipe)
    key = {"§5.3": "§5.3", "§5.4": "§5.4", "§5.4 figure 9": "figure 9"}[item.section]
    frame = b.claims.get(key)
    if frame is None or not len(frame):
        return _row(item, NOT_RUN, note="no claim frame in this build", command=_book(item.section))
    counts = frame["status"].value_counts().to_dict()
    ours = ", ".join(f"{v} {k}" for k, v in counts.items())
    return _row(item, SUBSTITUTE, ours, "the controlled models of §5.2", f"the '{b.profile}' training recipe")


def _generalization_summary(b: Build) -> tuple[pd.DataFrame | None, str]:
    """The §5.2 summary the claims were judged on (scale records first) and its source."""
    for key, where in (("§5.2 (scale)", "scale recipe (published records)"), ("§5.2", f"profile '{b.profile}'")):
        frame = b.claims.get(key)
        records = frame.attrs.get("summary") if frame is not None else None
        if records:
            return pd.DataFrame(records).sort_values("objects"), where
    return None, ""


def comparison_table(b: Build) -> pd.DataFrame:
    """One row (:data:`COLUMNS`) per item of :func:`~bindcore.paper.paper_items`."""
    rows = []
    for item in paper_items():
        if item.kind == "dataset":
            rows.append(_datasets(b, item))
        elif item.section.startswith(("§4", "D.2")):
            rows.append(_section4(b, item))
        elif item.section.startswith(("D.3", "D.4", "D.5")):
            rows.append(_appendix_d(b, item))
        elif item.section.startswith("App. E"):
            pixels = [c for c in b.chapters if c.startswith("e_")]
            rows.append(_row(item, SUBSTITUTE, f"see the chapter {pixels[0]}", pixels[0], "its own comparison")
                        if pixels else _row(item, NOT_RUN, note="no chapter of this book trains encoders on pixels "
                                            "yet", command="(appendix E is not implemented here)"))
        else:
            rows.append(_section5(b, item))
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["ours"] = [f"{v:.2f}" if isinstance(v, (float, np.floating)) and np.isfinite(v) else
                  "–" if isinstance(v, (float, np.floating)) else
                  f"{v:,}" if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else v for v in df["ours"]]
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
