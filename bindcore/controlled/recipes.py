"""Training recipes per profile. ``paper``: the authors' release (d_model 256, 6 layers,
lr 3e-5, batch 512, 50k steps), except that held-out objects are never training
negatives (``heldout_as_negatives=True`` restores that). ``quick``: the same science
with an optimisation that trains in minutes on a CPU (a small model, a higher learning
rate, the concept loss joining once the object task is learned). ``scale``: the quick
recipe at the paper's object spaces, with the recipe search's changes (batch 512, 256
object candidates, near-miss negatives, the concept loss from the first step), three layers
per encoder at every size (the depth rule, :func:`comparison_depth`) and a per-point
budget (:data:`SCALE_BUDGETS`).
``colab``: ``scale`` with the paper's 2,048 evaluation scenes. ``smoke``: every code path
in seconds. Pixel recipes (appendix E): each profile's token recipe plus the pixel tower's
fields."""

from __future__ import annotations

import math
from typing import Any

from bindcore.runtime import PROFILES, RECIPE_PROFILES, check_profile

from .training import TrainConfig, check_fields, scene_input_class

_RECIPES: dict[str, dict[str, Any]] = {
    "paper": dict(
        n_concepts=2, n_values=20, max_objects=2, coverage=0.8,
        d_model=256, n_heads=4, n_layers=6, d_ff=2048, d_out=64,
        lr=3e-5, weight_decay=0.1, beta2=0.999, batch_size=512, warmup_frac=0.1,
        logit_scale_cap=10.0, concept_loss_weight=1.0, concept_loss_start=0.0,
        candidates="batch", max_concept_queries=64, max_object_queries=64, swaps_per_scene=1,
        eval_every=1000, checkpoint_every=2500,
    ),
    "smoke": dict(
        n_concepts=2, n_values=4, max_objects=2, coverage=0.75,
        d_model=16, n_heads=2, n_layers=1, d_ff=32, d_out=8,
        lr=3e-3, weight_decay=0.1, beta2=0.98, batch_size=32, warmup_frac=0.1,
        logit_scale_cap=100.0, concept_loss_weight=0.1, concept_loss_start=0.45,
        candidates="batch", eval_every=10, checkpoint_every=10,
    ),
}
# quick: the paper's science, its optimisation changed to train within minutes on a CPU
_RECIPES["quick"] = dict(_RECIPES["paper"], n_values=10, d_model=64, n_layers=2, d_ff=256, lr=3e-3, beta2=0.98,
                         batch_size=256, warmup_frac=0.02, logit_scale_cap=100.0, concept_loss_trigger=0.6,
                         eval_every=500, checkpoint_every=1000)
_RECIPES["scale"] = dict(_RECIPES["quick"], batch_size=512, max_object_queries=256, near_miss_negatives_per_positive=2,
                         concept_loss_trigger=0.0, steps=10_000, eval_scenes=1024, n_layers=3)
# one Colab T4-class GPU: the scale recipe (the paper's own recipe needs 50,000 steps of a
# model with 75x the parameters per run, hours each on a T4)
_RECIPES["colab"] = dict(_RECIPES["scale"])

# the depth of the scale plan, and of the earlier plan's runs at |O| = 100, 400 and 10,000 (kept
# as a second, labelled recipe)
PLAN_DEPTH = _RECIPES["scale"]["n_layers"]
EARLIER_DEPTH = 2

# the scale sweep: per (C, V), the base steps of its runs. V = 50: attempt V1 of the recipe search
# (validation objects, three seeds); V = 10 and 20: the steps by which the earlier scale recipe
# (batch 256, 128 object candidates) had fitted its training task at every coverage it was run at;
# V = 100: the 20 CPU-minute budget (attempt P1 of the fit search)
SCALE_STEPS: dict[tuple[int, int], int] = {(2, 10): 6_000, (2, 20): 10_000, (2, 50): 10_000, (2, 100): 10_000}
# the coverages of each size: the paper's grid (every tenth) where a CPU can afford it
SCALE_COVERAGES: dict[tuple[int, int], tuple[float, ...]] = {
    (2, 10): (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    (2, 20): (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    (2, 50): (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
    (2, 100): (0.1, 0.2, 0.3, 0.5, 0.7),
}
def planned_coverages() -> dict[int, tuple[float, ...]]:
    """The scale plan's coverages per object-space size (objects: coverages)."""
    return {v ** c: covs for (c, v), covs in SCALE_COVERAGES.items()}


# training seeds of every point (each on the object split of every split seed of the point)
SCALE_SEEDS = (0, 1, 2)
# the §5.3 / §5.4 parameter ``models``: which binding scale models a chapter analyses (every
# binding point, or per size the one chosen on validation objects)
SCALE_MODELS = {"scale": "all", "scale-chosen": "chosen"}
# a point whose split holds fewer test objects than this gets more split seeds (scale_split_seeds)
MIN_TEST_OBJECTS = 20

# Training to fit, read on training objects only: a run has fitted its training task when its
# last evaluation recognises two-object training scenes among the training objects
# (task_object_2) at FIT_TARGET or more. The fit-matched budget of a point (fit_budgets): its
# runs' budget while the median of their steps to FIT_TARGET, times FIT_MARGIN, lies within it;
# else twice that budget (at most the size's cap), so that the schedule's last third is spent
# after the fit. SCALE_BUDGETS holds the rule's answer on the published runs, point by point
# (its plan's runs, :func:`of_the_plan`; a test recomputes it); a point without runs yet has
# its size's base steps.
FIT_TARGET = 0.95
FIT_MARGIN = 1.5
SCALE_CAPS: dict[tuple[int, int], int] = {(2, 10): 24_000, (2, 20): 40_000, (2, 50): 80_000, (2, 100): 80_000}
SCALE_BUDGETS: dict[tuple[int, int, float], int] = {
    (2, 20, 0.3): 20_000, (2, 20, 0.4): 20_000, (2, 20, 0.5): 20_000, (2, 20, 0.7): 20_000,
    (2, 50, 0.5): 20_000, (2, 50, 0.6): 20_000, (2, 50, 0.7): 20_000,
}


def scale_budget(n_concepts: int, n_values: int, coverage: float) -> int | None:
    """The steps of the scale plan's runs at this point (None: a size the plan does not hold)."""
    base = SCALE_STEPS.get((n_concepts, n_values))
    return None if base is None else SCALE_BUDGETS.get((n_concepts, n_values, coverage), base)


def scale_point(cfg: TrainConfig, keep: Any = ()) -> TrainConfig:
    """``cfg`` with the scale plan's steps for its point (:func:`scale_budget`), so that a run
    of the plan asked for by its axes (``bindcore sweep --profile scale --values 10``) is the
    plan's run; ``steps`` named in ``keep`` (set by hand) and a size the plan does not hold
    keep ``cfg``'s value."""
    steps = scale_budget(cfg.n_concepts, cfg.n_values, cfg.coverage)
    if steps is None or type(cfg) is not TrainConfig or "steps" in keep:
        return cfg
    return cfg.with_(steps=steps)


def of_the_plan(record: dict[str, Any], n_layers: int | None = None) -> bool:
    """Whether a stored run is the scale plan's run at its point at some budget: its config
    equals the plan's there in every field but ``steps`` (``n_layers``: the scale recipe at
    that depth instead, e.g. the earlier two-layer recipe)."""
    c = record["config"]
    if (c.get("n_concepts"), c.get("n_values")) not in SCALE_STEPS:
        return False
    plan = recipe("scale", n_concepts=c["n_concepts"], n_values=c["n_values"], coverage=c["coverage"],
                  seed=c["seed"], split_seed=c.get("split_seed", 0), steps=c["steps"],
                  n_layers=PLAN_DEPTH if n_layers is None else n_layers)
    return TrainConfig.from_dict(c) == plan


def depth_label(n_layers: int) -> str:
    """How the book names the scale recipe at a depth: ``"scale, three layers per encoder"``."""
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    return f"scale, {words.get(n_layers, str(n_layers))} layer{'s' if n_layers != 1 else ''} per encoder"


# the fields in which the runs of one recipe differ: where in the grid they lie and how long they train
POINT_FIELDS = ("n_concepts", "n_values", "coverage", "seed", "split_seed", "steps", "eval_scenes")


def is_recipe(config: dict[str, Any], profile: str, **fixed: Any) -> bool:
    """Whether a stored token run's ``config`` is ``profile``'s recipe (with ``fixed``
    fields, e.g. ``n_layers``) in every field but :data:`POINT_FIELDS`."""
    cfg = TrainConfig.from_dict(config)
    return type(cfg) is TrainConfig and cfg == recipe(profile, **fixed, **{k: getattr(cfg, k) for k in POINT_FIELDS})


def scale_split_seeds(n_concepts: int, n_values: int, coverage: float) -> range:
    """The object splits of a point: enough that its runs hold at least
    :data:`MIN_TEST_OBJECTS` test objects over all its splits (one split where one does)."""
    n = n_values**n_concepts
    heldout = n - int(n * coverage)
    n_test = heldout - heldout // 2
    return range(max(1, math.ceil(MIN_TEST_OBJECTS / n_test)))


def scale_plan(n_layers: int | None = None, budgets: dict[tuple[int, int, float], int] | None = None
               ) -> list[TrainConfig]:
    """The configs of the ``scale`` sweep, smallest object space first, then coverage,
    seed and split seed (``n_layers``, ``budgets``: the scale recipe at another depth with
    those per-point steps, each point's base steps where ``budgets`` has none)."""
    if n_layers is None or n_layers == PLAN_DEPTH:
        n_layers, budgets = PLAN_DEPTH, SCALE_BUDGETS if budgets is None else budgets
    budgets = budgets or {}
    return [recipe("scale", n_concepts=c, n_values=v, steps=budgets.get((c, v, cov), SCALE_STEPS[(c, v)]),
                   coverage=cov, split_seed=split, seed=seed, n_layers=n_layers)
            for (c, v) in sorted(SCALE_STEPS, key=lambda cv: cv[1] ** cv[0])
            for cov in SCALE_COVERAGES[(c, v)] for seed in SCALE_SEEDS for split in scale_split_seeds(c, v, cov)]


def steps_to_fit(history: list[dict[str, Any]], key: str = "task_object_2", target: float = FIT_TARGET) -> float:
    """The first evaluated step at which ``key`` (a training-task metric) reaches
    ``target``; infinity when it never does."""
    from .search import search_view

    for h in history:
        if search_view(h).get(key, 0.0) >= target:
            return float(h["step"])
    return math.inf


def task_score(record: dict[str, Any]) -> float:
    """A run's training-task recognition at its last evaluation (``task_object_<max objects>``)."""
    from .search import search_view

    return search_view(record["metrics"]).get(f"task_object_{record['config'].get('max_objects', 2)}", 0.0)


def fitted(record: dict[str, Any], target: float = FIT_TARGET) -> bool:
    """Whether a run ended with its training task fitted (:func:`task_score` at ``target`` or more)."""
    return task_score(record) >= target


def fit_budgets(records: list[dict[str, Any]]) -> dict[tuple[int, int, float], int]:
    """The fit-matched budget of every point with stored runs (see :data:`FIT_MARGIN`),
    read from the runs at the largest budget tried there, on training-task metrics only:
    their budget where the median of their steps to :data:`FIT_TARGET` times
    :data:`FIT_MARGIN` lies within it, else twice it (at most the size's cap)."""
    import statistics

    points: dict[tuple[int, int, float], dict[int, list[float]]] = {}
    for r in records:
        c = r["config"]
        point = (c["n_concepts"], c["n_values"], c["coverage"])
        points.setdefault(point, {}).setdefault(c["steps"], []).append(steps_to_fit(r.get("history") or []))
    out = {}
    for (c, v, cov), by_budget in points.items():
        budget = max(by_budget)
        need = statistics.median(by_budget[budget]) * FIT_MARGIN
        cap = SCALE_CAPS.get((c, v), budget)
        out[(c, v, cov)] = budget if need <= budget else min(2 * budget, max(cap, budget))
    return out


# The depth rule, written down (2026-12-07) before the three-layer runs at |O| = 100 and 400 that
# it judges: the cross-size comparison uses one architecture at every size, the scale recipe at
# the smallest depth (layers per encoder) of DEPTHS that fits every point of every size of
# COMPARISON_SIZES. A depth fits a point when, at the fit rule's budget for that depth's runs
# there (fit_budgets), at most DEPTH_BUDGET_FACTOR times the size's base steps, a majority of
# the point's runs (seeds x object splits) ended with their training task fitted. A point whose
# budget exceeds that, or whose runs there mostly did not fit: the depth does not fit. Read on
# training-task metrics only.
DEPTHS = (2, 3, 4)
COMPARISON_SIZES = ((2, 10), (2, 20), (2, 50))
DEPTH_BUDGET_FACTOR = 2


def depth_fit(records: list[dict[str, Any]], n_layers: int) -> tuple[str, str]:
    """The depth rule on the stored runs of the scale recipe with ``n_layers`` layers:
    ``("fits" | "does not fit" | "open", why)``; open while a point still lacks its runs at
    its budget."""
    runs = [r for r in records if of_the_plan(r, n_layers)]
    budgets = fit_budgets(runs)
    open_points = []
    for size in COMPARISON_SIZES:
        limit = DEPTH_BUDGET_FACTOR * SCALE_STEPS[size]
        for cov in SCALE_COVERAGES[size]:
            point = (*size, cov)
            where = f"|O| = {size[1] ** size[0]:,} at coverage {cov:g}"
            budget = budgets.get(point)
            if budget is not None and budget > limit:
                return "does not fit", f"{where}: the fit rule asks {budget:,} steps, more than {limit:,}"
            at = [r for r in runs if (r["config"]["n_concepts"], r["config"]["n_values"], r["config"]["coverage"],
                                      r["config"]["steps"]) == (*point, budget)]
            if budget is None or len({r["config"]["seed"] for r in at}) < len(SCALE_SEEDS):
                open_points.append(where)
            elif 2 * sum(fitted(r) for r in at) <= len(at):
                return "does not fit", f"{where}: fitted {sum(fitted(r) for r in at)} of {len(at)} at {budget:,} steps"
    if open_points:
        return "open", f"{len(open_points)} point(s) without their runs yet ({', '.join(open_points[:3])}" + (
            ", ...)" if len(open_points) > 3 else ")")
    return "fits", "a majority of runs fitted at every point of every size"


def comparison_depth(records: list[dict[str, Any]]) -> int | None:
    """The depth rule's answer on ``records``: the smallest depth of :data:`DEPTHS` that fits
    (:func:`depth_fit`), None while a smaller one is still open or none fits."""
    for n_layers in DEPTHS:
        fit, _ = depth_fit(records, n_layers)
        if fit != "does not fit":
            return n_layers if fit == "fits" else None
    return None


# appendix E (bindcore.controlled.pixels): each profile's token recipe with these changes,
# and the pixel scene tower's fields
_PIXEL_CHANGES: dict[str, dict[str, Any]] = {
    # V = 50 and an eight-layer pixel tower; not run on this book's CPU
    "paper": dict(
        n_values=50, coverage=0.5,
        image_size=64, side=16, border=3, patch_size=8, stem_channels=32, stem_layers=2, scene_layers=8,
    ),
    # chosen on training-object metrics only (see the module docstring)
    "quick": dict(
        n_values=8, concept_loss_trigger=0.0, eval_every=250, checkpoint_every=500,
        image_size=32, side=10, border=2, patch_size=8, stem_channels=64, stem_layers=1, scene_layers=2,
    ),
    "smoke": dict(
        image_size=16, side=6, border=1, patch_size=4, stem_channels=4, stem_layers=1, scene_layers=1,
    ),
}
# colab: the quick pixel recipe (its search's choice); the candidates, near misses and depth of the
# token colab (scale) recipe set back to the quick recipe's
_PIXEL_CHANGES["colab"] = dict(
    _PIXEL_CHANGES["quick"],
    max_object_queries=_RECIPES["quick"]["max_object_queries"], n_layers=_RECIPES["quick"]["n_layers"],
    near_miss_negatives_per_positive=_RECIPES["quick"].get("near_miss_negatives_per_positive", 0),
)


def lever(attempt: dict[str, Any]) -> str:
    """The recipe fields a fit-search attempt changed besides its point (:data:`POINT_FIELDS`) and the
    depth it screens at (``""``: the base recipe)."""
    return ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}"
                     for k, v in sorted(attempt["changes"].items()) if k not in POINT_FIELDS and k != "n_layers")


def lever_screen(attempts: list[dict[str, Any]], n_objects: int, n_layers: int = PLAN_DEPTH,
                 target: float = FIT_TARGET, seeds: int = len(SCALE_SEEDS)) -> dict[str, Any] | None:
    """The one-lever-at-a-time screen of a fit-search log (:func:`~bindcore.controlled.search.read_attempts`)
    at the space of ``n_objects`` objects and ``n_layers`` layers: ``control`` (the last attempt that
    changes no lever), the screened ``seed`` (the one the levers ran, and whether the control fitted it
    least: ``slowest``), the ``step`` every lever reached, ``rows`` (attempt, lever, training task there;
    None where a curve skipped it), the ``best`` lever row and ``fitted``: the levers run on ``seeds``
    seeds or more whose every seed ended at ``target`` or above (the fit rule's). None without a
    control and a lever. Training objects only (the log holds ``task_object_2``)."""
    here = [a for a in attempts
            if (cfg := recipe(a["base"], **a["changes"])).space.n_objects == n_objects and cfg.n_layers == n_layers]
    controls, levers = [a for a in here if not lever(a)], [a for a in here if lever(a)]
    if not controls or not levers:
        return None
    control, seed = controls[-1], levers[0]["runs"][0]["seed"]
    step = min(r["curve"][-1]["step"] for a in levers for r in a["runs"])

    def task_at(a: dict[str, Any]) -> float | None:
        run = next((r for r in a["runs"] if r["seed"] == seed), None)
        return next((c["task_object_2"] for c in run["curve"] if c["step"] == step), None) if run else None

    rows = [{"attempt": a["name"], "lever": lever(a) or "none (the base recipe)", "task": task_at(a)}
            for a in [control] + levers]
    read = [r for r in rows[1:] if r["task"] is not None]
    last = {r["seed"]: r["last_task_object_2"] for r in control["runs"]}
    return {"control": control, "seed": seed, "slowest": min(last, key=last.get) == seed, "step": step,
            "rows": rows, "best": max(read, key=lambda r: r["task"]) if read else None,
            "fitted": [lever(a) for a in levers
                       if len(a["runs"]) >= seeds and all(r["last_task_object_2"] >= target for r in a["runs"])]}


def recipe(profile: str, **overrides: Any) -> TrainConfig:
    """The training config of a profile, with fields overridden one by one (values as
    their fields' types or as text: ``recipe("quick", n_values="20")``).
    ``scene_input="pixels"``: the pixel recipe (:func:`pixel_recipe`)."""
    if scene_input_class(overrides.pop("scene_input", "tokens")) is not TrainConfig:
        return pixel_recipe(profile, **overrides)
    check_recipe_profile(profile)
    check_fields(overrides)
    return TrainConfig(**{**_RECIPES[profile], **budget(profile), **overrides})


def budget(profile: str, pixels: bool = False) -> dict[str, Any]:
    """How long the recipe of a book profile trains and how many scenes it evaluates: its §5.2
    chapter's ``steps`` and ``eval_scenes`` (appendix E's, and its ``train_batch`` as ``batch_size``,
    for pixels), as the chapter's parameters cell and profile files write them; none for ``scale``."""
    from bindcore.parameters import chapter_parameters

    if profile not in PROFILES:
        return {}
    p = chapter_parameters("pixel_encoders" if pixels else "binding_generalization", profile)
    out = {"steps": p["steps"], "eval_scenes": p["eval_scenes"], "batch_size": p.get("train_batch")}
    return {k: v for k, v in out.items() if v is not None}


def check_recipe_profile(profile: str) -> str:
    """``profile`` if it names a token recipe (:data:`RECIPE_PROFILES`), else a
    ``ValueError`` naming them."""
    if profile not in RECIPE_PROFILES:
        raise ValueError(f"recipe profile must be one of {RECIPE_PROFILES}, got {profile!r}")
    return profile


def pixel_recipe(profile: str, **overrides: Any) -> TrainConfig:
    """The pixel training config (a :class:`~bindcore.controlled.pixels.PixelTrainConfig`)
    of a profile, with fields overridden one by one."""
    from .pixels import PixelTrainConfig

    check_profile(profile)
    overrides.pop("scene_input", None)
    check_fields(overrides, PixelTrainConfig)
    return PixelTrainConfig(**{**_RECIPES[profile], **_PIXEL_CHANGES[profile], **budget(profile, pixels=True),
                               **overrides})


def recipe_differences(a: str = "paper", b: str = "quick", scene_input: str = "tokens") -> dict[str, tuple[Any, Any]]:
    """Fields in which two recipes differ: {field: (value in a, value in b)}."""
    ra, rb = recipe(a, scene_input=scene_input).to_dict(), recipe(b, scene_input=scene_input).to_dict()
    return {k: (ra[k], rb[k]) for k in ra if ra[k] != rb[k]}


def recipe_table(profile: str, against: str = "paper", scene_input: str = "tokens"):
    """A table of the fields in which ``profile``'s recipe differs from ``against``'s
    (all fields when they are the same recipe), values as text."""
    import pandas as pd

    what = "recipe" if scene_input == "tokens" else f"{scene_input} recipe"
    if profile == against:
        cfg = recipe(profile, scene_input=scene_input).to_dict()
        return pd.DataFrame({f"{profile} {what}": {k: str(v) for k, v in cfg.items()}})
    diff = recipe_differences(against, profile, scene_input)
    return pd.DataFrame({f"{against} {what}": {k: str(v[0]) for k, v in diff.items()},
                         f"{profile} {what}": {k: str(v[1]) for k, v in diff.items()}})
