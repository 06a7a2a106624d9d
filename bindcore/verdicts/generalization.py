"""§5.2: the claims about binding generalization from the sweep's summary, and their rules in words."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bindcore.analysis.generalization import CONCEPTS_AT
from bindcore.paper import PAPER_CLAIMS_5_2, fmt_objects

from .core import BAG_MARGIN, BINDS_AT, NOT_TESTABLE, UNTESTABLE, _frame, _margin, _ok, _row, verdict

# the rules' numbers besides the transition (BINDS_AT), CONCEPTS_AT and BAG_MARGIN ("far above the bag"),
# written before the records they judge
RISES_FROM_BELOW = 0.1  # "rises with coverage": swap pairs below this at the smallest coverage


def generalization_claim_rules() -> str:
    """The rules by which :func:`claims_table` turns the §5.2 summary into verdicts."""
    transition, low, margin, concept_threshold = BINDS_AT, RISES_FROM_BELOW, BAG_MARGIN, CONCEPTS_AT
    return (f"binding is read from held-out swap-pair recognition (a scene and its twin with one concept's values "
            f"swapped, both recognised; any bag of concepts scores 0). Rises with coverage: swap pairs below "
            f"{low:g} at the smallest coverage and at least {transition:g} from some larger coverage on (the "
            f"transition coverage: swap pairs stay at or above {transition:g} at every larger coverage swept). Far above the bag: at "
            f"the coverage chosen on validation objects (their median swap pairs; records without validation objects: "
            f"the largest coverage), median strict recognition of test objects at least {margin:g} above the "
            f"bag-of-concepts ceiling, every seed above it, and median swap pairs at least {transition:g}. Every number "
            f"is the median over the seeds at a coverage. Concepts first: concept recognition reaches "
            f"{concept_threshold:g} at a smaller coverage than the transition (swap pairs >= {transition:g}). "
            f"A size without a transition whose runs at its largest coverage mostly did not fit their training "
            f"task: its claims are not testable here. "
            f"Larger spaces need a smaller fraction: over every pair of sizes that can be compared, the larger "
            f"never needs more coverage for the transition and at least once needs less (a size without a "
            f"transition needs more than its largest coverage; a size whose runs at its transition, or at its "
            f"largest coverage when it has none, mostly did not fit their training task, or whose grid has a "
            f"planned coverage not run yet that could move its transition, has an unknown transition and is "
            f"left out; two sizes without a transition cannot be compared).")


def _size(r: dict[str, Any]) -> str:
    return f"{fmt_objects(r['objects'])} (C = {int(r['C'])}, V = {int(r['V'])})"


def _unfitted(r: dict[str, Any], where: str = "fitted at largest coverage") -> bool:
    """Whether most runs of a size at its largest coverage (``where``: or at its transition)
    ended with their training task unfitted (``k of n``; a summary that does not say: no)."""
    k, _, n = str(r.get(where) or "").partition(" of ")
    return bool(n) and 2 * int(k) <= int(n)


AT_TRANSITION = "fitted at transition"


GAPS = "coverages not run near the transition"


def _unknown(r: dict[str, Any]) -> bool:
    """Whether a size's transition is unknown: most of its runs at the transition (at its
    largest coverage, when it has none) did not fit their training task, or its grid has a
    planned coverage not run yet that could move it (``GAPS``). A run that did not fit, or
    was not run, tells nothing about where its transition lies: neither a value nor a bound."""
    return bool(r.get(GAPS)) or _unfitted(r, AT_TRANSITION if _ok(r["transition coverage"])
                                          else "fitted at largest coverage")


def _transition_text(r: dict[str, Any]) -> str:
    """A size's transition coverage as the cross-size claim reads it: the coverage, more
    than its largest coverage where it has none, or unknown where its runs there mostly did
    not fit (:func:`_unknown`)."""
    if r.get(GAPS):
        return (f"unknown ({r['transition coverage']:g} on the coverages run; not run yet: "
                + ", ".join(f"{c:g}" for c in r[GAPS]) + ")")
    if _unknown(r):
        at = (f"{r['transition coverage']:g}, fitted {r[AT_TRANSITION]}" if _ok(r["transition coverage"])
              else f"none up to {r['largest coverage']:g}, fitted {r['fitted at largest coverage']}")
        return f"unknown ({at})"
    return f"{r['transition coverage']:g}" if _ok(r["transition coverage"]) else f"> {r['largest coverage']:g}"


def _transition_order(small: dict[str, Any], large: dict[str, Any]) -> str | None:
    """``"rises"``, ``"falls"`` or ``"same"``: the transition coverage from a smaller space to a
    larger; None if not comparable (either is unknown, :func:`_unknown`; or neither has one;
    or a missing one's largest coverage does not reach the other's transition)."""
    if _unknown(small) or _unknown(large):
        return None
    ts, tl = small["transition coverage"], large["transition coverage"]
    if _ok(ts) and _ok(tl):
        return "rises" if tl > ts else "falls" if tl < ts else "same"
    if _ok(ts):  # the larger space does not bind where the smaller one does
        return "rises" if large["largest coverage"] >= ts else None
    if _ok(tl):  # the larger space binds below the smaller one's largest coverage
        return "falls" if tl <= small["largest coverage"] else None
    return None


def transition_table(by_recipe: dict[str, list[dict[str, Any]]], planned: dict[int, Any] | None = None
                     ) -> pd.DataFrame:
    """Per object-space size and recipe (``{label: records}``): its steps, the transition
    coverage as the cross-size claim reads it (:func:`_transition_text`; ``planned``: each
    size's planned coverages, as :func:`~bindcore.analysis.generalization.generalization_summary`
    takes them), how many runs fitted there and at the largest coverage, and the stand-ins
    at an earlier budget."""
    from bindcore.analysis.generalization import generalization_summary, results_table

    rows = []
    for label, recs in by_recipe.items():
        if not recs:
            continue
        table = results_table(recs)
        for r in generalization_summary(table, planned=planned).to_dict("records"):
            runs = table[table["objects"] == r["objects"]]
            rows.append({"objects": fmt_objects(r["objects"]), "recipe": label,
                         "steps": "/".join(f"{s:,}" for s in sorted(set(runs["steps"]))),
                         "transition coverage": _transition_text(r), "fitted at transition": r[AT_TRANSITION],
                         "fitted at largest coverage": f"{r['fitted at largest coverage']} (at {r['largest coverage']:g})",
                         "stand-ins at an earlier budget": f"{int(runs['earlier budget'].sum())} of {len(runs)}",
                         "_size": r["objects"]})
    out = pd.DataFrame(rows)
    return out.sort_values(["_size", "recipe"], kind="stable").drop(columns="_size").reset_index(drop=True) \
        if len(out) else out


# The changes to the cross-size claim rule, each with the claim's status on the scale records of its
# commit under the rule before and after it (the page shows this list beside the verdict; from
# 2026-12-07 a rule change lands in a commit before the records it will judge).
RULE_CHANGES: tuple[dict[str, str], ...] = (
    {"date": "2026-12-05", "commit": "af46172",
     "change": "a size without a transition whose runs at its largest coverage mostly did not fit is left out",
     "before": "not shown", "after": "shown"},
    {"date": "2026-12-05", "commit": "3373203",
     "change": "a transition reached by runs that mostly did not fit counts as an upper bound (written in the "
               "commit of the |O| = 10,000 coverage-0.7 runs it judged: 2,500 at 0.3 against 10,000 at 0.7)",
     "before": "not shown", "after": "shown"},
    {"date": "2026-12-07", "commit": "c93d765",
     "change": "the upper-bound rule removed: a size whose runs at its transition (or at its largest coverage, "
               "when it has none) mostly did not fit has an unknown transition and is left out; the comparison "
               "reads one recipe, chosen by the depth rule (bindcore.controlled.recipes.comparison_depth)",
     "before": "shown", "after": "shown on the same records (10,000 unknown); the one-recipe records judged next"},
    {"date": "2026-12-07", "commit": "b6d0cd4",
     "change": "a size whose grid has a planned coverage not run yet that could move its transition (at or above "
               "the planned coverage below it) has an unknown transition and is left out (written when the plan's "
               "|O| = 400 runs at 0.9 and 0.8 alone read as a transition at 0.8); the size's own claims are "
               "not judged until its planned grid is run",
     "before": "shown (400: 0.8 from two coverages, 2,500: 0.3)", "after": "not testable (400 unknown until its "
               "grid is run; one size left)"},
)


def claims_table(summary: pd.DataFrame, profile: str) -> pd.DataFrame:
    """The §5.2 claims per object-space size and across sizes, judged by
    :func:`generalization_claim_rules`; ``profile`` names where the numbers come from."""
    transition, low, margin, concept_threshold = BINDS_AT, RISES_FROM_BELOW, BAG_MARGIN, CONCEPTS_AT
    (rises, c_rises), (above, c_above), (order_claim, c_order), (fraction, c_fraction) = PAPER_CLAIMS_5_2
    conc_col = f"concepts >= {concept_threshold:g} from coverage"
    rows = []
    recs = summary.sort_values("objects").to_dict("records")
    for r in recs:
        who = _size(r)
        if r.get("coverages not run"):  # its claims read the whole grid: not judged on part of it
            missing = ", ".join(f"{c:g}" for c in r["coverages not run"])
            rows += [_row(claim, who, paper, f"{r['coverages']} of its planned coverages run", UNTESTABLE,
                          f"its planned grid is not run yet (coverages {missing})", profile)
                     for claim, paper in ((rises, c_rises), (above, c_above), (order_claim, c_order))]
            continue
        if not _ok(r["transition coverage"]) and _unfitted(r):  # a failed precondition, not a finding
            why = (f"no transition, and most runs at the largest coverage did not fit their training task "
                   f"(fitted {r['fitted at largest coverage']})")
            rows += [_row(claim, who, paper, f"swap pairs {r['swap pairs at largest coverage']:.2f} at coverage "
                          f"{r['largest coverage']:g}", NOT_TESTABLE, why, profile)
                     for claim, paper in ((rises, c_rises), (above, c_above), (order_claim, c_order))]
            continue
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
    ours = ", ".join(f"{fmt_objects(r['objects'])}: {_transition_text(r)}" for r in recs)
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
            rule = ("over every pair of sizes that can be compared, the larger never needs more coverage and at "
                    "least once needs less (a size without a transition needs more than its largest coverage; a "
                    "size whose runs at its transition, or at its largest coverage when it has none, mostly did not "
                    "fit their training task, or whose grid has a planned coverage not run yet that could move its "
                    "transition, has an unknown transition and is left out; two sizes without a transition cannot "
                    "be compared)")
            rows.append(_row(fraction, "across sizes", c_fraction, "transition coverage " + ours,
                             verdict("rises" not in order and "falls" in order) if any(order) else UNTESTABLE,
                             rule if any(order) else "no two sizes can be compared: " + rule, profile))
    return _frame(rows)


def claim_support(records: list[dict[str, Any]], summary: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """What the claims of each size (its :func:`claims_table` subject) rest on at the coverage
    they read (the chosen coverage): held-out test objects over its object splits, and seeds."""
    out = {}
    for r in summary.to_dict("records"):
        runs = [rec for rec in records if rec["config"]["n_values"] ** rec["config"]["n_concepts"] == r["objects"]
                and rec["config"]["coverage"] == r["chosen coverage"]]
        tests = {rec["config"].get("split_seed", 0): rec.get("n_test_objects") for rec in runs}
        if runs and all(n is not None for n in tests.values()):
            out[_size(r)] = (sum(tests.values()), len({rec["config"]["seed"] for rec in runs}))
    return out


def transition_sentence(summary: list[dict[str, Any]] | pd.DataFrame, paper_release: str = "") -> str:
    """The outcome table's §5.2 line: per size, its layers and steps, the transition coverage
    as the cross-size claim reads it (or up to where none; unknown where its runs there mostly
    did not fit) and how many runs there fitted, with the release protocol's number beside
    ``paper_release``."""
    recs = summary.to_dict("records") if isinstance(summary, pd.DataFrame) else list(summary)
    parts = []
    for r in sorted(recs, key=lambda r: r["objects"]):
        t = r["transition coverage"]
        fit = r.get(AT_TRANSITION) if _ok(t) else r.get("fitted at largest coverage")
        where = (f"transition at coverage {t:g}" if _ok(t) else f"no transition up to coverage {r['largest coverage']:g}")
        if _unknown(r):
            where = f"transition unknown ({where.replace('transition at', 'at')}, fitted {fit})"
        elif fit:
            where += f" (fitted {fit})"
        recipe = ", ".join(x for x in (f"{r['layers']} layers" if r.get("layers") else "",
                                       f"{r['steps']} steps" if r.get("steps") else "") if x)
        release = r.get("release two objects at chosen coverage")
        parts.append(f"{fmt_objects(r['objects'])}" + (f" ({recipe})" if recipe else "") + f": {where}"
                     + (f", release protocol {release:.2f} at {r['chosen coverage']:g}" if _ok(release) else ""))
    return "; ".join(parts) + (f" (paper, release protocol: {paper_release})" if paper_release and parts else "")
