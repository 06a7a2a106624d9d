"""Checkpoints of a training run: saved atomically every few steps with the previous
one kept, so that a good checkpoint exists at every moment, and the state to train from
read back from the latest good one (an unreadable one is reported and moved aside).
Run management, not the experiment: the loop of :mod:`bindcore.controlled.training`
calls it to resume exactly where a killed run stopped."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from bindcore.io import atomic_torch_save
from bindcore.store import quarantine

log = logging.getLogger(__name__)


def code_label() -> str:
    """The code this process trains with, as a record names it (commit and package version)."""
    from bindcore.store import code_version, provenance

    return code_version(provenance())


class Clock:
    """Wall and CPU seconds of a run, carried over a resume (CPU: this process, all
    threads; a run of a stack of ``share`` runs: its share), and the code versions that
    trained it (``trained_by``, in order)."""

    def __init__(self, before: dict | None = None, share: int = 1) -> None:
        self.before, self.share = dict(before or {}), share
        self.trained_by = [str(c) for c in self.before.get("trained_by", [])]
        if code_label() not in self.trained_by[-1:]:
            self.trained_by.append(code_label())
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()

    def so_far(self) -> dict:
        return {"seconds": self.before.get("seconds", 0.0) + (time.perf_counter() - self.wall0) / self.share,
                "cpu_seconds": self.before.get("cpu_seconds", 0.0) + (time.process_time() - self.cpu0) / self.share,
                "trained_by": list(self.trained_by)}


def previous_checkpoint(path: Path) -> Path:
    """Where the checkpoint before ``path``'s last one is kept (``checkpoint.prev.pt``)."""
    return path.with_name(f"{path.stem}.prev{path.suffix}")


def save_checkpoint(path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, step: int, history: list,
                    clock: Clock, config: str | None = None) -> None:
    """Atomically, keeping the checkpoint it replaces as :func:`previous_checkpoint`: a
    good checkpoint exists at every moment. ``config``: the hash of the run's config,
    which :func:`resume` checks."""
    atomic_torch_save(path, {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                             "history": history, "clock": clock.so_far(), "config": config},
                      backup=previous_checkpoint(path))


def resume(fresh: Callable[[], tuple[torch.nn.Module, torch.optim.Optimizer]], device: torch.device,
           checkpoint: Path | None, config: str | None = None
           ) -> tuple[torch.nn.Module, torch.optim.Optimizer, int, list, dict | None]:
    """(model, optimizer, step, history, clock) to train from: ``fresh()``'s model and
    optimizer loaded from the latest good checkpoint of ``checkpoint`` (itself, else
    :func:`previous_checkpoint`), else as ``fresh()`` made them, at step 0. A checkpoint
    that cannot be read or does not fit, or that names another config than ``config``
    (the run's config hash; a checkpoint saved before checkpoints named theirs is read as
    this run's), is reported in one line and moved aside (``*.corrupt-<time>``,
    :func:`bindcore.store.quarantine`), never resumed."""
    candidates = [] if checkpoint is None else [checkpoint, previous_checkpoint(checkpoint)]
    for c in candidates:  # temporary files of a save that a kill cut short (this run's claim is ours)
        for tmp in c.parent.glob(f".{c.name}.*.tmp"):
            tmp.unlink(missing_ok=True)
            log.info("removed %s, left by a checkpoint save that was cut short", tmp)
    for candidate in candidates:
        if not candidate.exists():
            continue
        model, opt = fresh()
        try:
            state = torch.load(candidate, map_location=device, weights_only=True)
            owner = state.get("config")
            if config is not None and owner is not None and owner != config:
                raise ValueError(f"a checkpoint of another config ({owner}, not this run's {config})")
            step, history, clock = int(state["step"]), list(state["history"]), state.get("clock")
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
        except Exception as exc:  # truncated or foreign: zip, unpickling, EOF, key or shape errors
            quarantine(candidate, f"unreadable checkpoint ({type(exc).__name__}: {str(exc)[:200]})")
            continue
        log.info("resuming from %s at step %d", candidate, step)
        return model, opt, step, history, clock
    model, opt = fresh()
    return model, opt, 0, [], None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def signals_between_steps() -> Iterator[list[int]]:
    """Hold Ctrl-C (SIGINT) and SIGTERM back while a training step runs: in the main
    thread, within the block, such a signal only lands in the yielded list; the loop
    checks it between steps, saves a last checkpoint, then calls :func:`deliver`, which
    restores the handlers and sends the signal again (``KeyboardInterrupt``, or the
    command's own SIGTERM handling). Elsewhere than the main thread (where Python cannot
    install handlers) the list stays empty and signals act as usual; a signal the process
    ignores stays ignored."""
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    # a signal this process ignores (a background job ignores Ctrl-C) stays ignored
    before = {s: signal.getsignal(s) for s in STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN}
    for s in before:
        signal.signal(s, lambda signum, frame: pending.append(signum))
    try:
        yield pending
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def deliver(pending: list[int]) -> None:
    """Send the first held signal again, to the handlers :func:`signals_between_steps`
    put back (call it after leaving the block)."""
    if pending:
        signal.raise_signal(pending[0])
