"""What every claim shares: statuses (:data:`NOT_TESTABLE`: the model does not bind, a failed
precondition; :data:`UNTESTABLE`: the results lack what the claim needs), kinds of evidence,
the row columns :data:`COLUMNS`, and counts and sentences made from claim frames."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from bindcore.controlled.search import BINDS_AT
from bindcore.paper import fmt_range

SHOWN = "shown"
NOT_SHOWN = "not shown"
NOT_TESTABLE = "not testable here"
UNTESTABLE = "cannot be tested at this profile"
STATUSES = (SHOWN, NOT_SHOWN, NOT_TESTABLE, UNTESTABLE)


def binds(swap_pairs: Any, level: float = BINDS_AT) -> bool:
    """Whether a model with this swap-pair recognition of validation objects binds (NaN: no)."""
    return _ok(swap_pairs) and float(swap_pairs) >= level


def no_binding_why(swap_pairs: Any, level: float = BINDS_AT) -> str:
    """The reason of a :data:`NOT_TESTABLE` row: the model's swap pairs below ``level``."""
    shown = f"{float(swap_pairs):.2f}" if _ok(swap_pairs) else "not recorded"
    return (f"the claim is about models that bind, and this one does not (validation swap pairs {shown} < "
            f"{level:g})")

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
    """One claim row; ``null``: the statistic on a null of the same shape (or the bag ceiling),
    ``margin``: ours minus the null beside the margin the rule asks."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    if evidence not in EVIDENCE:
        raise ValueError(f"evidence must be one of {EVIDENCE}, got {evidence!r}")
    return dict(zip(COLUMNS, (claim, subject, evidence, paper, ours, null, margin, status, why, profile)))


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def margin_text(diff: float, need: float) -> str:
    """A rule's margin beside what it asks, as "+0.12 (needs >= 0.1)": two decimals, more
    where two would round it onto the other side of ``need`` (0.0996 reads +0.0996, not +0.10)."""
    digits = next((d for d in range(2, 7) if (round(diff, d) >= need) == (diff >= need)), 6)
    return f"{diff:+.{digits}f} (needs >= {need:g})"


def _margin(ours: float, null: float, need: float) -> str:
    return margin_text(ours - null, need)


# a direction holds when each value exceeds the next by at least this: the precision the
# numbers are shown with, so that two numbers that read alike never read as ordered
DIRECTION_STEP = 0.01


def ordered(values: Sequence[Any], by: float = DIRECTION_STEP) -> bool:
    """Every value is finite and exceeds the next by at least ``by``."""
    return _ok(*values) and all(float(a) - float(b) >= by - 1e-12 for a, b in zip(values, values[1:]))


def direction_sentence(terms: Sequence[tuple[str, Any]], subject: str = "", paper: str = "", *,
                       what: str = "the paper's direction", claim: str = "", status: str = "",
                       by: float = DIRECTION_STEP) -> str:
    """Whether our numbers keep the paper's order, in one sentence: ``terms`` are (label,
    value) pairs in the order the paper finds them, highest first; they keep it when
    :func:`ordered` (each at least ``by`` above the next). The values stand in the sentence,
    the ``paper``'s beside them. The order is a direction only, never a verdict: with the
    ``status`` of the threshold ``claim`` the sentence says that verdict stands (a direction
    that shows does not make a claim "shown"; one that does not show leaves a shown claim
    shown, and says so)."""
    labels = [t[0] for t in terms]
    values = [_num(t[1]) for t in terms]
    shown = [fmt_range(v) if math.isfinite(v) else "–" for v in values]
    order = " > ".join(labels)
    head = f"{subject}: {what}" if subject else what[:1].upper() + what[1:]
    if not _ok(*values):
        text = f"{head} ({order}) cannot be read: " + ", ".join(f"{a} {b}" for a, b in zip(labels, shown))
    elif ordered(values, by):
        text = f"{head} shows: " + " > ".join(f"{a} {b}" for a, b in zip(labels, shown))
    else:
        text = f"{head} ({order}) does not show: " + ", ".join(f"{a} {b}" for a, b in zip(labels, shown))
    if paper:
        text += f" (paper: {paper})"
    named = f" “{claim}”" if claim else ""
    if status and status != SHOWN and ordered(values, by):
        text += f"; a direction only, not the claim{named}, whose verdict stays “{status}”"
    elif status == SHOWN and _ok(*values) and not ordered(values, by):
        text += f"; the order is stricter than the claim{named}, whose own rule reads “{status}”"
    elif status:
        text += f" (the claim{named}: {status})"
    return text + "."


def status_counts(*frames: pd.DataFrame, evidence: str | None = NATIVE) -> dict[str, int]:
    """``{status: count}`` over the rows of ``evidence`` (default the paper's kind; None: all)."""
    out = dict.fromkeys(STATUSES, 0)
    for f in frames:
        rows = f if evidence is None or "evidence" not in f else f[f["evidence"] == evidence]
        for s in rows["status"]:
            out[s] += 1
    return out


def evidence(encoder: Any, pretrained: bool = True) -> str:
    """The evidence an encoder named ``encoder`` gives on a claim about pretrained CLIP or DINOv2
    (a name with "random init": the control); only :data:`NATIVE` and :data:`SUBSTITUTE` get verdicts."""
    if not pretrained or "random init" in str(encoder):
        return CONTROL
    return NATIVE if str(encoder).startswith(("CLIP", "DINOv2")) else SUBSTITUTE


def set_evidence(s: Any) -> str:
    """:func:`evidence` of an embedding set (a controlled model's: :data:`CONTROLLED`)."""
    return CONTROLLED if getattr(s, "source", "") == "controlled" else evidence(s.encoder, s.pretrained)


def gaussian_null_why() -> str:
    return "Gaussian embeddings of the same size and spectrum, same labels"


# a binding claim's margin: strict held-out recognition (or a probe's) at least this far above the
# bag-of-concepts ceiling of the same scenes (§5.2, §5.3, §5.4, appendix E)
BAG_MARGIN = 0.1
CEILING = "bag ceiling"  # column of the approximator tables: the bag-of-concepts ceiling of the held-out scenes


def _ceiling(sub: pd.DataFrame) -> float:
    return float(sub[CEILING].mean()) if CEILING in sub and sub[CEILING].notna().any() else math.nan


def claim_outcomes(frame: pd.DataFrame) -> list[str]:
    """One sentence per claim of a claims table: at which subjects it was reproduced (also on a
    substitute), not reproduced or not testable, and its source."""
    out = []
    for claim, rows in frame.groupby("claim", sort=False):
        source = ", ".join(dict.fromkeys(rows["profile"]))
        ev = rows["evidence"] if "evidence" in rows else pd.Series(NATIVE, index=rows.index)
        parts = []
        for status, kind, words in ((SHOWN, NATIVE, "reproduced"), (NOT_SHOWN, NATIVE, "not reproduced"),
                                    (SHOWN, SUBSTITUTE, "reproduced on a substitute"),
                                    (NOT_SHOWN, SUBSTITUTE, "not reproduced on a substitute"),
                                    (NOT_TESTABLE, None, "not testable here (no model binds)"),
                                    (UNTESTABLE, None, "not testable")):
            pick = (rows["status"] == status) & ((ev == kind) if kind else True)
            who = rows.loc[pick, "subject"].tolist()
            if who:
                parts.append(f"{words} {'' if who == ['across sizes'] else 'at '}{', '.join(who)}")
        out.append(f"{claim[:1].upper()}{claim[1:]}: {'; '.join(parts)} ({source}).")
    return out



# a "shown" resting on fewer held-out test objects or seeds than these says so where it is stated
# (the book's standard for a point of §5.2: bindcore.controlled.recipes.MIN_TEST_OBJECTS, SCALE_SEEDS)
SMALL_SAMPLE_OBJECTS = 20
SMALL_SAMPLE_SEEDS = 3
_NUMBER_WORDS = {1: "one", 2: "two", 3: "three"}


def sample_caveat(test_objects: Any = None, seeds: Any = None) -> str:
    """", resting on 7 held-out test objects and one seed only: fewer than ..." where a verdict rests on fewer
    than :data:`SMALL_SAMPLE_OBJECTS` test objects or :data:`SMALL_SAMPLE_SEEDS` seeds, else ""."""
    few_objects = _ok(test_objects) and int(test_objects) < SMALL_SAMPLE_OBJECTS
    few_seeds = _ok(seeds) and int(seeds) < SMALL_SAMPLE_SEEDS
    if not (few_objects or few_seeds):
        return ""
    parts = []
    if _ok(test_objects):
        parts.append(f"{int(test_objects)} held-out test object{'s' if int(test_objects) != 1 else ''}")
    if _ok(seeds):
        n = int(seeds)
        parts.append(f"{_NUMBER_WORDS.get(n, n)} seed{'s' if n != 1 else ''}")
    return (f", resting on {' and '.join(parts)} only: fewer than the {SMALL_SAMPLE_OBJECTS} test objects "
            f"and {SMALL_SAMPLE_SEEDS} seeds this book asks of a finding")


def support_text(test_objects: Any, seeds: Any) -> str:
    """What a verdict rests on, as a claims table's cell: "7 held-out test objects, one seed
    (a small sample: fewer than 20 test objects and 3 seeds)"."""
    n, k = (int(v) if _ok(v) else None for v in (test_objects, seeds))
    text = ", ".join(t for t in (f"{n} held-out test object{'s' if n != 1 else ''}" if n is not None else "",
                                 f"{_NUMBER_WORDS.get(k, k)} seed{'s' if k != 1 else ''}" if k is not None else "")
                     if t) or "–"
    if sample_caveat(test_objects, seeds):
        text += (f" (a small sample: fewer than {SMALL_SAMPLE_OBJECTS} test objects and {SMALL_SAMPLE_SEEDS} "
                 "seeds)")
    return text


def _listed(names: Sequence[str], most: int = 4) -> str:
    names = list(dict.fromkeys(names))
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _source_name(source: str) -> str:
    return f"profile '{source}'" if source in ("smoke", "quick", "paper") else source


def closing_sentence(frame: pd.DataFrame, support: dict[str, tuple[Any, Any]] | None = None) -> str:
    """What a chapter's verdicts show, in words generated from its claims table and nothing
    more: per source (``profile`` column), how many of its claim rows are shown (each named with
    its subject, as a substitute where it is one, and with :func:`sample_caveat` where ``support``
    (``{subject or (source, subject): (held-out test objects, seeds)}``) says it rests on few), not
    shown, or carry no
    verdict (counted by status); rows of random-init controls and of controlled models in a claim
    about CLIP are counted apart, as shown for reference, never as evidence."""
    support = support or {}
    if not len(frame):
        return "No claim of this chapter was judged in this build: it shows none of the paper's findings here."
    ev = frame["evidence"] if "evidence" in frame else pd.Series(NATIVE, index=frame.index)
    out = []
    for source, rows in frame.groupby(frame["profile"].astype(str), sort=False):
        kinds = ev.loc[rows.index]
        reference = rows[kinds.isin([CONTROL, CONTROLLED])]
        own = rows[~kinds.isin([CONTROL, CONTROLLED])]
        shown = own[own["status"] == SHOWN]
        not_shown = own[own["status"] == NOT_SHOWN]
        rest = own[~own["status"].isin([SHOWN, NOT_SHOWN])]
        named = []
        for i, r in shown.iterrows():
            sub = ", a substitute encoder" if kinds.loc[i] == SUBSTITUTE else ""
            caveat = sample_caveat(*support.get((source, str(r["subject"])),
                                                support.get(str(r["subject"]), (None, None))))
            named.append(f"“{r['claim']}” ({r['subject']}{sub}{caveat})")
        parts = [f"{len(shown)} shown" + (f": {'; '.join(named)}" if named else "")]
        if len(not_shown):
            parts.append(f"{len(not_shown)} not shown ({_listed([f'“{c}”' for c in not_shown['claim']])})")
        if len(rest):
            counts = rest["status"].value_counts(sort=False)
            parts.append(f"{len(rest)} without a verdict (" + ", ".join(f"{s}: {n}" for s, n in counts.items()) + ")")
        text = (f"{_source_name(source)[:1].upper()}{_source_name(source)[1:]}: of its {len(own)} claim "
                f"row{'s' if len(own) != 1 else ''}, " + "; ".join(parts) + ".")
        if not len(shown):
            text += " None of the paper's claims is shown there."
        if len(reference):
            one = len(reference) == 1
            text += (f" {'Its' if one else 'The'} {len(reference)} row{'' if one else 's'} of random-init controls "
                     f"and controlled models carr{'ies' if one else 'y'} no verdict: shown for reference, not as a "
                     "finding.")
        out.append(text)
    return " ".join(out)
