"""Shared pytest setup.

OMP_WAIT_POLICY must be PASSIVE before torch loads: torch's OpenMP threads otherwise
spin-wait, which on a small shared machine slows everything down by a lot. Importing
bindcore applies its OpenMP policy (bindcore.runtime); pytest imports this module
before any test module, hence before torch.
"""

import pytest

import bindcore  # noqa: F401


def side_by_side_jobs() -> int:
    """Chapters a whole-book test executes at once: two where two cores are free, else one
    (the suite's two longest tests; the one-at-a-time path is covered by tests/test_book.py's
    fake-repository builds)."""
    from bindcore.runner import cpu_budget

    return min(2, cpu_budget())


def asked_at_once(ask, times: int = 2) -> list:
    """``ask()``'s answers when ``times`` threads ask at once, each a little after the last (flock
    claims exclude threads as they do processes: each thread opens the claim file on its own)."""
    import threading
    import time

    got = []
    askers = [threading.Thread(target=lambda: got.append(ask())) for _ in range(times)]
    for t in askers:
        t.start()
        time.sleep(0.05)
    for t in askers:
        t.join()
    return got


@pytest.fixture
def ctrl_c():
    """Ctrl-C raises KeyboardInterrupt, as in a terminal, for the test (a test run started
    as a background job inherits an ignored SIGINT)."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
