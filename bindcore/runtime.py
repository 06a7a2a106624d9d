"""Where and how bindcore runs: profiles, threads and OpenMP, the device, progress bars.

The one place for OpenMP policy: torch's spin-waiting threads slow a small shared machine
tenfold, so ``OMP_WAIT_POLICY=PASSIVE`` is set before torch loads (no torch import here)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# workload sizes (appendix "Running and extending this book"); ``scale``: a recipe no chapter
# runs but the quick book shows from published/
PROFILES = ("smoke", "quick", "colab", "paper")
RECIPE_PROFILES = (*PROFILES, "scale")

_TRUE = {"1", "true", "yes", "on"}


def check_profile(profile: str) -> str:
    """``profile`` if it is one of :data:`PROFILES`, else a ``ValueError`` naming them."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    return profile


# The one variable by which a bindcore process tells the processes it starts (a chapter's kernel,
# a sweep's workers) how to run: a JSON object of
#   "cpus": the CPU cores they may fill (a worker's share), "published": false (read no published
#   record), "stored_only": true (the store computes nothing new), "tally": a file listing every
#   record served or written, "record": where a chapter writes the parameters it ran with,
#   "executed": the book build's executed notebooks (set: the chapter runs in a book build).
# The result store's root is the user's $BINDCORE_RESULTS.
CONTEXT_ENV = "BINDCORE_CONTEXT"


def context() -> dict[str, Any]:
    """This process's :data:`CONTEXT_ENV` (empty when unset)."""
    text = os.environ.get(CONTEXT_ENV, "").strip()
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"${CONTEXT_ENV} = {text!r}: must be a JSON object (set by bindcore for what it starts)")
    return value


def context_environment(**changes: Any) -> dict[str, str]:
    """The environment entry that passes this process's context with ``changes`` (None: removed)."""
    ctx = {k: v for k, v in {**context(), **changes}.items() if v is not None}
    return {CONTEXT_ENV: json.dumps(ctx, sort_keys=True)}


@contextmanager
def in_environment(**updates: str) -> Iterator[None]:
    """``os.environ`` with ``updates`` set, restored to what it was afterwards."""
    saved = dict(os.environ)
    os.environ.update(updates)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def env_flag(name: str) -> bool:
    """Whether the environment variable ``name`` is set to a true value (1, true, yes, on)."""
    return os.environ.get(name, "").strip().lower() in _TRUE


def openmp_environment(threads: int | None = None) -> dict[str, str]:
    """The OpenMP variables of a process running bindcore code (sweep workers, kernels)."""
    env = {"OMP_WAIT_POLICY": "PASSIVE"}
    if threads:
        env["OMP_NUM_THREADS"] = str(int(threads))
    return env


def apply_openmp_policy() -> None:
    """Passive OpenMP waiting unless the user chose otherwise; effective only before torch loads."""
    for key, value in openmp_environment().items():
        os.environ.setdefault(key, value)


def set_threads(threads: int | None) -> None:
    """Use ``threads`` CPU threads in torch (None: torch's choice); else ``ValueError``."""
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1 (or None: the machine's cores), got {threads!r}")
    import torch

    torch.set_num_threads(threads)


DEVICE_TYPES = ("cpu", "cuda", "mps")


def check_device(device: Any):
    """``device`` (a name or ``torch.device``) as a ``torch.device`` this machine has, else a
    ``ValueError`` saying why not."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"{device!r} is not a device: use one of {DEVICE_TYPES}, e.g. cuda:0") from None
    if dev.type not in DEVICE_TYPES:
        raise ValueError(f"{device!r}: bindcore runs on {', '.join(DEVICE_TYPES)}, not {dev.type}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch is built without CUDA" if torch.version.cuda is None else "no CUDA GPU or driver found"
            raise ValueError(f"{device!r}: CUDA is not available on this machine ({why}; torch {torch.__version__})")
        n = torch.cuda.device_count()
        if dev.index is not None and dev.index >= n:
            raise ValueError(f"{device!r}: this machine has {n} CUDA device(s), numbered 0..{n - 1}")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{device!r}: Apple's MPS is not available on this machine")
    return dev


def resolve_device(device: Any = None):
    """``device`` if given (checked), else CUDA when present, else the CPU."""
    import torch

    if device:
        return check_device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def progress_bar(iterable: Any = None, *, enabled: bool = True, **kwargs: Any):
    """A tqdm bar, shown when ``enabled`` and ``TQDM_DISABLE`` is unset (a book build sets it);
    tqdm lets an explicit ``disable=`` win over the variable, hence this function."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=not enabled or env_flag("TQDM_DISABLE"), **kwargs)


def format_duration(seconds: float) -> str:
    """``seconds`` as "42 s", "3.5 min" or "2.1 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
