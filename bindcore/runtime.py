"""Where and how bindcore runs: the workload profiles, CPU threads and OpenMP, the
device, progress bars.

This is the one place that sets thread and OpenMP policy. PyTorch's OpenMP threads
spin-wait by default, which on a small, shared machine slows training by an order of
magnitude; ``OMP_WAIT_POLICY=PASSIVE`` must be in the environment before torch loads,
so ``bindcore/__init__`` calls :func:`apply_openmp_policy` and this module imports
neither torch nor numpy at import time. Child processes that run bindcore code (sweep
workers, notebook kernels) get :func:`openmp_environment`.
"""

from __future__ import annotations

import os
from typing import Any

# Workload sizes (README "Profiles"): smoke (CI: every code path, numbers meaningless),
# quick (a laptop CPU: the paper's findings at small scale), colab (one Colab T4-class GPU,
# under an hour per chapter: the paper's sizes where they fit), paper (a GPU: the paper's scales).
PROFILES = ("smoke", "quick", "colab", "paper")
# training recipes: the book's profiles and ``scale`` (bindcore.controlled.recipes), a
# recipe and sweep plan that no chapter runs but the quick book shows from published/
RECIPE_PROFILES = (*PROFILES, "scale")

_TRUE = {"1", "true", "yes", "on"}


def check_profile(profile: str) -> str:
    """``profile`` if it is one of :data:`PROFILES`, else a ``ValueError`` naming them."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    return profile


def env_flag(name: str) -> bool:
    """Whether the environment variable ``name`` is set to a true value (1, true, yes, on)."""
    return os.environ.get(name, "").strip().lower() in _TRUE


# ---------------------------------------------------------------------------------
# OpenMP and threads
# ---------------------------------------------------------------------------------
def openmp_environment(threads: int | None = None) -> dict[str, str]:
    """The OpenMP variables of a process that runs bindcore code: passive waiting, and
    ``threads`` OpenMP threads when given."""
    env = {"OMP_WAIT_POLICY": "PASSIVE"}
    if threads:
        env["OMP_NUM_THREADS"] = str(int(threads))
    return env


def apply_openmp_policy() -> None:
    """Passive OpenMP waiting for this process unless the user chose otherwise; effective
    only before torch loads (``import bindcore`` does it)."""
    for key, value in openmp_environment().items():
        os.environ.setdefault(key, value)


def set_threads(threads: int | None) -> None:
    """Use ``threads`` CPU threads in torch (None: leave torch's choice, the machine's
    cores); anything but a positive integer is a ``ValueError``."""
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1 (or None: the machine's cores), got {threads!r}")
    import torch

    torch.set_num_threads(threads)


# ---------------------------------------------------------------------------------
# device
# ---------------------------------------------------------------------------------
DEVICE_TYPES = ("cpu", "cuda", "mps")


def check_device(device: Any):
    """``device`` (a name such as ``cpu``, ``cuda``, ``cuda:1``, ``mps``, or a
    ``torch.device``) as a ``torch.device`` this machine has, else a ``ValueError``
    that says why not (no CUDA here, no such GPU, not a device name)."""
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
    """``device`` if given (checked by :func:`check_device`), else CUDA when present,
    else the CPU (a ``torch.device``)."""
    import torch

    if device:
        return check_device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# ---------------------------------------------------------------------------------
# progress bars
# ---------------------------------------------------------------------------------
def progress_bar(iterable: Any = None, *, enabled: bool = True, **kwargs: Any):
    """A tqdm bar, shown when ``enabled`` and ``TQDM_DISABLE`` is not set (a book build
    sets it: bars would land in the rendered pages). tqdm itself lets an explicit
    ``disable=`` argument win over the variable, hence this one function."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=not enabled or env_flag("TQDM_DISABLE"), **kwargs)


def format_duration(seconds: float) -> str:
    """``seconds`` as "42 s", "3.5 min" or "2.1 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
