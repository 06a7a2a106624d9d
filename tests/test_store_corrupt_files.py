"""Corrupt files of the result store (bindcore.store) and of the embedding cache: reported
with their path, moved aside and computed again (a published record is skipped); a run
resumes from the last good checkpoint, or starts over; stored files are readable like
any other output.

New APIs are imported inside the tests, so that each test fails on its own on code
without them."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np

from bindcore.controlled.recipes import recipe
from bindcore.controlled.runs import train
from bindcore.controlled.training import STORE_KIND, run_training
from bindcore.store import ResultStore


def tiny(**kw):
    return recipe("smoke", **{"steps": 4, "eval_every": 2, "eval_scenes": 16, **kw})


def corrupt(path: Path, keep: int = 40) -> None:
    path.write_bytes(path.read_bytes()[:keep])


# ---------------------------------------------------------------------------------
# corrupt store files
# ---------------------------------------------------------------------------------
def test_a_corrupt_result_is_reported_moved_aside_and_computed_again(tmp_path, caplog):
    store = ResultStore(tmp_path, published=None)
    first = train(tiny(), store=store, device="cpu", progress=False)
    path = Path(first["path"])
    corrupt(path / "result.json")
    with caplog.at_level(logging.WARNING):
        again = train(tiny(), store=store, device="cpu", progress=False)  # was a bare JSONDecodeError, every time
    assert str(path / "result.json") in caplog.text
    assert again["metrics"] == first["metrics"]
    assert len(list(path.glob("result.json.corrupt-*"))) == 1


def test_a_corrupt_published_record_is_reported_and_skipped(tmp_path, caplog):
    from bindcore.store import Kind

    kind = Kind("cheap")
    pub = ResultStore(tmp_path / "published", published=None)
    pub.cached(kind, {"a": 1}, lambda: {"value": 1})
    result = pub.local_dir(kind, {"a": 1}) / "result.json"
    corrupt(result)
    store = ResultStore(tmp_path / "results", published=tmp_path / "published")
    with caplog.at_level(logging.WARNING):
        assert store.cached(kind, {"a": 1}, lambda: {"value": 2})["value"] == 2
    assert str(result) in caplog.text and result.exists()  # the read-only root is left as it is


def test_a_corrupt_config_json_is_rewritten(tmp_path, caplog):
    store = ResultStore(tmp_path, published=None)
    cfg = tiny().to_dict()
    entry = store.prepare(STORE_KIND, cfg)
    corrupt(entry.path / "config.json", 10)
    with caplog.at_level(logging.WARNING):
        entry = store.prepare(STORE_KIND, cfg)
    assert entry.config == json.loads(json.dumps(cfg)) and "config.json" in caplog.text
    assert list(entry.path.glob("config.json.corrupt-*"))


def test_a_corrupt_checkpoint_resumes_from_the_previous_one_exactly(tmp_path, caplog):
    cfg = tiny(steps=12, eval_every=4, checkpoint_every=2)
    ckpt = tmp_path / "checkpoint.pt"
    whole = run_training(cfg, device="cpu", progress=False)
    run_training(cfg, device="cpu", checkpoint=ckpt, progress=False, stop_after=7)  # killed at step 7
    corrupt(ckpt, 100)  # e.g. a disk that lost the end of the file
    with caplog.at_level(logging.WARNING):
        resumed = run_training(cfg, device="cpu", checkpoint=ckpt, progress=False)  # was a bare RuntimeError
    assert str(ckpt) in caplog.text and list(tmp_path.glob("checkpoint.pt.corrupt-*"))
    assert resumed.steps_run == 12 - 6  # from the checkpoint before (step 6), not from scratch
    assert resumed.metrics == whole.metrics


def test_with_no_good_checkpoint_the_run_starts_over(tmp_path):
    cfg = tiny(steps=8, checkpoint_every=2)
    ckpt = tmp_path / "checkpoint.pt"
    whole = run_training(cfg, device="cpu", progress=False)
    ckpt.write_bytes(b"not a checkpoint")
    out = run_training(cfg, device="cpu", checkpoint=ckpt, progress=False)
    assert out.steps_run == 8 and out.metrics == whole.metrics


def test_stored_files_are_readable_like_any_other_output(tmp_path):
    old = os.umask(0o022)
    try:
        rec = train(tiny(), store=ResultStore(tmp_path, published=None), device="cpu", progress=False)
    finally:
        os.umask(old)
    for name in ("config.json", "result.json", "model.pt"):
        assert (Path(rec["path"]) / name).stat().st_mode & 0o777 == 0o644, name  # mkstemp made them 0600


def test_the_embedding_cache_recomputes_a_truncated_or_non_finite_entry(tmp_path, caplog):
    from bindcore.encoders.cache import EmbeddingCache

    cache = EmbeddingCache(tmp_path / "embeddings")
    cfg = {"encoder": {"name": "x"}, "dataset": "abc", "modality": "text"}
    npz = cache.save(cfg, np.ones((3, 4)), {})
    assert cache.load(cfg).shape == (3, 4)
    corrupt(npz, 50)
    with caplog.at_level(logging.WARNING):
        assert cache.load(cfg) is None  # was BadZipFile
    assert str(npz) in caplog.text
    cache.save(cfg, np.full((3, 4), np.nan), {})
    assert cache.load(cfg) is None  # an all-NaN entry was a hit
