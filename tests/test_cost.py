"""Cost before compute: a sweep says how many runs it will train and about how
long they take here before it trains any; nothing is printed for stored runs."""

from __future__ import annotations

from bindcore.book.chapter import paper_differences
from bindcore.controlled.recipes import recipe
from bindcore.parameters import chapter_parameters, profile_tables
from bindcore.runtime import format_duration
from bindcore.store import ResultStore
from bindcore.sweep import run_sweep, training_estimate


def test_estimate_counts_runs_and_steps():
    configs = [recipe("smoke", steps=4), recipe("smoke", steps=4, coverage=0.5), recipe("smoke", steps=6, seed=1)]
    seconds, line = training_estimate(configs)
    assert seconds > 0
    assert "3 training run(s), 14 steps in all" in line and "on cpu" in line
    assert line.count(" ms") == 1  # one timed step serves configs that differ in coverage, seed and steps only


def test_sweep_prints_the_cost_before_training_and_not_when_stored(tmp_path, capsys):
    store = ResultStore(tmp_path / "results", published=None)
    configs = [recipe("smoke", steps=3)]
    run_sweep(configs, store=store, workers=1, progress=False)
    assert "cost: 1 training run(s), 3 steps in all" in capsys.readouterr().out
    run_sweep(configs, store=store, workers=1, progress=False)
    assert "cost:" not in capsys.readouterr().out


def test_format_duration():
    assert (format_duration(42), format_duration(600), format_duration(7200)) == ("42 s", "10.0 min", "2.0 h")


def test_a_cheaper_profile_names_what_it_reduces():
    """The line a chapter prints under a profile other than paper: each parameter that
    differs from the paper profile's, with both values; none on paper itself."""
    colab = paper_differences("binding_generalization", chapter_parameters("binding_generalization", "colab"))
    # the parameters files hold each profile's recipe values (colab trains fewer steps than the paper)
    assert colab == ["coverages: [0.1, 0.2, 0.3, 0.5, 0.7, 0.9] (paper: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])",
                     "steps: 12000 (paper: 50000)"]
    assert "steps: 7 (paper: 50000)" in paper_differences(
        "binding_generalization", chapter_parameters("binding_generalization", "paper", steps=7))
    for chapter in profile_tables():
        assert paper_differences(chapter, chapter_parameters(chapter, "paper")) == []
        assert paper_differences(chapter, chapter_parameters(chapter, "smoke"))  # smoke reduces every chapter


def test_each_group_is_timed_at_its_largest_coverage(monkeypatch):
    """A token step costs more at a larger coverage (more training objects as candidates):
    the one timed step of a group is the largest coverage's, so the estimate errs long."""
    import bindcore.sweep as S

    timed = []
    monkeypatch.setattr(S, "seconds_per_step", lambda cfg, device=None: timed.append(cfg.coverage) or 1.0)
    configs = [recipe("smoke", steps=10, coverage=c) for c in (0.25, 0.75, 0.5)]
    seconds, _ = S.training_estimate(configs)
    assert timed == [0.75] and seconds == 30
