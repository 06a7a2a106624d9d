"""Faults that lose data or block runs: each test injects one fault (an
incomplete record, a full disk while a claim is written, a kill
or a Ctrl-C at a chosen point of a dataset install, a target folder that is a mount
point) and checks that nothing is lost and nothing stays blocked.

New APIs are imported inside the tests, so that each test fails on its own on code
without them."""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bindcore.cli import main
from bindcore.controlled.recipes import recipe
from bindcore.controlled.training import STORE_KIND
from bindcore.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--profile", "smoke", "--set", "steps=4", "--set", "eval_every=2", "--set", "checkpoint_every=2",
        "--set", "eval_scenes=16", "--threads", "1", "--quiet"]


def tiny(**kw):
    return recipe("smoke", **{"steps": 4, "eval_every": 2, "checkpoint_every": 2, "eval_scenes": 16, **kw})


def train_cli(results: Path, *extra: str) -> int:
    return main(["train", *TINY, "--results", str(results), *extra])


# ---------------------------------------------------------------------------------
# 1. an incomplete record is moved aside and computed again
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["empty", "no metrics"])
def test_an_incomplete_record_is_moved_aside_and_recomputed(tmp_path, capsys, caplog, damage):
    assert train_cli(tmp_path) == 0
    entry = ResultStore(tmp_path).find(STORE_KIND, tiny().to_dict())
    result = entry.path / "result.json"
    record = json.loads(result.read_text())
    result.write_text("{}" if damage == "empty" else json.dumps({k: v for k, v in record.items() if k != "metrics"}))
    capsys.readouterr()
    with caplog.at_level(logging.WARNING, logger="bindcore.store"):
        assert train_cli(tmp_path) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"] == record["metrics"]  # computed again: the run is a pure function of its config
    assert json.loads(result.read_text())["metrics"] == record["metrics"]
    aside = list(entry.path.glob("result.json.corrupt-*"))
    assert len(aside) == 1  # the incomplete file is kept, beside the record
    assert any("incomplete" in r.getMessage() and str(result) in r.getMessage() for r in caplog.records)


def test_a_truncated_config_of_a_finished_entry_is_written_again(tmp_path):
    assert train_cli(tmp_path) == 0
    store = ResultStore(tmp_path, published=None)
    entry = store.find(STORE_KIND, tiny().to_dict())
    cfg = entry.path / "config.json"
    cfg.write_text(cfg.read_text()[:20])
    found = list(store.entries(STORE_KIND))
    assert [e.path for e in found] == [entry.path]
    assert found[0].config == tiny().to_dict()


# ---------------------------------------------------------------------------------
# 3. a claim file that cannot be written does not block the entry; a waiter says how long
# ---------------------------------------------------------------------------------
def test_a_claim_that_cannot_be_written_is_removed(tmp_path, monkeypatch):
    import bindcore.store as store_mod

    store = ResultStore(tmp_path, published=None)
    config = {"x": 1}
    real_fsync = os.fsync

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_mod.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        with store.claim(STORE_KIND, config):
            pass
    monkeypatch.setattr(store_mod.os, "fsync", real_fsync)
    assert not store.claim_path(STORE_KIND, config).exists()
    with store.claim(STORE_KIND, config, wait=False):  # nothing blocks it
        pass


def test_an_empty_claim_left_by_a_dead_writer_is_taken_over(tmp_path):
    store = ResultStore(tmp_path, published=None)
    config = {"x": 2}
    path = store.claim_path(STORE_KIND, config)
    path.parent.mkdir(parents=True)
    path.write_text("")  # a writer that died before it wrote its owner: no lock holds it
    with store.claim(STORE_KIND, config, wait=False):
        assert json.loads(path.read_text())["pid"] == os.getpid()


def test_a_waiting_run_says_whose_claim_it_waits_on_and_for_how_long(tmp_path, caplog):
    from bindcore.store import ClaimBusy

    store = ResultStore(tmp_path, published=None)
    config = {"x": 3}
    with store.claim(STORE_KIND, config):
        with caplog.at_level(logging.INFO, logger="bindcore.store"), pytest.raises(ClaimBusy):
            with store.claim(STORE_KIND, config, wait=0.3):
                pass
    waiting = [r.getMessage() for r in caplog.records if r.getMessage().startswith("waiting for")]
    assert len(waiting) == 1
    assert f"process {os.getpid()}" in waiting[0] and "gives up after 0 s" in waiting[0]


# ---------------------------------------------------------------------------------
# 4-6. data make --overwrite: installs that never lose the old data
# ---------------------------------------------------------------------------------
def files(folder: Path) -> dict[str, bytes]:
    """The files of ``folder`` (not its hidden staging folders) and their bytes."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def everything(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by name and bytes (a file's bytes found anywhere)."""
    return {f"{p.name}:{hash(p.read_bytes())}": p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def old_dataset(tmp_path):
    """A folder holding a dataset and a file of the user's; (folder, its files)."""
    from bindcore.data import make_clevr2d_singles

    out = tmp_path / "ds"
    make_clevr2d_singles(size=32).write(out)
    (out / "notes.txt").write_text("mine")
    return out, files(out)


def new_dataset():
    from bindcore.data import make_clevr2d_singles

    return make_clevr2d_singles(size=24)  # the same file names, other bytes


def is_new_dataset(out: Path) -> bool:
    import pandas as pd

    ds = new_dataset()
    import numpy as np
    from PIL import Image

    names = pd.read_csv(out / "labels.csv")["filename"].tolist()
    return names == ds.filenames and all((out / n).is_file() for n in names) and \
        (out / "metadata.json").read_text() == json.dumps(ds.metadata()) + "\n" and \
        all(np.array_equal(np.asarray(Image.open(out / n)), img) for n, img in zip(names, ds.images))  # not the old


KILL = """
import os, shutil, sys
import bindcore.data.core as core
from bindcore.data import make_clevr2d_singles
calls, at = [0], int(sys.argv[2])
def killed(real):
    def call(*a, **k):
        calls[0] += 1
        if calls[0] == at:
            os._exit(9)  # no cleanup of any kind: a SIGKILL, a power cut
        return real(*a, **k)
    return call
os.replace = killed(os.replace)
os.rename = killed(os.rename)
shutil.rmtree = killed(shutil.rmtree)
make_clevr2d_singles(size=24).write(sys.argv[1], overwrite=True)
"""


@pytest.mark.parametrize("point", ["first move", "old files half moved out", "new files half moved in",
                                   "last move", "old files being deleted"])
def test_data_make_killed_during_its_install_loses_nothing(old_dataset, point):
    import subprocess
    import sys

    out, before = old_dataset
    n_old = len(before) - 1  # notes.txt stays
    n_new = len(new_dataset().filenames) + 4  # and labels.csv, metadata.json, captions.csv, the manifest
    # each rename and the final delete count as one call; the last move is labels.csv's
    at = {"first move": 1, "old files half moved out": 1 + n_old // 2, "new files half moved in":
          1 + n_old + n_new // 2, "last move": n_old + n_new, "old files being deleted": 1 + n_old + n_new}[point]
    run = subprocess.run([sys.executable, "-c", KILL, str(out), str(at)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 9, run.stderr
    # nothing is lost: every old file is still there, in the folder or set aside in it
    kept = everything(out)
    assert all(f"{name}:{hash(data)}" in kept for name, data in before.items())
    from bindcore.data.core import check_output_folder

    if point not in ("first move", "old files being deleted"):  # no labels.csv in place: a reader is told why
        from bindcore.data import load_folder

        with pytest.raises(FileNotFoundError, match="interrupted.*recover_install"):
            load_folder(out, "clevr2d")
    check_output_folder(out, overwrite=True)  # the next data make into it cleans up first
    if point == "old files being deleted":  # the new dataset was complete: it stays
        assert is_new_dataset(out) and (out / "notes.txt").read_text() == "mine"
    else:
        assert files(out) == before
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == []  # no staging folder left


def test_ctrl_c_during_the_install_takes_effect_when_the_new_dataset_is_complete(old_dataset, monkeypatch, ctrl_c):
    import signal

    out, before = old_dataset
    calls = {"n": 0}
    real = os.replace

    def replace(a, b):
        calls["n"] += 1
        if calls["n"] == len(before) + 3:  # in the middle of the move loop
            os.kill(os.getpid(), signal.SIGINT)
        return real(a, b)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        new_dataset().write(out, overwrite=True)
    assert calls["n"] > len(before) + 3  # the interrupt came during the install
    assert is_new_dataset(out) and (out / "notes.txt").read_text() == "mine"
    assert not [p for p in out.iterdir() if p.is_dir()]


@pytest.mark.parametrize("when", ["moving the old files out", "moving the new files in"])
def test_an_error_during_the_install_puts_the_old_dataset_back(old_dataset, monkeypatch, when):
    out, before = old_dataset
    calls = {"n": 0}
    real = os.replace
    at = 3 if when == "moving the old files out" else len(before) + 5

    def replace(a, b):
        calls["n"] += 1
        if calls["n"] == at:
            raise OSError(errno.ENOSPC, "No space left on device")  # a full-disk stand-in
        return real(a, b)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="No space"):
        new_dataset().write(out, overwrite=True)
    assert files(out) == before
    assert not [p for p in out.iterdir() if p.is_dir()]


def test_ctrl_c_while_generating_leaves_the_old_dataset_and_says_where_the_new_one_is(old_dataset, monkeypatch,
                                                                                      caplog):
    from PIL import Image

    out, before = old_dataset
    calls = {"n": 0}
    save = Image.Image.save

    def interrupted(self, *a, **k):
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt
        return save(self, *a, **k)

    monkeypatch.setattr(Image.Image, "save", interrupted)
    with caplog.at_level(logging.WARNING, logger="bindcore.data.core"), pytest.raises(KeyboardInterrupt):
        new_dataset().write(out, overwrite=True)
    assert files(out) == before
    partial = [p for p in out.iterdir() if p.is_dir()]
    assert len(partial) == 1 and any(str(partial[0]) in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(Image.Image, "save", save)
    new_dataset().write(out, overwrite=True)  # the next write removes it
    assert is_new_dataset(out) and not [p for p in out.iterdir() if p.is_dir()]


def mount_point(monkeypatch, out: Path) -> None:
    """Make ``out`` behave like a mount point: it cannot be renamed or replaced (EBUSY),
    and nothing can be renamed into or out of it (EXDEV: another filesystem)."""
    top = out.resolve()

    def inside(p) -> bool:
        p = Path(os.path.abspath(p))
        return p == top or top in p.parents

    def guard(real):
        def call(a, b, *rest, **kw):
            if Path(os.path.abspath(a)) == top or Path(os.path.abspath(b)) == top:
                raise OSError(errno.EBUSY, "Device or resource busy", str(a))
            if inside(a) != inside(b):
                raise OSError(errno.EXDEV, "Invalid cross-device link", str(a))
            return real(a, b, *rest, **kw)
        return call

    monkeypatch.setattr(os, "replace", guard(os.replace))
    monkeypatch.setattr(os, "rename", guard(os.rename))


@pytest.mark.parametrize("holding", ["nothing", "a dataset"])
def test_data_make_into_a_mount_point(tmp_path, monkeypatch, holding, capsys):
    out = tmp_path / "volume"
    if holding == "a dataset":
        from bindcore.data import make_clevr2d_singles

        make_clevr2d_singles(size=32).write(out)
        (out / "notes.txt").write_text("mine")
    else:
        out.mkdir()
    mount_point(monkeypatch, out)
    args = ["data", "make", "clevr2d-singles", "--size", "24", "--out", str(out)]
    assert main(args + (["--overwrite"] if holding == "a dataset" else [])) == 0, capsys.readouterr().err
    assert is_new_dataset(out)
    assert (out / "notes.txt").exists() == (holding == "a dataset")
    assert [p.name for p in tmp_path.iterdir()] == ["volume"]  # nothing beside it
    assert not [p for p in out.iterdir() if p.is_dir()]


# ---------------------------------------------------------------------------------
# 8. equal numbers hash alike; ordinary configs keep their hashes
# ---------------------------------------------------------------------------------
def test_the_hashes_of_ordinary_configs_are_unchanged():
    from bindcore.io import config_hash

    # computed before numbers were made canonical
    assert config_hash(recipe("quick").to_dict()) == "93f523a6dcc3171d"
    # the scale recipe before attempt V1 of the recipe search became it (batch 256, 128 candidates, two layers)
    earlier_scale = recipe("scale", n_values=50, coverage=0.5, batch_size=256, max_object_queries=128, steps=12_000,
                           n_layers=2)
    assert config_hash(earlier_scale.to_dict()) == "1587aafed46ba451"
    published = sorted((ROOT / "published" / "train-2").glob("*/config.json"))
    for path in published:  # every committed record is still found under its folder's hash
        from bindcore.controlled.training import TrainConfig

        assert config_hash(TrainConfig.from_dict(json.loads(path.read_text())).to_dict()) == path.parent.name


def _numbers_equal_to(x):
    """Ways a person writes the number ``x`` (all equal to it)."""
    out = [x, float(x), repr(float(x))]
    if float(x).is_integer():
        out += [int(x), str(int(x))]
    if x == 0:
        out += [-0.0, "-0.0", "-0", "0e5"]
    return out


@settings(max_examples=60, deadline=None)
@given(x=st.one_of(st.integers(0, 10**6), st.floats(0, 1e6, allow_nan=False, allow_infinity=False)),
       field=st.sampled_from(["weight_decay", "concept_loss_weight", "concept_loss_start", "warmup_frac"]))
@example(x=0, field="weight_decay")
def test_property_equal_numbers_give_one_config_hash(x, field):
    from bindcore.io import config_hash

    if field in ("concept_loss_start", "warmup_frac"):
        x = x / (1 + x) if x else x  # in [0, 1)
    hashes = set()
    for v in _numbers_equal_to(x):
        hashes.add(config_hash(tiny(**{field: v}).to_dict()))
    assert len(hashes) == 1


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.one_of(st.floats(allow_nan=False), st.integers(), st.text()),
                       max_size=6))
def test_property_minus_zero_hashes_as_zero_in_any_config(config):
    from bindcore.io import config_hash

    flipped = {k: (-0.0 if isinstance(v, float) and v == 0 else v) for k, v in config.items()}
    zeroed = {k: (0.0 if isinstance(v, float) and v == 0 else v) for k, v in config.items()}
    assert config_hash(flipped) == config_hash(zeroed)


# ---------------------------------------------------------------------------------
# 7. --config with --profile: the profile's recipe for the fields the file leaves out
# ---------------------------------------------------------------------------------
def test_config_with_profile_takes_the_profile_for_missing_fields(tmp_path, monkeypatch, capsys):
    import bindcore.cli as cli

    seen = []
    monkeypatch.setattr("bindcore.controlled.runs.train", lambda cfg, **kw: seen.append(cfg) or {})
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"n_values": 6, "coverage": 0.5}))
    assert cli.main(["train", "--config", str(partial), "--profile", "smoke", "--results", str(tmp_path)]) == 0
    assert seen[-1] == recipe("smoke", n_values=6, coverage=0.5)  # before: the paper's 50,000 steps
    capsys.readouterr()
    assert cli.main(["train", "--config", str(partial), "--results", str(tmp_path)]) == 0
    err = capsys.readouterr().err  # without --profile: the paper's defaults, and it says so
    assert seen[-1].steps == 50_000 and "--profile" in err and "steps" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------
# 11, 15. sizes with an upper bound, options a dataset does not read: refused up front
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["d_ff", "batch_size", "eval_scenes", "d_model", "n_layers", "max_objects"])
def test_a_size_field_has_an_upper_bound(field):
    with pytest.raises(ValueError, match=rf"TrainConfig\.{field} = 10000000000: must be less than or equal to \d+"):
        recipe("smoke", **{field: "1e10"})


def test_train_refuses_a_huge_size_before_making_an_entry(tmp_path, capsys):
    assert main(["train", *TINY, "--results", str(tmp_path / "r"), "--set", "d_ff=1e10"]) == 2
    err = capsys.readouterr().err
    assert "d_ff" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("extra", [["--size", "100000"], ["--occlusion"], ["--scenes", "5"]])
def test_data_make_refuses_options_clevr2d_cannot_take(tmp_path, capsys, monkeypatch, extra):
    import bindcore.cli as cli

    monkeypatch.setattr(cli, "make_dataset", lambda *a, **k: pytest.fail("generated before checking its options"))
    assert main(["data", "make", "clevr2d", "--out", str(tmp_path / "o"), *extra]) == 2
    err = capsys.readouterr().err
    assert extra[0] in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_make_clevr2d_has_an_upper_size_bound():
    from bindcore.data.clevr2d import make_clevr2d

    with pytest.raises(ValueError, match="4096"):
        make_clevr2d(size=100_000)


# ---------------------------------------------------------------------------------
# 13. SIGTERM and Ctrl-C end a run cleanly: no temporary file, no traceback, 143 / 130
# ---------------------------------------------------------------------------------
SIGNALLED = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even when run as a background job
import torch
from bindcore.cli import main
save, sig = torch.save, getattr(signal, sys.argv[2])
def save_then_signal(obj, f, *a, **k):
    if "optimizer" in obj:  # the first checkpoint
        f.write(b"half a checkpoint")
        os.kill(os.getpid(), sig)  # arrives while the checkpoint is being written
    return save(obj, f, *a, **k)
torch.save = save_then_signal
sys.exit(main(["train", "--profile", "smoke", "--set", "steps=4", "--set", "eval_every=2", "--set",
               "checkpoint_every=2", "--set", "eval_scenes=16", "--threads", "1", "--quiet", "--results", sys.argv[1]]))
"""


@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_ends_a_run_cleanly(tmp_path, sig, code):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", SIGNALLED, str(tmp_path), sig], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}, timeout=300)
    assert run.returncode == code, run.stderr
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith("bindcore train: ")
    left = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp") or p.name == "claim.json"]
    assert left == []  # no temporary file, no claim
    assert train_cli(tmp_path) == 0  # and the run can be done


def test_ctrl_c_during_training_leaves_a_last_checkpoint_at_the_step_it_stopped(tmp_path, ctrl_c):
    """Item 13: a signal during a step is held until the step ends; the loop saves a
    checkpoint there, then raises; resuming from it gives the uninterrupted run."""
    import signal

    import torch

    from bindcore.controlled.training import run_training

    cfg = tiny(steps=6, checkpoint_every=0)  # no periodic checkpoint: only the last one can exist
    ckpt = tmp_path / "checkpoint.pt"

    def interrupt(step, metrics):
        if step == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        run_training(cfg, device="cpu", checkpoint=ckpt, progress=False, on_eval=interrupt)
    assert torch.load(ckpt, weights_only=True)["step"] == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is back
    resumed = run_training(cfg, device="cpu", checkpoint=ckpt, progress=False)
    whole = run_training(cfg, device="cpu", progress=False)
    assert resumed.metrics == whole.metrics
    for (k, a), b in zip(resumed.model.state_dict().items(), whole.model.state_dict().values()):
        assert torch.equal(a, b), k


# ---------------------------------------------------------------------------------
# 12. paths that cannot be used and a full disk: one line each
# ---------------------------------------------------------------------------------
def test_an_empty_results_path_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", *TINY, "--results", ""]) == 2
    err = capsys.readouterr().err
    assert "--results" in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_a_store_whose_kind_folder_is_a_file_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "train-2").write_text("not a folder")
    assert train_cli(tmp_path) == 2
    err = capsys.readouterr().err
    assert "--results" in err and "train-2" in err and len(err.strip().splitlines()) == 1


def test_a_full_disk_during_training_is_one_line(tmp_path, capsys, monkeypatch):
    import torch

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    assert train_cli(tmp_path) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("bindcore train: error: No space left on device")
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp") or p.name == "claim.json"]


def test_a_full_disk_during_data_make_is_one_line(tmp_path, capsys, monkeypatch):
    from PIL import Image

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Image.Image, "save", full)
    assert main(["data", "make", "clevr2d-singles", "--size", "24", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [err[-1]] and err[-1].startswith("bindcore data make: error: No space left on device")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------
# 9. a chapter refuses a parameter name it does not know
# ---------------------------------------------------------------------------------
def notebook_namespace(injected: str) -> dict:
    """A chapter's globals as IPython holds them after papermill's injected cell."""
    cells = ["", 'import sys\n', 'profile = "quick"\nmax_edits = None  # edits\nworkers = None\n', injected]
    return {"In": cells, "profile": "smoke", "max_edits": None, "workers": None}


def test_a_chapter_refuses_an_unknown_papermill_parameter():
    from bindcore.book.chapter import start_chapter

    namespace = notebook_namespace('# Parameters\nprofile = "smoke"\nmax_editz = 5\n')
    with pytest.raises(ValueError, match=r"unknown parameter 'max_editz' of chapter 'geometry'.*known: \[.*'max_edits'"):
        start_chapter("geometry", namespace)


def test_a_chapter_takes_its_known_papermill_parameters():
    from bindcore.book.chapter import start_chapter

    # in the profile table, and in the parameters cell only (a run-time setting such as workers)
    namespace = notebook_namespace('# Parameters\nprofile = "smoke"\nmax_edits = 5\nworkers = 2\n')
    namespace.update(max_edits=5, workers=2)
    assert start_chapter("geometry", namespace)["max_edits"] == 5


def test_papermill_with_an_unknown_parameter_fails_the_chapter(tmp_path, monkeypatch):
    import nbformat
    import papermill

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('profile = "smoke"\nworkers = None', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("from bindcore.book.chapter import start_chapter\n"
                                          "P = start_chapter(None, globals())")]
    nbformat.write(nb, tmp_path / "page.ipynb")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    run = dict(kernel_name="python3", language="python", progress_bar=False)
    papermill.execute_notebook(str(tmp_path / "page.ipynb"), str(tmp_path / "ok.ipynb"), parameters={"workers": 2},
                               **run)
    with pytest.raises(papermill.PapermillExecutionError, match="unknown parameter 'stepz'"):
        papermill.execute_notebook(str(tmp_path / "page.ipynb"), str(tmp_path / "bad.ipynb"),
                                   parameters={"stepz": 5}, **run)


# ---------------------------------------------------------------------------------
# 14. weights are checked when a record is read as finished
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["truncated", "deleted"])
def test_a_record_whose_weights_are_broken_is_computed_again(tmp_path, capsys, damage):
    from bindcore.controlled.runs import load_model

    assert train_cli(tmp_path) == 0
    store = ResultStore(tmp_path, published=None)
    entry = store.find(STORE_KIND, tiny().to_dict())
    weights = entry.path / "model.pt"
    if damage == "truncated":
        weights.write_bytes(weights.read_bytes()[:100])
    else:
        weights.unlink()
    capsys.readouterr()
    assert train_cli(tmp_path) == 0
    rec = store.find(STORE_KIND, tiny().to_dict()).record()
    load_model(rec)  # before: reported as success, failed here
    assert len(list(entry.path.glob("result.json.corrupt-*"))) == 1


# ---------------------------------------------------------------------------------
# 16. analysis inputs that cannot mean anything: one clear error
# ---------------------------------------------------------------------------------
def test_probes_refuse_scenes_without_any_object():
    import numpy as np

    from bindcore.analysis.probes import LinearProbes

    objects = np.full((6, 2, 2), -1)
    with pytest.raises(ValueError, match="none of the 6 scenes has an object"):
        LinearProbes([3, 3], epochs=2).fit(np.ones((6, 4), dtype=np.float32), objects)


def test_functional_binding_refuses_predictions_of_the_wrong_length():
    from test_probes import synthetic  # tests/ is on the path (pytest's rootdir-relative imports)

    from bindcore.analysis.probes import functional_binding, object_level_split

    data = synthetic("objects")
    split = object_level_split(data, 0.5)
    with pytest.raises(ValueError, match="one embedding row per scene"):
        functional_binding(data, data.embeddings[:-3], split)


def test_an_approximator_refuses_an_infinite_learning_rate():
    import numpy as np

    from bindcore.analysis.approximators.trainer import ModelSpec

    with pytest.raises(ValueError, match="lr must be positive and finite"):
        ModelSpec("mlp", 4, float("inf"), 0, np.arange(3), np.arange(0), split=None)


# ---------------------------------------------------------------------------------
# 10. --overwrite deletes the authors' files only with --force, and lists them
# ---------------------------------------------------------------------------------
def test_overwrite_refuses_to_delete_files_bindcore_did_not_write(tmp_path, capsys, caplog):
    import pandas as pd

    release = tmp_path / "clevr"  # a folder in the authors' release layout
    release.mkdir()
    for name in ("img_a.png", "img_b.png"):
        (release / name).write_bytes(b"the authors' image")
    pd.DataFrame({"filename": ["img_a.png", "img_b.png"]}).to_csv(release / "labels.csv", index=False)
    (release / "README").write_text("theirs")
    before = files(release)
    args = ["data", "make", "clevr2d-singles", "--size", "24", "--out", str(release), "--overwrite"]
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "img_a.png" in err and "labels.csv" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert files(release) == before  # nothing deleted
    with caplog.at_level(logging.WARNING, logger="bindcore.data.core"):
        assert main(args + ["--force"]) == 0
    assert any("img_a.png" in r.getMessage() and "did not write" in r.getMessage() for r in caplog.records)
    assert is_new_dataset(release) and (release / "README").read_text() == "theirs"
    assert not (release / "img_a.png").exists()
    capsys.readouterr()
    assert main(args) == 0  # a dataset bindcore wrote is replaced without --force


def test_force_needs_overwrite(tmp_path, capsys):
    assert main(["data", "make", "text", "--out", str(tmp_path / "o"), "--force"]) == 2
    assert "--force" in capsys.readouterr().err


def test_an_ignored_ctrl_c_stays_ignored_during_training():
    import signal

    from bindcore.controlled.checkpoints import signals_between_steps

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with signals_between_steps() as pending:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # held back
            os.kill(os.getpid(), signal.SIGINT)
        assert pending == [] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
