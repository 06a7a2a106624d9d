"""Stored training runs (run management, not the experiment): :func:`train` returns a
config's stored record or trains it (resuming a killed run from its checkpoint, holding
the entry's claim meanwhile) and stores the result; :func:`load_model` reads a stored
run's weights; :func:`seconds_per_step` times a step for cost estimates. The experiment
itself, the config, objective, loop and evaluation, is :mod:`bindcore.controlled.training`
and :mod:`bindcore.controlled.evaluation`."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import torch

from bindcore.io import atomic_torch_save, config_hash
from bindcore.runtime import resolve_device
from bindcore.store import Entry, ResultStore

from .checkpoints import previous_checkpoint
from .models import DualEncoder, count_parameters
from .training import (
    TrainConfig,
    TrainOutput,
    autocast_dtype,
    build_model,
    concept_weight,
    make_optimizer,
    optimizer_step,
    run_training,
)


def seconds_per_step(cfg: TrainConfig, device: str | torch.device | None = None, steps: int = 1) -> float:
    """Wall seconds of one training step of ``cfg`` here, timed over ``steps`` steps after
    one warm-up step (a short probe for cost estimates; the model is thrown away)."""
    dev = resolve_device(str(device) if device is not None else None)
    train_objects = cfg.split.train.to(dev)
    allowed = torch.arange(cfg.space.n_objects, device=dev) if cfg.heldout_as_negatives else train_objects
    model = build_model(cfg, dev)
    opt, amp = make_optimizer(cfg, model), autocast_dtype(cfg, dev)
    w_c = concept_weight(cfg, 0, None) or cfg.concept_loss_weight
    optimizer_step(cfg, model, opt, train_objects, allowed, 0, dev, amp, w_c)  # warm-up
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        optimizer_step(cfg, model, opt, train_objects, allowed, step, dev, amp, w_c)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return (time.perf_counter() - start) / steps


def steps_per_second(seconds: float, steps: int) -> float:
    return steps / seconds if seconds > 0 else math.nan


def train(
    cfg: TrainConfig,
    store: ResultStore | None = None,
    device: str | None = None,
    progress: bool = True,
    keep_weights: bool = True,
) -> dict[str, Any]:
    """Train ``cfg`` unless the store already holds its result; return the result record
    (:meth:`bindcore.store.ResultStore.cached_entry`: while it trains, another process asking for
    the same config waits, then returns this run's stored result). A killed run resumes from its
    last good checkpoint (``checkpoint.pt`` in its store entry, else the one before it)."""

    def compute(path: Path) -> dict[str, Any]:
        dev = resolve_device(device)
        return finished_run(cfg, run_training(cfg, device=dev, checkpoint=path / "checkpoint.pt", progress=progress),
                            path, dev, keep_weights)

    entry = (store or ResultStore()).cached_entry(cfg.store_kind, cfg.to_dict(), compute)
    if entry.source == "local":
        clear_checkpoints(entry.path)
    return entry.record()


def finished_run(cfg: TrainConfig, out: TrainOutput, path: Path, dev: torch.device, keep_weights: bool
                 ) -> dict[str, Any]:
    """A finished run's record, its weights written in its entry folder ``path`` if ``keep_weights``."""
    if keep_weights:
        atomic_torch_save(path / "model.pt", out.model.state_dict())
    return train_record(cfg, out, dev)


def clear_checkpoints(path: Path) -> None:
    """Remove a stored run's checkpoints (``checkpoint.pt`` and the one before it) from its folder."""
    (path / "checkpoint.pt").unlink(missing_ok=True)
    previous_checkpoint(path / "checkpoint.pt").unlink(missing_ok=True)


def train_record(cfg: TrainConfig, out: TrainOutput, dev: torch.device) -> dict[str, Any]:
    """The stored record of a finished run: its config and hash, metrics (with the bag of
    concepts and the history), time, device and sizes."""
    split = cfg.split
    return {
        "kind": "train",
        "hash": config_hash(cfg.to_dict()),
        "config": cfg.to_dict(),
        "metrics": out.metrics,
        "bag_of_concepts": out.baseline,
        "history": out.history,
        "seconds": out.seconds,
        "cpu_seconds": out.cpu_seconds,
        "threads": torch.get_num_threads(),
        "steps_run": out.steps_run,
        "concept_loss_from": out.concept_loss_from,
        "steps_per_second": steps_per_second(out.seconds, cfg.steps),  # every step, resumes included
        "device": str(dev),
        "precision": "bf16" if autocast_dtype(cfg, dev) is not None else "fp32",
        "parameters_per_encoder": count_parameters(out.model.scene),
        "n_train_objects": len(split.train),
        "n_val_objects": len(split.val),
        "n_test_objects": len(split.test),
        "trained_by": out.trained_by,  # every code version that trained it, resumed runs included
    }


def load_model(record: dict[str, Any], map_location: str = "cpu") -> DualEncoder:
    """The trained dual encoder of a stored run (local runs keep their weights)."""
    cfg = TrainConfig.from_dict(record["config"])
    model = cfg.make_model()
    Entry(Path(record["path"]), record.get("source", "local")).load_into(model, "model.pt", map_location)
    return model.to(map_location).eval()  # (load_state_dict copies into the CPU-built model's own tensors)
