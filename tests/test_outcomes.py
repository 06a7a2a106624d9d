"""The report's outcome table: one row per headline finding, generated from verdicts."""

from __future__ import annotations

import re

import pandas as pd

from bindcore.analysis.approximators.labels import FAMILY_LABELS
from bindcore.verdicts import core as CL
from bindcore.verdicts import outcomes as OC
from bindcore.verdicts.approximators import form_claims, pretrained_claims, width_claims
from bindcore.verdicts.generalization import claims_table
from bindcore.verdicts.geometry import attribution_claims, geometry_claims
from tests.test_claims import (
    NOISE,
    attribution,
    decomposition,
    edits,
    embedding_set,
    forms,
    generalization,
    pretrained,
    widths,
)

MLP = FAMILY_LABELS["mlp"]
SMALL = {0.1: (0.1, 0.0, 0.5), 0.3: (0.3, 0.05, 0.95), 0.5: (0.7, 0.6, 1.0), 0.7: (0.95, 0.9, 1.0)}
LARGE = {0.1: (0.1, 0.0, 0.92), 0.3: (0.8, 0.7, 0.95), 0.5: (0.97, 0.95, 1.0), 0.7: (0.99, 0.98, 1.0)}
BAG = {cov: (0.5, 0.0, 1.0) for cov in (0.1, 0.3, 0.5, 0.7)}


def claims_of(encoder: str = "CLIP ViT-B/32 text") -> dict[str, pd.DataFrame]:
    s = embedding_set(encoder=encoder)
    holds = attribution({"original": (1.0, 0.9), "minus concepts": (0.05, 0.85), "minus objects": (0.05, 0.02),
                         "permuted concepts (control)": (0.98, 0.9), "permuted objects (control)": (1.0, 0.85)})
    return {
        "§5.2": claims_table(generalization({(2, 10): BAG, (2, 50): BAG}), "quick"),
        "§5.2 (scale)": claims_table(generalization({(2, 10): SMALL, (2, 50): LARGE}), "scale (published records)"),
        "§4.1 / D.2": geometry_claims([s], [decomposition(0.7, 0.8, 0.95)], [edits(0.95)], "quick",
                                      null_frames=[NOISE], null_edit_frames=[edits(0.3)]),
        "§4.2": attribution_claims([s], [holds], "quick"),
        "§5.1": pretrained_claims(pretrained(0.95, 0.1, encoder=encoder), "quick"),
        "§5.3": width_claims(widths({4: 0.0, 16: 0.0, 256: 0.0}), "quick"),
        "§5.4": form_claims(forms({MLP: (0.9, 0.9)}), "quick"),
    }


def test_one_row_per_headline_finding_generated_from_the_verdicts():
    table = OC.outcome_table(claims_of(), "quick")
    assert list(table.columns) == OC.COLUMNS and len(table) == len(OC.headlines()) == 9
    out = dict(zip(table["finding"], table["outcome"]))
    assert set(out.values()) <= set(OC.OUTCOMES)
    assert out["§4.1 additivity"] == OC.REPRODUCED and out["§4.2 components"] == OC.REPRODUCED
    # §5.2 reads the published scale records, not the quick sweep (a bag everywhere)
    row = table.set_index("finding").loc["§5.2 binding generalization and its scaling with |O|"]
    assert row["outcome"] == OC.REPRODUCED and "scale (published records)" in row["source"]
    assert out["§5.3 low complexity"] == OC.NOT_REPRODUCED
    # §5.4 with no family results, appendix E without a frame: not run, with a command
    assert out["§5.4 multiplicative form"] == OC.NOT_RUN and out["appendix E: binding from pixels"] == OC.NOT_RUN
    assert "papermill notebooks/e_pixel_encoders.ipynb" in table.set_index("finding").loc[
        "appendix E: binding from pixels", "reason, command"]
    assert OC._ours(claims_of()["§4.2"].head(1).assign(status=CL.UNTESTABLE)) == "1 claim, none judged"
    # appendix D has its rows too: without its frames, not run, with the chapter that runs it
    for finding in ("appendix D.3 and D.5: three objects, occlusion, MDS", "appendix D.4: natural images"):
        assert out[finding] == OC.NOT_RUN
        assert "papermill notebooks/d_additional.ipynb" in table.set_index("finding").loc[finding, "reason, command"]
    line = OC.outcome_summary(table, "quick")
    assert line.startswith("Of the paper's 9 findings in this table (7 headline findings, 2 of appendix D), "
                           "on the 'quick' profile")
    assert "). Reproduced (4): §4.1 additivity, §4.2 components, §5.1 CLIP's binding complexity, §5.2" in line
    assert ". Not reproduced (1): §5.3 low complexity. " in line and ". Not run here (4): " in line
    assert all(len(s.split()) < 40 for s in re.split(r"\. (?=[A-Z])", line)), "a sentence a reader cannot take in at once"


def test_a_finding_about_binding_models_is_not_testable_where_no_model_binds():
    """§5.3 on a model that does not bind: the outcome is "not testable here" (a failed
    precondition), not "not reproduced", and the reason says so."""
    claims = claims_of()
    claims["§5.3"] = width_claims(widths({4: 0.0, 16: 0.0, 256: 0.0}).assign(**{"model: validation swap pairs": 0.05}), "quick")
    row = OC.outcome_table(claims, "quick").set_index("finding").loc["§5.3 low complexity"]
    assert row["outcome"] == OC.NOT_TESTABLE_HERE and "models that bind" in row["reason, command"]
    assert "Not testable here (1): §5.3 low complexity." in OC.outcome_summary(OC.outcome_table(claims, "quick"), "quick")


def test_substitutes_and_controls_are_not_the_paper_s_encoder():
    table = OC.outcome_table(claims_of(encoder="MiniLM"), "quick").set_index("finding")
    assert table.loc["§4.1 additivity", "outcome"] == OC.ON_SUBSTITUTE
    assert "substitute: captions 4x4 | MiniLM" in table.loc["§4.1 additivity", "source"]
    failed = claims_of(encoder="MiniLM")
    failed["§4.1 / D.2"] = geometry_claims([embedding_set(encoder="MiniLM")], [NOISE], [edits(0.3)], "quick",
                                           null_frames=[NOISE], null_edit_frames=[edits(0.3)])
    row = OC.outcome_table(failed, "quick").set_index("finding").loc["§4.1 additivity"]
    assert row["outcome"] == OC.NOT_ON_SUBSTITUTE
    controlled = claims_of(encoder="controlled dual encoder (scene tower)")
    s = embedding_set(encoder="controlled dual encoder (scene tower)", source="controlled")
    controlled["§4.1 / D.2"] = geometry_claims([s], [decomposition(0.7, 0.8, 0.95)], [edits(0.95)], "quick",
                                               null_frames=[NOISE], null_edit_frames=[edits(0.3)])
    row = OC.outcome_table(controlled, "quick").set_index("finding").loc["§4.1 additivity"]
    assert row["outcome"] == OC.NOT_RUN and "controlled model" in row["reason, command"]


def test_appendix_e_from_the_pixel_claims():
    from bindcore.paper import PAPER_CLAIMS_APPENDIX_E

    pixel = pd.DataFrame([{"claim": c, "paper": p, "level": "clean", "ours": "x", "null": "–", "margin": "–",
                           "verdict": CL.SHOWN, "profile": "quick"} for c, p in PAPER_CLAIMS_APPENDIX_E])
    table = OC.outcome_table(claims_of(), "quick", pixel=pixel).set_index("finding")
    assert table.loc["appendix E: binding from pixels", "outcome"] == OC.REPRODUCED
    failed = pixel.assign(verdict=[CL.SHOWN, CL.NOT_SHOWN, CL.SHOWN])
    table = OC.outcome_table(claims_of(), "quick", pixel=failed).set_index("finding")
    assert table.loc["appendix E: binding from pixels", "outcome"] == OC.NOT_REPRODUCED


def test_the_claims_overview_counts_substitutes_and_controls_apart():
    from bindcore.verdicts.report import claims_overview

    over = claims_overview(claims_of(encoder="MiniLM")).set_index("chapter")
    row = over.loc["§4.1 / D.2"]
    assert row[CL.SHOWN] == 0 and row["substitute: shown"] == 3
    assert over.loc["§5.1", "controlled model / control (no verdict)"] == 2  # the random-init control's rows
    assert over.loc["§5.2 (scale)", CL.SHOWN] == 7


def test_the_binding_generalization_row_says_where_each_size_s_transition_is_and_whether_its_runs_fitted():
    """§5.2's row names, per size, the transition coverage (or the largest coverage
    without one) with how many runs there fitted their training task, and the release
    protocol's number beside the paper's."""
    from bindcore.analysis.generalization import generalization_summary

    rows = [{"C": 2, "V": v, "objects": v * v, "coverage": cov, "seed": seed, "test_object_2": o, "test_swap_pair": sw,
             "test_concept_2": 1.0, "boc_ceiling_test_object_2": 0.55, "boc_test_object_2": 0.05,
             "release_test_object_2": o, "fitted": fit, "layers": 3, "steps": 10_000}
            for v, runs in {10: {0.5: (0.3, 0.0, True), 0.9: (0.5, 0.2, True)},
                            20: {0.5: (0.4, 0.1, True), 0.9: (0.97, 0.9, False)}}.items()
            for cov, (o, sw, fit) in runs.items() for seed in (0, 1, 2)]
    summary = generalization_summary(pd.DataFrame(rows))
    claims = claims_of()
    claims["§5.2 (scale)"] = claims_table(summary, "scale (published records)")
    claims["§5.2 (scale)"].attrs["summary"] = summary.to_dict("records")
    row = OC.outcome_table(claims, "quick").set_index("finding").loc[
        "§5.2 binding generalization and its scaling with |O|"]
    assert row["ours"].startswith("|O| = 100 (3 layers, 10,000 steps): no transition up to coverage 0.9 (fitted 3 "
                                  "of 3), release protocol 0.50 at 0.9; |O| = 400 (3 layers, 10,000 steps): "
                                  "transition unknown (at coverage 0.9, fitted 0 of 3), release protocol 0.97 at 0.9 "
                                  "(paper, release protocol: near 1.0)")


def test_every_outcome_row_fits_in_a_few_lines():
    """The outcome table is read first: the paper's statement and ours each a line or
    two (they ran to 60-120 words)."""
    table = OC.outcome_table(claims_of(), "quick")
    for _, row in table.iterrows():
        assert len(row["paper"]) <= 130, row["finding"]
        assert len(row["ours"]) <= 260, row["finding"]


def test_no_outcome_row_without_a_reason():
    """The report's reason cell was empty for every finding the chapters judged (§5.2, §5.3,
    §5.4, appendix E): each row states why, whatever its outcome."""
    from bindcore.paper import PAPER_CLAIMS_APPENDIX_E

    pixel = pd.DataFrame([{"claim": c, "paper": p, "level": "clean", "ours": "x", "null": "bag ceiling 0.60",
                           "margin": "+0.20 (needs >= 0.1)", "verdict": v, "profile": "quick"}
                          for (c, p), v in zip(PAPER_CLAIMS_APPENDIX_E, (CL.SHOWN, CL.NOT_SHOWN, CL.SHOWN))])
    failed = claims_of(encoder="MiniLM")
    failed["§5.1"] = pretrained_claims(pretrained(0.95, 0.1, encoder="MiniLM", control=0.9), "quick")
    failed["§5.4"] = form_claims(forms({MLP: (0.9, 0.9)}).assign(**{"model: validation swap pairs": 0.05}), "quick")
    for claims in (claims_of(), failed):
        table = OC.outcome_table(claims, "quick", pixel=pixel)
        assert set(table["outcome"]) >= {OC.REPRODUCED, OC.NOT_REPRODUCED}
        empty = table.loc[table["reason, command"].str.strip() == "", "finding"].tolist()
        assert not empty, f"outcome rows without a reason: {empty}"


def test_a_reason_names_the_failed_claims_by_how_much_and_the_suspect():
    """§5.1 showed "at least 0.83" beside the paper's 0.80 with no word that the untrained tower
    reaches 1.00; §5.3 omitted the approximator budget its chapter calls the first suspect."""
    claims = claims_of(encoder="MiniLM")
    claims["§5.1"] = pretrained_claims(pretrained(0.83, 0.1, encoder="MiniLM", control=1.0), "quick")
    table = OC.outcome_table(claims, "quick").set_index("finding")["reason, command"]
    assert "“concepts generalize” (MiniLM): " in table["§5.1 CLIP's binding complexity"]
    assert "null 1.00, margin -0.17 (needs >= 0.2)" in table["§5.1 CLIP's binding complexity"]
    width = table["§5.3 low complexity"]
    assert width.startswith("1 of this finding's 1 judged claims not shown: “a small MLP suffices” (m)")
    assert "null bag ceiling 0.60, margin -0.60 (needs >= 0.1)" in width
    assert width.endswith(f"first suspect: {OC.headlines()[4].suspect}") and "approximators' budget" in width
    # a failed precondition is named with its number
    claims["§5.3"] = width_claims(widths({4: 0.0, 256: 0.0}).assign(**{"model: validation swap pairs": 0.05}), "quick")
    reason = OC.outcome_table(claims, "quick").set_index("finding").loc["§5.3 low complexity", "reason, command"]
    assert reason.startswith("precondition failed: ") and "validation swap pairs 0.05 < 0.5" in reason


def test_a_shortened_number_list_is_cut_after_a_whole_number():
    """A reason shortened to its length keeps every number it shows whole ("+0.93, +0.96, …"; it
    read "+0…." before); a text without items to cut after is cut where it must be."""
    gaps = ", ".join(f"|O| = 400: +0.9{i}" for i in range(9))
    short = OC._short(gaps, 60)
    assert short.endswith(", …") and len(short) <= 60
    assert all(re.fullmatch(r"\|O\| = 400: \+0\.9\d", item) for item in short[:-3].split(", ")), short
    assert OC._short("x" * 200, 60) == "x" * 59 + "…"
    assert OC._short(gaps, 1000) == gaps
