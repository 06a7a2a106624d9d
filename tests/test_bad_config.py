"""Nothing silent: a setting written as text (``--set``, ``papermill -p``, a
JSON file) is parsed as its field's declared type or refused with an error naming the
field, before any work; chapter parameters and sweep grids the same.

New APIs are imported inside the tests, so that each test fails on its own on code
without them."""

from __future__ import annotations

import json
import math
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bindcore.cli import main
from bindcore.controlled.recipes import recipe
from bindcore.controlled.training import STORE_KIND, TrainConfig

TINY = ["--profile", "smoke", "--set", "steps=4", "--set", "eval_every=2", "--set", "eval_scenes=16", "--quiet"]


def _types() -> dict[str, type]:
    """Each field's declared type (a field of choices, ``Literal["batch", ...]``, as the choices' type)."""
    from typing import Literal, get_args, get_origin, get_type_hints

    hints = get_type_hints(TrainConfig)
    return {f.name: type(get_args(t)[0]) if get_origin(t := hints[f.name]) is Literal else t for f in fields(TrainConfig)}


# ---------------------------------------------------------------------------------
# --set values by declared type
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,value", [("False", False), ("false", False), ("NO", False), ("0", False),
                                        (" yes ", True), ("TRUE", True), ("1", True)])
def test_a_boolean_field_reads_words_in_any_case(text, value):
    cfg = recipe("smoke", heldout_as_negatives=text)
    assert cfg.heldout_as_negatives is value  # "False" was stored as the (true) string "False"


@pytest.mark.parametrize("field_value", ["heldout_as_negatives=maybe", "heldout_as_negatives=2",
                                         "n_values=4.5", "steps=ten", "lr=nan", "lr=inf", "lr=fast",
                                         "seed=true"])
def test_mistyped_set_values_are_refused_naming_the_field_before_any_work(tmp_path, capsys, field_value):
    name = field_value.split("=")[0]
    assert main(["train", *TINY, "--set", field_value, "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"TrainConfig.{name}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / STORE_KIND).exists()  # no store folder with only a config.json


def test_integral_numbers_are_integers_fractions_are_not():
    assert recipe("smoke", steps="1e1").steps == 10 and type(recipe("smoke", steps="1e1").steps) is int
    assert recipe("smoke", steps=10.0).steps == 10
    assert recipe("smoke", steps="2e3").steps == 2000
    with pytest.raises(ValueError, match="n_values.*integer"):
        recipe("smoke", n_values=4.5)  # passed validation, then a TypeError deep inside
    with pytest.raises(ValueError, match="steps.*integer"):
        TrainConfig(steps=1e-1)
    # an integer in a float field keeps its value and the config's hash (as before)
    assert recipe("smoke", lr=1).lr == 1 and recipe("smoke", lr="1").to_dict() == recipe("smoke", lr=1).to_dict()


def test_the_object_space_is_limited_and_its_memory_named():
    with pytest.raises(ValueError, match=r"n_values.*10\*\*12|n_values.*1e\+12 objects.*memory"):
        recipe("smoke", n_values=1_000_000)
    with pytest.raises(ValueError, match="n_concepts.*memory"):
        recipe("smoke", n_concepts=10**9, n_values=2)  # used to start computing 2**(10**9)
    assert recipe("paper", n_values=50, n_concepts=3).space.n_objects == 125_000  # the paper's largest fits


def _outside(rule):
    """Values just outside a field's declared rule (pydantic): below its low end, above its high
    end, not one of its choices."""
    from typing import Literal, get_args, get_origin

    import annotated_types as at

    tp, *meta = get_args(rule)
    if get_origin(rule) is Literal:
        return ["no-such-choice"]
    step = 1 if tp is int else 0.5
    bad = []
    for m in (c for f in meta for c in getattr(f, "metadata", [f])):
        if isinstance(m, at.Ge):
            bad.append(m.ge - step)
        elif isinstance(m, at.Gt):
            bad.append(m.gt)
        elif isinstance(m, at.Le):
            bad.append(m.le + step)
        elif isinstance(m, at.Lt):
            bad.append(m.lt)
    return bad


def test_every_field_rule_refuses_values_outside_it_naming_the_field():
    """TrainConfig's ranges are declared on its fields (pydantic): a value just outside a
    field's rule is refused naming the field and the rule; the smoke recipe's own value passes."""
    from bindcore.controlled.training import field_rules

    base = recipe("smoke")
    rules = field_rules(TrainConfig)
    assert len(rules) >= 30 and set(rules) <= set(_types())
    for name, rule in rules.items():
        assert _outside(rule), name
        for value in _outside(rule):
            with pytest.raises(ValueError, match=rf"TrainConfig\.{name} = .*must be"):
                base.with_(**{name: value})


def test_unknown_fields_are_named_with_a_suggestion(tmp_path, capsys):
    with pytest.raises(ValueError, match="n_values"):
        recipe("smoke").with_(n_valus=3)  # was a TypeError from dataclasses.replace
    assert main(["train", *TINY, "--set", "n_valus=3", "--results", str(tmp_path)]) == 2
    assert "did you mean n_values" in capsys.readouterr().err


# ---------------------------------------------------------------------------------
# property: garbage gets a clear error naming the field, or the well-typed value
# ---------------------------------------------------------------------------------
def _well_typed(tp: type, text: str):
    """What a careful reader makes of ``text`` as a ``tp`` (None: it is not one)."""
    from decimal import Decimal, InvalidOperation

    t = text.strip()
    if tp is bool:
        return {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(t.lower())
    if tp is int:
        try:
            d = Decimal(t)
        except InvalidOperation:
            return None
        return int(d) if d.is_finite() and d == d.to_integral_value() else None
    if tp is float:  # a float; an integer no float holds exactly stays an integer
        try:
            v = int(t) if t.lstrip("+-").isdigit() else float(t)
            return v if math.isfinite(float(v)) else None
        except (ValueError, OverflowError):
            return None
    return t


FIELDS = sorted(_types())
TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["true", "False", "YES", "no", "0", "1", "2", "-1", "4.5", "1e1", "1e-3", "nan", "inf", "-inf",
                     "1e400", " 10 ", "0x10", "batch", "train_vocab", "fp32", "bf16", "auto", "[1]", "{}", "null",
                     "\"batch\"", "", "1_000", "+3", "3.0000000001", "1e30"]),
    st.integers(-10**6, 10**6).map(str),
    st.integers(-(10**420), 10**420).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(FIELDS), text=TEXT)
def test_property_garbage_is_refused_naming_the_field_or_read_as_the_well_typed_value(name, text):
    tp = _types()[name]
    base = recipe("smoke")
    try:
        cfg = base.with_(**{name: text})
    except ValueError as exc:
        assert name in str(exc), exc  # a clear error that names the field
        return
    value = getattr(cfg, name)
    assert type(value) is tp or (tp is float and type(value) is int)
    expected = _well_typed(tp, text)
    if tp is str and value != expected:  # a JSON string literal, unquoted
        expected = json.loads(text.strip())
    assert expected is not None and value == expected, (text, value)
    # ... and the config equals the one given the well-typed value: the same run
    assert cfg == base.with_(**{name: expected})
    assert cfg.to_dict() == base.with_(**{name: value}).to_dict()


def test_a_misspelt_boolean_runs_exactly_as_the_well_typed_value(tmp_path, capsys):
    """The run itself: ``--set heldout_as_negatives=NO`` is the config (hash) and the run of
    ``False``; an integer in a float field trains exactly as the float does."""
    out = []
    for extra in (["--set", "heldout_as_negatives=NO"], ["--set", "heldout_as_negatives=false"],
                  ["--set", "concept_loss_weight=1"], ["--set", "concept_loss_weight=1.0"]):
        assert main(["train", *TINY, *extra, "--results", str(tmp_path)]) == 0
        out.append(json.loads(capsys.readouterr().out))
    typed = recipe("smoke", steps=4, eval_every=2, eval_scenes=16, heldout_as_negatives=False)
    from bindcore.io import config_hash

    assert out[0]["hash"] == out[1]["hash"] == config_hash(typed.to_dict())
    assert out[2]["metrics"] == out[3]["metrics"]


# ---------------------------------------------------------------------------------
# chapter parameters and sweep grids
# ---------------------------------------------------------------------------------
def test_chapter_parameters_are_parsed_by_type_or_refused_naming_them():
    from bindcore.parameters import TYPES, chapter_parameters, check_parameters, profile_tables

    for chapter, profiles in profile_tables().items():  # every profile default follows its rule
        for params in profiles.values():
            assert set(params) <= set(TYPES) and check_parameters(chapter, params) == params
    p = chapter_parameters("geometry", "smoke", controlled="false", probe_epochs="1e2", max_edits=5.0)
    assert p["controlled"] is False and p["probe_epochs"] == 100 and p["max_edits"] == 5
    for bad, name in ((dict(probe_epochs=4.5), "probe_epochs"), (dict(probe_lr=0), "probe_lr"),
                      (dict(ks="[0, 1]"), "ks"), (dict(text_space=[4, 40]), "text_space"),
                      (dict(controlled="maybe"), "controlled"), (dict(max_edits=-1), "max_edits")):
        with pytest.raises(ValueError, match=name):
            chapter_parameters("geometry", "smoke", **bad)
    with pytest.raises(ValueError, match="coverages"):
        chapter_parameters("binding_generalization", "smoke", coverages=[])  # an empty sweep, silently
    with pytest.raises(ValueError, match="tree_grid"):
        chapter_parameters("pretrained_complexity", "smoke", tree_grid="medium")


def test_start_chapter_refuses_a_parameter_of_the_wrong_type_instead_of_ignoring_it():
    import numpy as np

    from bindcore.book.chapter import start_chapter

    with pytest.raises(ValueError, match="ks"):
        start_chapter("geometry", {"profile": "smoke", "ks": np.array([0.0, 1.0])})  # was dropped silently
    p = start_chapter("geometry", {"profile": "smoke", "max_edits": np.int64(7)})
    assert p["max_edits"] == 7 and type(p["max_edits"]) is int


def test_sweep_grids_refuse_unknown_empty_or_mistyped_axes(tmp_path, capsys):
    from bindcore.sweep import grid, run_sweep

    base = recipe("smoke", steps=4)
    with pytest.raises(ValueError, match="n_valus"):
        grid(base, n_valus=[4])
    with pytest.raises(ValueError, match="coverage"):
        grid(base, coverage=[])  # zero configs: a sweep of nothing
    with pytest.raises(ValueError, match="coverage"):
        grid(base, coverage=0.5)
    assert [c.n_values for c in grid(base, n_values=["4", 6.0])] == [4, 6]
    with pytest.raises(ValueError, match="workers"):
        run_sweep(grid(base, coverage=[0.5]), workers=0)
    assert main(["sweep", *TINY, "--values", "4.5", "--results", str(tmp_path)]) == 2
    assert "n_values" in capsys.readouterr().err
    assert main(["sweep", *TINY, "--workers", "0", "--results", str(tmp_path)]) == 2
    assert "--workers" in capsys.readouterr().err
    assert not (tmp_path / STORE_KIND).exists()


def test_a_huge_integer_written_as_text_is_refused_at_once():
    """``--set steps=1e999999999`` is refused in one line before the number is expanded
    (it took minutes), and so is anything from 10**18 up."""
    from bindcore.settings import coerce

    for text in ("1e999999999", "1e18", "-2e30"):
        with pytest.raises(ValueError, match="below 10\\*\\*18"):
            coerce(text, int, "TrainConfig.steps")
    assert coerce("1e17", int, "TrainConfig.steps") == 10**17


def test_a_diverged_run_fails_and_is_not_stored_as_finished(tmp_path, capsys):
    """``--set lr=1e30``: the weights become NaN; the run fails with a one-line error and
    leaves no finished record (it was stored with accuracy 0.0)."""
    from bindcore.cli import main
    from bindcore.controlled.training import STORE_KIND

    argv = ["train", "--profile", "smoke", "--threads", "1", "--quiet", "--results", str(tmp_path),
            "--set", "lr=1e30", "--set", "steps=6", "--set", "eval_every=3", "--set", "eval_scenes=16"]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "diverged" in err and "Traceback" not in err
    assert not list((tmp_path / STORE_KIND).glob("*/result.json"))
