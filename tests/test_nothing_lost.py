"""Nothing lost (issue 11): datasets never overwrite or mix silently and are never left
half written; corrupt store files are reported with their path, moved aside and
computed again; two processes never train the same config at once; stored files are
readable like any other output; images and labels files are checked up front; the
command line reports expected failures in one line with exit code 2.

New APIs are imported inside the tests, so that each test fails on its own on code
without them."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from bindcore.cli import main
from bindcore.controlled.recipes import recipe
from bindcore.controlled.training import STORE_KIND, run_training, train
from bindcore.store import ResultStore

TINY = ["--profile", "smoke", "--set", "steps=4", "--set", "eval_every=2", "--set", "eval_scenes=16", "--quiet"]
ROOT = Path(__file__).resolve().parents[1]


def tiny(**kw):
    return recipe("smoke", **{"steps": 4, "eval_every": 2, "eval_scenes": 16, **kw})


def corrupt(path: Path, keep: int = 40) -> None:
    path.write_bytes(path.read_bytes()[:keep])


# ---------------------------------------------------------------------------------
# bindcore data make
# ---------------------------------------------------------------------------------
def test_data_make_refuses_a_folder_that_is_not_empty_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "ds"
    assert main(["data", "make", "clevr2d-singles", "--out", str(out), "--size", "32"]) == 0
    (out / "0000999.png").write_bytes(b"an image of another dataset")
    (out / "notes.txt").write_text("mine")
    before = sorted(p.name for p in out.iterdir())
    capsys.readouterr()
    assert main(["data", "make", "text", "--out", str(out), "--scenes", "5"]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in out.iterdir()) == before  # untouched
    # an image that bindcore did not write is deleted only with --force (issue 23)
    assert main(["data", "make", "text", "--out", str(out), "--scenes", "5", "--overwrite"]) == 2
    assert "0000999.png" in capsys.readouterr().err and sorted(p.name for p in out.iterdir()) == before
    assert main(["data", "make", "text", "--out", str(out), "--scenes", "5", "--overwrite", "--force"]) == 0
    # the old dataset's files are gone (no stale images beside the new labels), other files stay
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "captions.csv", "labels.csv", "metadata.json", "notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name != "ds"]  # no temporary folder left


def test_data_make_checks_the_output_before_generating(tmp_path, capsys, monkeypatch):
    import bindcore.cli as cli

    def never(*a, **k):
        raise AssertionError("generated before checking --out")

    monkeypatch.setattr(cli, "make_dataset", never)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["data", "make", "clevr2d", "--out", str(blocker / "sub")]) == 2
    assert "--out" in capsys.readouterr().err
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        assert main(["data", "make", "clevr2d", "--out", str(ro / "sub")]) == 2
        assert "cannot write" in capsys.readouterr().err


def test_a_failed_write_leaves_nothing_half_written(tmp_path, monkeypatch):
    from PIL import Image

    from bindcore.data import make_clevr2d_singles

    ds = make_clevr2d_singles(size=32)
    calls = {"n": 0}
    save = Image.Image.save

    def failing_save(self, *a, **k):
        calls["n"] += 1
        if calls["n"] > 5:
            raise OSError(28, "No space left on device")
        return save(self, *a, **k)

    monkeypatch.setattr(Image.Image, "save", failing_save)
    with pytest.raises(OSError, match="No space"):
        ds.write(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []  # neither the target nor a temporary folder


# ---------------------------------------------------------------------------------
# the folder loader
# ---------------------------------------------------------------------------------
@pytest.fixture
def clevr_folder(tmp_path) -> Path:
    from bindcore.data import make_clevr2d_singles

    make_clevr2d_singles(size=32).write(tmp_path / "clevr")
    return tmp_path / "clevr"


def test_a_truncated_image_is_found_when_loading_with_its_labels_line(clevr_folder):
    from bindcore.data import load_folder

    img = clevr_folder / "0000003.png"
    corrupt(img, 60)
    with pytest.raises(ValueError, match=r"0000003.png is a broken PNG.*labels.csv, line 5"):
        load_folder(clevr_folder, "clevr2d")  # loaded, then failed at first access without context


def test_a_truncated_jpeg_is_found(clevr_folder):
    from PIL import Image

    from bindcore.data import load_folder

    img = clevr_folder / "0000002.png"
    with Image.open(img) as im:
        im.convert("RGB").save(img, format="JPEG")
    load_folder(clevr_folder, "clevr2d")  # a whole JPEG under a .png name is fine
    corrupt(img, img.stat().st_size - 2)  # PIL's verify passes a truncated JPEG
    with pytest.raises(ValueError, match="0000002.png is a truncated JPEG.*line 4"):
        load_folder(clevr_folder, "clevr2d")


@pytest.mark.parametrize("content,words", [("", "is empty"), (None, "no scenes")])
def test_empty_or_header_only_labels_are_errors_naming_the_file(clevr_folder, content, words):
    from bindcore.data import load_folder, read_labels_csv

    labels = clevr_folder / "labels.csv"
    header = labels.read_text().splitlines()[0] + "\n"
    labels.write_text(header if content is None else content)
    with pytest.raises(ValueError, match=f"{labels}.*{words}"):
        load_folder(clevr_folder, "clevr2d")  # pandas' error without a path / a dataset of 0 scenes
    with pytest.raises(ValueError, match=words):
        read_labels_csv(labels)


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

    kind = Kind("cheap", ("bindcore.analysis.metrics",))
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


# ---------------------------------------------------------------------------------
# claims: one training of a config at a time
# ---------------------------------------------------------------------------------
def test_two_trainings_of_one_config_at_once_train_it_once(tmp_path, monkeypatch):
    import bindcore.controlled.training as T

    calls = []
    real = T.run_training

    def slow(*a, **k):
        calls.append(threading.get_ident())
        time.sleep(0.5)
        return real(*a, **k)

    monkeypatch.setattr(T, "run_training", slow)
    store = ResultStore(tmp_path, published=None)
    out = [None, None]

    def go(i):
        out[i] = train(tiny(), store=store, device="cpu", progress=False)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1  # the second waited for the first's result, then read it
    assert out[0]["finished_at"] == out[1]["finished_at"] and out[0]["seconds"] == out[1]["seconds"]
    assert not list(Path(out[0]["path"]).glob("claim*"))  # released


def test_two_processes_of_one_config_train_it_once(tmp_path):
    cmd = [sys.executable, "-m", "bindcore", "train", *TINY, "--set", "steps=20", "--threads", "1",
           "--results", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    recs = [json.loads(o[0]) for o in outs]
    assert recs[0]["seconds"] == recs[1]["seconds"]
    # one trained (run_training logs the model's size when it starts), the other waited and read
    assert sorted("dual encoder:" in o[1] for o in outs) == [False, True], [o[1][-1000:] for o in outs]


def test_a_stale_claim_is_taken_over_and_a_live_one_waited_for(tmp_path, caplog):
    from bindcore.store import ClaimBusy

    store = ResultStore(tmp_path, published=None)
    cfg = tiny().to_dict()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with store.claim(STORE_KIND, cfg) as c:
        path = c.path
        assert store.holder(STORE_KIND, cfg)["pid"] == os.getpid()
        with pytest.raises(ClaimBusy, match=f"process {os.getpid()}"):
            with store.claim(STORE_KIND, cfg, wait=0.3):
                pass
    assert not path.exists()
    # a claim left by a process of this machine that died: taken over at once
    holder = {"host": "h", "machine": None, "pid": dead.pid, "token": "t", "started": "then"}
    from bindcore.store import _machine_id

    holder["machine"] = _machine_id()
    path.write_text(json.dumps(holder))
    with caplog.at_level(logging.WARNING), store.claim(STORE_KIND, cfg, wait=False):
        assert "no longer runs" in caplog.text
    # a claim of another machine: waited for while it is touched, taken over when stale
    path.write_text(json.dumps({**holder, "machine": "elsewhere/1", "pid": 1}))
    with pytest.raises(ClaimBusy):
        with store.claim(STORE_KIND, cfg, wait=0.2, stale_after=60, heartbeat=1):
            pass
    old = time.time() - 120
    os.utime(path, (old, old))
    with store.claim(STORE_KIND, cfg, wait=False, stale_after=60, heartbeat=1):
        pass


def test_a_held_claim_is_kept_fresh_by_its_heartbeat(tmp_path):
    store = ResultStore(tmp_path, published=None)
    with store.claim(STORE_KIND, {"a": 1}, heartbeat=0.05, stale_after=10) as c:
        old = time.time() - 100
        os.utime(c.path, (old, old))
        time.sleep(0.3)
        assert time.time() - c.path.stat().st_mtime < 5 and not c.lost
        assert c.path.stat().st_mode & 0o044  # readable by the group, like the records


# ---------------------------------------------------------------------------------
# the command line: one line, exit code 2, naming the option
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("extra,option", [
    (["--device", "cuda:7"], "--device"), (["--device", "gpu"], "--device"),
    (["--threads", "-1"], "--threads"), (["--threads", "0"], "--threads"),
    (["--results", "{file}"], "--results"), (["--config", "{missing}"], "--config"),
    (["--config", "{file}"], "--config"),
])
def test_expected_cli_failures_are_one_line_with_exit_code_2(tmp_path, capsys, extra, option):
    (tmp_path / "file").write_text("not json")
    extra = [x.format(file=tmp_path / "file", missing=tmp_path / "missing.json") for x in extra]
    assert main(["train", *TINY, "--results", str(tmp_path / "r"), *extra]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and "Traceback" not in captured.err, captured.err
    assert not (tmp_path / "r" / STORE_KIND).exists()


def test_unexpected_failures_keep_their_traceback(tmp_path, monkeypatch):
    import bindcore.controlled.training as T

    def boom(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.setattr(T, "run_training", boom)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["train", *TINY, "--results", str(tmp_path)])
