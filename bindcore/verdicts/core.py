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


def set_evidence(s: Any) -> str:
    """The evidence an embedding set gives on a claim about pretrained CLIP or DINOv2; only
    :data:`NATIVE` and :data:`SUBSTITUTE` get verdicts."""
    if getattr(s, "source", "") == "controlled":
        return CONTROLLED
    if not s.pretrained:
        return CONTROL
    return NATIVE if str(s.encoder).startswith(("CLIP", "DINOv2")) else SUBSTITUTE


def _encoder_evidence(name: str) -> str:
    if "random init" in name:
        return CONTROL
    return NATIVE if name.startswith(("CLIP", "DINOv2")) else SUBSTITUTE


def gaussian_null_why() -> str:
    return "Gaussian embeddings of the same size and spectrum, same labels"


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

