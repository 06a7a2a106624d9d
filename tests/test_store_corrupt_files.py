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
import pytest

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


def test_a_checkpoint_of_another_config_is_refused_and_set_aside_never_resumed(tmp_path, caplog):
    """A run's checkpoint copied into the folder of another config (seed 7 instead of 0, as
    after copying a results folder between machines) is refused in one line and moved
    aside: the run starts over and ends as a fresh run of its own config would."""
    import shutil

    mine, other = tiny(steps=8, checkpoint_every=2), tiny(steps=8, checkpoint_every=2, seed=7)
    ckpt, theirs = tmp_path / "a" / "checkpoint.pt", tmp_path / "b" / "checkpoint.pt"
    ckpt.parent.mkdir(), theirs.parent.mkdir()
    run_training(mine, device="cpu", checkpoint=ckpt, progress=False, stop_after=5)
    shutil.copy(ckpt, theirs)
    with caplog.at_level(logging.WARNING):
        out = run_training(other, device="cpu", checkpoint=theirs, progress=False)
    assert out.steps_run == 8 and out.metrics == run_training(other, device="cpu", progress=False).metrics
    assert "another config" in caplog.text and list(theirs.parent.glob("checkpoint.pt.corrupt-*"))
    # its own run resumes from it as before
    assert run_training(mine, device="cpu", checkpoint=ckpt, progress=False).steps_run == 8 - 5


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
    from bindcore.store import NotStorable

    with pytest.raises(NotStorable):  # NaN embeddings are not stored (tests/test_killed_writes.py)
        cache.save(cfg, np.full((3, 4), np.nan), {})
    assert cache.load(cfg) is None  # an all-NaN entry was a hit


# ---------------------------------------------------------------------------------
# data files (probes.npz, embeddings.npz) are checked when read; published/ is never touched
# ---------------------------------------------------------------------------------
def probes_fit(calls: list):
    """A ``fit`` for stored_probes (counted in ``calls``): probes of 2 x 3 values on 12 random scenes."""
    from bindcore.analysis.probes import LinearProbes

    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 4)).astype(np.float32)
    objects = np.stack([rng.integers(0, 2, (12, 1)), rng.integers(0, 3, (12, 1))], axis=-1)

    def fit():
        calls.append(1)
        probes = LinearProbes([2, 3], epochs=5, lr=0.1, seed=0).fit(x, objects)
        return probes, probes.scores(x, objects)

    return fit


def spoil(npz: Path, how: str) -> None:
    if how == "missing":
        npz.unlink()
    elif how == "truncated":
        corrupt(npz, 50)
    else:
        with np.load(npz) as z:
            arrays = dict(z)
        if how == "key-less":
            arrays = {"weights": arrays["object"]}
        else:  # NaN weights
            arrays["concept_0"][0, 0] = np.nan
        np.savez(npz, **arrays)


@pytest.mark.parametrize("how", ["missing", "truncated", "key-less", "NaN"])
def test_an_unreadable_local_probes_record_is_moved_aside_and_fitted_again(tmp_path, caplog, how):
    from bindcore.analysis.embedding_sets import PROBES_KIND, stored_probes

    store, calls, origin = ResultStore(tmp_path, published=None), [], {"probes": "toy"}
    first, _ = stored_probes(origin, [2, 3], probes_fit(calls), store)
    folder = store.local_dir(PROBES_KIND, origin)
    spoil(folder / "probes.npz", how)
    with caplog.at_level(logging.WARNING):
        again, scores = stored_probes(origin, [2, 3], probes_fit(calls), store)  # was KeyError, BadZipFile, NaN
    assert calls == [1, 1] and str(folder) in caplog.text and "probes.npz" in caplog.text
    assert list(folder.glob("result.json.corrupt-*"))
    assert all(np.array_equal(a, b) for a, b in zip(again.concept_weights_, first.concept_weights_))
    assert np.array_equal(again.object_weights_, first.object_weights_) and np.isfinite(again.object_weights_).all()
    stored_probes(origin, [2, 3], probes_fit(calls), store)
    assert calls == [1, 1]  # the fit stored again is read back


@pytest.mark.parametrize("how", ["missing", "truncated", "key-less", "NaN"])
def test_an_unreadable_published_probes_record_is_skipped_and_left_as_it_is(tmp_path, caplog, how):
    from bindcore.analysis.embedding_sets import PROBES_KIND, stored_probes

    calls, origin = [], {"probes": "toy"}
    stored_probes(origin, [2, 3], probes_fit(calls), ResultStore(tmp_path / "published", published=None))
    published = ResultStore(tmp_path / "published", published=None).local_dir(PROBES_KIND, origin)
    spoil(published / "probes.npz", how)
    before = {p.name: p.read_bytes() for p in published.iterdir()}
    store = ResultStore(tmp_path / "results", published=tmp_path / "published")
    with caplog.at_level(logging.WARNING):
        probes, _ = stored_probes(origin, [2, 3], probes_fit(calls), store)
    assert calls == [1, 1] and str(published / "probes.npz") in caplog.text and "skipped" in caplog.text
    assert {p.name: p.read_bytes() for p in published.iterdir()} == before  # nothing renamed or deleted
    assert (store.local_dir(PROBES_KIND, origin) / "probes.npz").is_file()  # computed locally instead


def test_corrupt_published_embeddings_are_skipped_and_left_as_they_are(tmp_path, caplog):
    from bindcore.encoders.cache import EmbeddingCache

    cfg = {"encoder": {"name": "x"}, "dataset": "abc", "modality": "text"}
    npz = EmbeddingCache(tmp_path / "published" / "embeddings", published=None).save(cfg, np.ones((3, 4)), {})
    corrupt(npz, 50)
    before = sorted(p.name for p in npz.parent.iterdir())
    cache = EmbeddingCache(tmp_path / "results" / "embeddings", published=tmp_path / "published")
    with caplog.at_level(logging.WARNING):
        assert cache.load(cfg) is None
    assert str(npz) in caplog.text and sorted(p.name for p in npz.parent.iterdir()) == before  # was renamed


def test_a_result_store_inside_the_published_records_is_refused(tmp_path, monkeypatch, capsys):
    import bindcore.controlled.runs as runs
    from bindcore.cli import main
    from bindcore.store import REPO_ROOT

    with pytest.raises(ValueError, match="published records.*read-only"):
        ResultStore(tmp_path / "pub" / "train-2", published=tmp_path / "pub")  # was a store writing into pub/

    def never(*a, **k):
        raise AssertionError("trained into published/")

    monkeypatch.setattr(runs, "train", never)
    assert main(["train", "--profile", "smoke", "--set", "steps=4", "--quiet",
                 "--results", str(REPO_ROOT / "published" / "train-2")]) == 2
    err = capsys.readouterr().err
    assert "published records" in err and "--results" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("weights", ["a list", "other keys"])
def test_weights_that_are_not_the_models_state_dict_are_an_error_naming_the_file(tmp_path, weights):
    import shutil

    import torch

    from bindcore.controlled.runs import load_model
    from bindcore.store import CorruptRecord

    rec = train(tiny(), store=ResultStore(tmp_path / "results", published=None), device="cpu", progress=False)
    folder = tmp_path / "published" / "train-2" / Path(rec["path"]).name
    shutil.copytree(rec["path"], folder)
    torch.save([torch.zeros(2)] if weights == "a list" else {"w": torch.zeros(2)}, folder / "model.pt")
    with pytest.raises(CorruptRecord, match=str(folder / "model.pt")):  # was a TypeError or RuntimeError
        load_model({**rec, "path": str(folder), "source": "published"})


def test_a_result_store_behind_a_symbolic_link_loop_is_one_clear_error(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(ValueError, match="not a folder a result store can use"):
        ResultStore(tmp_path / "a", published=None)
