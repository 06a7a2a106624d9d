"""Every claim function of bindcore.verdicts on planted tables: one where its claims
hold, one where they fail, one where they cannot be tested."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bindcore.analysis.approximators.labels import FAMILY_LABELS
from bindcore.paper import CLIP
from bindcore.verdicts import core as CL
from bindcore.verdicts.additional import above_chance, additional_claims, natural_claims
from bindcore.verdicts.approximators import (
    figure9_claims,
    form_claims,
    form_sentences,
    pretrained_claims,
    pretrained_sentences,
    separation_sentence,
    width_claims,
)
from bindcore.verdicts.generalization import claims_table
from bindcore.verdicts.geometry import attribution_claims, geometry_claims

MLP, ADD, GP, SGP, WOP = (FAMILY_LABELS[f] for f in ("mlp", "additive", "global_product", "sum_global_product",
                                                     "within_object_product"))


def statuses(df: pd.DataFrame) -> list[str]:
    assert list(df.columns) == CL.COLUMNS
    assert set(df["status"]) <= set(CL.STATUSES)
    return df["status"].tolist()


# --------------------------------------------------------------------------- §5.1
CONTROL_NAME = "ViT-B/32 text tower (random init)"


def pretrained(concepts: float, objects: float, fractions=(0.1, 0.5, 0.9), encoder: str = "CLIP ViT-B/32 text",
               control: float | None = 0.3) -> pd.DataFrame:
    """A §5.1 table of one encoder and, with ``control``, the random-init control (the
    null) whose concepts generalize to ``control``."""
    rows = []
    for name, conc, obj in ((encoder, concepts, objects),) + (((CONTROL_NAME, control, 0.0),) if control is not None
                                                              else ()):
        for f in fractions:
            for fam, w in ((MLP, 64), (MLP, 512), (ADD, None), ("XGBoost", None)):
                rows.append({"encoder": name, "family": fam, "width": w, "fraction": f,
                             "heldout_concept": conc if f > 0.3 else 0.2, "heldout_object": obj})
    return pd.DataFrame(rows)


def test_pretrained_claims_hold_fail_and_cannot_be_tested():
    df = pretrained_claims(pretrained(0.95, 0.1), "quick")
    assert statuses(df) == [CL.SHOWN, CL.SHOWN, CL.UNTESTABLE, CL.UNTESTABLE]
    assert df["evidence"].tolist() == [CL.NATIVE, CL.NATIVE, CL.CONTROL, CL.CONTROL]
    assert df["null"].iloc[0] == "0.30"
    # concepts below the paper's level; objects as high as the concepts
    assert statuses(pretrained_claims(pretrained(0.5, 0.5), "quick"))[:2] == [CL.NOT_SHOWN, CL.NOT_SHOWN]
    # no fraction above 0.3: the concept claim cannot be tested
    assert statuses(pretrained_claims(pretrained(0.95, 0.1, fractions=(0.1, 0.2)), "smoke"))[0] == CL.UNTESTABLE
    # no null (no control, no null sweep): cannot be tested
    assert statuses(pretrained_claims(pretrained(0.95, 0.1, control=None), "quick"))[0] == CL.UNTESTABLE
    # MiniLM stands in for CLIP's text tower: a verdict, tagged as a substitute
    sub = pretrained_claims(pretrained(0.95, 0.1, encoder="MiniLM"), "quick")
    assert sub["evidence"].iloc[0] == CL.SUBSTITUTE and statuses(sub)[0] == CL.SHOWN


def test_pretrained_claims_on_their_null():
    """The control generalizes concepts as well as the encoder: nothing shown; the null
    sweep itself (shuffled labels, concepts at chance) shows nothing either."""
    assert statuses(pretrained_claims(pretrained(0.95, 0.1, control=0.9), "quick"))[:2] == [CL.NOT_SHOWN] * 2
    shuffled = pretrained(0.05, 0.0, control=None)
    assert statuses(pretrained_claims(shuffled, "quick", null=shuffled)) == [CL.NOT_SHOWN] * 2


# --------------------------------------------------------------------------- directions in words
def test_a_direction_shows_on_ordered_numbers_and_not_on_their_null():
    terms = [("global product", 0.58), ("MLP", 0.43), ("additive", 0.27)]
    text = CL.direction_sentence(terms, "m", what="the paper's ordering")
    assert text == "m: the paper's ordering shows: global product 0.58 > MLP 0.43 > additive 0.27."
    # the same shape reversed, or equal numbers (and numbers that print alike): it does not show
    for null in ([(a, v) for (a, _), (_, v) in zip(terms, terms[::-1])], [(a, 0.43) for a, _ in terms],
                 [("global product", 0.584), ("MLP", 0.578), ("additive", 0.2)]):
        text = CL.direction_sentence(null, "m", what="the paper's ordering")
        assert "does not show" in text and " shows" not in text
    assert "cannot be read" in CL.direction_sentence([("a", np.nan), ("b", 0.1)])
    assert CL.ordered([0.3, 0.2, 0.1]) and not CL.ordered([0.3, 0.3]) and not CL.ordered([0.3, np.nan])


def test_a_margin_never_reads_as_meeting_the_rule_it_fails():
    """A margin just short of what the rule asks is printed with the decimals that show it
    short (two decimals would round 0.0996 onto the threshold), and one that meets it reads so."""
    assert CL.margin_text(0.0996, 0.1) == "+0.0996 (needs >= 0.1)"
    assert CL.margin_text(0.1004, 0.1) == "+0.10 (needs >= 0.1)"
    assert CL.margin_text(-0.001, 0) == "-0.001 (needs >= 0)"
    assert CL.margin_text(0.34, 0.1) == "+0.34 (needs >= 0.1)" and CL.margin_text(-0.06, 0.1) == "-0.06 (needs >= 0.1)"
    for diff in np.linspace(0.09, 0.11, 201):
        shown = float(CL.margin_text(float(diff), 0.1).split(" ")[0])
        assert (shown >= 0.1) == (diff >= 0.1), diff


def test_a_direction_never_contradicts_the_verdict():
    terms = [("held-out concepts", 0.97), ("held-out objects", 0.29)]
    for status in (CL.NOT_SHOWN, CL.NOT_TESTABLE, CL.UNTESTABLE):
        text = CL.direction_sentence(terms, "MiniLM", "about 0.20", claim="c", status=status)
        assert "shows" in text and f"a direction only, not the claim “c”, whose verdict stays “{status}”" in text
    assert CL.direction_sentence(terms, "MiniLM", claim="c", status=CL.SHOWN).endswith("(the claim “c”: shown).")
    back = CL.direction_sentence(terms[::-1], "MiniLM", claim="c", status=CL.NOT_SHOWN)
    assert "does not show" in back and "(the claim “c”: not shown)" in back
    # the order is stricter than a claim with a tolerance: the sentence names the verdict that stands
    shown_back = CL.direction_sentence(terms[::-1], "MiniLM", claim="c", status=CL.SHOWN)
    assert "does not show" in shown_back and "(the claim “c”: shown)" not in shown_back
    assert shown_back.endswith("the order is stricter than the claim “c”, whose own rule reads “shown”.")


def test_pretrained_sentences_say_the_direction_and_whether_the_null_is_separated():
    # MiniLM-like: the direction shows, but the untrained tower's concepts are as high (no separation)
    text = pretrained_sentences(pretrained(0.97, 0.29, encoder="MiniLM", control=1.0))
    assert len(text) == 2  # the control gets none
    assert text[0].startswith("MiniLM: the paper's direction shows: held-out concepts 0.97 > held-out objects 0.29")
    assert f"paper: {CLIP}, concepts >= 0.80, objects about 0.20" in text[0]
    assert "verdict stays “not shown”" in text[0]  # the claims table says not shown
    assert text[1].startswith("The concept diagnostic does not separate MiniLM from its null here: held-out "
                              "concepts 0.97 (the widest MLP's lowest at the fractions above 0.3) against 1.00")
    # a trained encoder the diagnostic separates, with the direction: shown, and said so
    text = pretrained_sentences(pretrained(0.95, 0.1))
    assert "direction shows" in text[0] and text[0].endswith("(the claim “objects do not generalize, for any "
                                                             "family”: shown).")
    assert text[1].startswith("The concept diagnostic separates CLIP ViT-B/32 text from its null: held-out concepts "
                              "0.95 (the widest MLP's lowest at the fractions above 0.3) against 0.30")
    # the null of the same shape (objects as high as concepts): the direction does not show
    assert "does not show" in pretrained_sentences(pretrained(0.5, 0.5))[0]
    assert "cannot compare" in separation_sentence("m", 0.9, np.nan, "", 0.2)


def test_form_sentences_state_the_ordering_with_the_verdict():
    holds = forms({ADD: (0.95, 0.2), GP: (0.95, 0.9), WOP: (0.9, 0.5), MLP: (0.95, 0.85)})
    (text,) = form_sentences(holds, form_claims(holds, "quick"))
    assert text == ("m: the paper's ordering shows: global product 0.90 > MLP 0.85 > additive (per slot) 0.20 "
                    "(the claim “the global product is best”: shown).")
    # the global product read as the claim reads it: the better of its two forms, named
    both = forms({ADD: (0.99, 0.12), GP: (0.99, 0.48), SGP: (0.99, 0.72), MLP: (0.99, 0.73)}, ceiling=0.55)
    (text,) = form_sentences(both, form_claims(both, "quick"))
    assert text == ("m: the paper's ordering (additive + global product > MLP > additive (per slot)) does not show: "
                    "additive + global product 0.72, MLP 0.73, additive (per slot) 0.12; the order is stricter "
                    "than the claim “the global product is best”, whose own rule reads “shown”.")
    # the quick models' pattern: ordered, below the thresholds: a direction only
    low = forms({ADD: (0.99, 0.27), GP: (0.99, 0.58), MLP: (0.99, 0.43)})
    (text,) = form_sentences(low, form_claims(low, "quick"))
    assert "ordering shows" in text and "whose verdict stays “not shown”" in text
    # its null: the MLP no better than the additive probe, or the order reversed
    for null in (forms({ADD: (0.99, 0.25), GP: (0.99, 0.33), MLP: (0.99, 0.25)}),
                 forms({ADD: (0.99, 0.58), GP: (0.99, 0.27), MLP: (0.99, 0.43)})):
        (text,) = form_sentences(null, form_claims(null, "quick"))
        assert "(global product > MLP > additive (per slot)) does not show" in text


# --------------------------------------------------------------------------- §5.3
def widths(values: dict[int, float], model: str = "m", objects: int = 100, ceiling: float | None = 0.6
           ) -> pd.DataFrame:
    df = pd.DataFrame([{"model": model, "objects": objects, "family": MLP, "width": w, "fraction": 0.8,
                        "heldout_object": v} for w, v in values.items()])
    if ceiling is not None:
        df[CL.CEILING] = ceiling
    return df


def test_width_claims_hold():
    df = width_claims(widths({4: 0.2, 16: 0.9, 256: 0.95}), "quick")
    assert statuses(df) == [CL.SHOWN, CL.UNTESTABLE]  # one size: the gap claim needs two
    assert "16" in df["ours"].iloc[0] and df["null"].iloc[0] == "bag ceiling 0.60"


def test_width_claims_fail_when_no_width_generalizes():
    """Every width scoring 0 must not report width 4."""
    df = width_claims(widths({4: 0.0, 16: 0.0, 256: 0.0}), "quick")
    assert statuses(df)[0] == CL.NOT_SHOWN
    assert "no width binds" in df["ours"].iloc[0]
    # only a wide MLP reaches the best: small MLPs do not suffice
    assert statuses(width_claims(widths({4: 0.1, 16: 0.2, 256: 0.9}), "quick"))[0] == CL.NOT_SHOWN


def test_width_claims_on_their_null():
    """A bag of concepts: every width at the bag ceiling of the same scenes (0.62, above
    the old 0.5 threshold) binds nothing; without a ceiling nothing can be read."""
    bag = widths({4: 0.62, 16: 0.62, 256: 0.62}, ceiling=0.62)
    assert statuses(width_claims(bag, "quick"))[0] == CL.NOT_SHOWN
    assert statuses(width_claims(widths({4: 0.2, 16: 0.9}, ceiling=None), "quick"))[0] == CL.UNTESTABLE


def test_width_gap_grows_with_the_object_space():
    """On approximators trained to their plateau (records with a stop) the gap runs from the
    paper's smallest width (64) to the best, per model."""
    def conv(*a):
        return widths(*a).assign(stop="plateau")

    grows = pd.concat([conv({64: 0.8, 256: 0.9}, "small", 64), conv({64: 0.5, 256: 0.9}, "large", 2500)])
    df = width_claims(grows, "quick")
    assert statuses(df)[-1] == CL.SHOWN and "gap (best - width 64)" in df["ours"].iloc[-1]
    shrinks = pd.concat([conv({64: 0.5, 256: 0.9}, "small", 64), conv({64: 0.8, 256: 0.9}, "large", 2500)])
    assert statuses(width_claims(shrinks, "quick"))[-1] == CL.NOT_SHOWN
    assert statuses(width_claims(widths({16: 0.9}), "smoke"))[0] == CL.UNTESTABLE  # one width
    # the null: equal gaps up to noise (0.01) is no growth
    noise = pd.concat([conv({64: 0.8, 256: 0.9}, "small", 64), conv({64: 0.79, 256: 0.9}, "large", 2500)])
    assert statuses(width_claims(noise, "quick"))[-1] == CL.NOT_SHOWN


def test_the_width_gap_is_read_from_the_papers_smallest_width_never_a_smaller_one():
    """Widths below 64 (an extension) may score 0 at every size; a gap from them is just the best
    score. Same gaps from 64 (0.10 at both sizes), very different ones from 4: not shown; and the
    widths below 64 alone (no width 64) judge nothing."""
    def conv(*a):
        return widths(*a).assign(stop="cap")

    same = pd.concat([conv({4: 0.0, 64: 0.79, 256: 0.89}, "small", 400),
                      conv({4: 0.0, 64: 0.48, 256: 0.58}, "large", 2500)])
    df = width_claims(same, "quick")
    assert statuses(df)[-1] == CL.NOT_SHOWN and "+0.10" in df["ours"].iloc[-1] and "+0.89" not in df["ours"].iloc[-1]
    assert "width 64: 0.79" in df["ours"].iloc[0]
    grows = pd.concat([conv({4: 0.0, 64: 0.79, 256: 0.89}, "small", 400),
                       conv({4: 0.0, 64: 0.33, 256: 0.58}, "large", 2500)])
    assert statuses(width_claims(grows, "quick"))[-1] == CL.SHOWN
    no_64 = pd.concat([conv({4: 0.8, 256: 0.9}, "small", 64), conv({4: 0.0, 256: 0.9}, "large", 2500)])
    df = width_claims(no_64, "quick")
    assert statuses(df)[-1] == CL.UNTESTABLE and "width 64" in df["why"].iloc[-1]


def test_on_fixed_budget_records_the_width_64_gap_is_shown_and_the_earlier_rule_decides():
    """The width-64 rule was written after the fixed-budget records were read: on them (no "stop")
    the gap from the table's smallest width decides, and the gap from 64 is shown beside it."""
    table = pd.concat([widths({4: 0.0, 64: 0.79, 256: 0.89}, "small", 400),
                       widths({4: 0.0, 64: 0.33, 256: 0.58}, "large", 2500)])
    df = width_claims(table, "quick")
    assert statuses(df)[-1] == CL.NOT_SHOWN  # from width 4: +0.89 against +0.58
    ours = df["ours"].iloc[-1]
    assert "gap (best - smallest width): |O| = 400: +0.89" in ours and "not deciding" in ours and "+0.25" in ours
    assert statuses(width_claims(table.assign(stop="plateau"), "quick"))[-1] == CL.SHOWN


def test_width_claims_are_not_testable_on_a_model_that_does_not_bind():
    """§5.3's claims are about models that generalize: on a model whose own validation swap
    pairs stay below 0.5 the precondition fails ("not testable here"), whatever its
    approximators score; the same table with a binding model is judged. The gate reads
    validation objects, never test objects."""
    table = widths({4: 0.2, 16: 0.9, 256: 0.95}).assign(**{"model: validation swap pairs": 0.1})
    df = width_claims(table, "quick")
    assert statuses(df) == [CL.NOT_TESTABLE] * 2 and "does not (validation swap pairs 0.10" in df["why"][0]
    assert statuses(width_claims(table.assign(**{"model: validation swap pairs": 0.8}), "quick"))[0] == CL.SHOWN
    two = pd.concat([widths({4: 0.8, 256: 0.9}, "small", 64).assign(**{"model: validation swap pairs": 0.2}),
                     widths({4: 0.85, 256: 0.9}, "large", 2500).assign(**{"model: validation swap pairs": 0.9})])
    assert statuses(width_claims(two, "quick")) == [CL.NOT_TESTABLE, CL.SHOWN, CL.NOT_TESTABLE]
    # test swap pairs decide nothing: high test, low validation is not testable, and the reverse is judged
    high_test = table.assign(**{"model: swap pairs": 0.9, "model: validation swap pairs": 0.1})
    assert statuses(width_claims(high_test, "quick")) == [CL.NOT_TESTABLE] * 2
    low_test = table.assign(**{"model: swap pairs": 0.1, "model: validation swap pairs": 0.9})
    assert statuses(width_claims(low_test, "quick"))[0] == CL.SHOWN


# --------------------------------------------------------------------------- §5.4
def forms(values: dict[str, tuple[float, float]], ceiling: float | None = 0.6) -> pd.DataFrame:
    df = pd.DataFrame([{"model": "m", "family": f, "fraction": 0.8, "heldout_concept": c, "heldout_object": o}
                       for f, (c, o) in values.items()])
    if ceiling is not None:
        df[CL.CEILING] = ceiling
    return df


def test_form_claims():
    holds = forms({ADD: (0.95, 0.2), GP: (0.95, 0.9), WOP: (0.9, 0.5), MLP: (0.95, 0.85)})
    assert statuses(form_claims(holds, "quick")) == [CL.SHOWN] * 3
    fails = forms({ADD: (0.95, 0.9), GP: (0.95, 0.3), WOP: (0.9, 0.5), MLP: (0.95, 0.95)})
    assert statuses(form_claims(fails, "quick")) == [CL.NOT_SHOWN] * 3
    assert statuses(form_claims(forms({MLP: (0.9, 0.9)}), "smoke")) == [CL.UNTESTABLE] * 3
    # no family recovers objects: the global product is not "best" because it ties at zero
    zeros = forms({ADD: (0.3, 0.02), GP: (0.3, 0.0), MLP: (0.3, 0.02)})
    assert statuses(form_claims(zeros, "smoke")) == [CL.NOT_SHOWN] * 3
    # no bag ceiling: the binding claims cannot be read
    assert statuses(form_claims(forms({ADD: (0.95, 0.2), GP: (0.95, 0.9)}, ceiling=None), "quick"))[1:] == \
        [CL.UNTESTABLE] * 2


def test_the_global_product_is_named_by_the_form_that_stands():
    """§5.4 read "global product 0.75" where 0.75 was the additive + global product family
    (the pure product: 0.13): the claim names the form whose number it shows."""
    table = forms({ADD: (0.95, 0.2), GP: (0.95, 0.13), SGP: (0.95, 0.75), MLP: (0.95, 0.8)})
    ours = form_claims(table, "quick").set_index("claim").loc["the global product is best", "ours"]
    assert ours == f"best: {MLP} (0.80); {SGP} 0.75"


def test_form_claims_on_their_null():
    """Products that beat the additive probe but stay at the bag ceiling of the same
    scenes (the quick models' 0.60-0.62) recover no binding, and none is best."""
    bag = forms({ADD: (0.95, 0.3), GP: (0.95, 0.62), SGP: (0.95, 0.61), MLP: (0.95, 0.6)}, ceiling=0.62)
    assert statuses(form_claims(bag, "quick"))[1:] == [CL.NOT_SHOWN] * 2
    shuffled = forms({ADD: (0.1, 0.0), GP: (0.1, 0.0), MLP: (0.1, 0.0)}, ceiling=0.6)
    assert statuses(form_claims(shuffled, "quick")) == [CL.NOT_SHOWN] * 3


def test_form_claims_are_not_testable_on_a_model_that_does_not_bind():
    holds = forms({ADD: (0.95, 0.2), GP: (0.95, 0.9), WOP: (0.9, 0.5), MLP: (0.95, 0.85)})
    assert statuses(form_claims(holds.assign(**{"model: validation swap pairs": 0.3}), "quick")) == [CL.NOT_TESTABLE] * 3
    assert statuses(form_claims(holds.assign(**{"model: validation swap pairs": 0.6}), "quick")) == [CL.SHOWN] * 3
    assert statuses(form_claims(holds.assign(**{"model: validation swap pairs": np.nan}), "quick")) == [CL.NOT_TESTABLE] * 3
    assert statuses(form_claims(holds.assign(**{"model: swap pairs": 0.9, "model: validation swap pairs": 0.3}),
                                "quick")) == [CL.NOT_TESTABLE] * 3


# --------------------------------------------------------------------------- figure 9
def test_figure9_claims():
    x = np.linspace(0, 1, 6)
    good = pd.DataFrame({"objects": 100, "model: held-out objects": x, "global product: held-out objects": x ** 2})
    bad = good.assign(**{"global product: held-out objects": x[::-1]})
    assert statuses(figure9_claims(good, "quick")) == [CL.SHOWN]
    assert statuses(figure9_claims(bad, "quick")) == [CL.NOT_SHOWN]
    assert statuses(figure9_claims(good.head(2), "smoke")) == [CL.UNTESTABLE]
    assert list(figure9_claims(good.assign(objects=2500), "quick")["subject"]) == ["|O| = 2,500"]  # as §5.2 writes it
    swaps = good.assign(**{"model: swap pairs": x[::-1]})  # the strict binding reading disagrees
    assert statuses(figure9_claims(swaps, "quick")) == [CL.SHOWN, CL.NOT_SHOWN]
    # none of the models binds on validation objects: the claim about generalizing models is not
    # testable here, whatever their test swap pairs
    none_bind = swaps.assign(**{"model: validation swap pairs": x * 0.4, "model: swap pairs": x})
    assert statuses(figure9_claims(none_bind, "quick")) == [CL.NOT_TESTABLE] * 2
    assert statuses(figure9_claims(none_bind.assign(**{"model: validation swap pairs": x}), "quick")) == \
        [CL.SHOWN, CL.SHOWN]


def test_figure9_claims_on_their_null():
    """Three models ranked alike pass a threshold of 0.5 by chance one time in six; the
    permutation null (models' ids shuffled) catches it; shuffled ids of many models too."""
    x = np.linspace(0, 1, 3)
    three = pd.DataFrame({"objects": 100, "model: held-out objects": x, "global product: held-out objects": x})
    assert statuses(figure9_claims(three, "quick")) == [CL.NOT_SHOWN]
    rng = np.random.default_rng(1)
    y = np.linspace(0, 1, 20)
    shuffled = pd.DataFrame({"objects": 100, "model: held-out objects": y,
                             "global product: held-out objects": rng.permutation(y)})
    assert statuses(figure9_claims(shuffled, "quick")) == [CL.NOT_SHOWN]


# --------------------------------------------------------------------------- §4.1, D.2
def embedding_set(pretrained: bool = True, encoder: str = "CLIP ViT-B/32 text", source: str = "text"):
    return SimpleNamespace(dataset="captions 4x4", encoder=encoder, pretrained=pretrained, source=source)


def decomposition(r2_concepts: float, r2_objects: float, retrieval: float) -> pd.DataFrame:
    return pd.DataFrame([{"kind": k, "estimator": "avg", "r2_eval": r, "retrieval": retrieval,
                          "retrieval_chance": 0.01} for k, r in (("concepts", r2_concepts), ("objects", r2_objects))])


def edits(retrieval: float) -> pd.DataFrame:
    return pd.DataFrame([{"bank": "obj-avg", "k": 1.0, "case": case, "retrieval": retrieval, "n": 50}
                         for case in ("all", "shared", "different")])


NOISE = decomposition(0.016, 0.040, 0.52)  # Gaussian noise on the 576-scene grid


def test_geometry_claims():
    s = embedding_set()
    nulls = dict(null_frames=[NOISE], null_edit_frames=[edits(0.3)])
    assert statuses(geometry_claims([s], [decomposition(0.7, 0.8, 0.95)], [edits(0.95)], "quick", **nulls)) == \
        [CL.SHOWN] * 3
    assert statuses(geometry_claims([s], [decomposition(0.8, 0.7, 0.3)], [edits(0.2)], "quick", **nulls)) == \
        [CL.NOT_SHOWN] * 3
    assert statuses(geometry_claims([embedding_set(False)], [decomposition(0.7, 0.8, 0.95)], [edits(0.95)],
                                    "quick", **nulls)) == [CL.UNTESTABLE] * 3
    no_edits = edits(0.9)[lambda d: d["case"] != "different"]
    assert statuses(geometry_claims([s], [decomposition(0.7, 0.8, 0.95)], [no_edits], "quick", **nulls))[-1] == \
        CL.UNTESTABLE
    # without a null nothing is judged
    assert statuses(geometry_claims([s], [decomposition(0.7, 0.8, 0.95)], [edits(0.95)], "quick")) == \
        [CL.UNTESTABLE] * 3


def test_geometry_claims_on_their_null():
    """Pure Gaussian noise on the 576-scene grid (R² 0.040 vs 0.016, in-sample
    retrieval 0.52) passed "objects explain more than concepts"; judged against its own
    null it is shown nowhere."""
    s = embedding_set()
    df = geometry_claims([s], [NOISE], [edits(0.3)], "quick", null_frames=[NOISE], null_edit_frames=[edits(0.3)])
    assert statuses(df) == [CL.NOT_SHOWN] * 3
    assert df["null"].iloc[0] == "0.04 - 0.02 = +0.02" and df["margin"].iloc[0].startswith("+0.00")


def test_geometry_claims_tag_controlled_models_and_substitutes():
    """A controlled model counts as trained (``pretrained`` True) but is not CLIP: no verdict."""
    nulls = dict(null_frames=[NOISE] * 2, null_edit_frames=[edits(0.3)] * 2)
    sets = [embedding_set(encoder="controlled dual encoder (scene tower)", source="controlled"),
            embedding_set(encoder="MiniLM")]
    df = geometry_claims(sets, [decomposition(0.7, 0.8, 0.95)] * 2, [edits(0.95)] * 2, "quick", **nulls)
    assert statuses(df) == [CL.UNTESTABLE] * 3 + [CL.SHOWN] * 3
    assert df["evidence"].tolist() == [CL.CONTROLLED] * 3 + [CL.SUBSTITUTE] * 3
    assert CL.status_counts(df) == {CL.SHOWN: 0, CL.NOT_SHOWN: 0, CL.NOT_TESTABLE: 0, CL.UNTESTABLE: 0}
    assert CL.status_counts(df, evidence=CL.SUBSTITUTE)[CL.SHOWN] == 3


# --------------------------------------------------------------------------- §4.2
def attribution(values: dict[str, tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "concept": c, "object": o} for v, (c, o) in values.items()])


def test_attribution_claims():
    s = embedding_set()
    holds = attribution({"original": (1.0, 0.9), "minus concepts": (0.05, 0.85), "minus objects": (0.05, 0.02),
                         "permuted concepts (control)": (0.98, 0.9), "permuted objects (control)": (1.0, 0.85)})
    assert statuses(attribution_claims([s], [holds], "quick")) == [CL.SHOWN] * 3
    fails = attribution({"original": (1.0, 0.9), "minus concepts": (0.6, 0.1), "minus objects": (0.5, 0.5),
                         "permuted concepts (control)": (0.3, 0.9), "permuted objects (control)": (1.0, 0.2)})
    assert statuses(attribution_claims([s], [fails], "quick")) == [CL.NOT_SHOWN] * 3
    assert statuses(attribution_claims([s], [holds.head(1)], "smoke")) == [CL.UNTESTABLE] * 3
    assert statuses(attribution_claims([embedding_set(False)], [holds], "quick")) == [CL.UNTESTABLE] * 3
    nothing = attribution({"original": (0.1, 0.02), "minus concepts": (0.05, 0.02), "minus objects": (0.05, 0.0),
                           "permuted concepts (control)": (0.1, 0.02), "permuted objects (control)": (0.1, 0.02)})
    assert statuses(attribution_claims([s], [nothing], "quick")) == [CL.NOT_SHOWN] * 3


def test_attribution_claims_on_their_null():
    """Removing the real components does no more than subtracting the same vectors at the
    wrong scenes (the permuted controls, the null): decoding falls alike, nothing shown."""
    s = embedding_set()
    alike = attribution({"original": (1.0, 0.9), "minus concepts": (0.05, 0.85), "minus objects": (0.05, 0.02),
                         "permuted concepts (control)": (0.1, 0.9), "permuted objects (control)": (0.1, 0.05)})
    assert statuses(attribution_claims([s], [alike], "quick")) == [CL.NOT_SHOWN] * 3


# --------------------------------------------------------------------------- D.3, D.5
def three(weights: str, probe: tuple[float, float], r2: tuple[float, float], retrieval: tuple[float, float],
          encoder: str = "CLIP ViT-B/32", scenes: int = 400):
    rows = []
    for occ, p, ret in zip((False, True), probe, retrieval):
        rows.append({"dataset": "three", "occlusion": occ, "encoder": encoder, "weights": weights, "scenes": scenes,
                     "probing concepts": 0.9, "probing objects": p, "R² held-out objects (avg)": r2[0],
                     "R² held-out concepts (avg)": r2[1], "retrieval objects (all scenes)": ret})
    return pd.DataFrame(rows)


def grid(text: float, image: float, weights: str = "pretrained") -> pd.DataFrame:
    return pd.DataFrame([{"dataset": "captions 4x4", "encoder": "CLIP t", "weights": weights,
                          "grid-neighbour recall (full d)": text, "chance": 0.3},
                         {"dataset": "CLEVR-2D", "encoder": "CLIP i", "weights": weights,
                          "grid-neighbour recall (full d)": image, "chance": 0.3}])


def test_additional_claims():
    holds = additional_claims(three("pretrained", (0.9, 0.88), (0.8, 0.6), (0.8, 0.6)), grid(0.9, 0.6), "quick")
    assert statuses(holds) == [CL.SHOWN] * 4
    fails = additional_claims(three("pretrained", (0.9, 0.4), (0.5, 0.6), (0.6, 0.8)), grid(0.5, 0.6), "quick")
    assert statuses(fails) == [CL.NOT_SHOWN] * 4
    low = additional_claims(three("pretrained", (0.1, 0.1), (0.8, 0.6), (0.8, 0.6)), grid(0.9, 0.6), "quick")
    assert statuses(low)[0] == CL.NOT_SHOWN  # "stays high" needs it high
    control = additional_claims(three("random init (control)", (0.9, 0.88), (0.8, 0.6), (0.8, 0.6)),
                                grid(0.9, 0.6, "random init (control)"), "quick")
    assert statuses(control) == [CL.UNTESTABLE] * 4


def test_additional_claims_on_their_null():
    """Occlusion that changes nothing but noise (0.80 -> 0.79), held-out R² of noise (both
    bags near zero), text and image sets alike: nothing shown."""
    null = additional_claims(three("pretrained", (0.05, 0.05), (0.01, 0.0), (0.8, 0.79)), grid(0.61, 0.6),
                             "quick")
    assert statuses(null) == [CL.NOT_SHOWN] * 4
    # a drop of 0.06 over 20 scenes is within the standard error of the difference
    small = additional_claims(three("pretrained", (0.9, 0.88), (0.8, 0.6), (0.5, 0.44), scenes=20),
                              grid(0.9, 0.6), "quick")
    assert statuses(small)[2] == CL.NOT_SHOWN


# --------------------------------------------------------------------------- D.4
def natural(weights: str, retrieval: float, edit: float, null: tuple[float, float] | None = (0.05, 0.02)
            ) -> pd.DataFrame:
    row = {"encoder": "CLIP ViT-B/32", "weights": weights, "retrieval": retrieval, "retrieval chance": 0.01,
           "scenes": 625, "edit retrieval": edit, "edit chance": 0.01, "edits": 400}
    if null is not None:
        row.update({"retrieval null": null[0], "edit retrieval null": null[1]})
    return pd.DataFrame([row])


def test_natural_claims():
    assert statuses(natural_claims(natural("pretrained", 0.3, 0.2), "quick")) == [CL.SHOWN]
    assert statuses(natural_claims(natural("pretrained", 0.3, 0.012), "quick")) == [CL.NOT_SHOWN]
    assert statuses(natural_claims(natural("random init (control)", 0.3, 0.2), "quick")) == [CL.UNTESTABLE]
    assert statuses(natural_claims(natural("pretrained", 0.3, 0.2, null=None), "quick")) == [CL.UNTESTABLE]


def test_natural_claims_on_their_null():
    """In-sample retrieval of noise at d = 512 over 576 scenes reaches 0.52 (chance 0.0035):
    above chance, not above its null."""
    assert statuses(natural_claims(natural("pretrained", 0.52, 0.2, null=(0.52, 0.02)), "quick")) == \
        [CL.NOT_SHOWN]


def test_above_chance_needs_a_margin():
    assert above_chance(0.2, 0.01, 100)
    assert not above_chance(0.02, 0.01, 100)
    assert not above_chance(float("nan"), 0.01, 100)


def test_status_counts_and_a_bad_status():
    df = form_claims(forms({MLP: (0.9, 0.9)}), "smoke")
    assert CL.status_counts(df) == {CL.SHOWN: 0, CL.NOT_SHOWN: 0, CL.NOT_TESTABLE: 0, CL.UNTESTABLE: 3}
    with pytest.raises(ValueError, match="status"):
        CL._row("c", "s", "p", "o", "maybe", "", "quick")
    with pytest.raises(ValueError, match="evidence"):
        CL._row("c", "s", "p", "o", CL.SHOWN, "", "quick", evidence="partly")


# --------------------------------------------------------------------------- §5.2
def generalization(sizes: dict[tuple[int, int], dict[float, tuple[float, float, float]]],
                   ceiling: float = 0.55) -> pd.DataFrame:
    """A results table of planted runs: {(C, V): {coverage: (strict, swap, concepts)}}."""
    from bindcore.analysis.generalization import generalization_summary

    rows = [{"C": c, "V": v, "objects": v ** c, "coverage": cov, "test_object_2": o, "test_swap_pair": s,
             "test_concept_2": k, "boc_ceiling_test_object_2": ceiling, "boc_test_object_2": 0.05}
            for (c, v), runs in sizes.items() for cov, (o, s, k) in runs.items()]
    return generalization_summary(pd.DataFrame(rows))


def test_generalization_claims_hold_fail_and_cannot_be_tested():
    small = {0.1: (0.1, 0.0, 0.5), 0.3: (0.3, 0.05, 0.95), 0.5: (0.7, 0.6, 1.0), 0.7: (0.95, 0.9, 1.0)}
    large = {0.1: (0.1, 0.0, 0.92), 0.3: (0.8, 0.7, 0.95), 0.5: (0.97, 0.95, 1.0), 0.7: (0.99, 0.98, 1.0)}
    held = claims_table(generalization({(2, 10): small, (2, 50): large}), "scale")
    assert statuses(held) == [CL.SHOWN] * 7
    assert held["subject"].iloc[-1] == "across sizes" and "0.5" in held["ours"].iloc[-1]
    # a bag of concepts: strict at the floor-to-ceiling level, swap pairs 0 everywhere
    bag = {cov: (0.5, 0.0, 1.0) for cov in (0.1, 0.3, 0.5, 0.7)}
    failed = claims_table(generalization({(2, 10): bag, (2, 50): bag}), "scale")
    assert statuses(failed)[:2] == [CL.NOT_SHOWN, CL.NOT_SHOWN]
    assert statuses(failed)[2] == CL.UNTESTABLE and statuses(failed)[-1] == CL.UNTESTABLE
    # the larger space needs MORE coverage: the paper's trend fails
    rising = claims_table(generalization({(2, 10): large, (2, 50): small}), "scale")
    assert statuses(rising)[-1] == CL.NOT_SHOWN
    # a larger space that never binds while the smaller one does: a rise
    never = claims_table(generalization({(2, 10): small, (2, 50): bag}), "scale")
    assert statuses(never)[-1] == CL.NOT_SHOWN
    # concepts and binding at the same coverage: concepts first is not shown
    same = {0.1: (0.1, 0.0, 0.5), 0.5: (0.9, 0.8, 0.95)}
    assert statuses(claims_table(generalization({(2, 10): same}), "quick"))[2] == CL.NOT_SHOWN
    # one size, one coverage
    one = claims_table(generalization({(2, 10): {0.8: (0.9, 0.8, 1.0)}}), "smoke")
    assert statuses(one)[0] == CL.UNTESTABLE and statuses(one)[-1] == CL.UNTESTABLE


def test_sizes_without_a_transition_are_compared_only_where_they_can_be():
    bag = {cov: (0.5, 0.0, 1.0) for cov in (0.1, 0.3, 0.5, 0.7)}
    bag_wider = {**bag, 0.8: (0.5, 0.0, 1.0)}
    binds = {0.1: (0.1, 0.0, 0.95), 0.3: (0.2, 0.05, 1.0), 0.5: (0.9, 0.6, 1.0)}
    # two sizes that never bind then a larger one that binds at 0.5: shown (no pair rises)
    shown = claims_table(generalization({(2, 10): bag_wider, (2, 20): bag, (2, 50): binds}), "scale")
    assert statuses(shown)[-1] == CL.SHOWN
    # the two non-binding sizes alone cannot be compared
    alone = claims_table(generalization({(2, 10): bag, (2, 20): bag_wider}), "scale")
    assert statuses(alone)[-1] == CL.UNTESTABLE
    # a larger size that does not bind over coverages where the smaller one does: a rise
    rises = claims_table(generalization({(2, 10): binds, (2, 50): bag}), "scale")
    assert statuses(rises)[-1] == CL.NOT_SHOWN


def test_a_size_that_did_not_fit_its_training_task_is_not_compared():
    from bindcore.analysis.generalization import generalization_summary

    binds = {0.1: (0.1, 0.0, 0.95), 0.3: (0.2, 0.05, 1.0), 0.5: (0.9, 0.6, 1.0), 0.7: (0.95, 0.8, 1.0)}
    bag = {cov: (0.5, 0.0, 1.0) for cov in (0.1, 0.3, 0.5, 0.7)}
    binds_later = {**binds, 0.5: (0.6, 0.3, 1.0)}

    def runs(sizes, fitted):
        return generalization_summary(pd.DataFrame([
            {"C": c, "V": v, "objects": v ** c, "coverage": cov, "seed": seed, "test_object_2": o,
             "test_swap_pair": sw, "test_concept_2": k, "boc_ceiling_test_object_2": 0.55, "boc_test_object_2": 0.05,
             "fitted": fitted[(c, v)] > seed}
            for (c, v), pts in sizes.items() for cov, (o, sw, k) in pts.items() for seed in range(3)]))

    # the largest size never binds: with its runs fitted that is a rise; unfitted, it is left out
    fitted = {(2, 10): 3, (2, 20): 3, (2, 50): 3}
    sizes = {(2, 10): binds_later, (2, 20): binds, (2, 50): bag}
    assert statuses(claims_table(runs(sizes, fitted), "scale"))[-1] == CL.NOT_SHOWN
    unfitted = claims_table(runs(sizes, {**fitted, (2, 50): 1}), "scale")
    assert statuses(unfitted)[-1] == CL.SHOWN  # 0.7 -> 0.5 over the two sizes that can be compared
    # its own claims: not testable when unfitted, not shown when fitted (the same numbers)
    at = {"fitted": claims_table(runs(sizes, fitted), "scale"), "unfitted": unfitted}
    largest = {k: t[t["subject"].str.startswith("|O| = 2,500")] for k, t in at.items()}
    assert set(largest["unfitted"]["status"]) == {CL.NOT_TESTABLE} and "fitted 1 of 3" in largest["unfitted"]["why"].iloc[0]
    assert CL.NOT_SHOWN in set(largest["fitted"]["status"]) and len(largest["fitted"]) == len(largest["unfitted"])
    # the null of the same shape: the two comparable sizes in the other order
    swapped = {(2, 10): binds, (2, 20): binds_later, (2, 50): bag}
    assert statuses(claims_table(runs(swapped, {**fitted, (2, 50): 1}), "scale"))[-1] == CL.NOT_SHOWN
    # a transition reached by runs that mostly did not fit is unknown, whatever its numbers: the
    # size is left out, and the order reads the sizes that can be compared
    late = {cov: (0.95, 0.8, 1.0) if cov == 0.7 else (0.5, 0.0, 1.0) for cov in (0.1, 0.3, 0.5, 0.7)}
    early = {cov: (0.95, 0.8, 1.0) if cov >= 0.3 else (0.5, 0.0, 1.0) for cov in (0.1, 0.3, 0.5, 0.7)}
    three = {(2, 10): binds_later, (2, 20): binds}
    assert statuses(claims_table(runs({**three, (2, 50): late}, fitted), "scale"))[-1] == CL.NOT_SHOWN
    for planted in (late, early):
        unknown = claims_table(runs({**three, (2, 50): planted}, {**fitted, (2, 50): 0}), "scale")
        assert statuses(unknown)[-1] == CL.SHOWN  # 0.7 -> 0.5 over the two fitted sizes alone
        assert "|O| = 2,500: unknown (" in unknown["ours"].iloc[-1] and "fitted 0 of 3" in unknown["ours"].iloc[-1]
        # its null: the fitted sizes in the other order say not shown, whatever the unknown size reads
        null = claims_table(runs({(2, 10): binds, (2, 20): binds_later, (2, 50): planted},
                                 {**fitted, (2, 50): 0}), "scale")
        assert statuses(null)[-1] == CL.NOT_SHOWN
    # an unknown size that would otherwise decide the verdict decides nothing
    alone_known = claims_table(runs({(2, 10): binds_later, (2, 50): early}, {(2, 10): 3, (2, 50): 1}), "scale")
    assert statuses(alone_known)[-1] == CL.UNTESTABLE and "no two sizes" in alone_known["why"].iloc[-1]
    assert statuses(claims_table(runs({(2, 10): binds_later, (2, 50): early}, {(2, 10): 3, (2, 50): 3}),
                                 "scale"))[-1] == CL.SHOWN
    # no pair left to compare: not testable
    alone = claims_table(runs({(2, 10): binds, (2, 50): bag}, {(2, 10): 3, (2, 50): 0}), "scale")
    assert statuses(alone)[-1] == CL.UNTESTABLE and "no two sizes" in alone["why"].iloc[-1]


def test_a_rise_that_falls_back_is_no_transition():
    from bindcore.analysis.generalization import transition_coverage

    assert transition_coverage([0.3, 0.5, 0.7], [0.0, 0.6, 0.0]) != transition_coverage([0.3, 0.5, 0.7], [0.0, 0.6, 0.0])
    assert transition_coverage([0.7, 0.3, 0.5], [0.9, 0.0, 0.6]) == 0.5  # order of the runs does not matter
    back = {0.3: (0.1, 0.0, 0.95), 0.5: (0.8, 0.6, 1.0), 0.7: (0.2, 0.0, 1.0)}
    assert statuses(claims_table(generalization({(2, 50): back}), "scale"))[0] == CL.NOT_SHOWN


def seeded(runs: dict[float, list[tuple[float, float, float]]], ceiling: float = 0.55) -> pd.DataFrame:
    """A results table of planted seeds at one size (C = 2, V = 50): {coverage: [(strict,
    test swap pairs, validation swap pairs) per seed]}."""
    return pd.DataFrame([{"C": 2, "V": 50, "objects": 2500, "coverage": cov, "seed": i, "test_object_2": o,
                          "test_swap_pair": s, "val_swap_pair": v, "test_concept_2": 1.0,
                          "boc_ceiling_test_object_2": ceiling, "boc_test_object_2": 0.05}
                         for cov, seeds in runs.items() for i, (o, s, v) in enumerate(seeds)])


def test_the_bag_claim_is_read_at_the_coverage_validation_objects_choose():
    from bindcore.analysis.generalization import generalization_summary

    # test objects look best at 0.3, validation objects at 0.7: 0.7 is where the claim is read
    runs = {0.1: [(0.1, 0.0, 0.0)] * 3, 0.3: [(0.95, 0.9, 0.5)] * 3, 0.7: [(0.7, 0.6, 0.9)] * 3}
    s = generalization_summary(seeded(runs)).iloc[0]
    assert s["chosen coverage"] == 0.7 and s["chosen on"] == "validation swap pairs"
    assert s["swap pairs at chosen coverage"] == 0.6
    row = claims_table(generalization_summary(seeded(runs)), "scale").iloc[1]
    assert row["status"] == CL.SHOWN and "coverage 0.7" in row["ours"]


def test_the_bag_claim_needs_the_median_and_every_seed_above_the_ceiling():
    from bindcore.analysis.generalization import generalization_summary

    # median far above the ceiling, one seed below it (the seed-1 failure of the scale recipe)
    one_fails = {0.1: [(0.1, 0.0, 0.0)] * 3, 0.5: [(0.9, 0.8, 0.8), (0.1, 0.0, 0.0), (0.92, 0.85, 0.82)]}
    s = generalization_summary(seeded(one_fails)).iloc[0]
    assert s["seeds"] == 3 and s["swap pairs at chosen coverage"] == 0.8 and s["swap pairs range at chosen coverage"] == "0.00-0.85"
    assert not s["every seed above the bag ceiling at chosen coverage"]
    assert statuses(claims_table(generalization_summary(seeded(one_fails)), "scale"))[1] == CL.NOT_SHOWN
    every = {0.1: [(0.1, 0.0, 0.0)] * 3, 0.5: [(0.9, 0.8, 0.8), (0.8, 0.7, 0.75), (0.92, 0.85, 0.82)]}
    assert statuses(claims_table(generalization_summary(seeded(every)), "scale"))[1] == CL.SHOWN
    # the null of the same shape: every seed a bag of concepts (strict at the ceiling, no swap pair)
    null = {cov: [(0.55, 0.0, 0.0)] * 3 for cov in (0.1, 0.3, 0.5)}
    assert statuses(claims_table(generalization_summary(seeded(null)), "scale"))[:2] == [CL.NOT_SHOWN] * 2


def test_claim_outcomes_say_where_each_claim_was_reproduced():
    small = {0.1: (0.1, 0.0, 0.5), 0.3: (0.3, 0.05, 0.95), 0.5: (0.7, 0.6, 1.0), 0.7: (0.95, 0.9, 1.0)}
    bag = {cov: (0.5, 0.0, 1.0) for cov in (0.1, 0.3, 0.5, 0.7)}
    frame = claims_table(generalization({(2, 10): small, (2, 50): bag}), "scale")
    lines = CL.claim_outcomes(frame)
    assert len(lines) == frame["claim"].nunique()
    first = lines[0]
    assert first.startswith("Held-out object recognition rises with coverage: reproduced at |O| = 100")
    assert "not reproduced at |O| = 2,500" in first and first.endswith("(scale).")
    assert lines[-1].startswith("Larger object spaces need a smaller fraction of their objects: not reproduced across sizes")


def test_each_seed_has_its_own_transition_and_the_protocols_stand_beside_the_paper():
    from bindcore.analysis.generalization import generalization_summary, protocol_comparison

    runs = {0.1: [(0.1, 0.0, 0.0)] * 3, 0.3: [(0.8, 0.6, 0.6), (0.2, 0.1, 0.1), (0.85, 0.7, 0.7)],
            0.5: [(0.9, 0.8, 0.8), (0.3, 0.2, 0.2), (0.92, 0.85, 0.8)]}
    table = seeded(runs)
    s = generalization_summary(table).iloc[0]
    assert s["transition coverage"] == 0.3 and s["transition coverage per seed"] == "0: 0.3, 1: -, 2: 0.3"
    assert protocol_comparison(table).empty  # records without the release protocol: no row
    table["release_test_pooled"] = table["test_object_2"] + 0.05
    table["release_test_object_2"] = table["test_object_2"]
    table["boc_ceiling_release_test_object_2"] = 0.7
    comp = protocol_comparison(table, min_objects=2500)
    assert list(comp["coverage"]) == [0.1, 0.3, 0.5]
    row = comp[comp["coverage"] == 0.5].iloc[0]
    assert row["release protocol, two objects"] == 0.9 and row["release protocol, two objects range"] == "0.30-0.92"
    assert protocol_comparison(table, min_objects=10_000).empty


def test_claim_outcomes_name_substitutes():
    nulls = dict(null_frames=[NOISE], null_edit_frames=[edits(0.3)])
    df = geometry_claims([embedding_set(encoder="MiniLM")], [decomposition(0.7, 0.8, 0.95)], [edits(0.95)],
                         "quick", **nulls)
    assert CL.claim_outcomes(df)[0] == ("Objects explain more than concepts: reproduced on a substitute at "
                                        "captions 4x4 | MiniLM (quick).")


def test_the_editing_verdict_reads_the_release_s_exact_order():
    """The comparison reports exact-order retrieval; the verdict reads it too."""
    nulls = dict(null_frames=[NOISE], null_edit_frames=[edits(0.3).assign(retrieval_exact=0.1)])
    any_order_only = edits(0.95).assign(retrieval_exact=0.5)
    df = geometry_claims([embedding_set()], [decomposition(0.7, 0.8, 0.95)], [any_order_only], "quick", **nulls)
    assert statuses(df)[-1] == CL.NOT_SHOWN and "exact order" in df["ours"].iloc[-1]


def test_additional_claims_read_the_gaussian_null_where_the_table_has_it():
    table = three("pretrained", (0.9, 0.88), (0.8, 0.6), (0.8, 0.6)).assign(
        **{"probing objects (null)": 0.8, "R² held-out gap (null)": 0.25})
    df = additional_claims(table, grid(0.9, 0.6), "quick")
    # occluded probing 0.88 does not clear a null of 0.80 by 0.2; the R² gap 0.2 does not exceed the null's 0.25
    assert statuses(df)[:2] == [CL.NOT_SHOWN] * 2 and df["null"].iloc[0] == "0.80"
    low = table.assign(**{"probing objects (null)": 0.05, "R² held-out gap (null)": -0.1})
    assert statuses(additional_claims(low, grid(0.9, 0.6), "quick"))[:2] == [CL.SHOWN] * 2


def test_a_claims_table_shows_each_judged_claim_once_and_each_reason_once():
    """The page's claims table: rows with a verdict; the rest grouped under their one
    reason (a reason repeated over subjects is said once, naming them)."""
    from bindcore.book.tables import claims_display

    why = "needs a pretrained encoder"
    frame = CL._frame([CL._row("a", "CLIP", "p", "0.9", CL.SHOWN, "rule", "quick"),
                       CL._row("b", "CLIP", "p", "0.1", CL.NOT_SHOWN, "rule", "quick")]
                      + [CL._row("c", s, "p", "–", CL.UNTESTABLE, why, "quick") for s in ("x", "y", "z")]
                      + [CL._row("d", "x", "p", "–", CL.UNTESTABLE, why, "quick")])
    judged, rest = claims_display(frame, "04_1_geometry")
    assert judged["claim"].tolist() == ["a", "b"]
    assert rest.count(why) == 1 and "c (x, y, z); d (x)" in rest
    assert "notebooks/profiles/paper/04_1_geometry.yaml" in rest
    assert claims_display(frame[frame["status"] == CL.SHOWN])[1] == ""


def test_a_claims_table_says_once_what_every_row_holds():
    from bindcore.book.tables import said_once

    frame = pd.DataFrame({"claim": ["c", "c"], "subject": ["a", "b"], "paper": ["p", "p"], "ours": ["1", "1"],
                          "status": [CL.SHOWN, CL.SHOWN], "why": ["w", "x"], "profile": ["quick", "quick"]})
    table, line = said_once(frame)
    assert list(table.columns) == ["claim", "subject", "ours", "status", "why"]
    assert line == "Every row below: paper: p; profile: quick."
    table, line = said_once(frame.iloc[:1])  # one row: nothing to hoist
    assert list(table.columns) == list(frame.columns) and line == ""


def test_a_transition_that_unrun_coverages_could_move_is_unknown():
    """A size whose planned grid has coverages not run at or above the one below its transition
    has an unknown transition (two top coverages alone read as a transition at the lower one);
    once the coverage below is run, it is known. Its null: the same runs with the grid complete
    are judged, in either order of the sizes."""
    from bindcore.analysis.generalization import generalization_summary, transition_gaps

    assert transition_gaps([0.8, 0.9], 0.8, [0.1, 0.5, 0.7, 0.8, 0.9]) == [0.7]
    assert transition_gaps([0.7, 0.8, 0.9], 0.8, [0.1, 0.5, 0.7, 0.8, 0.9]) == []
    assert transition_gaps([0.5, 0.9], 0.9, [0.5, 0.7, 0.9]) == [0.7]  # a coverage between could fall back
    assert transition_gaps([0.3, 0.5], float("nan"), [0.3, 0.5, 0.7]) == []
    plan = {100: [0.3, 0.5, 0.7, 0.9], 2500: [0.3, 0.5, 0.7, 0.9]}

    def summary(points):
        return generalization_summary(pd.DataFrame([
            {"C": 2, "V": v, "objects": v * v, "coverage": cov, "seed": seed, "test_object_2": sw,
             "test_swap_pair": sw, "test_concept_2": 1.0, "boc_ceiling_test_object_2": 0.55,
             "boc_test_object_2": 0.05, "fitted": True}
            for v, pts in points.items() for cov, sw in pts.items() for seed in range(3)]), planned=plan)

    small = {0.3: 0.0, 0.5: 0.0, 0.7: 0.0, 0.9: 0.9}  # transition 0.9
    top_two = {0.7: 0.8, 0.9: 0.9}  # |O| = 2,500 with only its top coverages run
    partial = claims_table(summary({10: small, 50: top_two}), "scale")
    assert statuses(partial)[-1] == CL.UNTESTABLE and "not run yet: 0.5)" in partial["ours"].iloc[-1]
    own = partial[partial["subject"].str.startswith("|O| = 2,500")]  # its own claims wait for its grid
    assert set(own["status"]) == {CL.UNTESTABLE} and "coverages 0.3, 0.5" in own["why"].iloc[0]
    whole = {0.3: 0.0, 0.5: 0.0, **top_two}
    assert statuses(claims_table(summary({10: small, 50: whole}), "scale"))[-1] == CL.SHOWN
    assert statuses(claims_table(summary({10: whole, 50: small}), "scale"))[-1] == CL.NOT_SHOWN  # the null


# --------------------------------------------------------------------------- closings
def test_a_closing_says_what_its_verdicts_say_and_no_more():
    """A chapter's closing is generated from its claims table: the shown claims named, the rest
    counted, a "shown" on fewer than 20 test objects or 3 seeds says so where it is stated, and
    rows of controls are no finding."""
    row = CL._row
    frame = CL._frame([
        row("binding generalizes", "level clean", "p", "o", CL.SHOWN, "w", "quick"),
        row("binding generalizes", "level speckle", "p", "o", CL.NOT_SHOWN, "w", "quick"),
        row("small MLPs suffice", "level clean", "p", "o", CL.UNTESTABLE, "w", "quick"),
        row("objects explain more", "captions | random", "p", "o", CL.UNTESTABLE, "w", "quick", evidence=CL.CONTROL),
    ])
    text = CL.closing_sentence(frame, {"level clean": (7, 1)})
    assert text.startswith("Profile 'quick': of its 3 claim rows, 1 shown: “binding generalizes” (level clean, "
                           "resting on 7 held-out test objects and one seed only: fewer than the 20 test objects "
                           "and 3 seeds this book asks of a finding); 1 not shown (“binding generalizes”); 1 "
                           "without a verdict (cannot be tested at this profile: 1).")
    assert "Its 1 row of random-init controls and controlled models carries no verdict" in text
    assert "resting on" not in CL.closing_sentence(frame, {"level clean": (24, 3)})
    none = CL.closing_sentence(frame.assign(status=CL.NOT_SHOWN))
    assert "0 shown; 3 not shown" in none and "None of the paper's claims is shown there." in none
    assert "pattern" not in text + none
    assert CL.support_text(7, 1) == "7 held-out test objects, one seed (a small sample: fewer than 20 test objects and 3 seeds)"
    assert CL.support_text(40, 3) == "40 held-out test objects, three seeds"
