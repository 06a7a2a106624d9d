"""§4.1, D.2 and §4.2 / D.1 claims about embedding sets of pretrained encoders, each judged
against a null of the same shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bindcore.analysis.embedding_sets import frame_row
from bindcore.paper import (
    CLIP,
    NOTES,
    PAPER_ATTRIBUTION,
    PAPER_CONCEPT_R2,
    PAPER_EDIT_RETRIEVAL_SUMMARY,
    PAPER_OBJECTS_OVER_CONCEPTS,
    PAPER_RECONSTRUCTION,
    SUMMARY,
)

from .core import (
    CONTROL,
    CONTROLLED,
    NOT_SHOWN,
    UNTESTABLE,
    _frame,
    _margin,
    _ok,
    _row,
    gaussian_null_why,
    margin_text,
    set_evidence,
    verdict,
)


def _no_verdict_why(s: Any, evidence: str) -> str:
    if evidence == CONTROLLED:
        return (f"{s.encoder} is a controlled model of §5.2, not a pretrained encoder: the claim is CLIP's "
                "(shown for reference, no verdict)")
    return (f"{s.encoder} has random weights: a control, not the trained encoder the claim is about "
            "(pretrained weights need the Hugging Face Hub, e.g. Colab)")


def geometry_claims(sets: Sequence[Any], frames: Sequence[pd.DataFrame], edit_frames: Sequence[pd.DataFrame],
                    profile: str, retrieval_level: float = 0.9, k: float = 1.0, case: str = "different",
                    null_frames: Sequence[pd.DataFrame | None] | None = None,
                    null_edit_frames: Sequence[pd.DataFrame | None] | None = None,
                    r2_margin: float = 0.02, retrieval_margin: float = 0.1) -> pd.DataFrame:
    """§4.1 and D.2 per embedding set, each against the set's Gaussian null (none: untestable):
    the R² gap objects - concepts beats the null's by ``r2_margin`` (noise alone gives a gap
    in-sample); reconstruction and edit (obj-avg, ``k``, ``case``) retrieval reach
    ``retrieval_level`` and ``retrieval_margin`` above the null's."""
    rows = []
    gap_paper = (f"bag of concepts up to {PAPER_CONCEPT_R2['text']:.2f} (text) / {PAPER_CONCEPT_R2['CLEVR']:.2f} "
                 f"(image), objects about {PAPER_OBJECTS_OVER_CONCEPTS:.2f} more ({SUMMARY})")
    text, clevr = PAPER_RECONSTRUCTION[("text", "CLIP ViT-B/32")], PAPER_RECONSTRUCTION[("CLEVR", "CLIP ViT-B/32")]
    ret_paper = f"{CLIP}: {text[2]:.2f} captions, {clevr[2]:.2f} CLEVR ({NOTES})"
    edit_paper = (f"{CLIP} on CLEVR: {PAPER_EDIT_RETRIEVAL_SUMMARY['scene-averaged']:.2f} with averaged components "
                  f"({SUMMARY})")
    nulls = list(null_frames) if null_frames is not None else [None] * len(sets)
    null_edits = list(null_edit_frames) if null_edit_frames is not None else [None] * len(sets)

    def edits_of(ed: pd.DataFrame | None) -> pd.DataFrame | None:
        """The edits the claim reads, retrieval in ``hit`` (exact order where the frame has it)."""
        if ed is None or not len(ed):
            return None
        e = ed[(ed["bank"] == "obj-avg") & np.isclose(ed["k"], k) & (ed["case"] == case)]
        e = e.assign(hit=e["retrieval_exact"] if "retrieval_exact" in e else e["retrieval"])
        return e if len(e) and _ok(e["hit"].iloc[0]) else None

    for s, df, ed, nf, ne in zip(sets, frames, edit_frames, nulls, null_edits):
        subject = f"{s.dataset} | {s.encoder}"
        ev = set_evidence(s)

        def add(claim: str, paper: str, ours: str, status: str, why: str, null: str = "–", margin: str = "–",
                ev: str = ev, subject: str = subject) -> None:
            rows.append(_row(claim, subject, paper, ours, status, why, profile, evidence=ev, null=null,
                             margin=margin))

        if ev in (CONTROLLED, CONTROL):
            for claim, paper in (("objects explain more than concepts", gap_paper),
                                 ("object reconstructions retrieve their scene", ret_paper),
                                 ("object components edit scenes", edit_paper)):
                add(claim, paper, "–", UNTESTABLE, _no_verdict_why(s, ev))
            continue
        c, o = frame_row(df, "concepts", "avg", required=False), frame_row(df, "objects", "avg", required=False)
        nc, no = ((frame_row(nf, "concepts", "avg", required=False), frame_row(nf, "objects", "avg", required=False))
                  if nf is not None and len(nf) else (None, None))
        claim = "objects explain more than concepts"
        if c is None or o is None or not _ok(c["r2_eval"], o["r2_eval"]):
            add(claim, gap_paper, "–", UNTESTABLE, "no averaging R² of both bags")
        else:
            gap = o["r2_eval"] - c["r2_eval"]
            ours = f"R² objects {o['r2_eval']:.2f} - concepts {c['r2_eval']:.2f} = {gap:+.2f}"
            if nc is None or no is None or not _ok(nc["r2_eval"], no["r2_eval"]):
                add(claim, gap_paper, ours, UNTESTABLE, f"no null computed ({gaussian_null_why()})")
            else:
                ngap = no["r2_eval"] - nc["r2_eval"]
                add(claim, gap_paper, ours, verdict(gap - ngap >= r2_margin),
                    f"shown when the gap exceeds the null's ({gaussian_null_why()}) by >= {r2_margin:g}",
                    null=f"{no['r2_eval']:.2f} - {nc['r2_eval']:.2f} = {ngap:+.2f}",
                    margin=_margin(gap, ngap, r2_margin))
        claim = "object reconstructions retrieve their scene"
        if o is None or not _ok(o.get("retrieval")):
            add(claim, ret_paper, "–", UNTESTABLE, "no retrieval of the object reconstructions")
        else:
            r = float(o["retrieval"])
            ours = f"{r:.2f} (chance {o['retrieval_chance']:.3f})"
            if no is None or not _ok(no.get("retrieval")):
                add(claim, ret_paper, ours, UNTESTABLE, f"no null computed ({gaussian_null_why()})")
            else:
                nr = float(no["retrieval"])
                add(claim, ret_paper, ours, verdict(r >= retrieval_level and r - nr >= retrieval_margin),
                    f"shown at >= {retrieval_level:g} and >= {retrieval_margin:g} above the null's "
                    f"({gaussian_null_why()})", null=f"{nr:.2f}", margin=_margin(r, nr, retrieval_margin))
        claim = "object components edit scenes"
        e, en = edits_of(ed), edits_of(ne)
        if e is None:
            add(claim, edit_paper, "–", UNTESTABLE, f"no obj-avg edits of the {case!r} case at k = {k:g}")
        else:
            r = float(e["hit"].iloc[0])
            order = "exact order" if "retrieval_exact" in e else "any order"
            ours = f"{r:.2f} ({case} concepts, obj-avg, k = {k:g}, {int(e['n'].iloc[0])} edits, {order})"
            if en is None:
                add(claim, edit_paper, ours, UNTESTABLE, f"no null computed ({gaussian_null_why()})")
            else:
                nr = float(en["hit"].iloc[0])
                add(claim, edit_paper, ours, verdict(r >= retrieval_level and r - nr >= retrieval_margin),
                    f"shown at >= {retrieval_level:g} and >= {retrieval_margin:g} above the null's "
                    f"({gaussian_null_why()})", null=f"{nr:.2f}", margin=_margin(r, nr, retrieval_margin))
    return _frame(rows)


def attribution_claims(sets: Sequence[Any], frames: Sequence[pd.DataFrame], profile: str, chance_margin: float = 0.2,
                       keep: float = 0.8, control_drop: float = 0.1, min_original: float = 0.5,
                       margin: float = 0.2) -> pd.DataFrame:
    """§4.2 / D.1 per embedding set, each removal against its permuted-ID control: decoding falls
    below ``chance_margin`` and ``margin`` below the control (objects keep ``keep`` when concepts
    go), controls lose at most ``control_drop``. Originals under ``min_original``: not shown."""
    paper = PAPER_ATTRIBUTION["text"]
    rows = []
    for s, df in zip(sets, frames):
        subject = f"{s.dataset} | {s.encoder}"
        ev = set_evidence(s)
        v = {r["variant"].replace(" (control)", ""): r for _, r in df.iterrows()}
        specs = [
            ("removing concept components removes concepts, keeps objects",
             f"text: concepts {paper['original'][0]:.2f} -> {paper['minus concepts'][0]:.2f}, objects "
             f"{paper['minus concepts'][1]:.2f}", ("original", "minus concepts", "permuted concepts")),
            ("removing object components removes both",
             f"text: concepts {paper['minus objects'][0]:.2f}, objects {paper['minus objects'][1]:.2f}",
             ("original", "minus objects", "permuted objects")),
            ("permuted controls barely change decoding",
             f"text: concepts {paper['permuted concepts'][0]:.2f}, objects {paper['permuted objects'][1]:.2f}; "
             f"image: {PAPER_ATTRIBUTION['image']['permuted concepts'][0]:.2f}, "
             f"{PAPER_ATTRIBUTION['image']['permuted objects'][1]:.2f}",
             ("original", "permuted concepts", "permuted objects", "minus concepts", "minus objects")),
        ]
        for claim, stated, needs in specs:
            def add(ours: str, status: str, why: str, null: str = "–", mg: str = "–",
                    claim: str = claim, stated: str = stated, subject: str = subject, ev: str = ev) -> None:
                rows.append(_row(claim, subject, stated, ours, status, why, profile, evidence=ev, null=null,
                                 margin=mg))

            if ev in (CONTROLLED, CONTROL):
                add("–", UNTESTABLE, _no_verdict_why(s, ev))
                continue
            if not all(n in v and _ok(v[n]["concept"], v[n]["object"]) for n in needs):
                add("–", UNTESTABLE, f"needs the variants {list(needs)}")
                continue
            o = v["original"]
            if min(o["concept"], o["object"]) < min_original:
                add(f"original: concepts {o['concept']:.2f}, objects {o['object']:.2f}", NOT_SHOWN,
                    f"the original embeddings decode less than {min_original:g}: nothing to remove")
                continue
            if needs[1] == "minus concepts":
                m, pc = v["minus concepts"], v["permuted concepts"]
                ours = f"concepts {o['concept']:.2f} -> {m['concept']:.2f}, objects {o['object']:.2f} -> {m['object']:.2f}"
                holds = (m["concept"] < chance_margin and pc["concept"] - m["concept"] >= margin
                         and m["object"] >= keep * o["object"])
                why = (f"shown when concepts fall below {chance_margin:g} and >= {margin:g} below the permuted-"
                       f"concepts control, and objects keep {keep:g} of theirs")
                add(ours, verdict(bool(holds)), why, f"permuted concepts: concepts {pc['concept']:.2f}",
                    _margin(pc["concept"], m["concept"], margin))
            elif needs[1] == "minus objects":
                m, po = v["minus objects"], v["permuted objects"]
                ours = f"concepts {m['concept']:.2f}, objects {m['object']:.2f}"
                gap = min(po["concept"] - m["concept"], po["object"] - m["object"])
                holds = m["concept"] < chance_margin and m["object"] < chance_margin and gap >= margin
                why = (f"shown when both fall below {chance_margin:g} and each >= {margin:g} below the permuted-"
                       "objects control")
                add(ours, verdict(bool(holds)), why,
                    f"permuted objects: concepts {po['concept']:.2f}, objects {po['object']:.2f}",
                    margin_text(gap, margin))
            else:
                pc, po = v["permuted concepts"], v["permuted objects"]
                dc, do = o["concept"] - pc["concept"], o["object"] - po["object"]
                rc, ro = o["concept"] - v["minus concepts"]["concept"], o["object"] - v["minus objects"]["object"]
                ours = f"concepts lose {dc:+.2f}, objects lose {do:+.2f}"
                gap = min(rc - dc, ro - do)
                holds = dc <= control_drop and do <= control_drop and gap >= margin
                why = (f"shown when each control loses at most {control_drop:g} and the real removal "
                       f">= {margin:g} more")
                add(ours, verdict(bool(holds)), why, f"real removal: concepts lose {rc:+.2f}, objects {ro:+.2f}",
                    margin_text(gap, margin))
    return _frame(rows)
