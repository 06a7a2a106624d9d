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

from .tables import FAMILY_LABELS

SHOWN = "shown"
NOT_SHOWN = "not shown"
UNTESTABLE = "cannot be tested at this profile"
STATUSES = (SHOWN, NOT_SHOWN, UNTESTABLE)
COLUMNS = ["claim", "subject", "paper", "ours", "status", "why", "profile"]


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


def _row(claim: str, subject: str, paper: str, ours: str, status: str, why: str, profile: str) -> dict[str, Any]:
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    return dict(zip(COLUMNS, (claim, subject, paper, ours, status, why, profile)))


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def status_counts(*frames: pd.DataFrame) -> dict[str, int]:
    """How many claims of ``frames`` (claim frames) have each status."""
    out = dict.fromkeys(STATUSES, 0)
    for f in frames:
        for s in f["status"]:
            out[s] += 1
    return out


# ---------------------------------------------------------------------------------
# §4.1 and D.2: additive decomposition and editing
# ---------------------------------------------------------------------------------
def _pick(df: pd.DataFrame, kind: str, est: str = "avg") -> pd.Series | None:
    sub = df[(df["kind"] == kind) & (df["estimator"] == est)]
    return sub.iloc[0] if len(sub) else None


def _trained(s: Any) -> bool:
    """A set whose encoder was trained (pretrained, or a controlled model of §5.2)."""
    return bool(s.pretrained)


def _control_why(s: Any) -> str:
    return (f"{s.encoder} has random weights: a control, not the trained encoder the claim is about "
            "(pretrained weights need the Hugging Face Hub, e.g. Colab)")


def geometry_claims(sets: Sequence[Any], frames: Sequence[pd.DataFrame], edit_frames: Sequence[pd.DataFrame],
                    profile: str, retrieval_level: float = 0.9, k: float = 1.0,
                    case: str = "different") -> pd.DataFrame:
    """§4.1 and D.2, per embedding set of a trained encoder (random-init controls:
    :data:`UNTESTABLE`):

    * objects explain more than concepts: R² of the bag of objects minus the bag of
      concepts (averaging estimators, all scenes) > 0;
    * object reconstructions retrieve their scene: top-1 retrieval >= ``retrieval_level``;
    * editing works: retrieval of the counterfactual (obj-avg bank, strength ``k``,
      ``case`` edits: by default the release's "different"-concept scenes) >=
      ``retrieval_level``.

    ``frames``: :func:`~bindcore.analysis.geometry_sets.decomposition`; ``edit_frames``:
    :func:`~bindcore.analysis.geometry_sets.editing`."""
    rows = []
    gap_paper = (f"bag of concepts up to {PAPER_CONCEPT_R2['text']:.2f} (text) / {PAPER_CONCEPT_R2['CLEVR']:.2f} "
                 f"(image), objects about {PAPER_OBJECTS_OVER_CONCEPTS:.2f} more ({SUMMARY})")
    text, clevr = PAPER_RECONSTRUCTION[("text", "CLIP ViT-B/32")], PAPER_RECONSTRUCTION[("CLEVR", "CLIP ViT-B/32")]
    ret_paper = f"CLIP: {text[2]:.2f} captions, {clevr[2]:.2f} CLEVR ({NOTES})"
    edit_paper = (f"CLIP on CLEVR: {PAPER_EDIT_RETRIEVAL_SUMMARY['scene-averaged']:.2f} with averaged components "
                  f"({SUMMARY})")
    for s, df, ed in zip(sets, frames, edit_frames):
        subject = f"{s.dataset} | {s.encoder}"

        c, o = _pick(df, "concepts"), _pick(df, "objects")
        e = ed[(ed["bank"] == "obj-avg") & np.isclose(ed["k"], k) & (ed["case"] == case)] if len(ed) else ed
        claims: list[tuple[str, str, str, str, str]] = []
        if not _trained(s):
            why = _control_why(s)
            for claim, paper in (("objects explain more than concepts", gap_paper),
                                 ("object reconstructions retrieve their scene", ret_paper),
                                 ("object components edit scenes", edit_paper)):
                rows.append(_row(claim, subject, paper, "–", UNTESTABLE, why, profile))
            continue
        if c is None or o is None or not _ok(c["r2_eval"], o["r2_eval"]):
            claims.append(("objects explain more than concepts", gap_paper, "–", UNTESTABLE,
                           "no averaging R² of both bags"))
        else:
            gap = o["r2_eval"] - c["r2_eval"]
            claims.append(("objects explain more than concepts", gap_paper,
                           f"R² objects {o['r2_eval']:.2f} - concepts {c['r2_eval']:.2f} = {gap:+.2f}",
                           verdict(gap > 0), "shown when the gap is positive"))
        if o is None or not _ok(o.get("retrieval")):
            claims.append(("object reconstructions retrieve their scene", ret_paper, "–", UNTESTABLE,
                           "no retrieval of the object reconstructions"))
        else:
            claims.append(("object reconstructions retrieve their scene", ret_paper,
                           f"{o['retrieval']:.2f} (chance {o['retrieval_chance']:.3f})",
                           verdict(o["retrieval"] >= retrieval_level), f"shown at >= {retrieval_level:g}"))
        if not len(e) or not _ok(e["retrieval"].iloc[0]):
            claims.append(("object components edit scenes", edit_paper, "–", UNTESTABLE,
                           f"no obj-avg edits of the {case!r} case at k = {k:g}"))
        else:
            r = float(e["retrieval"].iloc[0])
            claims.append(("object components edit scenes", edit_paper,
                           f"{r:.2f} ({case} concepts, obj-avg, k = {k:g}, {int(e['n'].iloc[0])} edits)",
                           verdict(r >= retrieval_level), f"shown at >= {retrieval_level:g}"))
        rows += [_row(claim, subject, paper, ours, status, why, profile) for claim, paper, ours, status, why in claims]
    return _frame(rows)


# ---------------------------------------------------------------------------------
# §4.2 / D.1: component attribution
# ---------------------------------------------------------------------------------
def attribution_claims(sets: Sequence[Any], frames: Sequence[pd.DataFrame], profile: str, chance_margin: float = 0.2,
                       keep: float = 0.8, control_drop: float = 0.1, min_original: float = 0.5) -> pd.DataFrame:
    """§4.2 / D.1, per embedding set of a trained encoder (controls: :data:`UNTESTABLE`),
    from :func:`~bindcore.analysis.geometry.component_attribution` frames:

    * removing concept components removes concepts but keeps objects: concept decoding
      falls below ``chance_margin`` while object decoding keeps at least ``keep`` of its
      original value;
    * removing object components removes both: concept and object decoding below
      ``chance_margin``;
    * permuted controls barely change decoding: concepts (permuted concepts) and objects
      (permuted objects) lose at most ``control_drop`` (the mean over derangements).

    Each needs the original embeddings to decode concepts and objects at
    ``min_original`` at least: what is not there cannot be removed (:data:`NOT_SHOWN`)."""
    paper = PAPER_ATTRIBUTION["text"]
    rows = []
    for s, df in zip(sets, frames):
        subject = f"{s.dataset} | {s.encoder}"
        v = {r["variant"].replace(" (control)", ""): r for _, r in df.iterrows()}
        specs = [
            ("removing concept components removes concepts, keeps objects",
             f"text: concepts {paper['original'][0]:.2f} -> {paper['minus concepts'][0]:.2f}, objects "
             f"{paper['minus concepts'][1]:.2f}", ("original", "minus concepts")),
            ("removing object components removes both",
             f"text: concepts {paper['minus objects'][0]:.2f}, objects {paper['minus objects'][1]:.2f}",
             ("original", "minus objects")),
            ("permuted controls barely change decoding",
             f"text: concepts {paper['permuted concepts'][0]:.2f}, objects {paper['permuted objects'][1]:.2f}; "
             f"image: {PAPER_ATTRIBUTION['image']['permuted concepts'][0]:.2f}, "
             f"{PAPER_ATTRIBUTION['image']['permuted objects'][1]:.2f}",
             ("original", "permuted concepts", "permuted objects")),
        ]
        for claim, stated, needs in specs:
            if not _trained(s):
                rows.append(_row(claim, subject, stated, "–", UNTESTABLE, _control_why(s), profile))
                continue
            if not all(n in v and _ok(v[n]["concept"], v[n]["object"]) for n in needs):
                rows.append(_row(claim, subject, stated, "–", UNTESTABLE, f"needs the variants {list(needs)}",
                                 profile))
                continue
            o = v["original"]
            if min(o["concept"], o["object"]) < min_original:
                rows.append(_row(claim, subject, stated, f"original: concepts {o['concept']:.2f}, objects "
                                 f"{o['object']:.2f}", NOT_SHOWN,
                                 f"the original embeddings decode less than {min_original:g}: nothing to remove",
                                 profile))
                continue
            if needs[1] == "minus concepts":
                m = v["minus concepts"]
                ours = f"concepts {o['concept']:.2f} -> {m['concept']:.2f}, objects {o['object']:.2f} -> {m['object']:.2f}"
                holds = m["concept"] < chance_margin and m["object"] >= keep * o["object"]
                why = f"shown when concepts fall below {chance_margin:g} and objects keep {keep:g} of theirs"
            elif needs[1] == "minus objects":
                m = v["minus objects"]
                ours = f"concepts {m['concept']:.2f}, objects {m['object']:.2f}"
                holds = m["concept"] < chance_margin and m["object"] < chance_margin
                why = f"shown when both fall below {chance_margin:g}"
            else:
                pc, po = v["permuted concepts"], v["permuted objects"]
                dc, do = o["concept"] - pc["concept"], o["object"] - po["object"]
                ours = f"concepts lose {dc:+.2f}, objects lose {do:+.2f}"
                holds = dc <= control_drop and do <= control_drop
                why = f"shown when each control loses at most {control_drop:g}"
            rows.append(_row(claim, subject, stated, ours, verdict(bool(holds)), why, profile))
    return _frame(rows)


# ---------------------------------------------------------------------------------
# §5.1: binding functions of pretrained encoders
# ---------------------------------------------------------------------------------
def pretrained_claims(table: Any, profile: str, concept_level: float = PAPER_PRETRAINED_CONCEPTS["level"],
                      above: float = PAPER_PRETRAINED_CONCEPTS["above fraction"], gap: float = 0.3) -> pd.DataFrame:
    """§5.1 / D.6 / D.7, per encoder of an approximator table
    (:func:`~bindcore.book.tables.pretrained_sweeps`):

    * concepts generalize: the widest MLP's held-out concept recognition is at least
      ``concept_level`` at every data fraction above ``above``;
    * objects do not, for any family: at the largest fraction the best family's held-out
      object recognition stays at least ``gap`` below the widest MLP's held-out concept
      recognition (the paper: about 0.20 against >= 0.80).

    Encoders with random weights (named "... (random init)"): :data:`UNTESTABLE`."""
    rows = []
    paper_c = f">= {concept_level:.2f} above fraction {above:g} ({SUMMARY})"
    paper_o = (f"about {PAPER_PRETRAINED_OBJECTS['level']:.2f} at width {PAPER_PRETRAINED_OBJECTS['width']}, "
               f"fraction {PAPER_PRETRAINED_OBJECTS['fraction']:g}, every family ({NOTES})")
    for name, sub in table.groupby("encoder", sort=False):
        if "random init" in name:
            why = f"{name} has random weights: the paper's control, not the pretrained encoder the claims are about"
            rows += [_row(c, name, pp, "–", UNTESTABLE, why, profile) for c, pp in
                     (("concepts generalize", paper_c), ("objects do not generalize, for any family", paper_o))]
            continue
        mlp = sub[sub["family"] == FAMILY_LABELS["mlp"]]
        mlp = mlp[mlp["width"] == mlp["width"].max()] if len(mlp) else mlp
        hi = mlp[mlp["fraction"] > above]
        if not len(hi) or not hi["heldout_concept"].notna().all():
            rows.append(_row("concepts generalize", name, paper_c, "–", UNTESTABLE,
                             f"no MLP results at a data fraction above {above:g}", profile))
        else:
            worst = hi.loc[hi["heldout_concept"].idxmin()]
            rows.append(_row("concepts generalize", name, paper_c,
                             f"widest MLP (width {int(worst['width'])}): at least {worst['heldout_concept']:.2f} "
                             f"(fraction {worst['fraction']:g})",
                             verdict(worst["heldout_concept"] >= concept_level),
                             f"shown when >= {concept_level:g} at every fraction above {above:g}", profile))
        top = sub[sub["fraction"] == sub["fraction"].max()] if len(sub) else sub
        mtop = mlp[mlp["fraction"] == sub["fraction"].max()] if len(mlp) and len(sub) else mlp
        if not len(top) or not len(mtop) or not _ok(mtop["heldout_concept"].iloc[0]) \
                or not top["heldout_object"].notna().any():
            rows.append(_row("objects do not generalize, for any family", name, paper_o, "–", UNTESTABLE,
                             "no MLP and family results at the largest fraction", profile))
        else:
            best = top.loc[top["heldout_object"].idxmax()]
            conc = float(mtop["heldout_concept"].iloc[0])
            rows.append(_row("objects do not generalize, for any family", name, paper_o,
                             f"best family ({best['family']}): objects {best['heldout_object']:.2f} vs concepts "
                             f"{conc:.2f} (fraction {best['fraction']:g})",
                             verdict(best["heldout_object"] <= conc - gap),
                             f"shown when every family's objects stay {gap:g} below the concepts", profile))
    return _frame(rows)


# ---------------------------------------------------------------------------------
# §5.3 and §5.4: binding functions of the controlled models
# ---------------------------------------------------------------------------------
def width_claims(table: Any, profile: str, min_best: float = 0.5, small: int = PAPER_APPROXIMATOR_WIDTHS[0],
                 share: float = 0.9) -> pd.DataFrame:
    """§5.3, at the largest data fraction, from an MLP approximator table
    (:func:`~bindcore.book.tables.controlled_sweeps`):

    * per model, small MLPs suffice: the best width reaches held-out object recognition
      >= ``min_best`` (below it no width generalizes and nothing is shown), and the
      smallest width reaching ``share`` of the best is at most ``small`` (the paper's
      smallest width);
    * across models, the gap (best minus the smallest width's recognition) grows with
      the object space: it rises from the smallest to the largest |O| (needs two sizes)."""
    top = table[(table["fraction"] == table["fraction"].max()) & (table["family"] == FAMILY_LABELS["mlp"])]
    rows, gaps = [], []
    for name, sub in top.groupby("model", sort=False):
        sub = sub.groupby("width", as_index=False)["heldout_object"].mean().sort_values("width")
        claim = "a small MLP suffices"
        if len(sub) < 2 or not sub["heldout_object"].notna().all():
            rows.append(_row(claim, name, PAPER_WIDTH, "–", UNTESTABLE, "needs two or more widths", profile))
            continue
        best = float(sub["heldout_object"].max())
        first = sub.iloc[0]
        gaps.append((table.loc[table["model"] == name, "objects"].iloc[0] if "objects" in table else np.nan,
                     best - float(first["heldout_object"]), name))
        if best < min_best:
            rows.append(_row(claim, name, PAPER_WIDTH,
                             f"no width generalizes: best held-out objects {best:.2f} "
                             f"(width {int(sub.loc[sub['heldout_object'].idxmax(), 'width'])})",
                             NOT_SHOWN, f"shown when the best width reaches >= {min_best:g}", profile))
            continue
        good = sub[sub["heldout_object"] >= share * best]
        w = int(good["width"].min())
        rows.append(_row(claim, name, PAPER_WIDTH,
                         f"smallest width reaching {share:.0%} of the best ({best:.2f}): {w}; width "
                         f"{int(first['width'])}: {first['heldout_object']:.2f}",
                         verdict(w <= small), f"shown when that width is <= {small}", profile))
    claim = "the gap to large widths grows with |O|"
    sized = sorted(g for g in gaps if _ok(g[0]))
    if len({g[0] for g in sized}) < 2:
        rows.append(_row(claim, "all models", PAPER_WIDTH, "–", UNTESTABLE,
                         "needs models of two or more object-space sizes", profile))
    else:
        ours = ", ".join(f"|O|={int(o)}: {g:+.2f}" for o, g, _ in sized)
        rows.append(_row(claim, "all models", PAPER_WIDTH, f"gap (best - smallest width): {ours}",
                         verdict(sized[-1][1] > sized[0][1]),
                         "shown when the largest |O| has a larger gap than the smallest", profile))
    return _frame(rows)


def form_claims(table: Any, profile: str, concept_level: float = 0.8, gap: float = 0.3, margin: float = 0.1,
                tolerance: float = 0.02, min_best: float = 0.5) -> pd.DataFrame:
    """§5.4, at the largest data fraction, per controlled model, from an approximator
    table of several families (:func:`~bindcore.book.tables.controlled_sweeps`):

    * the additive probe recovers concepts, not objects: its held-out concept recognition
      is >= ``concept_level`` and its object recognition at least ``gap`` below that;
    * products recover binding: the best product family beats the additive probe on
      held-out objects by >= ``margin``;
    * the global product is best: a global-product family (with or without the additive
      terms) is within ``tolerance`` of the best family on held-out objects, and that
      best reaches ``min_best`` (when no family recovers objects, none is best)."""
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

        def row(claim: str, ours: str, status: str, why: str, name: str = name) -> None:
            rows.append(_row(claim, name, PAPER_FORM, ours, status, why, profile))

        if add is None or not _ok(add["heldout_concept"], add["heldout_object"]):
            row("the additive probe recovers concepts, not objects", "–", UNTESTABLE, "no additive probe")
        else:
            row("the additive probe recovers concepts, not objects",
                f"concepts {add['heldout_concept']:.2f}, objects {add['heldout_object']:.2f}",
                verdict(add["heldout_concept"] >= concept_level
                        and add["heldout_object"] <= add["heldout_concept"] - gap),
                f"shown when concepts >= {concept_level:g} and objects at least {gap:g} below")
        if add is None or not len(prod) or not prod["heldout_object"].notna().any():
            row("products recover binding", "–", UNTESTABLE, "needs the additive probe and a product family")
        else:
            fam = prod["heldout_object"].idxmax()
            row("products recover binding",
                f"{fam}: objects {prod.loc[fam, 'heldout_object']:.2f} vs additive {add['heldout_object']:.2f}",
                verdict(prod.loc[fam, "heldout_object"] >= add["heldout_object"] + margin),
                f"shown when a product beats the additive probe by >= {margin:g}")
        if not len(glob) or len(best) < 2 or not best["heldout_object"].notna().any():
            row("the global product is best", "–", UNTESTABLE, "needs a global product and another family")
        else:
            top_fam = best["heldout_object"].idxmax()
            g, b = glob["heldout_object"].max(), best["heldout_object"].max()
            row("the global product is best",
                f"best: {top_fam} ({b:.2f}); global product {g:.2f}",
                verdict(g >= b - tolerance and b >= min_best),
                f"shown when a global product is within {tolerance:g} of the best family and the best reaches "
                f"{min_best:g}")
    return _frame(rows)


def figure9_claims(table: pd.DataFrame, profile: str, min_models: int = 3, min_rho: float = 0.5) -> pd.DataFrame:
    """Figure 9, per object-space size, from :func:`~bindcore.book.tables.figure9_table`:
    the global-product probe's held-out object recognition tracks the model's own
    (Spearman rank correlation >= ``min_rho`` over at least ``min_models`` models of that
    size; fewer: :data:`UNTESTABLE`); where the records carry swap-pair recognition (a
    scene and its attribute-swapped twin both recognised, which a bag of concepts never
    achieves), the same against it."""
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
            rows.append(_row(claim, subject, PAPER_FIGURE9, f"rank correlation {rho:.2f} over {len(sub)} models",
                             verdict(bool(rho >= min_rho)), f"shown at a rank correlation >= {min_rho:g}", profile))
    return _frame(rows)


# ---------------------------------------------------------------------------------
# appendix D.3, D.4, D.5
# ---------------------------------------------------------------------------------
def _who(r: pd.Series) -> str:
    """An encoder and what its weights are, once (no "random init (random init)")."""
    if r["weights"] == "random init (control)":
        return f"{r['encoder']}, control" if "random init" in r["encoder"] else f"{r['encoder']}, random init (control)"
    return f"{r['encoder']}, {r['weights']}"


def additional_claims(three: pd.DataFrame, grid: pd.DataFrame, profile: str, keep: float = 0.9,
                      high: float = 0.5) -> pd.DataFrame:
    """The paper's D.3 and D.5 claims (summary), per image encoder of ``three``
    (:func:`~bindcore.book.tables.three_object_table`) and over the pretrained sets of
    ``grid`` (:func:`~bindcore.book.tables.mds_table`); random-init encoders:
    :data:`UNTESTABLE` (the claims are CLIP's):

    * probing stays high with occlusion: object probing of the occluded scenes is at
      least ``keep`` of that without occlusion, and at least ``high``;
    * object-based beats concept-based reconstruction: held-out R² of the bag of objects
      above that of the bag of concepts (averaging estimators), with and without occlusion;
    * occlusion lowers retrieval of the object reconstructions (all scenes);
    * D.5, grid structure strongest for text: the grid-neighbour recall (full
      embedding) of every pretrained caption set is above chance and above that of every
      pretrained image set (needs both)."""
    (c_probe, p_probe), (c_r2, p_r2), (c_ret, p_ret), (c_mds, p_mds) = PAPER_CLAIMS_APPENDIX_D
    rows = []
    for (enc, _), sub in three.groupby(["encoder", "weights"], sort=False):
        by = {bool(r["occlusion"]): r for _, r in sub.iterrows()}
        first = sub.iloc[0]
        who = _who(first)
        specs = ((c_probe, p_probe), (c_r2, p_r2), (c_ret, p_ret))
        if first["weights"] != "pretrained":
            rows += [_row(c, who, p, "–", UNTESTABLE, f"{enc} has random weights; the claim is pretrained CLIP's",
                          profile) for c, p in specs]
            continue
        if set(by) != {False, True}:
            rows += [_row(c, who, p, "–", UNTESTABLE, "needs scenes with and without occlusion", profile)
                     for c, p in specs]
            continue
        a, b = by[False], by[True]
        rows.append(_row(c_probe, who, p_probe,
                         f"objects {a['probing objects']:.2f} -> {b['probing objects']:.2f} (concepts "
                         f"{a['probing concepts']:.2f} -> {b['probing concepts']:.2f})",
                         verdict(b["probing objects"] >= max(keep * a["probing objects"], high)),
                         f"shown when occluded object probing keeps {keep:g} of it and reaches {high:g}", profile))
        o, c = "R² held-out objects (avg)", "R² held-out concepts (avg)"
        rows.append(_row(c_r2, who, p_r2,
                         f"objects vs concepts: {a[o]:.2f} vs {a[c]:.2f}; occluded {b[o]:.2f} vs {b[c]:.2f}",
                         verdict(bool(a[o] > a[c] and b[o] > b[c])), "shown when objects beat concepts in both",
                         profile))
        rt = "retrieval objects (all scenes)"
        rows.append(_row(c_ret, who, p_ret, f"{a[rt]:.2f} -> {b[rt]:.2f}", verdict(bool(b[rt] < a[rt])),
                         "shown when retrieval is lower with occlusion", profile))
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
        holds = bool((text[col] > text["chance"]).all() and text[col].min() > image[col].max())
        rows.append(_row(c_mds, "pretrained sets", p_mds, ours, verdict(holds),
                         "shown when every caption set beats chance and every image set", profile))
    return _frame(rows)


def above_chance(rate: float, chance: float, n: int, z: float = 3.0) -> bool:
    """``rate`` of ``n`` trials lies more than ``z`` binomial standard errors above ``chance``."""
    if not _ok(rate, chance) or n < 1:
        return False
    return rate > chance + z * math.sqrt(max(chance * (1 - chance), 1e-12) / n)


def natural_claims(table: pd.DataFrame, profile: str, z: float = 3.0) -> pd.DataFrame:
    """D.4 (summary): on generated natural images, decomposition and editing retrieval
    stay above chance. Per encoder of :func:`~bindcore.book.tables.natural_table`:
    shown when both retrievals lie more than ``z`` binomial standard errors above their
    chance levels; random-init encoders: :data:`UNTESTABLE` (the claim is CLIP's)."""
    from bindcore.paper import PAPER_NATURAL_CLAIM

    rows = []
    for _, r in table.iterrows():
        who = _who(r)
        claim = "decomposition and editing retrieval above chance"
        ours = (f"decomposition {r['retrieval']:.2f} (chance {r['retrieval chance']:.3f}, {int(r['scenes'])} scenes); "
                f"editing {r['edit retrieval']:.2f} (chance {r['edit chance']:.3f}, {int(r['edits'])} edits)")
        if r["weights"] != "pretrained":
            rows.append(_row(claim, who, PAPER_NATURAL_CLAIM, ours, UNTESTABLE,
                             f"{r['encoder']} has random weights; the claim is pretrained CLIP's", profile))
            continue
        holds = above_chance(r["retrieval"], r["retrieval chance"], int(r["scenes"]), z) and above_chance(
            r["edit retrieval"], r["edit chance"], int(r["edits"]), z)
        rows.append(_row(claim, who, PAPER_NATURAL_CLAIM, ours, verdict(holds),
                         f"shown when both lie {z:g} standard errors above chance", profile))
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
                         profile))
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
                             f"no size reaches swap pairs {transition:g}", profile))
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
    reproduced (shown), where not, and where it could not be tested, naming the
    subjects (object-space sizes) and the source (the table's ``profile``)."""
    out = []
    for claim, rows in frame.groupby("claim", sort=False):
        source = ", ".join(dict.fromkeys(rows["profile"]))
        parts = []
        for status, words in ((SHOWN, "reproduced"), (NOT_SHOWN, "not reproduced"), (UNTESTABLE, "not testable")):
            who = rows.loc[rows["status"] == status, "subject"].tolist()
            if who:
                parts.append(f"{words} {'' if who == ['across sizes'] else 'at '}{', '.join(who)}")
        out.append(f"{claim[:1].upper()}{claim[1:]}: {'; '.join(parts)} ({source}).")
    return out


# ---------------------------------------------------------------------------------
# appendix E (pixel encoders) and the D.7 contrast
# ---------------------------------------------------------------------------------
# thresholds of the claim rules (see :func:`pixel_claim_rules`)
SWAP_THRESHOLD = 0.1
SMALL_WIDTH = 64
CEILING_SHARE = 0.75


def pixel_claim_rules() -> str:
    """The rules by which :func:`pixel_claims` turns numbers into verdicts, in words."""
    return (
        f"binding generalizes at a level: held-out swap-pair recognition (any bag of concepts scores 0) reaches "
        f"{SWAP_THRESHOLD:g}. Small MLPs approximate the binding map: an MLP of width <= {SMALL_WIDTH} reaches "
        f"90 % of the best width's held-out object recognition, and the best reaches {CEILING_SHARE:.0%} of the "
        f"model's own (the probes reading its real embeddings of the same scenes) ('partly shown' when only the "
        f"first holds). The global product recovers objects: it beats the additive probe on held-out objects and "
        f"reaches {CEILING_SHARE:.0%} of the model's own ('partly shown' when it beats the additive probe by at "
        f"least {SWAP_THRESHOLD:g} but stays below that share). 'cannot be tested' when the model's own held-out "
        f"object recognition is below {SWAP_THRESHOLD:g}: there is no binding to approximate."
    )


def _level_of(name: str) -> str:
    """The visual level in a pixel model's name (``PixelTrainConfig.short_name``)."""
    for level in LEVELS:
        if f", {level}," in name:
            return level
    return name


def pixel_claims(summary: Any, approx: Any, profile: str, ceiling: Any = None):
    """Appendix E's claims, the paper's statement of each and ours, per visual level,
    with the verdicts of :func:`pixel_claim_rules`.

    ``summary``: :func:`bindcore.book.tables.level_summary`; ``approx``: the approximator
    table (:func:`bindcore.book.tables.approximator_table` rows with a ``model`` column)
    of the MLP widths and families; ``ceiling``:
    :func:`bindcore.analysis.complexity.true_embedding_ceiling` of the same binding data
    (``model`` column). Approximators are read at their largest data fraction."""
    (generalizes, c_generalizes), (small, c_small), (product, c_product) = PAPER_CLAIMS_APPENDIX_E
    rows = []
    for s in summary.to_dict("records"):
        rows.append({"claim": generalizes, "paper": c_generalizes, "level": s["level"],
                     "ours": f"coverage {s['coverage']:g}: swap pairs {s['swap pairs']:.2f}, strict "
                             f"{s['held-out objects, strict']:.2f} (bag floor {s['bag floor']:.2f}, ceiling "
                             f"{s['bag ceiling']:.2f})",
                     "verdict": "shown" if s["swap pairs"] >= SWAP_THRESHOLD else "not shown"})
    frac = approx["fraction"].max()
    top = approx[approx["fraction"] == frac]
    for name, sub in top.groupby("model", sort=False):
        level = _level_of(name)
        own = float("nan")
        if ceiling is not None:
            c = ceiling[(ceiling["model"] == name) & (ceiling["fraction"] == frac)]["heldout_object"]
            own = float(c.iloc[0]) if len(c) else own
        untestable = own == own and own < SWAP_THRESHOLD
        own_text = f"; the model's own: {own:.2f}" if own == own else ""
        mlp = sub[sub["family"] == FAMILY_LABELS["mlp"]].groupby("width")["heldout_object"].mean().sort_index()
        if len(mlp):
            best = float(mlp.max())
            smallest = int(mlp.index[mlp >= 0.9 * best][0])
            small_ok = smallest <= SMALL_WIDTH and best >= SWAP_THRESHOLD
            close = own != own or best >= CEILING_SHARE * own
            verdict = ("cannot be tested" if untestable else "shown" if small_ok and close
                       else "partly shown" if small_ok else "not shown")
            rows.append({"claim": small, "paper": c_small, "level": level,
                         "ours": f"fraction {frac:g}, held-out objects by MLP width: "
                                 + ", ".join(f"{int(w)}: {v:.2f}" for w, v in mlp.items())
                                 + f"; width {smallest} reaches 90 % of the best" + own_text,
                         "verdict": verdict})

        def fam(f: str, sub: Any = sub) -> float:
            v = sub[sub["family"] == FAMILY_LABELS[f]]["heldout_object"]
            return float(v.max()) if len(v) else float("nan")

        gp, add, both = fam("global_product"), fam("additive"), fam("sum_global_product")
        if gp == gp:
            close = own != own or gp >= CEILING_SHARE * own
            verdict = ("cannot be tested" if untestable else "shown" if gp > add and close and gp >= SWAP_THRESHOLD
                       else "partly shown" if gp >= add + SWAP_THRESHOLD else "not shown")
            rows.append({"claim": product, "paper": c_product, "level": level,
                         "ours": f"fraction {frac:g}, held-out objects: global product {gp:.2f}, additive + global "
                                 f"product {both:.2f}, additive {add:.2f}" + own_text,
                         "verdict": verdict})
    out = pd.DataFrame(rows)
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
            rows.append({"encoder": name, "kind": "frozen, pretrained or random init (§5.1)" if key == "encoder"
                         else "trained from scratch on pixels (appendix E)", "fraction": float(sub["fraction"].iloc[0]),
                         "global product: held-out objects": float(g["heldout_object"].max()),
                         "additive: held-out objects": float(a["heldout_object"].max()) if len(a) else float("nan"),
                         "global product: held-out concepts": float(g["heldout_concept"].max())})
    out = pd.DataFrame(rows)
    out["paper"] = [PAPER_D7["frozen"] if k.startswith("frozen") else PAPER_D7["pixels"] for k in out["kind"]]
    out["profile"] = profile
    return out
