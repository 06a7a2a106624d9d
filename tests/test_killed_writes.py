"""A write that a kill cut short, and a computation that returned NaN: the temporary file of a
killed atomic write is removed by the next use of its folder (never one whose write is still
running) and never enters a book's cache key; a record whose data file holds NaN is refused
with the kind and the config named, instead of being stored and computed again on every call.

New APIs are imported inside the tests, so that each test fails on its own on code without them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bindcore.store import Kind, ResultStore

ROOT = Path(__file__).resolve().parents[1]

# an atomic write of argv[1] that SIGKILLs its own process before the rename: the temporary file stays
KILLED_WRITE = """
import os, signal, sys
from bindcore.io import atomic_write
def write(f):
    f.write(b"half of a file")
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
atomic_write(sys.argv[1], write)
"""

# an atomic write of argv[1] that waits, mid-write, until argv[2] exists
SLOW_WRITE = """
import os, sys, time
from pathlib import Path
from bindcore.io import atomic_write
def write(f):
    f.write(b"being written")
    f.flush()
    Path(sys.argv[2] + ".started").touch()
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.02)
atomic_write(sys.argv[1], write)
"""


def run(code: str, *args: str, wait: bool = True):
    cmd = [sys.executable, "-c", code, *map(str, args)]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_WAIT_POLICY": "PASSIVE"}
    if not wait:
        return subprocess.Popen(cmd, env=env)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def killed_write(path: Path) -> str:
    """Kill a process in the middle of writing ``path``; the name of the temporary file it left."""
    assert run(KILLED_WRITE, path).returncode == -9
    left = temporaries(path.parent)
    assert len(left) == 1 and left[0].startswith(f".{path.name}.")
    return left[0]


def test_the_next_store_entry_of_a_killed_write_removes_its_temporary(tmp_path, caplog):
    kind, config = Kind("cheap", weights=("model.pt",)), {"a": 1}
    store = ResultStore(tmp_path, published=None)
    folder = store.local_dir(kind, config)
    folder.mkdir(parents=True)
    left = killed_write(folder / "model.pt")  # as a SIGKILL just before the rename leaves it
    store.cached(kind, config, lambda: {"value": 1})  # was: the temporary stayed for good
    assert temporaries(folder) == [] and left in caplog.text
    assert store.cached(kind, config, lambda: {"value": 2})["value"] == 1


def test_the_next_write_of_a_file_removes_the_temporary_of_its_killed_write(tmp_path):
    from bindcore.io import atomic_write_text

    killed_write(tmp_path / "result.json")
    killed_write_two = tmp_path / "other.json"
    assert run(KILLED_WRITE, killed_write_two).returncode == -9
    atomic_write_text(tmp_path / "result.json", "{}")
    assert (tmp_path / "result.json").read_text() == "{}"
    assert [n for n in temporaries(tmp_path) if n.startswith(".result.json.")] == []  # was left
    assert [n for n in temporaries(tmp_path) if n.startswith(".other.json.")]  # another file's: its own next write


def test_a_running_write_keeps_its_temporary(tmp_path):
    from bindcore.io import remove_stale_temporaries

    target, go = tmp_path / "model.pt", tmp_path / "go"
    writer = run(SLOW_WRITE, target, go, wait=False)
    try:
        deadline = time.monotonic() + 30
        while not Path(str(go) + ".started").exists():
            assert time.monotonic() < deadline and writer.poll() is None, "the writer did not start"
            time.sleep(0.02)
        assert remove_stale_temporaries(tmp_path) == [] and len(temporaries(tmp_path)) == 1
        go.touch()
        assert writer.wait(timeout=30) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
    assert target.read_bytes() == b"being written" and temporaries(tmp_path) == []


def test_the_book_cache_key_ignores_temporaries_of_killed_writes(tmp_path):
    from bindcore.book.build import published_hash

    store = ResultStore(tmp_path / "published", published=None)
    store.cached(Kind("cheap"), {"a": 1}, lambda: {"value": 1})
    before = published_hash(tmp_path / "published")
    killed_write(store.local_dir(Kind("cheap"), {"a": 1}) / "result.json")
    assert published_hash(tmp_path / "published") == before  # was: every chapter's key changed
    (store.local_dir(Kind("cheap"), {"a": 1}) / "notes.txt").write_text("a committed file")
    assert published_hash(tmp_path / "published") != before


# ---------------------------------------------------------------------------------
# a computation that returns NaN
# ---------------------------------------------------------------------------------
def test_a_record_whose_data_holds_nan_is_refused_naming_kind_and_config(tmp_path):
    from bindcore.io import atomic_savez
    from bindcore.store import NotStorable

    kind, config = Kind("arrays-1", data=("arrays.npz",)), {"analysis": "toy", "seed": 3}
    store, calls = ResultStore(tmp_path, published=None), []

    def compute(folder: Path) -> dict:
        calls.append(1)
        atomic_savez(folder / "arrays.npz", w=np.array([1.0, np.nan]))
        return {"n": 2}

    for _ in range(2):
        with pytest.raises(NotStorable) as err:  # was: stored, then refused when read, so computed every call
            store.cached_entry(kind, config, compute)
        assert "arrays-1" in str(err.value) and '"seed":3' in str(err.value) and "NaN" in str(err.value)
        folder = store.local_dir(kind, config)
        assert not (folder / "result.json").exists() and not (folder / "arrays.npz").exists()
    assert calls == [1, 1] and isinstance(err.value, ValueError)

    def finite(folder: Path) -> dict:
        atomic_savez(folder / "arrays.npz", w=np.array([1.0, 2.0]))
        return {"n": 2}

    assert store.cached_entry(kind, config, finite).result["n"] == 2


def test_the_embedding_cache_refuses_to_store_nan_embeddings(tmp_path):
    from bindcore.encoders.cache import EmbeddingCache
    from bindcore.store import NotStorable

    cache = EmbeddingCache(tmp_path / "embeddings", published=None)
    cfg = {"encoder": {"name": "x"}, "dataset": "abc", "modality": "text"}
    with pytest.raises(NotStorable, match="embeddings"):
        cache.save(cfg, np.full((3, 4), np.nan), {})
    assert cache.load(cfg) is None
