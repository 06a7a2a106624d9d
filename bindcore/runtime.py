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
# quick (a laptop CPU: the paper's findings at small scale), paper (a GPU: the paper's scales).
PROFILES = ("smoke", "quick", "paper")

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
    """Use ``threads`` CPU threads in torch (None: leave torch's choice, the machine's cores)."""
    if threads:
        import torch

        torch.set_num_threads(int(threads))


# ---------------------------------------------------------------------------------
# device
# ---------------------------------------------------------------------------------
def resolve_device(device: Any = None):
    """``device`` if given, else CUDA when present, else the CPU (a ``torch.device``)."""
    import torch

    if device:
        return torch.device(device)
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
