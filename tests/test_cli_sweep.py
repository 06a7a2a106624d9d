"""The train and sweep commands, the subprocess sweep executor, recipes and profiles."""

import json
from types import SimpleNamespace

import pytest

from bindcore.analysis.generalization import (
    MAIN_RECIPE,
    ONE_PHASE,
    RELEASE_NEGATIVES,
    ablation_configs,
    ablation_summary,
    ablation_variants,
    generalization_configs,
    generalization_summary,
    results_table,
)
from bindcore.cli import main
from bindcore.controlled.recipes import recipe, recipe_differences, recipe_table
from bindcore.controlled.training import STORE_KIND, concept_loss_onset
from bindcore.parameters import chapter_parameters
from bindcore.runtime import PROFILES
from bindcore.store import ResultStore
from bindcore.sweep import grid, run_sweep

TINY = ["--profile", "smoke", "--set", "steps=6", "--set", "eval_every=3", "--set", "eval_scenes=16"]


def test_train_command_stores_and_reuses(tmp_path, capsys):
    assert main(["train", *TINY, "--results", str(tmp_path), "--quiet"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["source"] == "local" and set(first["metrics"]) >= {"test_object_2", "test_concept_1"}
    assert main(["train", *TINY, "--results", str(tmp_path), "--quiet"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["hash"] == first["hash"] and again["metrics"] == first["metrics"]


@pytest.mark.parametrize("bad,field", [("n_values=1", "n_values"), ("coverage=1.0", "coverage"),
                                       ("max_objects=0", "max_objects"), ("bogus=3", "bogus")])
def test_train_command_rejects_bad_configs_before_any_work(tmp_path, capsys, bad, field):
    assert main(["train", "--profile", "smoke", "--set", bad, "--results", str(tmp_path)]) == 2
    assert field in capsys.readouterr().err
    assert not (tmp_path / STORE_KIND).exists()


def test_sweep_in_parallel_subprocesses_matches_in_process_training(tmp_path):
    base = recipe("smoke", steps=6, eval_every=3, eval_scenes=16)
    configs = grid(base, coverage=[0.5, 0.75])
    par = run_sweep(configs, store=ResultStore(tmp_path / "a", published=None), workers=2, progress=False)
    seq = run_sweep(configs, store=ResultStore(tmp_path / "b", published=None), workers=1, progress=False)
    assert [r["config"]["coverage"] for r in par] == [0.5, 0.75]
    for p, s in zip(par, seq):
        assert p["hash"] == s["hash"]
        for k, v in s["metrics"].items():
            assert p["metrics"][k] == pytest.approx(v, abs=1e-6), k
    table = results_table(par)
    assert list(table["coverage"]) == [0.5, 0.75] and (table["objects"] == 16).all()
    summary = generalization_summary(table)
    assert summary.loc[0, "objects"] == 16


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_run_is_named_with_its_hash_and_log_and_the_others_go_on(tmp_path, workers):
    from bindcore.io import config_hash
    from bindcore.runner import SweepError

    store = ResultStore(tmp_path, published=None)
    bad, good = grid(recipe("smoke", steps=4, eval_every=2, eval_scenes=16), coverage=[0.5, 0.75])
    # the worker cannot write the bad run's weights: a folder stands where model.pt goes
    (store.prepare(STORE_KIND, bad.to_dict()).path / "model.pt").mkdir()
    with pytest.raises(SweepError, match="1 of 2 sweep run") as info:
        run_sweep([bad, good], store=store, workers=workers, progress=False)
    (failure,) = info.value.failures
    h = config_hash(bad.to_dict())
    assert h in str(failure) and "worker.log" in str(failure) and "Error" in failure.error
    assert "Traceback" in failure.task.log.read_text()
    assert store.find(STORE_KIND, good.to_dict()) is not None  # the other run went on
    assert store.find(STORE_KIND, bad.to_dict()) is None


def test_recipes_and_profiles():
    assert set(PROFILES) == {"smoke", "quick", "colab", "paper"}
    colab = recipe("colab")  # the scale recipe for the colab chapters' budget (a T4-hour per chapter)
    assert recipe_differences("colab", "scale") == {"steps": (12_000, 10_000), "eval_scenes": (2048, 1024)}
    assert colab.d_model < recipe("paper").d_model and colab.eval_scenes == recipe("paper").eval_scenes
    paper = recipe("paper")
    assert (paper.d_model, paper.n_layers, paper.d_ff, paper.d_out, paper.lr, paper.batch_size, paper.steps) == (
        256, 6, 2048, 64, 3e-5, 512, 50_000)
    assert not paper.heldout_as_negatives
    assert "lr" in recipe_differences("paper", "quick")
    assert list(recipe_table("quick").columns) == ["paper recipe", "quick recipe"]
    with pytest.raises(ValueError, match="profile"):
        recipe("huge")
    p = chapter_parameters("binding_generalization", "quick", coverages=[0.3])
    assert p["coverages"] == [0.3] and p["sizes"] == chapter_parameters("binding_generalization", "quick")["sizes"]
    assert len(p["sizes"]) >= 2 and len(chapter_parameters("binding_generalization", "quick")["coverages"]) >= 4
    with pytest.raises(ValueError, match="unknown parameter"):
        chapter_parameters("binding_generalization", "quick", colour=1)
    cfgs = generalization_configs(recipe("smoke"), chapter_parameters("binding_generalization", "smoke"))
    assert len(cfgs) == 2
    quick = chapter_parameters("binding_generalization", "quick")
    pairs = ablation_configs(recipe("quick"), quick)
    assert len(quick["seeds"]) >= 3, "a claim about a training change needs three seeds"
    assert len(pairs) == 3 * len(quick["seeds"]) and len({cfg for _, cfg in pairs}) == len(pairs)
    assert [cfg.seed for _, cfg in pairs] == [s for s in quick["seeds"] for _ in range(3)]
    ab = ablation_variants(recipe("quick"), quick, seed=quick["seeds"][1])
    assert len(set(ab.values())) == 3, "every ablation variant must differ from the main recipe"
    assert {cfg.seed for cfg in ab.values()} == {quick["seeds"][1]}
    assert ab[RELEASE_NEGATIVES].heldout_as_negatives
    assert concept_loss_onset(ab[ONE_PHASE], []) == 0
    main = ab[MAIN_RECIPE]
    assert main.n_values ** main.n_concepts == max(v**c for c, v in quick["sizes"])
    # the paper and colab recipes have the concept loss from step 0: no one-phase run under a second name
    for profile in ("paper", "colab"):
        ab = ablation_variants(recipe(profile), chapter_parameters("binding_generalization", profile))
        assert list(ab) == [MAIN_RECIPE, RELEASE_NEGATIVES], profile


@pytest.mark.parametrize("kind,args,n", [("clevr2d", ["--size", "64"], 576), ("clevr3d-singles", ["--size", "64"], 24),
                                         ("text", ["--scenes", "50"], 450)])
def test_data_make_writes_a_dataset_with_its_labels(tmp_path, capsys, kind, args, n):
    from bindcore.data import read_labels_csv

    out = tmp_path / kind
    assert main(["data", "make", kind, "--out", str(out), *args]) == 0
    objects, filenames, names = read_labels_csv(out / "labels.csv")
    assert len(objects) == n and json.loads((out / "metadata.json").read_text())["num_concepts"] == 2
    if kind != "text":
        assert all((out / f).is_file() for f in filenames)
    assert f"{n} scenes" in capsys.readouterr().out


def test_scale_recipe_is_the_quick_recipe_with_its_listed_changes_and_its_plan_covers_the_sizes():
    from bindcore.controlled.recipes import (
        MIN_TEST_OBJECTS,
        SCALE_COVERAGES,
        SCALE_SEEDS,
        SCALE_STEPS,
        scale_budget,
        scale_plan,
    )

    diff = recipe_differences("quick", "scale")
    assert set(diff) == {"batch_size", "max_object_queries", "near_miss_negatives_per_positive", "concept_loss_trigger",
                         "steps", "n_layers"}
    plan = scale_plan()
    assert len(SCALE_SEEDS) >= 3 and {(c.n_concepts, c.n_values) for c in plan} == set(SCALE_STEPS)
    # the paper's coverage grid at |O| = 100 and 400, at least 0.1 to 0.7 at 2,500
    assert SCALE_COVERAGES[(2, 10)] == SCALE_COVERAGES[(2, 20)] == tuple(round(0.1 * k, 1) for k in range(1, 10))
    assert {0.1, 0.7} <= set(SCALE_COVERAGES[(2, 50)])
    points: dict = {}
    for c in plan:
        assert c.steps == scale_budget(c.n_concepts, c.n_values, c.coverage) and not c.heldout_as_negatives
        assert c.n_layers == recipe("scale").n_layers == 3  # one architecture at every size
        points.setdefault((c.n_values, c.coverage), []).append(c)
    for runs in points.values():
        assert {r.seed for r in runs} == set(SCALE_SEEDS)
        splits = {r.split_seed for r in runs}
        assert len(runs) == len(SCALE_SEEDS) * len(splits)
        tests = sum(len(runs[0].with_(split_seed=s).split.test) for s in splits)
        assert tests >= MIN_TEST_OBJECTS and (len(splits) == 1 or tests - len(runs[0].split.test) < MIN_TEST_OBJECTS)
    assert len({r.split_seed for r in points[(10, 0.9)]}) == 4  # 5 test objects a split
    sizes = [c.n_values ** c.n_concepts for c in plan]
    assert sizes == sorted(sizes)  # smallest object space first: early records are the cheap ones
    with pytest.raises(ValueError, match="recipe profile"):
        recipe("huge")


def test_the_scale_budgets_are_the_fit_rule_on_the_published_runs_read_on_training_metrics_only():
    """Each point's steps (SCALE_BUDGETS) are what the fit-matched rule answers on the
    published runs, and the rule reads training-task metrics alone: the same runs with
    every test and train_object_* number scrambled give the same budgets."""
    from bindcore.controlled.recipes import SCALE_BUDGETS, SCALE_STEPS, fit_budgets, of_the_plan, scale_budget
    from bindcore.controlled.search import hidden_from_choices
    from bindcore.store import PUBLISHED_ROOT

    records = [json.loads(p.read_text()) for p in (PUBLISHED_ROOT / STORE_KIND).glob("*/result.json")]
    deep = [r for r in records if of_the_plan(r) and r["config"]["n_values"] == 50]
    assert deep and not of_the_plan({**deep[0], "config": {**deep[0]["config"], "n_layers": 2}})  # another recipe
    records = [r for r in records if of_the_plan(r)]
    assert len(records) >= 21 and {(r["config"]["n_concepts"], r["config"]["n_values"]) for r in records} <= set(SCALE_STEPS)
    budgets = fit_budgets(records)
    for point, steps in budgets.items():
        assert scale_budget(*point) == steps, point
    assert set(SCALE_BUDGETS) <= set(budgets)

    def scrambled(d):
        return {k: (1.0 - v if hidden_from_choices(k) and isinstance(v, float) else v) for k, v in d.items()}

    other = [{**r, "metrics": scrambled(r["metrics"]), "history": [scrambled(h) for h in r["history"]]}
             for r in records]
    assert fit_budgets(other) == budgets
    # a point whose runs fit late gets twice the budget; one that fits early keeps it
    fast = {"config": {"n_concepts": 2, "n_values": 10, "coverage": 0.5, "steps": 6000},
            "history": [{"step": 1000, "task_object_2": 0.96}]}
    slow = {"config": {**fast["config"]}, "history": [{"step": 5000, "task_object_2": 0.96}]}
    assert fit_budgets([fast] * 3) == {(2, 10, 0.5): 6000}
    assert fit_budgets([slow, slow, fast]) == {(2, 10, 0.5): 12000}


def test_a_scale_sweep_asked_for_by_its_axes_runs_the_plans_configs():
    """``bindcore sweep --profile scale --values 10 ...`` names the plan's runs of that size
    (its steps are the plan's, not the recipe's default), so it resumes and fills the plan;
    ``--set steps=`` still overrides, and ``train`` follows the same rule."""
    from bindcore.cli import AXES, RunOptions, config_of, sweep_configs
    from bindcore.controlled.recipes import SCALE_STEPS, scale_plan

    def configs(*argv):
        sets, axes, option = [], {}, None
        for arg in argv:  # as the command line reads them: --set FIELD=VALUE, or an axis and its values
            if arg.startswith("--"):
                option = arg
            elif option == "--set":
                sets.append(arg)
            else:
                axes.setdefault(AXES[option], []).append(arg)
        return sweep_configs(RunOptions(profile="scale", sets=sets), axes)

    assert SCALE_STEPS[(2, 10)] != recipe("scale").steps  # the case this guards
    asked = configs("--values", "10", "--coverages", "0.7", "--seeds", "0", "1", "2")
    assert asked == [c for c in scale_plan() if c.n_values == 10 and c.coverage == 0.7]
    assert {c.steps for c in configs("--values", "10", "--set", "steps=50")} == {50}
    # the plan's depth at every size, unless --set names another
    deep = configs("--values", "50", "--coverages", "0.3")
    assert deep == [c for c in scale_plan() if c.n_values == 50 and c.coverage == 0.3]
    assert {c.n_layers for c in deep} == {recipe("scale").n_layers}
    assert {c.n_layers for c in configs("--values", "50", "--set", "n_layers=2")} == {2}
    assert {c.steps for c in configs("--values", "7")} == {recipe("scale").steps}  # a size off the plan
    # the axes not given are the plan's: seeds alone re-run the whole plan at those seeds
    plan = scale_plan()
    again = configs("--seeds", "3", "4")
    assert again == [c.with_(seed=s, split_seed=k) for c in plan if c.seed == plan[0].seed and c.split_seed == 0
                     for s in (3, 4) for k in sorted({d.split_seed for d in plan if d.coverage == c.coverage
                                                      and d.n_values == c.n_values})]
    assert configs("--seeds", *(str(s) for s in sorted({c.seed for c in plan}))) == plan
    assert configs("--values", "10") == [c for c in plan if c.n_values == 10]
    one = config_of(RunOptions(profile="scale", sets=["n_values=10"]))
    assert one.steps == SCALE_STEPS[(2, 10)]
    quick = config_of(RunOptions(sets=["n_values=10"]))
    assert quick.steps == recipe("quick").steps


def test_sweep_command_publishes_config_and_result_without_weights(tmp_path, monkeypatch, capsys):
    import bindcore.store as store_mod

    monkeypatch.setattr(store_mod.ResultStore.__init__, "__defaults__", (None, tmp_path / "published"))
    args = ["sweep", *TINY, "--coverages", "0.5", "--results", str(tmp_path / "results"), "--quiet", "--workers", "1"]
    assert main([*args, "--publish"]) == 0
    out = capsys.readouterr().out
    published = list((tmp_path / "published" / STORE_KIND).iterdir())
    assert len(published) == 1 and f"published {published[0]}" in out
    assert sorted(p.name for p in published[0].iterdir()) == ["config.json", "result.json"]
    assert json.loads((published[0] / "result.json").read_text())["config"]["coverage"] == 0.5


def test_sweep_trains_in_process_with_the_threads_asked_for(tmp_path, capsys):
    """``--threads`` reaches the runs a sweep trains in this process (``--workers 1``):
    the record says how many threads made it (float sums, hence results, depend on it)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)  # what an idle two-core machine gives by default
    try:
        assert main(["sweep", *TINY, "--set", "coverage=0.5", "--workers", "1", "--threads", "1",
                     "--results", str(tmp_path), "--quiet"]) == 0
    finally:
        torch.set_num_threads(before)
    (entry,) = ResultStore(tmp_path, published=None).entries(STORE_KIND)
    assert entry.record()["threads"] == 1


def test_the_runs_of_the_scale_plan_not_computed_yet_are_named_by_space_coverage_and_seed():
    from bindcore.controlled.recipes import scale_plan
    from bindcore.experiments.generalization import missing_runs_text

    plan = [c for c in scale_plan() if c.n_values in (10, 50)]
    missing = [c for c in plan if not (c.n_values == 50 and (c.coverage == 0.5 or (c.coverage == 0.3 and c.seed < 2)))]
    text = missing_runs_text(missing)
    assert text.startswith("|O| = 100: coverage 0.1 (seeds 0, 1, 2), 0.2 (seeds 0, 1, 2)")
    assert "0.8 (seeds 0, 1, 2 on 2 splits), 0.9 (seeds 0, 1, 2 on 4 splits); |O| = 2,500" in text
    assert ("; |O| = 2,500: coverage 0.1 (seeds 0, 1, 2), 0.2 (seeds 0, 1, 2), 0.3 (seed 2), 0.4 (seeds 0, 1, 2), "
            "0.6 (seeds 0, 1, 2), 0.7 (seeds 0, 1, 2)") in text
    assert missing_runs_text([]) == ""


def test_ablation_summary_compares_each_variant_with_the_main_run_of_its_seed():
    import pandas as pd

    from bindcore.analysis.generalization import ablation_sentence

    main = {0: 0.6, 1: 0.2, 2: 0.5}
    rows = [{"variant": MAIN_RECIPE, "seed": s, "test_swap_pair": v, "test_object_2": v + 0.1} for s, v in main.items()]
    # one-phase: below the main run of its own seed on two seeds, above on one (0.1 > 0.2 - 0.3 across seeds
    # would mislead: the comparison is seed by seed)
    rows += [{"variant": ONE_PHASE, "seed": s, "test_swap_pair": v, "test_object_2": v}
             for s, v in {0: 0.4, 1: 0.3, 2: 0.1}.items()]
    # release negatives: the same numbers as the main recipe, a null: no seed below it
    rows += [{**r, "variant": RELEASE_NEGATIVES} for r in rows[:3]]
    summary = ablation_summary(pd.DataFrame(rows)).set_index("variant")
    one = summary.loc["one-phase (concept loss from step 0)"]
    assert one["seeds"] == 3 and one["swap pairs"] == pytest.approx(0.3)
    assert one["swap pairs range"] == "0.10-0.40"
    assert one["swap pairs - main (median over seeds)"] == pytest.approx(-0.2)  # -0.2, +0.1, -0.4
    assert one["seeds below the main recipe"] == "2 of 3"
    null = summary.loc["release negatives (held-out objects as negatives)"]
    assert null["swap pairs - main (median over seeds)"] == 0 and null["seeds below the main recipe"] == "0 of 3"
    assert summary.loc["main recipe", "swap pairs"] == pytest.approx(0.5)
    text = ablation_sentence(ablation_summary(pd.DataFrame(rows)))
    assert "over 3 seed(s)" in text and "one-phase 0.30 (0.10-0.40), -0.20 against the main recipe" in text
    assert "below it on 2 of 3 seeds" in text and "below it on 0 of 3 seeds" in text


def test_sweep_stack_option_trains_the_seeds_of_a_point_together(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("bindcore.controlled.stacked.STACKING_DEVICES", ("cuda", "cpu"))  # as on a GPU
    assert main(["sweep", *TINY, "--set", "coverage=0.5", "--seeds", "0", "1", "--workers", "1", "--stack", "2",
                 "--results", str(tmp_path), "--quiet"]) == 0
    entries = list(ResultStore(tmp_path, published=None).entries(STORE_KIND))
    assert len(entries) == 2 and all(len(e.record()["stacked_with"]) == 2 for e in entries)
    assert main(["sweep", *TINY, "--stack", "0", "--results", str(tmp_path), "--quiet"]) == 2


def test_a_point_whose_budget_was_raised_shows_its_run_at_the_largest_earlier_budget(monkeypatch):
    """The plan asks 4x the base steps; the store holds runs at the base and at twice it:
    the twice-the-base run stands in, marked, and the plan's config is listed as missing."""
    import bindcore.controlled.recipes as R
    from bindcore.experiments.generalization import scale_records

    base = R.recipe("scale", n_values=10, coverage=0.9, seed=0)
    plan = base.with_(steps=4 * base.steps)
    monkeypatch.setattr(R, "scale_plan", lambda *a, **k: [plan])
    stored = {base.with_(steps=s).to_dict()["steps"]: base.with_(steps=s) for s in (base.steps, 2 * base.steps)}

    class Store:  # the store's lookup, as scale_records uses it
        def find(self, kind, cfg):
            run = stored.get(cfg["steps"])
            return SimpleNamespace(record=lambda: {"config": cfg}) if run is not None and run.to_dict() == cfg else None

    store = Store()
    found, missing = scale_records(store)
    assert missing == [plan]
    assert [(r["config"]["steps"], r["earlier_budget"]) for r in found] == [(2 * base.steps, True)]


def test_the_scale_records_of_a_recipe_hold_no_run_of_another():
    """The plan's records are the three-layer recipe's only; the earlier recipe's (two layers)
    are asked for by depth, each point at the fit rule's budget on its own runs; a run of the
    other depth, or of another batch size, at the same point is never returned."""
    from bindcore.controlled.recipes import EARLIER_DEPTH, PLAN_DEPTH, SCALE_STEPS, recipe, scale_plan
    from bindcore.experiments.generalization import scale_records
    from bindcore.io import config_hash

    point = dict(n_values=10, coverage=0.5, split_seed=0)
    runs = [recipe("scale", **point, seed=s, n_layers=n, steps=SCALE_STEPS[(2, 10)]) for s in (0, 1, 2)
            for n in (PLAN_DEPTH, EARLIER_DEPTH)]
    runs.append(recipe("scale", **point, seed=0, n_layers=PLAN_DEPTH, batch_size=256, steps=SCALE_STEPS[(2, 10)]))
    records = {config_hash(c.to_dict()): {"config": c.to_dict(), "history": [{"step": 100, "task_object_2": 1.0}]}
               for c in runs}

    class Store:  # the store's lookups, as scale_records uses them
        def find(self, kind, cfg):
            rec = records.get(config_hash(cfg))
            return SimpleNamespace(record=lambda: rec) if rec is not None else None

        def entries(self, kind):
            return [SimpleNamespace(record=lambda r=r: r) for r in records.values()]

    for depth in (None, PLAN_DEPTH, EARLIER_DEPTH):
        found, missing = scale_records(Store(), n_layers=depth)
        want = PLAN_DEPTH if depth is None else depth
        assert len(found) == 3 and {r["config"]["n_layers"] for r in found} == {want}
        assert {r["config"]["batch_size"] for r in found} == {recipe("scale").batch_size}
        assert len(missing) == len(scale_plan()) - 3


def test_the_depth_rule_picks_the_smallest_depth_that_fits_every_point_on_training_metrics_only():
    """The depth rule (recipes.comparison_depth, written before the three-layer runs at 100 and
    400): a depth fits when every point of every comparison size has a majority of runs fitted
    at the fit rule's budget, at most twice the size's base steps; a point without runs there
    keeps it open; the published two-layer runs at |O| = 2,500 rule two layers out."""
    from bindcore.controlled.recipes import (
        COMPARISON_SIZES,
        SCALE_COVERAGES,
        SCALE_SEEDS,
        SCALE_STEPS,
        comparison_depth,
        depth_fit,
        recipe,
        scale_split_seeds,
    )
    from bindcore.controlled.search import hidden_from_choices
    from bindcore.store import PUBLISHED_ROOT

    def run(c, v, cov, seed, split, n_layers, task, fit_at=1000, steps=None):
        cfg = recipe("scale", n_concepts=c, n_values=v, coverage=cov, seed=seed, split_seed=split,
                     n_layers=n_layers, steps=steps or SCALE_STEPS[(c, v)]).to_dict()
        return {"config": cfg, "metrics": {"task_object_2": task, "test_swap_pair": 0.3},
                "history": [{"step": fit_at, "task_object_2": task}]}

    def grid(n_layers, task=lambda *p: 1.0, skip=()):
        return [run(c, v, cov, seed, split, n_layers, task(c, v, cov, seed))
                for c, v in COMPARISON_SIZES for cov in SCALE_COVERAGES[(c, v)] if (v, cov) not in skip
                for seed in SCALE_SEEDS for split in scale_split_seeds(c, v, cov)]

    full = grid(3)
    assert depth_fit(full, 3)[0] == "fits" and depth_fit(full, 2)[0] == "open" and comparison_depth(full) is None
    def unfit(c, v, cov, seed):
        return 0.5 if (v, cov, seed) in {(50, 0.5, 0), (50, 0.5, 1)} else 1.0

    two_fail = grid(2, unfit)
    assert depth_fit(two_fail, 2)[0] == "open"  # the fit rule asks twice the budget there first
    two_fail += [run(2, 50, 0.5, seed, 0, 2, unfit(2, 50, 0.5, seed), steps=2 * SCALE_STEPS[(2, 50)])
                 for seed in SCALE_SEEDS]
    assert depth_fit(two_fail, 2)[0] == "does not fit" and comparison_depth(two_fail + full) == 3
    assert depth_fit(grid(3, skip={(20, 0.9)}), 3)[0] == "open"
    one_unfitted = grid(3, lambda c, v, cov, seed: 0.5 if (v, cov, seed) == (10, 0.5, 0) else 1.0)
    assert depth_fit(one_unfitted, 3)[0] == "fits"  # a majority is enough
    # a point that fits late asks twice the budget: open until runs there; at twice, fitted, it fits
    late = [dict(r, history=[{"step": 9000, "task_object_2": 1.0}]) if r["config"]["n_values"] == 20 else r
            for r in full]
    assert depth_fit(late, 3)[0] == "open"
    doubled = late + [run(2, 20, cov, seed, 0, 3, 1.0, fit_at=9000, steps=2 * SCALE_STEPS[(2, 20)])
                      for cov in SCALE_COVERAGES[(2, 20)] for seed in SCALE_SEEDS]
    assert depth_fit(doubled, 3)[0] == "fits"
    # held-out metrics decide nothing
    scrambled = [dict(r, metrics={k: (1.0 - v if hidden_from_choices(k) else v) for k, v in r["metrics"].items()})
                 for r in two_fail + full]
    assert comparison_depth(scrambled) == 3
    published = [json.loads(p.read_text()) for p in (PUBLISHED_ROOT / STORE_KIND).glob("*/result.json")]
    assert depth_fit(published, 2)[0] == "does not fit"


def test_a_recipe_trains_for_the_budget_its_chapter_writes():
    """A profile's steps and evaluation scenes are written once, in its §5.2 chapter's parameters
    (appendix E's, with its batch, for pixels); the recipe reads them (they were also written in
    bindcore/controlled/recipes.py)."""
    from bindcore.controlled.recipes import pixel_recipe

    for profile in PROFILES:
        runs, pixels = (chapter_parameters(c, profile) for c in ("binding_generalization", "pixel_encoders"))
        assert (recipe(profile).steps, recipe(profile).eval_scenes) == (runs["steps"], runs["eval_scenes"])
        px = pixel_recipe(profile)
        assert (px.steps, px.eval_scenes, px.batch_size) == (pixels["steps"], pixels["eval_scenes"],
                                                             pixels["train_batch"])


def test_sweep_axes_take_several_values_after_one_option(tmp_path, monkeypatch):
    import bindcore.cli as cli

    seen = []
    monkeypatch.setattr(cli, "sweep_configs", lambda opts, axes: seen.append(axes) or [])
    monkeypatch.setattr("bindcore.sweep.run_sweep", lambda configs, **kw: [])
    assert main(["sweep", "--profile", "smoke", "--values", "10", "14", "--coverages", "0.2", "0.4", "--seeds", "-1",
                 "2", "--quiet", "--workers", "1", "--results", str(tmp_path)]) == 0
    assert seen == [{"coverage": ["0.2", "0.4"], "n_values": ["10", "14"], "n_concepts": None, "seed": ["-1", "2"]}]


def _attempt(name, seeds_tasks, **changes):
    """A fit-search log row: per seed its last training task, the curve read every 500 steps to 1,000."""
    point = {"n_values": 100, "coverage": 0.5, "n_layers": 3, "steps": 10_000}
    return {"name": name, "base": "scale", "changes": {**point, **changes},
            "runs": [{"seed": s, "last_task_object_2": t,
                      "curve": [{"step": 500, "task_object_2": t / 2}, {"step": 1000, "task_object_2": t}]}
                     for s, t in seeds_tasks]}


def test_the_lever_screen_calls_a_lever_fitted_only_when_every_seed_reaches_the_fit_target():
    from bindcore.controlled import FIT_TARGET, lever_screen

    hi, lo = FIT_TARGET + 0.01, FIT_TARGET - 0.01
    log = [_attempt("C", [(0, 0.0), (1, 0.3), (2, 0.5)]),
           _attempt("A", [(0, hi), (1, hi), (2, hi)], lr=1e-3),
           _attempt("B", [(0, hi), (1, hi), (2, lo)], beta2=0.999),  # the same shape, one seed short
           _attempt("D", [(0, 0.2)], warmup_frac=0.1),  # one seed: never fitted, whatever it reads
           _attempt("other size", [(0, hi), (1, hi), (2, hi)], lr=1e-3, n_values=50)]
    screen = lever_screen(log, 10_000)
    assert screen["fitted"] == ["lr 0.001"] and screen["control"]["name"] == "C"
    assert [r["attempt"] for r in screen["rows"]] == ["C", "A", "B", "D"]  # |O| = 2,500 left out
    assert screen["step"] == 1000 and screen["seed"] == 0 and screen["slowest"]  # the control fitted seed 0 least
    assert screen["best"]["attempt"] == "A"
    null = lever_screen([log[0]] + [_attempt(a["name"], [(s, lo) for s in range(3)], **{k: v for k, v in
                        a["changes"].items() if k not in ("n_values", "coverage", "n_layers", "steps")})
                        for a in log[1:4]], 10_000)
    assert null["fitted"] == []  # every seed below the target: no lever fits
    assert lever_screen(log[1:4], 10_000) is None  # no control: no screen
