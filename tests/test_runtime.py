"""bindcore.runtime: the one place for profiles, OpenMP, device and progress bars."""

from __future__ import annotations

import os

import pytest

from bindcore.runtime import PROFILES, check_profile, openmp_environment, progress_bar, resolve_device


def test_progress_bars_respect_tqdm_disable_even_when_enabled(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert progress_bar(range(3), enabled=True).disable is False
    assert progress_bar(range(3), enabled=False).disable is True
    monkeypatch.setenv("TQDM_DISABLE", "1")  # what a book build sets for its kernels
    assert progress_bar(range(3), enabled=True).disable is True


def test_openmp_policy_and_profiles():
    assert os.environ["OMP_WAIT_POLICY"]  # set by `import bindcore` (conftest) before torch loaded
    assert openmp_environment(threads=1) == {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}
    assert PROFILES == ("smoke", "quick", "colab", "paper") and check_profile("quick") == "quick"
    with pytest.raises(ValueError, match="profile"):
        check_profile("huge")
    assert resolve_device("cpu").type == "cpu"
