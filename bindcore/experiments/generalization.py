"""§5.2 as the chapters run it: a chapter's training recipe, the chapter's own sweep, the
generalizing models the other chapters reuse (§4.1, §4.2, §5.3, §5.4), the scale sweep's
stored records, and the note that says which code made the stored runs a chapter shows.

The §5.2 chapter's parameters (``sweep_params``: its ``sizes``, ``coverages`` and ``seeds``) are
passed in by the caller, as plain values; the profile's name reaches only the recipe
lookup (:mod:`bindcore.controlled.recipes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bindcore.paper import fmt_objects
from bindcore.store import Kind, code_version, shown_path


def chapter_recipe(profile: str, steps: int | None = None, eval_scenes: int | None = None,
                   pixels: bool = False, batch_size: int | None = None) -> Any:
    """The training recipe of ``profile`` (the pixel recipe with ``pixels``) with a
    chapter's ``steps``, ``eval_scenes`` and ``batch_size`` (its ``train_batch``) where
    they are set (None: the recipe's)."""
    from bindcore.controlled.recipes import pixel_recipe, recipe

    given = {k: v for k, v in dict(steps=steps, eval_scenes=eval_scenes, batch_size=batch_size).items()
             if v is not None}
    return pixel_recipe(profile, **given) if pixels else recipe(profile, **given)


def generalization_runs(profile: str, sweep_params: dict[str, Any], workers: int | None = None,
                        device: str | None = None) -> list[dict[str, Any]]:
    """The records of the §5.2 chapter's own sweep (stored runs; missing ones trained)."""
    from bindcore.analysis.generalization import generalization_configs
    from bindcore.sweep import run_sweep

    base = chapter_recipe(profile, sweep_params["steps"], sweep_params.get("eval_scenes"))
    return run_sweep(generalization_configs(base, sweep_params), workers=workers, device=device, progress=False)


def generalizing_configs(profile: str, params: Mapping[str, Any] | None, sweep_params: Mapping[str, Any]) -> list[Any]:
    """The configs of the §5.2 models the other chapters use: the largest coverage of each
    object space of the §5.2 chapter's parameters ``sweep_params`` on ``profile``, its first seed,
    with a chapter's ``controlled_steps`` and ``controlled_eval_scenes`` (``params``; None
    or absent: the profile's recipe)."""
    from bindcore.analysis.generalization import generalization_configs

    params = params or {}
    base = chapter_recipe(profile, params.get("controlled_steps"), params.get("controlled_eval_scenes"))
    largest = {**sweep_params, "coverages": [max(sweep_params["coverages"])], "seeds": sweep_params["seeds"][:1]}
    return generalization_configs(base, largest)


def binding_scale_runs(store: Any = None, level: float | None = None,
                       per_size: str = "all") -> list[dict[str, Any]]:
    """The scale sweep's models that bind, chosen on validation objects: the points (first
    object split) whose runs' median validation swap pairs reach ``level``, whose median
    training-task metric reaches :data:`~bindcore.controlled.recipes.FIT_TARGET` (a run
    still fitting its training task is not yet the trained model §5.3 and §5.4 study) and
    that have stored weights (``per_size="chosen"``: per size only the one with the largest
    median, ties the smaller coverage), each run with weights. A point whose budget the fit
    rule has raised serves with its runs at the earlier budget (:func:`scale_records`):
    §5.3 and §5.4 ask for a model that binds, not for the plan's latest budget. Test
    objects choose nothing."""
    import statistics

    from bindcore.analysis.generalization import best_coverage
    from bindcore.controlled.recipes import FIT_TARGET, task_score
    from bindcore.controlled.search import BINDS_AT, search_view
    from bindcore.store import has_weights

    level = BINDS_AT if level is None else level
    records, _ = scale_records(store)
    points: dict[tuple[int, float], list[dict[str, Any]]] = {}
    for r in records:
        c = r["config"]
        if c.get("split_seed", 0) == 0:
            points.setdefault((c["n_values"] ** c["n_concepts"], c["coverage"]), []).append(r)
    if per_size not in ("all", "chosen"):
        raise ValueError(f"per_size = {per_size!r}: must be 'all' or 'chosen'")
    binding: dict[int, list[tuple[float, float]]] = {}  # size: (coverage, median validation swap pairs)
    for size, cov in sorted(points):
        runs = points[(size, cov)]
        val = statistics.median(search_view(r["metrics"]).get("val_swap_pair", 0.0) for r in runs)
        task = statistics.median(task_score(r) for r in runs)
        if val >= level and task >= FIT_TARGET and any(has_weights(r) for r in runs):
            binding.setdefault(size, []).append((cov, val))
    coverages = {size: [best_coverage(vals)] if per_size == "chosen" else [c for c, _ in vals]
                 for size, vals in binding.items()}
    return [r for size in sorted(coverages) for cov in coverages[size]
            for r in sorted((r for r in points[(size, cov)] if has_weights(r)), key=lambda r: r["config"]["seed"])]


def generalizing_runs(profile: str, params: Mapping[str, Any] | None, sweep_params: Mapping[str, Any],
                      workers: int | None = None, device: str | None = None,
                      executor: Any = None) -> list[dict[str, Any]]:
    """The controlled dual encoders a chapter analyses: with ``params["models"]`` = ``"scale"``
    or ``"scale-chosen"`` (:data:`~bindcore.controlled.recipes.SCALE_MODELS`), the scale
    sweep's models that bind (:func:`binding_scale_runs`; none stored with weights: the
    chapter's own, said so); else those of :func:`generalizing_configs` (stored runs are
    reused; their code version is printed; ``executor``: :func:`bindcore.sweep.run_sweep`'s)."""
    from bindcore.controlled.recipes import SCALE_MODELS
    from bindcore.sweep import run_sweep

    models = (params or {}).get("models")
    if models in SCALE_MODELS:
        runs = binding_scale_runs(per_size=SCALE_MODELS[models])
        if runs:
            note_stored(runs, what="controlled models (the scale sweep's models that bind and fitted their "
                                    "training task)")
            return runs
        print("No model of the scale sweep that binds on validation objects and fitted its training task is "
              "stored with its weights: the chapter's own §5.2 models stand in.")
    runs = run_sweep(generalizing_configs(profile, params, sweep_params), workers=workers, device=device,
                     progress=False, executor=executor)
    runs = with_weights(runs, workers=workers, device=device, executor=executor)
    note_stored(runs, what="controlled models (stored §5.2 training runs)")
    return runs


def with_weights(records: list[dict[str, Any]], workers: int | None = None, device: str | None = None,
                 executor: Any = None) -> list[dict[str, Any]]:
    """``records`` of runs whose models a page loads, each with its weights here: a run
    found published without them (``bindcore publish`` without ``--weights``) is trained
    again into the local store, which every later lookup reads first."""
    from bindcore.controlled.training import TrainConfig
    from bindcore.store import ResultStore, has_weights
    from bindcore.sweep import run_sweep

    lacking = [i for i, r in enumerate(records) if not has_weights(r)]
    if not lacking:
        return list(records)
    print(f"{len(lacking)} stored run(s) were published without the weights this page loads: trained here", flush=True)
    fresh = run_sweep([TrainConfig.from_dict(records[i]["config"]) for i in lacking], store=ResultStore(published=None),
                      workers=workers, device=device, progress=False, executor=executor)
    out = list(records)
    for i, rec in zip(lacking, fresh):
        out[i] = rec
    return out


# ---------------------------------------------------------------------------------
# which code made the stored runs a chapter shows
# ---------------------------------------------------------------------------------
def note_stored(records: Iterable[Mapping[str, Any]], kind: Kind | None = None, what: str = "training runs") -> None:
    """Print where the stored records a chapter shows come from: per source (local or
    published), how many, their folder (the kind's version, default ``kind``'s) and the
    commits that made them. Every record of the kind's current version is current
    (:mod:`bindcore.store`); the commit is provenance."""
    from bindcore.controlled.training import STORE_KIND

    by_source: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by_source.setdefault(r.get("source", "local"), []).append(r)
    for source, recs in sorted(by_source.items()):
        folder = shown_path(Path(recs[0]["path"]).parent) if recs[0].get("path") else str(kind or STORE_KIND)
        made = "; ".join(sorted({code_version(r.get("code")) for r in recs}))
        print(f"{len(recs)} {what} ({source}, {folder}) made by {made}")


# ---------------------------------------------------------------------------------
# §5.2 up to the paper's smaller object space: the scale sweep's stored records
# ---------------------------------------------------------------------------------
def scale_records(store: Any = None, n_layers: int | None = None) -> tuple[list[dict[str, Any]], list[Any]]:
    """The stored runs of the ``scale`` sweep (:func:`bindcore.controlled.recipes.scale_plan`),
    local or published, and the configs of the plan that have none yet; ``n_layers``: the
    scale recipe at that depth instead (default the plan's), each point at the fit rule's
    budget on that depth's own runs. Nothing of another recipe is returned. Where a point's
    budget was raised by the fit rule and its run at the new budget is missing, its run at
    the largest earlier budget (half the new one, a quarter, ... down to the size's base
    steps) is shown in its place (``earlier_budget``: True) until then. The quick book
    shows them; ``bindcore sweep --profile scale --publish`` computes the missing ones."""
    from bindcore.controlled.recipes import PLAN_DEPTH, SCALE_STEPS, fit_budgets, of_the_plan, scale_plan
    from bindcore.controlled.training import STORE_KIND
    from bindcore.store import ResultStore

    store = store or ResultStore()
    budgets = None
    if n_layers is not None and n_layers != PLAN_DEPTH:
        budgets = fit_budgets([r for r in (e.record() for e in store.entries(STORE_KIND)) if of_the_plan(r, n_layers)])
    found, missing = [], []
    for cfg in scale_plan(n_layers, budgets):
        entry = store.find(cfg.store_kind, cfg.to_dict())
        if entry is None:
            missing.append(cfg)
            base, steps = SCALE_STEPS[(cfg.n_concepts, cfg.n_values)], cfg.steps
            while entry is None and steps > base:
                steps = max(base, steps // 2)
                entry = store.find(cfg.store_kind, cfg.with_(steps=steps).to_dict())
            if entry is not None:
                found.append({**entry.record(), "earlier_budget": True})
        else:
            found.append(entry.record())
    return found, missing


def describe_scale_records(records: list[dict[str, Any]], missing: list[Any]) -> str:
    """Where and how the scale records were made, in one paragraph of text."""
    if not records:
        return (f"No record of the scale sweep is stored ({len(missing)} runs planned): "
                f"`bindcore sweep --profile scale --publish` computes them.")
    machines = sorted({f"{(r.get('machine') or {}).get('hostname', '?')} ({r.get('device', '?')}, "
                       f"{r.get('threads', '?')} thread{'s' if r.get('threads') != 1 else ''} per run)" for r in records})
    cpu = [r["cpu_seconds"] / 60 for r in records if r.get("cpu_seconds") is not None]
    when = sorted(r.get("finished_at", "?") for r in records)
    text = (f"{len(records)} runs of the scale sweep ({', '.join(sorted({r.get('source', 'local') for r in records}))}"
            f" records), computed on {', '.join(machines)} between {when[0]} and {when[-1]}"
            + (f"; {min(cpu):.1f} to {max(cpu):.1f} CPU-minutes per run, {sum(cpu):.0f} in all" if cpu else "")
            + ". Recompute them with `bindcore sweep --profile scale` (add `--publish` to copy the records to "
              "published/).")
    if missing:
        text += f" Not computed yet: {len(missing)} runs ({missing_runs_text(missing)})."
    return text


def missing_runs_text(missing: list[Any]) -> str:
    """Runs not computed yet, by object space and coverage with their seeds (and splits):
    ``|O| = 2,500: coverage 0.3 (seed 2), 0.7 (seeds 0, 1, 2 on 2 splits); |O| = ...``."""
    by_size: dict[int, dict[float, list[Any]]] = {}
    for c in missing:
        by_size.setdefault(c.n_values ** c.n_concepts, {}).setdefault(c.coverage, []).append(c)
    parts = []
    for size, covs in sorted(by_size.items()):
        points = []
        for cov, runs in sorted(covs.items()):
            seeds, splits = sorted({c.seed for c in runs}), {c.split_seed for c in runs}
            points.append(f"{cov:g} (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
                          + (f" on {len(splits)} splits" if len(splits) > 1 else "") + ")")
        parts.append(f"{fmt_objects(size)}: coverage " + ", ".join(points))
    return "; ".join(parts)
