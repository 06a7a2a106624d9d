"""Shared pytest setup.

OMP_WAIT_POLICY must be PASSIVE before torch loads: torch's OpenMP threads otherwise
spin-wait, which on a small shared machine slows everything down by a lot. Importing
bindcore applies its OpenMP policy (bindcore.runtime); pytest imports this module
before any test module, hence before torch.
"""

import bindcore  # noqa: F401


def side_by_side_jobs() -> int:
    """Chapters a whole-book test executes at once: two where two cores are free, else one
    (the suite's two longest tests; the one-at-a-time path is covered by tests/test_book.py's
    fake-repository builds)."""
    from bindcore.executors import cpu_budget

    return min(2, cpu_budget())
