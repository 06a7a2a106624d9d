"""Parameter sweeps over training configs (§5.2): stored runs return at once, the rest go to an
executor as :func:`train_task` tasks; and the tables that summarise them."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from itertools import product
from typing import Any

from .controlled.runs import seconds_per_step, train
from .controlled.training import TrainConfig, check_fields
from .io import config_hash
from .runner import Task, cpu_budget, make_executor, portable_store, run_tasks, with_workers, worker_store
from .runtime import format_duration, resolve_device
from .store import ResultStore

log = logging.getLogger(__name__)


def grid(base: TrainConfig, **axes: Iterable[Any]) -> list[TrainConfig]:
    """Configs for every combination of field values, e.g. ``grid(cfg, n_values=[10, 20], coverage=[0.2])``.
    Each axis is a field of ``base``'s class with a non-empty list of values, each checked as that
    field; anything else is a ``ValueError`` naming the axis."""
    check_fields(axes, type(base))
    for name, values in axes.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValueError(f"sweep axis {name} = {values!r}: must be a list of values")
        axes[name] = list(values)
        if not axes[name]:
            raise ValueError(f"sweep axis {name}: needs at least one value (an empty axis sweeps nothing)")
    names = list(axes)
    return [base.with_(**dict(zip(names, vals))) for vals in product(*(axes[n] for n in names))]


def default_workers(n_pending: int, device: str | None = None) -> int:
    """Local runs at once: one on a GPU, else one per usable CPU core (at most ``n_pending``)."""
    if resolve_device(device).type == "cuda":
        return 1
    return max(1, min(n_pending, cpu_budget()))


# fields that change neither a step's model, batch nor object space: one timed step serves them all
# (coverage changes a step's cost a little; each group is timed at its largest, so estimates err long)
SAME_STEP_FIELDS = ("coverage", "seed", "steps", "warmup_frac", "eval_every", "checkpoint_every",
                    "concept_loss_trigger", "concept_loss_start", "heldout_as_negatives", "lr", "level")


def step_key(cfg: TrainConfig) -> str:
    """What a training step's cost depends on: every field of ``cfg`` but :data:`SAME_STEP_FIELDS`."""
    return repr(sorted((k, v) for k, v in cfg.to_dict().items() if k not in SAME_STEP_FIELDS))


def training_estimate(configs: list[TrainConfig], device: str | None = None, workers: int = 1) -> tuple[float, str]:
    """(seconds, a line saying so) to train ``configs`` here: one timed step per :func:`step_key`,
    times each config's steps, shared among ``workers``; evaluation and start-up not counted."""
    keys = {cfg: step_key(cfg) for cfg in configs}
    per_step: dict[str, float] = {}
    for cfg in sorted(configs, key=lambda c: -c.coverage):
        if keys[cfg] not in per_step:
            per_step[keys[cfg]] = seconds_per_step(cfg, device)
    total = sum(per_step[keys[cfg]] * cfg.steps for cfg in configs)
    seconds = total / max(1, workers)
    steps = sum(c.steps for c in configs)
    timed = ", ".join(f"{1e3 * t:.0f}" for t in per_step.values())
    line = (f"cost: {len(configs)} training run(s), {steps:,} steps in all; about {format_duration(seconds)} on "
            f"{resolve_device(device)} with {workers} worker(s) (a timed step per model size: {timed} ms; "
            f"evaluation not counted)")
    return seconds, line


def train_task(cfg: TrainConfig, store: ResultStore, kind: str, device: str | None, progress: bool) -> None:
    """Worker side of a sweep run: train (or read) ``cfg`` in ``store`` (:func:`~bindcore.runner.worker_store`;
    ``kind``: the driver's name of its store kind)."""
    train(cfg, store=worker_store(store, cfg.store_kind, kind), device=device, progress=progress)


def train_stack_task(cfgs: list[TrainConfig], store: ResultStore, kind: str, device: str | None,
                     progress: bool) -> None:
    """Worker side of a stack of sweep runs: train ``cfgs`` as one stack, each stored as its own record."""
    from .controlled.stacked import train_stacked

    train_stacked(cfgs, store=worker_store(store, cfgs[0].store_kind, kind), device=device, progress=progress)


def train_tasks(configs: list[TrainConfig], store: ResultStore, device: str | None = None,
                progress: bool = False, stack: int = 1) -> list[Task]:
    """The tasks of ``configs``, each entry's folder prepared with its log there. ``stack`` > 1: token
    runs that can share a stack go in :func:`train_stack_task` tasks of up to ``stack`` runs."""
    from .controlled.stacked import stacks

    there = portable_store(store)
    tokens = [c for c in configs if type(c) is TrainConfig] if stack > 1 else []
    groups = [g for g in stacks(tokens, stack) if len(g) > 1] if tokens else []
    stacked = {config_hash(c.to_dict()) for g in groups for c in g}
    tasks = []
    for group in groups:
        kind = group[0].store_kind
        entries = [store.prepare(kind, c.to_dict()) for c in group]
        label = f"{kind}/stack of {len(group)}: " + ", ".join(config_hash(c.to_dict())[:8] for c in group)
        tasks.append(Task(train_stack_task, (group, there, kind.name, device, progress), label,
                          entries[0].path / "worker.log"))
    for cfg in configs:
        if config_hash(cfg.to_dict()) in stacked:
            continue
        kind = cfg.store_kind
        entry = store.prepare(kind, cfg.to_dict())
        tasks.append(Task(train_task, (cfg, there, kind.name, device, progress), f"{kind}/{config_hash(cfg.to_dict())}",
                          entry.path / "worker.log"))
    return tasks


def run_sweep(
    configs: list[TrainConfig],
    store: ResultStore | None = None,
    workers: int | None = None,
    device: str | None = None,
    progress: bool = True,
    executor: Any = None,
    estimate: bool = True,
    stack: int = 1,
) -> list[dict[str, Any]]:
    """Train every config (or fetch its stored result); records in the order given.

    ``estimate``: first print the runs to train and :func:`training_estimate`. ``stack`` > 1: token runs
    that can share a stack train together (:func:`train_tasks`). ``executor``: ``"local"`` (default;
    ``workers`` at once, default :func:`default_workers`), ``"ray"``, ``"ray:<address>"`` or an
    executor object. Failures raise :class:`bindcore.runner.SweepError` after the others finish.
    """
    store = store or ResultStore()
    ex = make_executor(executor, workers)
    unique = list(dict.fromkeys(configs))
    pending = [c for c in unique if store.find(c.store_kind, c.to_dict()) is None]
    if pending:
        ex = with_workers(ex, default_workers(len(pending), device)) if ex.name == "local" else ex
        log.info("sweep of %d runs: %d stored, %d to run (%s)", len(unique), len(unique) - len(pending),
                 len(pending), ex.describe())
        in_process = ex.name == "local" and ex.workers == 1
        if estimate:
            n_workers = getattr(ex, "workers", None) or 1
            print(f"{training_estimate(pending, device, n_workers)[1]}; {len(unique) - len(pending)} stored", flush=True)
        run_tasks(train_tasks(pending, store, device, progress=progress and in_process, stack=stack), ex,
                  progress=progress)
    return [stored_run(c, store) for c in configs]


def stored_run(cfg: TrainConfig, store: ResultStore) -> dict[str, Any]:
    """The stored record of a finished run; a ``RuntimeError`` if this machine cannot see it (the
    worker's folder is not shared)."""
    found = store.find(cfg.store_kind, cfg.to_dict())
    if found is None:
        raise RuntimeError(
            f"run {config_hash(cfg.to_dict())} finished on a worker but its record is not in {store.root} here: "
            "on a cluster the results must be a folder every node shares (--results or BINDCORE_RESULTS)")
    return found.record()


