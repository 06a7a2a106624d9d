"""The paper's claims as functions that can fail: each takes a chapter's results and
answers, per claim and per encoder or model, :data:`SHOWN`, :data:`NOT_SHOWN` or
:data:`UNTESTABLE` ("cannot be tested at this profile": the results lack what the claim
needs, e.g. a pretrained encoder, a second object-space size, a data fraction above
0.3), with the paper's statement (:mod:`bindcore.paper`), ours in words, and ``why``:
the rule the status follows, with its thresholds (parameters of each function).

Every claim function returns a frame with the columns :data:`COLUMNS`.
``tests/test_claims.py`` feeds each function planted tables on which its claims hold,
fail and cannot be tested.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bindcore.analysis.approximators.labels import FAMILY_LABELS
from bindcore.analysis.embedding_sets import frame_row
from bindcore.data.pixels import LEVELS
from bindcore.paper import (
    NOTES,
    PAPER_APPROXIMATOR_WIDTHS,
    PAPER_ATTRIBUTION,
    PAPER_CLAIMS_5_2,
    PAPER_CLAIMS_APPENDIX_D,
    PAPER_CLAIMS_APPENDIX_E,
    PAPER_CONCEPT_R2,
    PAPER_D7,
    PAPER_EDIT_RETRIEVAL_SUMMARY,
    PAPER_FIGURE9,
    PAPER_FORM,
    PAPER_OBJECTS_OVER_CONCEPTS,
    PAPER_PRETRAINED_CONCEPTS,
    PAPER_PRETRAINED_OBJECTS,
    PAPER_RECONSTRUCTION,
    PAPER_WIDTH,
    SUMMARY,
)

SHOWN = "shown"
NOT_SHOWN = "not shown"
UNTESTABLE = "cannot be tested at this profile"
STATUSES = (SHOWN, NOT_SHOWN, UNTESTABLE)

# what a row's subject is, beside the encoder or model the paper's claim is about
NATIVE = "the paper's kind"  # pretrained CLIP / DINOv2 for their claims; the controlled models for §5.2-§5.4, E
SUBSTITUTE = "substitute"  # a pretrained encoder of another kind (MiniLM for CLIP's text tower)
CONTROLLED = "controlled model"  # a controlled dual encoder of §5.2 in a claim about CLIP: no verdict
CONTROL = "random-init control"  # random weights: the paper's control, no verdict
EVIDENCE = (NATIVE, SUBSTITUTE, CONTROLLED, CONTROL)

COLUMNS = ["claim", "subject", "evidence", "paper", "ours", "null", "margin", "status", "why", "profile"]


def _num(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def _ok(*values: Any) -> bool:
    """Every value is a finite number."""
    return all(math.isfinite(_num(v)) for v in values)


def verdict(holds: bool) -> str:
    return SHOWN if holds else NOT_SHOWN


def _row(claim: str, subject: str, paper: str, ours: str, status: str, why: str, profile: str, *,
         evidence: str = NATIVE, null: str = "–", margin: str = "–") -> dict[str, Any]:
    """One claim row. ``null``: the same statistic on a null of the same shape (or the
    bag-of-concepts ceiling of the same scenes); ``margin``: ours minus the null, beside
    the margin the rule asks for."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    if evidence not in EVIDENCE:
        raise ValueError(f"evidence must be one of {EVIDENCE}, got {evidence!r}")
    return dict(zip(COLUMNS, (claim, subject, evidence, paper, ours, null, margin, status, why, profile)))


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def _margin(ours: float, null: float, need: float) -> str:
    return f"{ours - null:+.2f} (needs >= {need:g})"


def status_counts(*frames: pd.DataFrame, evidence: str | None = NATIVE) -> dict[str, int]:
    """How many claims of ``frames`` (claim frames) have each status, over the rows of
    ``evidence`` (default: the paper's kind; None: every row). Substitute, controlled and
    control rows are counted apart (:func:`evidence_counts`)."""
    out = dict.fromkeys(STATUSES, 0)
    for f in frames:
        rows = f if evidence is None or "evidence" not in f else f[f["evidence"] == evidence]
        for s in rows["status"]:
            out[s] += 1
    return out


def evidence_counts(*frames: pd.DataFrame) -> dict[str, int]:
    """How many claim rows of ``frames`` stand on each kind of evidence (:data:`EVIDENCE`)."""
    out = dict.fromkeys(EVIDENCE, 0)
    for f in frames:
        for e in f["evidence"]:
            out[e] += 1
    return out


# ---------------------------------------------------------------------------------
# §4.1 and D.2: additive decomposition and editing
# ---------------------------------------------------------------------------------
def set_evidence(s: Any) -> str:
    """What an embedding set is beside a claim about pretrained CLIP or DINOv2
    (:data:`EVIDENCE`): that encoder with its weights (:data:`NATIVE`), another
    pretrained encoder standing in (:data:`SUBSTITUTE`), a controlled dual encoder
    (:data:`CONTROLLED`, which ``s.pretrained`` counts as trained) or random weights
    (:data:`CONTROL`). Only the first two get verdicts."""
    if getattr(s, "source", "") == "controlled":
        return CONTROLLED
    if not s.pretrained:
        return CONTROL
    return NATIVE if str(s.encoder).startswith(("CLIP", "DINOv2")) else SUBSTITUTE


def _no_verdict_why(s: Any, evidence: str) -> str:
    if evidence == CONTROLLED:
        return (f"{s.encoder} is a controlled model of §5.2, not a pretrained encoder: the claim is CLIP's "
                "(shown for reference, no verdict)")
    return (f"{s.encoder} has random weights: a control, not the trained encoder the claim is about "
            "(pretrained weights need the Hugging Face Hub, e.g. Colab)")


def gaussian_null_why() -> str:
    return "Gaussian embeddings of the same size and spectrum, same labels"


def geometry_claims(sets: Sequence[Any], frames: Sequence[pd.DataFrame], edit_frames: Sequence[pd.DataFrame],
                    profile: str, retrieval_level: float = 0.9, k: float = 1.0, case: str = "different",
                    null_frames: Sequence[pd.DataFrame | None] | None = None,
                    null_edit_frames: Sequence[pd.DataFrame | None] | None = None,
                    r2_margin: float = 0.02, retrieval_margin: float = 0.1) -> pd.DataFrame:
    """§4.1 and D.2, per embedding set of a pretrained encoder (controlled models and
    random-init controls: :data:`UNTESTABLE`; another pretrained encoder than CLIP or
    DINOv2: tagged :data:`SUBSTITUTE`). Each statistic is also computed on the set's null
    (``null_frames`` / ``null_edit_frames``: the same analyses of
    :func:`~bindcore.analysis.embedding_sets.gaussian_null`, Gaussian embeddings of the
    same size and spectrum with the same labels); without a null: :data:`UNTESTABLE`.

    * objects explain more than concepts: the R² gap (bag of objects minus bag of
      concepts, averaging estimators, all scenes) exceeds the null's gap by ``r2_margin``
      (in-sample, noise alone gives the bag of objects, with more components, a gap);
    * object reconstructions retrieve their scene: top-1 retrieval >= ``retrieval_level``
      and at least ``retrieval_margin`` above the null's;
    * editing works: retrieval of the counterfactual (obj-avg bank, strength ``k``,
      ``case`` edits: by default the release's "different"-concept scenes) >=
      ``retrieval_level`` and at least ``retrieval_margin`` above the null's.

    ``frames``: :func:`~bindcore.analysis.geometry_sets.decomposition`; ``edit_frames``:
    :func:`~bindcore.analysis.geometry_sets.editing`."""
    rows = []
    gap_paper = (f"bag of concepts up to {PAPER_CONCEPT_R2['text']:.2f} (text) / {PAPER_CONCEPT_R2['CLEVR']:.2f} "
                 f"(image), objects about {PAPER_OBJECTS_OVER_CONCEPTS:.2f} more ({SUMMARY})")
    text, clevr = PAPER_RECONSTRUCTION[("text", "CLIP ViT-B/32")], PAPER_RECONSTRUCTION[("CLEVR", "CLIP ViT-B/32")]
    ret_paper = f"CLIP: {text[2]:.2f} captions, {clevr[2]:.2f} CLEVR ({NOTES})"
    edit_paper = (f"CLIP on CLEVR: {PAPER_EDIT_RETRIEVAL_SUMMARY['scene-averaged']:.2f} with averaged components "
                  f"({SUMMARY})")
    nulls = list(null_frames) if null_frames is not None else [None] * len(sets)
    null_edits = list(null_edit_frames) if null_edit_frames is not None else [None] * len(sets)

    def edits_of(ed: pd.DataFrame | None) -> pd.DataFrame | None:
        """The edits the claim reads, their retrieval in column ``hit``: the release's exact
        order (``retrieval_exact``, as the report's comparison) where the frame has it."""
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


# ---------------------------------------------------------------------------------
# §4.2 / D.1: component attribution
# ---------------------------------------------------------------------------------
def attribution_claims(sets: Sequence[Any], frames: Sequence[pd.DataFrame], profile: str, chance_margin: float = 0.2,
                       keep: float = 0.8, control_drop: float = 0.1, min_original: float = 0.5,
                       margin: float = 0.2) -> pd.DataFrame:
    """§4.2 / D.1, per embedding set of a pretrained encoder (controlled models and
    controls: :data:`UNTESTABLE`; encoders other than CLIP / DINOv2: :data:`SUBSTITUTE`),
    from :func:`~bindcore.analysis.geometry.component_attribution` frames (components
    cross-fitted: a scene's components are estimated on other scenes). The null of each
    removal is its permuted-ID control: the same number of vectors subtracted, attached
    to the wrong scenes.

    * removing concept components removes concepts but keeps objects: concept decoding
      falls below ``chance_margin`` and at least ``margin`` below the permuted-concepts
      control's, while object decoding keeps at least ``keep`` of its original value;
    * removing object components removes both: concept and object decoding below
      ``chance_margin`` and each at least ``margin`` below the permuted-objects control's;
    * permuted controls barely change decoding: concepts (permuted concepts) and objects
      (permuted objects) lose at most ``control_drop`` (the mean over derangements), and
      the real removal takes at least ``margin`` more than its control.

    Each needs the original embeddings to decode concepts and objects at
    ``min_original`` at least: what is not there cannot be removed (:data:`NOT_SHOWN`)."""
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
                    f"{gap:+.2f} (needs >= {margin:g})")
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
                    f"{gap:+.2f} (needs >= {margin:g})")
    return _frame(rows)


# ---------------------------------------------------------------------------------
# §5.1: binding functions of pretrained encoders
# ---------------------------------------------------------------------------------
def _widest_mlp(sub: pd.DataFrame) -> pd.DataFrame:
    mlp = sub[sub["family"] == FAMILY_LABELS["mlp"]]
    return mlp[mlp["width"] == mlp["width"].max()] if len(mlp) else mlp


def _encoder_evidence(name: str) -> str:
    if "random init" in name:
        return CONTROL
    return NATIVE if name.startswith(("CLIP", "DINOv2")) else SUBSTITUTE


def pretrained_claims(table: Any, profile: str, concept_level: float = PAPER_PRETRAINED_CONCEPTS["level"],
                      above: float = PAPER_PRETRAINED_CONCEPTS["above fraction"], gap: float = 0.3,
                      null: Any = None, margin: float = 0.2) -> pd.DataFrame:
    """§5.1 / D.6 / D.7, per encoder of an approximator table
    (:func:`~bindcore.experiments.complexity.pretrained_sweeps`):

    * concepts generalize: the widest MLP's held-out concept recognition is at least
      ``concept_level`` at every data fraction above ``above``, and at least ``margin``
      above the null's (the same sweep on the null: ``null``, a table of the same shape,
      e.g. shuffled labels; without it the random-init control of the same table, the
      paper's own control; with neither: :data:`UNTESTABLE`);
    * objects do not, for any family: concepts generalize (above) and, at the largest
      fraction, the best family's held-out object recognition stays at least ``gap``
      below the widest MLP's held-out concept recognition (the paper: about 0.20 against
      >= 0.80); on a null, concepts do not generalize either and nothing is shown.

    Encoders with random weights (named "... (random init)"): :data:`UNTESTABLE`;
    pretrained encoders other than CLIP / DINOv2: tagged :data:`SUBSTITUTE`."""
    rows = []
    paper_c = f">= {concept_level:.2f} above fraction {above:g} ({SUMMARY})"
    paper_o = (f"about {PAPER_PRETRAINED_OBJECTS['level']:.2f} at width {PAPER_PRETRAINED_OBJECTS['width']}, "
               f"fraction {PAPER_PRETRAINED_OBJECTS['fraction']:g}, every family ({NOTES})")
    if null is not None and len(null):
        null_of, null_name = _widest_mlp(null), "the null sweep"
    else:
        controls = table[table["encoder"].str.contains("random init", regex=False)] if len(table) else table
        null_of = _widest_mlp(controls[controls["encoder"] == controls["encoder"].iloc[0]]) if len(controls) \
            else controls
        null_name = f"{controls['encoder'].iloc[0]} (the paper's control)" if len(controls) else ""
    null_hi = null_of[null_of["fraction"] > above] if len(null_of) else null_of
    null_c = float(null_hi["heldout_concept"].min()) if len(null_hi) else math.nan
    for name, sub in table.groupby("encoder", sort=False):
        ev = _encoder_evidence(name)
        if ev == CONTROL:
            why = f"{name} has random weights: the paper's control, not the pretrained encoder the claims are about"
            rows += [_row(c, name, pp, "–", UNTESTABLE, why, profile, evidence=ev) for c, pp in
                     (("concepts generalize", paper_c), ("objects do not generalize, for any family", paper_o))]
            continue
        mlp = _widest_mlp(sub)
        hi = mlp[mlp["fraction"] > above]
        concepts_ok = False
        if not len(hi) or not hi["heldout_concept"].notna().all():
            rows.append(_row("concepts generalize", name, paper_c, "–", UNTESTABLE,
                             f"no MLP results at a data fraction above {above:g}", profile, evidence=ev))
        else:
            worst = hi.loc[hi["heldout_concept"].idxmin()]
            ours = (f"widest MLP (width {int(worst['width'])}): at least {worst['heldout_concept']:.2f} "
                    f"(fraction {worst['fraction']:g})")
            if not _ok(null_c):
                rows.append(_row("concepts generalize", name, paper_c, ours, UNTESTABLE,
                                 "no null: neither a null sweep nor a random-init control in the table", profile,
                                 evidence=ev))
            else:
                concepts_ok = bool(worst["heldout_concept"] >= concept_level
                                   and worst["heldout_concept"] - null_c >= margin)
                rows.append(_row("concepts generalize", name, paper_c, ours, verdict(concepts_ok),
                                 f"shown when >= {concept_level:g} at every fraction above {above:g} and >= "
                                 f"{margin:g} above the null ({null_name})", profile, evidence=ev,
                                 null=f"{null_c:.2f}", margin=_margin(float(worst["heldout_concept"]), null_c, margin)))
        top = sub[sub["fraction"] == sub["fraction"].max()] if len(sub) else sub
        mtop = mlp[mlp["fraction"] == sub["fraction"].max()] if len(mlp) and len(sub) else mlp
        if not len(top) or not len(mtop) or not _ok(mtop["heldout_concept"].iloc[0]) \
                or not top["heldout_object"].notna().any():
            rows.append(_row("objects do not generalize, for any family", name, paper_o, "–", UNTESTABLE,
                             "no MLP and family results at the largest fraction", profile, evidence=ev))
        else:
            best = top.loc[top["heldout_object"].idxmax()]
            conc = float(mtop["heldout_concept"].iloc[0])
            rows.append(_row("objects do not generalize, for any family", name, paper_o,
                             f"best family ({best['family']}): objects {best['heldout_object']:.2f} vs concepts "
                             f"{conc:.2f} (fraction {best['fraction']:g})",
                             verdict(concepts_ok and best["heldout_object"] <= conc - gap),
                             f"shown when concepts generalize (above) and every family's objects stay {gap:g} "
                             "below the concepts", profile, evidence=ev,
                             margin=f"{conc - best['heldout_object']:+.2f} (needs >= {gap:g})"))
    return _frame(rows)


# ---------------------------------------------------------------------------------
# §5.3 and §5.4: binding functions of the controlled models
# ---------------------------------------------------------------------------------
CEILING = "bag ceiling"  # column of the approximator tables: the bag-of-concepts ceiling of the held-out scenes


def _ceiling(sub: pd.DataFrame) -> float:
    return float(sub[CEILING].mean()) if CEILING in sub and sub[CEILING].notna().any() else math.nan


def width_claims(table: Any, profile: str, margin: float = 0.1, small: int = PAPER_APPROXIMATOR_WIDTHS[0],
                 share: float = 0.9, gap_margin: float = 0.1) -> pd.DataFrame:
    """§5.3, at the largest data fraction, from an MLP approximator table
    (:func:`~bindcore.experiments.complexity.controlled_sweeps`, with its ``bag ceiling`` column:
    the best strict object recognition any bag of concepts reaches on the same held-out
    scenes):

    * per model, small MLPs suffice: the best width's held-out object recognition clears
      the bag ceiling by ``margin`` (below it no width binds and nothing is shown; no
      ceiling: :data:`UNTESTABLE`), and the smallest width reaching ``share`` of the best
      is at most ``small`` (the paper's smallest width);
    * across models, the gap (best minus the smallest width's recognition) grows with
      the object space: the largest |O|'s gap exceeds the smallest |O|'s by at least
      ``gap_margin`` (needs two sizes)."""
    top = table[(table["fraction"] == table["fraction"].max()) & (table["family"] == FAMILY_LABELS["mlp"])]
    rows, gaps = [], []
    for name, full in top.groupby("model", sort=False):
        sub = full.groupby("width", as_index=False)["heldout_object"].mean().sort_values("width")
        claim = "a small MLP suffices"
        if len(sub) < 2 or not sub["heldout_object"].notna().all():
            rows.append(_row(claim, name, PAPER_WIDTH, "–", UNTESTABLE, "needs two or more widths", profile))
            continue
        best = float(sub["heldout_object"].max())
        first = sub.iloc[0]
        gaps.append((table.loc[table["model"] == name, "objects"].iloc[0] if "objects" in table else np.nan,
                     best - float(first["heldout_object"]), name))
        ceil = _ceiling(full)
        if not _ok(ceil):
            rows.append(_row(claim, name, PAPER_WIDTH, f"best held-out objects {best:.2f}", UNTESTABLE,
                             "no bag-of-concepts ceiling of these scenes to read binding against", profile))
            continue
        null, mg = f"bag ceiling {ceil:.2f}", _margin(best, ceil, margin)
        if best < ceil + margin:
            rows.append(_row(claim, name, PAPER_WIDTH,
                             f"no width binds: best held-out objects {best:.2f} "
                             f"(width {int(sub.loc[sub['heldout_object'].idxmax(), 'width'])})",
                             NOT_SHOWN, f"shown when the best width clears the bag ceiling by >= {margin:g}", profile,
                             null=null, margin=mg))
            continue
        good = sub[sub["heldout_object"] >= share * best]
        w = int(good["width"].min())
        rows.append(_row(claim, name, PAPER_WIDTH,
                         f"smallest width reaching {share:.0%} of the best ({best:.2f}): {w}; width "
                         f"{int(first['width'])}: {first['heldout_object']:.2f}",
                         verdict(w <= small), f"shown when the best clears the bag ceiling by >= {margin:g} and "
                         f"that width is <= {small}", profile, null=null, margin=mg))
    claim = "the gap to large widths grows with |O|"
    sized = sorted(g for g in gaps if _ok(g[0]))
    if len({g[0] for g in sized}) < 2:
        rows.append(_row(claim, "all models", PAPER_WIDTH, "–", UNTESTABLE,
                         "needs models of two or more object-space sizes", profile))
    else:
        ours = ", ".join(f"|O|={int(o)}: {g:+.2f}" for o, g, _ in sized)
        rows.append(_row(claim, "all models", PAPER_WIDTH, f"gap (best - smallest width): {ours}",
                         verdict(sized[-1][1] - sized[0][1] >= gap_margin),
                         f"shown when the largest |O|'s gap exceeds the smallest |O|'s by >= {gap_margin:g}", profile,
                         null=f"smallest |O|: {sized[0][1]:+.2f}", margin=_margin(sized[-1][1], sized[0][1], gap_margin)))
    return _frame(rows)


def form_claims(table: Any, profile: str, concept_level: float = 0.8, gap: float = 0.3, margin: float = 0.1,
                tolerance: float = 0.02) -> pd.DataFrame:
    """§5.4, at the largest data fraction, per controlled model, from an approximator
    table of several families (:func:`~bindcore.experiments.complexity.controlled_sweeps`, with its
    ``bag ceiling`` column):

    * the additive probe recovers concepts, not objects: its held-out concept recognition
      is >= ``concept_level`` and its object recognition at least ``gap`` below that;
    * products recover binding: the best product family beats both the additive probe
      and the bag ceiling of the same scenes on held-out objects by >= ``margin``;
    * the global product is best: a global-product family (with or without the additive
      terms) is within ``tolerance`` of the best family on held-out objects, and that
      best clears the bag ceiling by ``margin`` (when no family binds, none is best).

    Without a bag ceiling the binding claims are :data:`UNTESTABLE`."""
    top = table[table["fraction"] == table["fraction"].max()]
    products = [FAMILY_LABELS[f] for f in ("global_product", "sum_global_product", "within_object_product",
                                           "sum_within_object_product")]
    globals_ = [FAMILY_LABELS[f] for f in ("global_product", "sum_global_product")]
    rows = []
    for name, sub in top.groupby("model", sort=False):
        best = sub.groupby("family")[["heldout_concept", "heldout_object"]].max()
        add = best.loc[FAMILY_LABELS["additive"]] if FAMILY_LABELS["additive"] in best.index else None
        prod = best.loc[best.index.intersection(products)]
        glob = best.loc[best.index.intersection(globals_)]
        ceil = _ceiling(sub)
        no_ceiling = "no bag-of-concepts ceiling of these scenes to read binding against"

        def row(claim: str, ours: str, status: str, why: str, null: str = "–", mg: str = "–",
                name: str = name) -> None:
            rows.append(_row(claim, name, PAPER_FORM, ours, status, why, profile, null=null, margin=mg))

        if add is None or not _ok(add["heldout_concept"], add["heldout_object"]):
            row("the additive probe recovers concepts, not objects", "–", UNTESTABLE, "no additive probe")
        else:
            row("the additive probe recovers concepts, not objects",
                f"concepts {add['heldout_concept']:.2f}, objects {add['heldout_object']:.2f}",
                verdict(add["heldout_concept"] >= concept_level
                        and add["heldout_object"] <= add["heldout_concept"] - gap),
                f"shown when concepts >= {concept_level:g} and objects at least {gap:g} below",
                mg=f"{add['heldout_concept'] - add['heldout_object']:+.2f} (needs >= {gap:g})")
        if add is None or not len(prod) or not prod["heldout_object"].notna().any():
            row("products recover binding", "–", UNTESTABLE, "needs the additive probe and a product family")
        else:
            fam = prod["heldout_object"].idxmax()
            p = float(prod.loc[fam, "heldout_object"])
            ours = f"{fam}: objects {p:.2f} vs additive {add['heldout_object']:.2f}"
            if not _ok(ceil):
                row("products recover binding", ours, UNTESTABLE, no_ceiling)
            else:
                ref = max(float(add["heldout_object"]), ceil)
                row("products recover binding", ours, verdict(p >= ref + margin),
                    f"shown when a product beats the additive probe and the bag ceiling by >= {margin:g}",
                    null=f"bag ceiling {ceil:.2f}, additive {add['heldout_object']:.2f}", mg=_margin(p, ref, margin))
        if not len(glob) or len(best) < 2 or not best["heldout_object"].notna().any():
            row("the global product is best", "–", UNTESTABLE, "needs a global product and another family")
        else:
            top_fam = best["heldout_object"].idxmax()
            g, b = glob["heldout_object"].max(), best["heldout_object"].max()
            ours = f"best: {top_fam} ({b:.2f}); global product {g:.2f}"
            if not _ok(ceil):
                row("the global product is best", ours, UNTESTABLE, no_ceiling)
            else:
                row("the global product is best", ours, verdict(g >= b - tolerance and b >= ceil + margin),
                    f"shown when a global product is within {tolerance:g} of the best family and the best clears "
                    f"the bag ceiling by >= {margin:g}", null=f"bag ceiling {ceil:.2f}", mg=_margin(b, ceil, margin))
    return _frame(rows)


def rank_null(x: Any, y: Any, permutations: int = 2000, quantile: float = 0.95, seed: int = 0) -> float:
    """The ``quantile`` of the Spearman rank correlation of ``x`` with ``y`` over
    ``permutations`` seeded permutations of ``y`` (models' ids shuffled)."""
    rx, ry = pd.Series(np.asarray(x, dtype=float)).rank().to_numpy(), pd.Series(np.asarray(y, dtype=float)).rank()
    ry = ry.to_numpy()
    rng = np.random.default_rng(seed)
    rhos = [np.corrcoef(rx, rng.permutation(ry))[0, 1] for _ in range(permutations)]
    return float(np.nanquantile(rhos, quantile))


def figure9_claims(table: pd.DataFrame, profile: str, min_models: int = 3, min_rho: float = 0.5,
                   quantile: float = 0.95) -> pd.DataFrame:
    """Figure 9, per object-space size, from :func:`~bindcore.experiments.complexity.figure9_table`:
    the global-product probe's held-out object recognition tracks the model's own
    (Spearman rank correlation >= ``min_rho`` and above the ``quantile`` of its
    permutation null, the models' ids shuffled; over at least ``min_models`` models of
    that size, fewer: :data:`UNTESTABLE`; with three models no correlation clears the
    null); where the records carry swap-pair recognition (a scene and its
    attribute-swapped twin both recognised, which a bag of concepts never achieves),
    the same against it."""
    rows = []
    axes = [("the global product tracks the model", "model: held-out objects")]
    if "model: swap pairs" in table and table["model: swap pairs"].notna().any():
        # binding in the strict sense: a scene and its attribute-swapped twin both recognised
        axes.append(("the global product tracks the model's swap-pair recognition", "model: swap pairs"))
    for claim, col in axes:
        for objects, sub in table.groupby("objects", sort=True):
            sub = sub.dropna(subset=[col, "global product: held-out objects"])
            subject = f"|O| = {objects}"
            if len(sub) < min_models or sub[col].nunique() < 2:
                rows.append(_row(claim, subject, PAPER_FIGURE9, f"{len(sub)} models", UNTESTABLE,
                                 f"needs at least {min_models} models of one size that differ", profile))
                continue
            rho = sub[col].rank().corr(sub["global product: held-out objects"].rank())
            null = rank_null(sub[col], sub["global product: held-out objects"], quantile=quantile)
            rows.append(_row(claim, subject, PAPER_FIGURE9, f"rank correlation {rho:.2f} over {len(sub)} models",
                             verdict(bool(rho >= min_rho and rho > null)),
                             f"shown at a rank correlation >= {min_rho:g} and above the {quantile:.0%} quantile of "
                             "its permutation null (models' ids shuffled)", profile,
                             null=f"{null:.2f}", margin=f"{rho - null:+.2f} (needs > 0)"))
    return _frame(rows)


# ---------------------------------------------------------------------------------
# appendix D.3, D.4, D.5
# ---------------------------------------------------------------------------------
def _who(r: pd.Series) -> str:
    """An encoder and what its weights are, once (no "random init (random init)")."""
    if r["weights"] == "random init (control)":
        return f"{r['encoder']}, control" if "random init" in r["encoder"] else f"{r['encoder']}, random init (control)"
    return f"{r['encoder']}, {r['weights']}"


def _row_evidence(r: pd.Series) -> str:
    if r["weights"] != "pretrained":
        return CONTROL
    return NATIVE if str(r["encoder"]).startswith(("CLIP", "DINOv2")) else SUBSTITUTE


def two_rates_differ(a: float, b: float, n_a: int, n_b: int, z: float = 2.0) -> bool:
    """``a - b`` (rates of ``n_a`` and ``n_b`` trials) exceeds ``z`` standard errors of the
    difference (pooled binomial)."""
    if not _ok(a, b) or n_a < 1 or n_b < 1:
        return False
    p = (a * n_a + b * n_b) / (n_a + n_b)
    return a - b > z * math.sqrt(max(p * (1 - p), 1e-12) * (1 / n_a + 1 / n_b))


def additional_claims(three: pd.DataFrame, grid: pd.DataFrame, profile: str, keep: float = 0.9,
                      high: float = 0.5, r2_margin: float = 0.02, retrieval_margin: float = 0.05, z: float = 2.0,
                      grid_margin: float = 0.05, null_margin: float = 0.2) -> pd.DataFrame:
    """The paper's D.3 and D.5 claims (summary), per image encoder of ``three``
    (:func:`~bindcore.experiments.geometry.three_object_table`) and over the pretrained sets of
    ``grid`` (:func:`~bindcore.book.tables.mds_table`); random-init encoders:
    :data:`UNTESTABLE` (the claims are CLIP's), pretrained encoders other than CLIP /
    DINOv2 tagged :data:`SUBSTITUTE`:

    * probing stays high with occlusion: object probing of the occluded scenes is at
      least ``keep`` of that without occlusion, at least ``high``, and, where the table
      has the Gaussian null's (``probing objects (null)``), ``null_margin`` above it;
    * object-based beats concept-based reconstruction: held-out R² of the bag of objects
      at least ``r2_margin`` above that of the bag of concepts (averaging estimators),
      with and without occlusion (held out: no in-sample gap from the larger bag), beyond
      the Gaussian null's gap where the table has it (``R² held-out gap (null)``);
    * occlusion lowers retrieval of the object reconstructions (all scenes): by at least
      ``retrieval_margin`` and by more than ``z`` standard errors of the difference;
    * D.5, grid structure strongest for text: the grid-neighbour recall (full
      embedding) of every pretrained caption set is at least ``grid_margin`` above chance
      and above that of every pretrained image set (needs both)."""
    (c_probe, p_probe), (c_r2, p_r2), (c_ret, p_ret), (c_mds, p_mds) = PAPER_CLAIMS_APPENDIX_D
    rows = []
    for (enc, _), sub in three.groupby(["encoder", "weights"], sort=False):
        by = {bool(r["occlusion"]): r for _, r in sub.iterrows()}
        first = sub.iloc[0]
        who, ev = _who(first), _row_evidence(first)
        specs = ((c_probe, p_probe), (c_r2, p_r2), (c_ret, p_ret))
        if ev == CONTROL:
            rows += [_row(c, who, p, "–", UNTESTABLE, f"{enc} has random weights; the claim is pretrained CLIP's",
                          profile, evidence=ev) for c, p in specs]
            continue
        if set(by) != {False, True}:
            rows += [_row(c, who, p, "–", UNTESTABLE, "needs scenes with and without occlusion", profile, evidence=ev)
                     for c, p in specs]
            continue
        a, b = by[False], by[True]
        # the Gaussian null of the occluded set, where the table has it (three_object_table)
        null_probe, null_gap = _num(b.get("probing objects (null)")), _num(b.get("R² held-out gap (null)"))
        floor = max(keep * a["probing objects"], high, null_probe + null_margin if _ok(null_probe) else -math.inf)
        rows.append(_row(c_probe, who, p_probe,
                         f"objects {a['probing objects']:.2f} -> {b['probing objects']:.2f} (concepts "
                         f"{a['probing concepts']:.2f} -> {b['probing concepts']:.2f})",
                         verdict(b["probing objects"] >= floor),
                         f"shown when occluded object probing keeps {keep:g} of it, reaches {high:g}"
                         + (f" and clears its Gaussian null by {null_margin:g}" if _ok(null_probe) else ""), profile,
                         evidence=ev, null=f"{null_probe:.2f}" if _ok(null_probe) else "–",
                         margin=f"{b['probing objects'] - floor:+.2f} (needs >= 0)"))
        o, c = "R² held-out objects (avg)", "R² held-out concepts (avg)"
        ref = max(null_gap, 0.0) if _ok(null_gap) else 0.0
        gap = min(a[o] - a[c], b[o] - b[c]) - ref
        rows.append(_row(c_r2, who, p_r2,
                         f"objects vs concepts: {a[o]:.2f} vs {a[c]:.2f}; occluded {b[o]:.2f} vs {b[c]:.2f}",
                         verdict(bool(gap >= r2_margin)),
                         f"shown when objects beat concepts by >= {r2_margin:g} in both (held-out scenes)"
                         + (" beyond the Gaussian null's gap" if _ok(null_gap) else ""), profile,
                         evidence=ev, null=f"gap {null_gap:+.2f}" if _ok(null_gap) else "concepts' R²",
                         margin=f"{gap:+.2f} (needs >= {r2_margin:g})"))
        rt = "retrieval objects (all scenes)"
        drop = a[rt] - b[rt]
        n_a, n_b = (int(a["scenes"]), int(b["scenes"])) if "scenes" in a and _ok(a["scenes"], b["scenes"]) else (0, 0)
        sig = two_rates_differ(a[rt], b[rt], n_a, n_b, z) if n_a else True
        rows.append(_row(c_ret, who, p_ret, f"{a[rt]:.2f} -> {b[rt]:.2f}",
                         verdict(bool(drop >= retrieval_margin and sig)),
                         f"shown when retrieval is lower with occlusion by >= {retrieval_margin:g}"
                         + (f" and by more than {z:g} standard errors ({n_a} and {n_b} scenes)" if n_a else ""),
                         profile, evidence=ev, null=f"no occlusion: {a[rt]:.2f}",
                         margin=f"{drop:+.2f} (needs >= {retrieval_margin:g})"))
    pre = grid[grid["weights"] == "pretrained"]
    text = pre[pre["dataset"].str.startswith("captions")]
    image = pre[~pre["dataset"].str.startswith("captions")]
    col = "grid-neighbour recall (full d)"
    if not len(text) or not len(image):
        ours = "; ".join(f"{r['dataset']} ({_who(r)}): {r[col]:.2f} (chance {r['chance']:.2f})"
                         for _, r in grid.iterrows())
        rows.append(_row(c_mds, "pretrained sets", p_mds, ours, UNTESTABLE,
                         "needs pretrained caption and image sets (pretrained image encoders need the Hugging Face "
                         "Hub); DINOv2 runs where its weights are", profile))
    else:
        ours = "; ".join(f"{r['dataset']} ({_who(r)}): {r[col]:.2f} (chance {r['chance']:.2f})"
                         for _, r in pre.iterrows())
        ev = NATIVE if all(_row_evidence(r) == NATIVE for _, r in pre.iterrows()) else SUBSTITUTE
        lead = min(float((text[col] - text["chance"]).min()), float(text[col].min() - image[col].max()))
        rows.append(_row(c_mds, "pretrained sets", p_mds, ours, verdict(bool(lead >= grid_margin)),
                         f"shown when every caption set beats chance and every image set by >= {grid_margin:g}",
                         profile, evidence=ev, null=f"chance, image sets up to {image[col].max():.2f}",
                         margin=f"{lead:+.2f} (needs >= {grid_margin:g})"))
    return _frame(rows)


def above_chance(rate: float, chance: float, n: int, z: float = 3.0) -> bool:
    """``rate`` of ``n`` trials lies more than ``z`` binomial standard errors above ``chance``."""
    if not _ok(rate, chance) or n < 1:
        return False
    return rate > chance + z * math.sqrt(max(chance * (1 - chance), 1e-12) / n)


def natural_claims(table: pd.DataFrame, profile: str, z: float = 3.0) -> pd.DataFrame:
    """D.4 (summary): on generated natural images, decomposition and editing retrieval
    stay above chance. Per encoder of :func:`~bindcore.experiments.geometry.natural_table`:
    shown when both retrievals lie more than ``z`` binomial standard errors above their
    null: the same retrieval on Gaussian embeddings of the same size and spectrum
    (columns ``retrieval null``, ``edit retrieval null``; in-sample retrieval of noise
    lies far above the combinatorial chance at a large width) and above chance; without
    the null: :data:`UNTESTABLE`. Random-init encoders: :data:`UNTESTABLE` (the claim
    is CLIP's); other pretrained encoders: tagged :data:`SUBSTITUTE`."""
    from bindcore.paper import PAPER_NATURAL_CLAIM

    rows = []
    for _, r in table.iterrows():
        who, ev = _who(r), _row_evidence(r)
        claim = "decomposition and editing retrieval above chance"
        ours = (f"decomposition {r['retrieval']:.2f} (chance {r['retrieval chance']:.3f}, {int(r['scenes'])} scenes); "
                f"editing {r['edit retrieval']:.2f} (chance {r['edit chance']:.3f}, {int(r['edits'])} edits)")
        if ev == CONTROL:
            rows.append(_row(claim, who, PAPER_NATURAL_CLAIM, ours, UNTESTABLE,
                             f"{r['encoder']} has random weights; the claim is pretrained CLIP's", profile, evidence=ev))
            continue
        nr, ne = _num(r.get("retrieval null")), _num(r.get("edit retrieval null"))
        if not _ok(nr, ne):
            rows.append(_row(claim, who, PAPER_NATURAL_CLAIM, ours, UNTESTABLE,
                             f"no null computed ({gaussian_null_why()})", profile, evidence=ev))
            continue
        ref_r, ref_e = max(nr, r["retrieval chance"]), max(ne, r["edit chance"])
        holds = above_chance(r["retrieval"], ref_r, int(r["scenes"]), z) and above_chance(
            r["edit retrieval"], ref_e, int(r["edits"]), z)
        rows.append(_row(claim, who, PAPER_NATURAL_CLAIM, ours, verdict(holds),
                         f"shown when both lie {z:g} standard errors above their null ({gaussian_null_why()}) "
                         "and chance", profile, evidence=ev, null=f"decomposition {nr:.2f}, editing {ne:.2f}",
                         margin=f"{r['retrieval'] - ref_r:+.2f}, {r['edit retrieval'] - ref_e:+.2f}"))
    return _frame(rows)


# ---------------------------------------------------------------------------------
# §5.2 (its own shape; the chapter is rewritten elsewhere)
# ---------------------------------------------------------------------------------
def generalization_claim_rules(transition: float = 0.5, low: float = 0.1, margin: float = 0.1,
                               concept_threshold: float = 0.9) -> str:
    """The rules by which :func:`claims_table` turns the §5.2 summary into verdicts."""
    return (f"binding is read from held-out swap-pair recognition (a scene and its twin with one concept's values "
            f"swapped, both recognised; any bag of concepts scores 0). Rises with coverage: swap pairs below "
            f"{low:g} at the smallest coverage and at least {transition:g} from some larger coverage on (the "
            f"transition coverage: swap pairs stay at or above {transition:g} at every larger coverage swept). Far above the bag: at "
            f"the coverage chosen on validation objects (their median swap pairs; records without validation objects: "
            f"the largest coverage), median strict recognition of test objects at least {margin:g} above the "
            f"bag-of-concepts ceiling, every seed above it, and median swap pairs at least {transition:g}. Every number "
            f"is the median over the seeds at a coverage. Concepts first: concept recognition reaches "
            f"{concept_threshold:g} at a smaller coverage than the transition (swap pairs >= {transition:g}). "
            f"Larger spaces need a smaller fraction: over every pair of sizes that can be compared, the larger "
            f"never needs more coverage for the transition and at least once needs less (a size without a "
            f"transition needs more than its largest coverage; two such sizes cannot be compared).")


def _size(r: dict[str, Any]) -> str:
    return f"|O| = {int(r['objects']):,} (C = {int(r['C'])}, V = {int(r['V'])})"


def _transition_order(small: dict[str, Any], large: dict[str, Any]) -> str | None:
    """How the transition coverage moves from a smaller object space to a larger one:
    ``"rises"``, ``"falls"``, ``"same"``, or None when they cannot be compared (neither
    has a transition; a missing one lies above that size's largest coverage)."""
    ts, tl = small["transition coverage"], large["transition coverage"]
    if _ok(ts) and _ok(tl):
        return "rises" if tl > ts else "falls" if tl < ts else "same"
    if _ok(ts):  # the larger space does not bind where the smaller one does
        return "rises" if large["largest coverage"] >= ts else None
    if _ok(tl):  # the larger space binds below the smaller one's largest coverage
        return "falls" if tl <= small["largest coverage"] else None
    return None


def claims_table(summary: pd.DataFrame, profile: str, transition: float = 0.5, low: float = 0.1, margin: float = 0.1,
                 concept_threshold: float = 0.9) -> pd.DataFrame:
    """The §5.2 claims per object-space size (and across sizes) from
    :func:`bindcore.sweep.generalization_summary`, with the verdicts of
    :func:`generalization_claim_rules`. ``profile`` names where the numbers come from
    (e.g. ``"quick"`` or ``"scale (published)"``)."""
    (rises, c_rises), (above, c_above), (order_claim, c_order), (fraction, c_fraction) = PAPER_CLAIMS_5_2
    conc_col = f"concepts >= {concept_threshold:g} from coverage"
    rows = []
    recs = summary.sort_values("objects").to_dict("records")
    for r in recs:
        who = _size(r)
        if r["coverages"] < 2:
            rows.append(_row(rises, who, c_rises, "–", UNTESTABLE, "one coverage only", profile))
        else:
            ok = r["swap pairs at smallest coverage"] < low and _ok(r["transition coverage"])
            rows.append(_row(rises, who, c_rises,
                             f"swap pairs {r['swap pairs at smallest coverage']:.2f} at coverage "
                             f"{r['smallest coverage']:g}, "
                             f"{r['swap pairs at largest coverage']:.2f} at {r['largest coverage']:g}",
                             verdict(ok), f"swap pairs from below {low:g} to at least {transition:g} and staying there",
                             profile))
        gap = r["objects at chosen coverage"] - r["bag ceiling at chosen coverage"]
        seeds = f" ({int(r['seeds'])} seeds, range {r['swap pairs range at chosen coverage']})" if r["seeds"] > 1 else ""
        rows.append(_row(above, who, c_above,
                         f"coverage {r['chosen coverage']:g} ({r['chosen on']}): strict {r['objects at chosen coverage']:.2f} "
                         f"vs bag ceiling {r['bag ceiling at chosen coverage']:.2f}; swap pairs "
                         f"{r['swap pairs at chosen coverage']:.2f}{seeds}",
                         verdict(gap >= margin and r["swap pairs at chosen coverage"] >= transition
                                 and r["every seed above the bag ceiling at chosen coverage"]),
                         f"strict >= ceiling + {margin:g}, every seed above the ceiling, swap pairs >= {transition:g}",
                         profile, null=f"bag ceiling {r['bag ceiling at chosen coverage']:.2f}; swap pairs 0",
                         margin=_margin(r["objects at chosen coverage"], r["bag ceiling at chosen coverage"], margin)))
        t, c = r["transition coverage"], r[conc_col]
        if not _ok(t):
            rows.append(_row(order_claim, who, c_order,
                             f"concepts reach {concept_threshold:g} at {c:g}; swap pairs never reach {transition:g}"
                             if _ok(c) else f"neither concepts ({concept_threshold:g}) nor binding ({transition:g})",
                             UNTESTABLE, f"no transition (swap pairs >= {transition:g}) at any coverage", profile))
        else:
            rows.append(_row(order_claim, who, c_order,
                             f"concepts from coverage {c:g}, binding from {t:g}" if _ok(c)
                             else f"concepts never reach {concept_threshold:g}; binding from {t:g}",
                             verdict(_ok(c) and c < t), "concepts reach the threshold at a smaller coverage", profile))
    ours = ", ".join(f"|O| = {int(r['objects']):,}: " + (f"{r['transition coverage']:g}" if _ok(r["transition coverage"])
                                                        else f"> {r['largest coverage']:g}") for r in recs)
    if len(recs) < 2:
        rows.append(_row(fraction, "across sizes", c_fraction, ours or "–", UNTESTABLE, "one object-space size only",
                         profile))
    else:
        never = [not _ok(r["transition coverage"]) for r in recs]
        if all(never):
            rows.append(_row(fraction, "across sizes", c_fraction, ours, UNTESTABLE,
                             f"no size has a transition (swap pairs >= {transition:g} from some coverage on and at "
                             "every larger coverage; a single coverage above it that falls back is none)", profile))
        else:
            order = [_transition_order(a, b) for i, a in enumerate(recs) for b in recs[i + 1:]]
            rows.append(_row(fraction, "across sizes", c_fraction, "transition coverage " + ours,
                             verdict("rises" not in order and "falls" in order),
                             "over every pair of sizes that can be compared, the larger never needs more "
                             "coverage and at least once needs less (a size without a transition needs more than "
                             "its largest coverage; two such sizes cannot be compared)", profile))
    return _frame(rows)


def claim_outcomes(frame: pd.DataFrame) -> list[str]:
    """One plain sentence per claim of a claims table, from its verdicts: where it was
    reproduced (shown), on the paper's kind of encoder or on a substitute, where not,
    and where it could not be tested (controlled models and controls included), naming the
    subjects (object-space sizes) and the source (the table's ``profile``)."""
    out = []
    for claim, rows in frame.groupby("claim", sort=False):
        source = ", ".join(dict.fromkeys(rows["profile"]))
        ev = rows["evidence"] if "evidence" in rows else pd.Series(NATIVE, index=rows.index)
        parts = []
        for status, kind, words in ((SHOWN, NATIVE, "reproduced"), (NOT_SHOWN, NATIVE, "not reproduced"),
                                    (SHOWN, SUBSTITUTE, "reproduced on a substitute"),
                                    (NOT_SHOWN, SUBSTITUTE, "not reproduced on a substitute"),
                                    (UNTESTABLE, None, "not testable")):
            pick = (rows["status"] == status) & ((ev == kind) if kind else True)
            who = rows.loc[pick, "subject"].tolist()
            if who:
                parts.append(f"{words} {'' if who == ['across sizes'] else 'at '}{', '.join(who)}")
        out.append(f"{claim[:1].upper()}{claim[1:]}: {'; '.join(parts)} ({source}).")
    return out


# ---------------------------------------------------------------------------------
# appendix E (pixel encoders) and the D.7 contrast
# ---------------------------------------------------------------------------------
# thresholds of the claim rules (see :func:`pixel_claim_rules`)
SWAP_THRESHOLD = 0.5  # swap pairs, as the §5.2 transition
BAG_MARGIN = 0.1  # strict recognition above the bag ceiling of the same scenes
SMALL_WIDTH = 64
CEILING_SHARE = 0.75
PIXEL_COLUMNS = ["claim", "paper", "level", "ours", "null", "margin", "verdict", "profile"]


def pixel_claim_rules() -> str:
    """The rules by which :func:`pixel_claims` turns numbers into verdicts, in words."""
    return (
        f"binding generalizes: held-out strict recognition clears the bag-of-concepts ceiling of the same scenes by "
        f"{BAG_MARGIN:g} and held-out swap-pair recognition (any bag of concepts scores 0) reaches "
        f"{SWAP_THRESHOLD:g}. Small MLPs approximate the binding map: the best MLP clears the bag ceiling by "
        f"{BAG_MARGIN:g}, an MLP of width <= {SMALL_WIDTH} reaches 90 % of the best width's held-out object "
        f"recognition, and the best reaches {CEILING_SHARE:.0%} of the model's own (the probes reading its real "
        f"embeddings of the same scenes). The global product recovers objects: it beats the additive probe and "
        f"the bag ceiling by {BAG_MARGIN:g} on held-out objects and reaches {CEILING_SHARE:.0%} of the model's own. "
        f"'{UNTESTABLE}' when the model's own held-out object recognition does not clear the bag ceiling by "
        f"{BAG_MARGIN:g}: there is no binding to approximate. Every verdict is one of {', '.join(STATUSES)}."
    )


def _level_of(name: str) -> str:
    """The visual level in a pixel model's name (``PixelTrainConfig.short_name``)."""
    for level in LEVELS:
        if f", {level}," in name:
            return level
    return name


def pixel_claims(summary: Any, approx: Any, profile: str, ceiling: Any = None):
    """Appendix E's claims, the paper's statement of each and ours, per visual level,
    with the verdicts of :func:`pixel_claim_rules` (:data:`STATUSES`) and, beside ours,
    the null (the bag-of-concepts ceiling of the same scenes) and the margin.

    ``summary``: :func:`bindcore.book.tables.level_summary`; ``approx``: the approximator
    table (:func:`bindcore.experiments.complexity.approximator_table` rows with a ``model`` column,
    and a ``bag ceiling`` column where known) of the MLP widths and families;
    ``ceiling``: :func:`bindcore.analysis.complexity.true_embedding_ceiling` of the same
    binding data (``model`` column). Approximators are read at their largest data
    fraction; without a bag ceiling of their scenes the binding claims are
    :data:`UNTESTABLE`."""
    (generalizes, c_generalizes), (small, c_small), (product, c_product) = PAPER_CLAIMS_APPENDIX_E
    rows = []
    for s in summary.to_dict("records"):
        gap = s["held-out objects, strict"] - s["bag ceiling"]
        holds = gap >= BAG_MARGIN and s["swap pairs"] >= SWAP_THRESHOLD
        rows.append({"claim": generalizes, "paper": c_generalizes, "level": s["level"],
                     "ours": f"coverage {s['coverage']:g}: swap pairs {s['swap pairs']:.2f}, strict "
                             f"{s['held-out objects, strict']:.2f} (bag floor {s['bag floor']:.2f})",
                     "null": f"bag ceiling {s['bag ceiling']:.2f}; swap pairs 0",
                     "margin": _margin(s["held-out objects, strict"], s["bag ceiling"], BAG_MARGIN),
                     "verdict": verdict(bool(holds)) if _ok(gap, s["swap pairs"]) else UNTESTABLE})
    frac = approx["fraction"].max()
    top = approx[approx["fraction"] == frac]
    for name, sub in top.groupby("model", sort=False):
        level = _level_of(name)
        own = float("nan")
        if ceiling is not None:
            c = ceiling[(ceiling["model"] == name) & (ceiling["fraction"] == frac)]["heldout_object"]
            own = float(c.iloc[0]) if len(c) else own
        bag = _ceiling(sub)
        untestable = not _ok(bag) or (_ok(own) and own < bag + BAG_MARGIN)
        why_not = ("no bag ceiling of these scenes" if not _ok(bag) else
                   f"the model's own ({own:.2f}) does not clear the bag ceiling ({bag:.2f}) by {BAG_MARGIN:g}")
        own_text = f"; the model's own: {own:.2f}" if _ok(own) else ""
        null = f"bag ceiling {bag:.2f}" if _ok(bag) else "–"
        mlp = sub[sub["family"] == FAMILY_LABELS["mlp"]].groupby("width")["heldout_object"].mean().sort_index()
        if len(mlp):
            best = float(mlp.max())
            smallest = int(mlp.index[mlp >= 0.9 * best][0])
            close = not _ok(own) or best >= CEILING_SHARE * own
            ok = smallest <= SMALL_WIDTH and close and _ok(bag) and best >= bag + BAG_MARGIN
            rows.append({"claim": small, "paper": c_small, "level": level,
                         "ours": f"fraction {frac:g}, held-out objects by MLP width: "
                                 + ", ".join(f"{int(w)}: {v:.2f}" for w, v in mlp.items())
                                 + f"; width {smallest} reaches 90 % of the best" + own_text
                                 + ("" if not untestable else f" ({why_not})"),
                         "null": null, "margin": _margin(best, bag, BAG_MARGIN) if _ok(bag) else "–",
                         "verdict": UNTESTABLE if untestable else verdict(bool(ok))})

        def fam(f: str, sub: Any = sub) -> float:
            v = sub[sub["family"] == FAMILY_LABELS[f]]["heldout_object"]
            return float(v.max()) if len(v) else float("nan")

        gp, add, both = fam("global_product"), fam("additive"), fam("sum_global_product")
        if _ok(gp):
            close = not _ok(own) or gp >= CEILING_SHARE * own
            ref = max(add if _ok(add) else -math.inf, bag)
            ok = _ok(bag) and gp >= ref + BAG_MARGIN and close
            rows.append({"claim": product, "paper": c_product, "level": level,
                         "ours": f"fraction {frac:g}, held-out objects: global product {gp:.2f}, additive + global "
                                 f"product {both:.2f}, additive {add:.2f}" + own_text
                                 + ("" if not untestable else f" ({why_not})"),
                         "null": null + (f", additive {add:.2f}" if _ok(add) else ""),
                         "margin": _margin(gp, ref, BAG_MARGIN) if _ok(bag) else "–",
                         "verdict": UNTESTABLE if untestable else verdict(bool(ok))})
    out = pd.DataFrame(rows, columns=PIXEL_COLUMNS[:-1])
    order = {c: i for i, c in enumerate(dict.fromkeys(out["claim"]))} if len(out) else {}
    out = out.sort_values("claim", key=lambda col: col.map(order), kind="stable").reset_index(drop=True)
    out["profile"] = profile
    return out


def d7_contrast(pretrained: Any, pixel_approx: Any, profile: str):
    """D.7 beside appendix E: held-out object recognition of the global-product probe
    (and of the additive probe, the bag-of-concepts reference) at the largest data
    fraction, on each frozen encoder of §5.1 (``pretrained``: the §5.1 sweep table,
    column ``encoder``) and on each pixel model (column ``model``)."""
    gp = FAMILY_LABELS["global_product"]
    rows = []
    for key, table in (("encoder", pretrained), ("model", pixel_approx)):
        top = table[table["fraction"] == table["fraction"].max()]
        for name, sub in top.groupby(key, sort=False):
            g, a = sub[sub["family"] == gp], sub[sub["family"] == FAMILY_LABELS["additive"]]
            if g.empty:
                continue
            rows.append({"encoder": name, "kind": "frozen encoder (§5.1)" if key == "encoder"
                         else "trained from scratch on pixels (appendix E)", "fraction": float(sub["fraction"].iloc[0]),
                         "global product: held-out objects": float(g["heldout_object"].max()),
                         "additive: held-out objects": float(a["heldout_object"].max()) if len(a) else float("nan"),
                         "global product: held-out concepts": float(g["heldout_concept"].max())})
    out = pd.DataFrame(rows)
    if not len(out):
        return out
    out["evidence"] = [_encoder_evidence(n) if k.startswith("frozen") else NATIVE
                       for n, k in zip(out["encoder"], out["kind"])]
    # the paper's "near zero for CLIP and DINOv2" stands beside pretrained CLIP / DINOv2 rows only
    out["paper"] = [PAPER_D7["pixels"] if not k.startswith("frozen") else PAPER_D7["frozen"] if e == NATIVE
                    else "– (the paper's number is CLIP's and DINOv2's)" for k, e in zip(out["kind"], out["evidence"])]
    out["profile"] = profile
    return out
