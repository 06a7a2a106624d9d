"""§5.1, §5.3, §5.4 and figure 9: claims about binding functions from the approximator tables
of pretrained encoders and of the controlled models."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from bindcore.analysis.approximators.labels import FAMILY_LABELS
from bindcore.paper import (
    CLIP,
    NOTES,
    PAPER_APPROXIMATOR_WIDTHS,
    PAPER_FIGURE9,
    PAPER_FORM,
    PAPER_FORM_ORDER,
    PAPER_PRETRAINED_CONCEPTS,
    PAPER_PRETRAINED_OBJECTS,
    PAPER_WIDTH,
    SUMMARY,
    fmt_objects,
    fmt_range,
)

from .core import (
    BAG_MARGIN,
    BINDS_AT,
    CONTROL,
    NOT_SHOWN,
    NOT_TESTABLE,
    UNTESTABLE,
    _ceiling,
    _frame,
    _margin,
    _ok,
    _row,
    binds,
    direction_sentence,
    evidence,
    margin_text,
    no_binding_why,
    verdict,
)

# the column of the controlled approximator tables and figure 9's table that gates their claims:
# the model's swap-pair recognition of validation objects (held out, never test objects), the
# precondition of claims about models that bind
SWAPS = "model: validation swap pairs"

# §5.1's rule numbers (written before the records they judge), read by its claims and its sentences
PRETRAINED_GAP = 0.3  # every family's held-out objects at least this far below the held-out concepts
PRETRAINED_MARGIN = 0.2  # the held-out concepts at least this far above their null
RANK_QUANTILE = 0.95  # figure 9: the quantile of the permutation null a rank correlation must clear
# "a small MLP suffices" (§5.3, appendix E): an MLP this wide (the paper's smallest) reaches this share of the best
SMALL_WIDTH = PAPER_APPROXIMATOR_WIDTHS[0]
SMALL_SHARE = 0.9


def _widest_mlp(sub: pd.DataFrame) -> pd.DataFrame:
    mlp = sub[sub["family"] == FAMILY_LABELS["mlp"]]
    return mlp[mlp["width"] == mlp["width"].max()] if len(mlp) else mlp


def _pretrained_null(table: Any, null: Any, above: float) -> tuple[float, str]:
    """The null of §5.1's concept claim: the widest MLP's lowest held-out concepts above
    fraction ``above`` on the ``null`` table, else on the first random-init control; its name."""
    if null is not None and len(null):
        null_of, null_name = _widest_mlp(null), "the null sweep"
    else:
        controls = table[table["encoder"].str.contains("random init", regex=False)] if len(table) else table
        null_of = _widest_mlp(controls[controls["encoder"] == controls["encoder"].iloc[0]]) if len(controls) \
            else controls
        null_name = f"{controls['encoder'].iloc[0]} (the paper's control)" if len(controls) else ""
    null_hi = null_of[null_of["fraction"] > above] if len(null_of) else null_of
    return (float(null_hi["heldout_concept"].min()) if len(null_hi) else math.nan), null_name


def pretrained_claims(table: Any, profile: str, null: Any = None) -> pd.DataFrame:
    """§5.1 / D.6 / D.7 per encoder: the widest MLP's held-out concepts reach the paper's level
    above the paper's fraction and :data:`PRETRAINED_MARGIN` over the ``null`` table (else the
    random-init control; neither: untestable); the best family's objects stay
    :data:`PRETRAINED_GAP` below that."""
    concept_level, above = PAPER_PRETRAINED_CONCEPTS["level"], PAPER_PRETRAINED_CONCEPTS["above fraction"]
    gap, margin = PRETRAINED_GAP, PRETRAINED_MARGIN
    rows = []
    paper_c = f">= {concept_level:.2f} above fraction {above:g} ({SUMMARY})"
    paper_o = (f"about {PAPER_PRETRAINED_OBJECTS['level']:.2f} at width {PAPER_PRETRAINED_OBJECTS['width']}, "
               f"fraction {PAPER_PRETRAINED_OBJECTS['fraction']:g}, every family ({NOTES})")
    null_c, null_name = _pretrained_null(table, null, above)
    for name, sub in table.groupby("encoder", sort=False):
        ev = evidence(name)
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
                             margin=margin_text(conc - best['heldout_object'], gap)))
    return _frame(rows)


def separation_sentence(subject: str, ours: Any, null: Any, null_name: str, margin: float,
                        where: str = "") -> str:
    """Whether §5.1's concept diagnostic tells ``subject`` from its null (the untrained tower):
    its held-out concepts (``ours``, read ``where``) at least ``margin`` above the null's, the
    rule of the concept claim's margin; in one sentence with both numbers."""
    if not _ok(ours, null):
        return (f"The concept diagnostic cannot compare {subject} with a null here: "
                f"{'no null (neither a null sweep nor a random-init control)' if _ok(ours) else 'no concepts'}.")
    numbers = (f"held-out concepts {fmt_range(float(ours))}{f' ({where})' if where else ''} against "
               f"{fmt_range(float(null))} for {null_name}, a margin of {_margin(float(ours), float(null), margin)}")
    if float(ours) - float(null) >= margin:
        return f"The concept diagnostic separates {subject} from its null: {numbers}."
    return (f"The concept diagnostic does not separate {subject} from its null here: {numbers}; on these scenes "
            "it cannot tell a trained encoder from the untrained architecture.")


def pretrained_sentences(table: Any, null: Any = None) -> list[str]:
    """§5.1 in words, per encoder with trained weights, with the numbers of
    :func:`pretrained_claims` (same arguments): whether the paper's direction (held-out
    concepts above held-out objects) shows, beside the paper's numbers and the object
    claim's verdict; and whether the concept diagnostic separates the encoder from its null."""
    if not len(table):
        return []
    claims = pretrained_claims(table, "", null)
    above = PAPER_PRETRAINED_CONCEPTS["above fraction"]
    null_c, null_name = _pretrained_null(table, null, above)
    paper = (f"{CLIP}, concepts >= {fmt_range(PAPER_PRETRAINED_CONCEPTS['level'])}, objects about "
             f"{fmt_range(PAPER_PRETRAINED_OBJECTS['level'])}")
    out = []
    for name, sub in table.groupby("encoder", sort=False):
        if evidence(name) == CONTROL:
            continue
        mlp, top = _widest_mlp(sub), sub[sub["fraction"] == sub["fraction"].max()]
        mtop = mlp[mlp["fraction"] == sub["fraction"].max()]
        conc = float(mtop["heldout_concept"].iloc[0]) if len(mtop) else math.nan
        obj = float(top["heldout_object"].max()) if top["heldout_object"].notna().any() else math.nan
        status = claims.loc[(claims["subject"] == name)
                            & (claims["claim"] == "objects do not generalize, for any family"), "status"]
        out.append(direction_sentence([("held-out concepts", conc), ("held-out objects", obj)], name, paper,
                                      claim="objects do not generalize, for any family",
                                      status=status.iloc[0] if len(status) else ""))
        hi = mlp[mlp["fraction"] > above]
        worst = float(hi["heldout_concept"].min()) if len(hi) else math.nan
        out.append(separation_sentence(name, worst, null_c, null_name, PRETRAINED_MARGIN,
                                       f"the widest MLP's lowest at the fractions above {above:g}"))
    return out


def width_claims(table: Any, profile: str, margin: float = BAG_MARGIN, small: int = SMALL_WIDTH,
                 share: float = SMALL_SHARE, gap_margin: float = 0.1) -> pd.DataFrame:
    """§5.3 at the largest fraction: per model the best MLP clears the bag ceiling by ``margin``
    and width ``small`` (the paper's smallest) reaches ``share`` of it; across sizes the gap from
    width ``small`` to the best of the largest |O| exceeds the smallest |O|'s by ``gap_margin``
    (smaller widths, an extension of the paper's grid, never set the gap)."""
    top = table[(table["fraction"] == table["fraction"].max()) & (table["family"] == FAMILY_LABELS["mlp"])]
    rows, gaps = [], []
    for name, full in top.groupby("model", sort=False):
        sub = full.groupby("width", as_index=False)["heldout_object"].mean().sort_values("width")
        claim = "a small MLP suffices"
        if SWAPS in full and not binds(full[SWAPS].iloc[0]):
            rows.append(_row(claim, name, PAPER_WIDTH, "–", NOT_TESTABLE, no_binding_why(full[SWAPS].iloc[0]),
                             profile))
            continue
        if len(sub) < 2 or not sub["heldout_object"].notna().all():
            rows.append(_row(claim, name, PAPER_WIDTH, "–", UNTESTABLE, "needs two or more widths", profile))
            continue
        best = float(sub["heldout_object"].max())
        ref = sub.loc[sub["width"] == small, "heldout_object"]
        smallest = float(sub["heldout_object"].iloc[0])
        first = (small, float(ref.iloc[0])) if len(ref) else (int(sub["width"].iloc[0]), smallest)
        gaps.append((table.loc[table["model"] == name, "objects"].iloc[0] if "objects" in table else np.nan,
                     best - (float(ref.iloc[0]) if len(ref) else math.nan), best - smallest, name))
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
                         f"{first[0]}: {first[1]:.2f}",
                         verdict(w <= small), f"shown when the best clears the bag ceiling by >= {margin:g} and "
                         f"that width is <= {small}", profile, null=null, margin=mg))
    claim = "the gap to large widths grows with |O|"
    # the gap from width `small` decides on approximators trained to their plateau (records with
    # a "stop"), the rule of 2026-12-07 written before them; on fixed-budget records, which it was
    # written after, the gap from the table's smallest width decides and the other is shown
    converged = "stop" in top and top["stop"].notna().all() and len(top)
    from_small = sorted((o, g, name) for o, g, _, name in gaps if _ok(o) and _ok(g))
    from_smallest = sorted((o, g, name) for o, _, g, name in gaps if _ok(o) and _ok(g))
    sized = from_small if converged else from_smallest
    also = "" if converged else (f"; from width {small} (a rule written after these fixed-budget records: shown, "
                                 "not deciding): " + ", ".join(f"{fmt_objects(o)}: {g:+.2f}" for o, g, _ in from_small))
    if len({g[0] for g in sized}) < 2 and SWAPS in top and not top[SWAPS].map(binds).all():
        rows.append(_row(claim, "all models", PAPER_WIDTH, "–", NOT_TESTABLE,
                         "needs models that bind of two or more object-space sizes, and fewer bind here", profile))
    elif len({g[0] for g in sized}) < 2:
        rows.append(_row(claim, "all models", PAPER_WIDTH, "–", UNTESTABLE,
                         "needs models of two or more object-space sizes"
                         + (f" with an MLP of width {small}" if converged else ""), profile))
    else:
        ours = ", ".join(f"{fmt_objects(o)}: {g:+.2f}" for o, g, _ in sized)
        rows.append(_row(claim, "all models", PAPER_WIDTH,
                         f"gap (best - {f'width {small}' if converged else 'smallest width'}): {ours}{also}",
                         verdict(sized[-1][1] - sized[0][1] >= gap_margin),
                         f"shown when the largest |O|'s gap exceeds the smallest |O|'s by >= {gap_margin:g}", profile,
                         null=f"smallest |O|: {sized[0][1]:+.2f}", margin=_margin(sized[-1][1], sized[0][1], gap_margin)))
    return _frame(rows)


# the paper's "global product": the pure product or the product with the additive terms
# (reference-spec §8.3 reads the paper's probe as the latter); a claim takes the better
GLOBAL_PRODUCTS = ("global_product", "sum_global_product")


def form_claims(table: Any, profile: str, concept_level: float = 0.8, gap: float = 0.3, margin: float = BAG_MARGIN,
                tolerance: float = 0.02) -> pd.DataFrame:
    """§5.4 at the largest fraction per model: additive concepts >= ``concept_level``, objects
    ``gap`` below; the best product beats additive and bag ceiling by ``margin``; a global
    product is within ``tolerance`` of the best. No bag ceiling: untestable."""
    top = table[table["fraction"] == table["fraction"].max()]
    products = [FAMILY_LABELS[f] for f in (*GLOBAL_PRODUCTS, "within_object_product", "sum_within_object_product")]
    globals_ = [FAMILY_LABELS[f] for f in GLOBAL_PRODUCTS]
    rows = []
    for name, sub in top.groupby("model", sort=False):
        if SWAPS in sub and not binds(sub[SWAPS].iloc[0]):
            for claim in ("the additive probe recovers concepts, not objects", "products recover binding",
                          "the global product is best"):
                rows.append(_row(claim, name, PAPER_FORM, "–", NOT_TESTABLE, no_binding_why(sub[SWAPS].iloc[0]),
                                 profile))
            continue
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
                mg=margin_text(add['heldout_concept'] - add['heldout_object'], gap))
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
            top_fam, glob_fam = best["heldout_object"].idxmax(), glob["heldout_object"].idxmax()
            g, b = glob["heldout_object"].max(), best["heldout_object"].max()
            ours = f"best: {top_fam} ({b:.2f}); {glob_fam} {g:.2f}"  # the global product's form that stands, named
            if not _ok(ceil):
                row("the global product is best", ours, UNTESTABLE, no_ceiling)
            else:
                row("the global product is best", ours, verdict(g >= b - tolerance and b >= ceil + margin),
                    f"shown when a global product is within {tolerance:g} of the best family and the best clears "
                    f"the bag ceiling by >= {margin:g}", null=f"bag ceiling {ceil:.2f}", mg=_margin(b, ceil, margin))
    return _frame(rows)


def form_order(sub: pd.DataFrame, order: tuple[str, ...] = PAPER_FORM_ORDER) -> list[tuple[str, float]]:
    """(family label, best held-out objects) of one model's table at its largest fraction, for
    the families of ``order`` (NaN where a family is missing). The global product is read as
    :func:`form_claims` reads it: the better of its two forms (:data:`GLOBAL_PRODUCTS`),
    named by the form that stands."""
    top = sub[sub["fraction"] == sub["fraction"].max()]
    out = []
    for f in order:
        forms = GLOBAL_PRODUCTS if f == "global_product" else (f,)
        best = [(float(v.max()), FAMILY_LABELS[g]) for g in forms
                if (v := top.loc[top["family"] == FAMILY_LABELS[g], "heldout_object"]).notna().any()]
        value, label = max(best) if best else (math.nan, FAMILY_LABELS[f])
        out.append((label, value))
    return out


def form_sentences(table: Any, claims: pd.DataFrame | None = None, key: str = "model",
                   claim: str = "the global product is best", statuses: dict[str, str] | None = None,
                   order: tuple[str, ...] = PAPER_FORM_ORDER) -> list[str]:
    """Per model of a functional-form table (§5.4, appendix E): whether the paper's ordering
    of the families (``order``, on held-out objects at the largest fraction) shows, with the
    numbers; the verdict of ``claim`` beside it, from ``statuses`` (model: status) or else
    the ``claims`` frame's row of that claim and model."""
    out = []
    for name, sub in table.groupby(key, sort=False):
        if statuses is not None:
            status = statuses.get(name, "")
        elif claims is not None and len(claims):
            s = claims.loc[(claims["claim"] == claim) & (claims["subject"] == name), "status"]
            status = s.iloc[0] if len(s) else ""
        else:
            status = ""
        out.append(direction_sentence(form_order(sub, order), name, what="the paper's ordering", claim=claim,
                                      status=status))
    return out


def rank_null(x: Any, y: Any, permutations: int = 2000, quantile: float = RANK_QUANTILE, seed: int = 0) -> float:
    """The ``quantile`` of Spearman's rho of ``x`` with seeded permutations of ``y``."""
    rx, ry = pd.Series(np.asarray(x, dtype=float)).rank().to_numpy(), pd.Series(np.asarray(y, dtype=float)).rank()
    ry = ry.to_numpy()
    rng = np.random.default_rng(seed)
    rhos = [np.corrcoef(rx, rng.permutation(ry))[0, 1] for _ in range(permutations)]
    return float(np.nanquantile(rhos, quantile))


def figure9_claims(table: pd.DataFrame, profile: str, min_models: int = 3, min_rho: float = 0.5) -> pd.DataFrame:
    """Figure 9 per size: the global product's held-out objects track the model's own (and its
    swap pairs, where recorded): rho >= ``min_rho`` and above the permutation null's
    :data:`RANK_QUANTILE`, over >= ``min_models`` models (with three, none clears the null)."""
    rows = []
    axes = [("the global product tracks the model", "model: held-out objects")]
    if "model: swap pairs" in table and table["model: swap pairs"].notna().any():
        # binding in the strict sense: a scene and its attribute-swapped twin both recognised
        axes.append(("the global product tracks the model's swap-pair recognition", "model: swap pairs"))
    for claim, col in axes:
        for objects, sub in table.groupby("objects", sort=True):
            sub = sub.dropna(subset=[col, "global product: held-out objects"])
            subject = fmt_objects(objects)
            if len(sub) and SWAPS in sub and not sub[SWAPS].map(binds).any():
                rows.append(_row(claim, subject, PAPER_FIGURE9, f"{len(sub)} models", NOT_TESTABLE,
                                 f"the claim is about models that generalize, and none of these {len(sub)} binds "
                                 f"(validation swap pairs at most {sub[SWAPS].max():.2f} < {BINDS_AT:g})",
                                 profile))
                continue
            if len(sub) < min_models or sub[col].nunique() < 2:
                rows.append(_row(claim, subject, PAPER_FIGURE9, f"{len(sub)} models", UNTESTABLE,
                                 f"needs at least {min_models} models of one size that differ", profile))
                continue
            rho = sub[col].rank().corr(sub["global product: held-out objects"].rank())
            null = rank_null(sub[col], sub["global product: held-out objects"])
            rows.append(_row(claim, subject, PAPER_FIGURE9, f"rank correlation {rho:.2f} over {len(sub)} models",
                             verdict(bool(rho >= min_rho and rho > null)),
                             f"shown at a rank correlation >= {min_rho:g} and above the {RANK_QUANTILE:.0%} quantile of "
                             "its permutation null (models' ids shuffled)", profile,
                             null=f"{null:.2f}", margin=f"{rho - null:+.2f} (needs > 0)"))
    return _frame(rows)
