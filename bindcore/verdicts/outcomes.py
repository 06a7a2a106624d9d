"""The report's first table: per headline finding of the paper, whether it was reproduced
(on the paper's kind of model or a substitute), not testable or not run, from the claims."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from bindcore.paper import (
    PAPER_CLAIMS_5_2,
    PAPER_OBJECTS_OVER_CONCEPTS,
    PAPER_PRETRAINED_CONCEPTS,
    PAPER_PRETRAINED_OBJECTS,
)
from bindcore.parameters import run_command

from .core import NATIVE, NOT_SHOWN, NOT_TESTABLE, SHOWN, SUBSTITUTE, UNTESTABLE
from .generalization import transition_sentence

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
ON_SUBSTITUTE = "reproduced on a substitute"
NOT_ON_SUBSTITUTE = "not reproduced on a substitute"
NOT_TESTABLE_HERE = "not testable here"
NOT_RUN = "not run here"
OUTCOMES = (REPRODUCED, NOT_REPRODUCED, ON_SUBSTITUTE, NOT_ON_SUBSTITUTE, NOT_TESTABLE_HERE, NOT_RUN)
COLUMNS = ["finding", "paper", "ours", "source", "outcome", "reason, command"]


@dataclass(frozen=True)
class Headline:
    """One headline finding: the claim ``frames`` it reads (the first present wins) and the
    ``claims`` among them (None: all), and the ``notebook`` that runs it."""

    finding: str
    paper: str
    frames: tuple[str, ...]
    claims: tuple[str, ...] | None
    notebook: str
    extra: tuple[str, ...] = ()  # further frames read beside the first present one
    line: str = ""  # the paper's statement in one line, for the outcome table (default: ``paper``)
    headline: bool = True  # a headline finding of the paper's body (False: an appendix D finding)
    suspect: str = ""  # the setup difference the chapter names as the first suspect where a claim fails


def headlines() -> list[Headline]:
    """The paper's headline findings and appendix D's, in the paper's order."""
    from bindcore.paper import (
        PAPER_APPROXIMATOR_PROTOCOL,
        PAPER_ATTRIBUTION,
        PAPER_CLAIMS_5_2,
        PAPER_CLAIMS_APPENDIX_D,
        PAPER_CLAIMS_APPENDIX_E,
        PAPER_COVERAGE_ONSET,
        PAPER_FORM,
        PAPER_NATURAL_CLAIM,
        PAPER_OBJECT_SPACES,
        PAPER_WIDTH,
    )

    text = PAPER_ATTRIBUTION["text"]
    budget = (f"the approximators' budget: a fraction of the paper's {PAPER_APPROXIMATOR_PROTOCOL['steps']:,} steps, "
              "on at most `max_objects` of a model's objects")
    return [
        Headline("§4.1 additivity",
                 f"scene embeddings are close to sums of object components: the bag of objects explains about "
                 f"{PAPER_OBJECTS_OVER_CONCEPTS:.2f} more variance than the bag of concepts, and object "
                 "reconstructions retrieve their scene",
                 ("§4.1 / D.2",), ("objects explain more than concepts", "object reconstructions retrieve their scene"),
                 "04_1_geometry",
                 line=f"a bag of objects explains about {PAPER_OBJECTS_OVER_CONCEPTS:.2f} more variance than a bag of "
                      "concepts"),
        Headline("§4.2 components",
                 f"removing concept components removes concepts (text: {text['original'][0]:.2f} -> "
                 f"{text['minus concepts'][0]:.2f}) but keeps objects; removing object components removes both; "
                 "permuted controls barely change decoding",
                 ("§4.2",), None, "04_2_component_attribution",
                 line="concept components carry concepts, object components carry objects and concepts"),
        Headline("§5.1 CLIP's binding complexity",
                 f"approximators of CLIP's binding map generalize concepts (>= "
                 f"{PAPER_PRETRAINED_CONCEPTS['level']:.2f}) but not objects (about "
                 f"{PAPER_PRETRAINED_OBJECTS['level']:.2f}), for every family",
                 ("§5.1",), None, "05_1_pretrained_binding_complexity",
                 line=f"concepts generalize (>= {PAPER_PRETRAINED_CONCEPTS['level']:.2f}), objects do not (about "
                      f"{PAPER_PRETRAINED_OBJECTS['level']:.2f})"),
        Headline("§5.2 binding generalization and its scaling with |O|",
                 "; ".join(f"{claim}: {statement}" for claim, statement in PAPER_CLAIMS_5_2),
                 ("§5.2 (scale)", "§5.2"), None, "05_2_binding_generalization",
                 line=f"held-out objects recognised near 1.0 above a coverage that falls as |O| grows (about "
                      f"{PAPER_COVERAGE_ONSET[2_500]} at |O| >= {PAPER_OBJECT_SPACES[0]:,})",
                 suspect="the training recipe: small models trained on a CPU (the paper's Table 9 is not available)"),
        Headline("§5.3 low complexity", PAPER_WIDTH, ("§5.3",), None, "05_3_binding_function_complexity",
                 suspect=budget),
        Headline("§5.4 multiplicative form", PAPER_FORM, ("§5.4",), None, "05_4_functional_form",
                 extra=("figure 9",), suspect=budget + " (the models of §5.3)"),
        Headline("appendix D.3 and D.5: three objects, occlusion, MDS",
                 "; ".join(f"{claim}: {statement}" for claim, statement in PAPER_CLAIMS_APPENDIX_D),
                 ("D.3 / D.5",), None, "d_additional", headline=False,
                 line="probing and object-based reconstruction hold with three objects and occlusion; MDS shows a "
                      "partial colour x shape grid"),
        Headline("appendix D.4: natural images", PAPER_NATURAL_CLAIM, ("D.4",), None, "d_additional", headline=False),
        Headline("appendix E: binding from pixels",
                 "; ".join(f"{claim}: {statement}" for claim, statement in PAPER_CLAIMS_APPENDIX_E),
                 ("appendix E",), None, "e_pixel_encoders",
                 line="pixel encoders trained from scratch bind, with a simple, multiplicative binding map",
                 suspect="the quick pixel recipe: a small object space, small images and a small scene tower, one "
                         "seed per point"),
    ]


def pixel_frame(pixel: pd.DataFrame) -> pd.DataFrame:
    """Appendix E's pixel claims in the columns of the other claim frames."""
    from .core import COLUMNS as CLAIM_COLUMNS

    if pixel is None or not len(pixel):
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    out = pd.DataFrame({"claim": pixel["claim"], "subject": "level " + pixel["level"].astype(str),
                        "evidence": NATIVE, "paper": pixel["paper"], "ours": pixel["ours"],
                        "null": pixel.get("null", "–"), "margin": pixel.get("margin", "–"),
                        "status": pixel["verdict"], "why": "", "profile": pixel["profile"]})
    return out[CLAIM_COLUMNS]


def _rows(h: Headline, claims: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, str]:
    key = next((k for k in h.frames if k in claims and len(claims[k])), None)
    keys = ([key] if key else []) + [k for k in h.extra if k in claims and len(claims[k])]
    if not keys:
        return pd.DataFrame(), ""
    rows = pd.concat([claims[k] for k in keys], ignore_index=True)
    if h.claims is not None:
        rows = rows[rows["claim"].isin(h.claims)]
    return rows, ", ".join(keys)


def _short(text: str, most: int = 110) -> str:
    """``text`` within ``most`` characters, cut after a whole item (at ", " or "; ") where one ends in
    its second half, so that no number is cut ("+0.93, +0.96, …", never "+0.…")."""
    text = str(text)
    if len(text) <= most:
        return text
    head = text[:most - 1]
    cut = max(head.rfind(", "), head.rfind("; "))
    return head[:cut].rstrip(" ,;:") + ", …" if cut > most // 2 else head.rstrip(" ,;:") + "…"


def _ours(rows: pd.DataFrame) -> str:
    """The numbers of the first judged claim that is not shown (else of the first), in a line."""
    judged = rows[rows["status"].isin([SHOWN, NOT_SHOWN])]
    if not len(judged):
        return f"{len(rows)} claim{'s' if len(rows) != 1 else ''}, none judged"
    failed = judged[judged["status"] == NOT_SHOWN]
    first = (failed if len(failed) else judged).iloc[0]
    return f"{first['claim']} ({first['subject']}): {_short(first['ours'])}"


def _failed(judged: pd.DataFrame) -> str:
    """Which judged claims are not shown and by how much: per claim its subjects, and the first
    one's numbers as its rule read them (null and margin where it has them, else ours and the rule)."""
    parts = []
    for claim, rows in judged[judged["status"] == NOT_SHOWN].groupby("claim", sort=False):
        r = rows.iloc[0]
        more = f" and {len(rows) - 1} more" if len(rows) > 1 else ""
        by = (f"{_short(r['ours'], 80)}; null {r['null']}, margin {r['margin']}" if r["margin"] != "–"
              else f"{_short(r['ours'], 80)} (rule: {_short(r['why'], 90)})")
        parts.append(f"“{claim}” ({r['subject']}{more}): {by}")
    return (f"{int((judged['status'] == NOT_SHOWN).sum())} of this finding's {len(judged)} judged claims not shown: "
            + "; ".join(parts))


def _unjudged(rows: pd.DataFrame) -> str:
    """The claims without a verdict, counted with their first reason ("" when none)."""
    rest = rows[~rows["status"].isin([SHOWN, NOT_SHOWN])]
    if not len(rest):
        return ""
    first = rest.iloc[0]
    return f"; {len(rest)} not judged ({first['status']}: {_short(first['why'] or first['ours'], 90)})"


def _reason(h: Headline, judged: pd.DataFrame, rows: pd.DataFrame) -> str:
    """Why a finding with verdicts has its outcome: every judged claim shown, or which are not and
    by how much with the suspect the chapter names; the claims without a verdict counted."""
    if (judged["status"] == SHOWN).all():
        return f"this finding's {len(judged)} judged claims all shown" + _unjudged(rows)
    return _failed(judged) + _unjudged(rows) + (f"; first suspect: {h.suspect}" if h.suspect else "")


def _others(h: Headline, claims: dict[str, pd.DataFrame], keys: str) -> str:
    """The verdicts of the finding's frames not read (a profile's own sweep beside published records)."""
    out = ""
    for k in h.frames:
        f = claims.get(k)
        if k not in keys.split(", ") and f is not None and len(f):
            judged = f[f["status"].isin([SHOWN, NOT_SHOWN])]
            out += (f"; {', '.join(dict.fromkeys(f['profile'].astype(str)))} ({k}): "
                    f"{int((judged['status'] == SHOWN).sum())} of {len(judged)} judged claims shown")
    return out


def outcome_row(h: Headline, claims: dict[str, pd.DataFrame], profile: str) -> dict[str, Any]:
    """The outcome of one finding: reproduced if its judged rows on the paper's kind all hold,
    else by its substitute rows, else not testable here (no model binds) or not run; its reason
    in one line, generated from the same verdicts."""
    rows, keys = _rows(h, claims)
    paper = h.line or h.paper
    command = run_command(h.notebook, profile="paper")

    def row(ours: str, source: str, outcome: str, reason: str) -> dict[str, Any]:
        return dict(zip(COLUMNS, (h.finding, paper, ours, source, outcome, reason)))

    if not len(rows):
        return row("–", f"profile '{profile}'", NOT_RUN, f"no claim frame of this finding in this build; {command}")
    judged = rows[rows["status"].isin([SHOWN, NOT_SHOWN])]
    native, sub = judged[judged["evidence"] == NATIVE], judged[judged["evidence"] == SUBSTITUTE]
    source = f"{', '.join(dict.fromkeys(rows['profile'].astype(str)))} ({keys})"
    if len(native):
        outcome = REPRODUCED if (native["status"] == SHOWN).all() else NOT_REPRODUCED
        summary = claims[keys.split(", ")[0]].attrs.get("summary")
        ours = transition_sentence(summary, PAPER_CLAIMS_5_2[1][1]) if summary else _ours(native)
        mine = rows[rows["evidence"] == NATIVE]
        return row(ours, source, outcome, _reason(h, native, mine) + _others(h, claims, keys))
    if len(sub):
        outcome = ON_SUBSTITUTE if (sub["status"] == SHOWN).all() else NOT_ON_SUBSTITUTE
        names = ", ".join(dict.fromkeys(sub["subject"]))
        failed = "" if outcome == ON_SUBSTITUTE else _failed(sub) + "; "
        return row(_ours(sub), f"{source}; substitute: {names}", outcome,
                   f"{failed}the paper's encoder did not run here (its weights need the Hugging Face Hub, e.g. "
                   f"Colab): {command}")
    if (rows["status"] == NOT_TESTABLE).any():
        why = rows.loc[rows["status"] == NOT_TESTABLE, "why"].iloc[0]
        return row(_ours(rows), source, NOT_TESTABLE_HERE, f"precondition failed: {_short(why, 160)}; {command}")
    whys = "; ".join(dict.fromkeys(_short(w, 160) for w in rows.loc[rows["status"] == UNTESTABLE, "why"].astype(str)))
    return row(_ours(rows), source, NOT_RUN, f"{whys}; {command}")


def outcome_table(claims: dict[str, pd.DataFrame], profile: str, pixel: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per headline finding (:data:`COLUMNS`) from ``{chapter: claim frame}`` and
    appendix E's ``pixel`` claims, each with its reason (and the command where not run here)."""
    frames = dict(claims)
    if pixel is not None:
        frames["appendix E"] = pixel_frame(pixel)
    return pd.DataFrame([outcome_row(h, frames, profile) for h in headlines()], columns=COLUMNS)


def outcome_summary(table: pd.DataFrame, profile: str) -> str:
    """The outcome table as short sentences: the count, then one per outcome that occurs."""
    appendix = sum(not h.headline for h in headlines() if h.finding in set(table["finding"]))
    sentences = [f"Of the paper's {len(table)} findings in this table ({len(table) - appendix} headline findings, "
                 f"{appendix} of appendix D), on the '{profile}' profile (§5.2 from the published scale records "
                 "where the build has them)."]
    for o in OUTCOMES:
        who = table.loc[table["outcome"] == o, "finding"].tolist()
        if who:
            sentences.append(f"{o[:1].upper()}{o[1:]} ({len(who)}): {', '.join(who)}.")
    return " ".join(sentences)
