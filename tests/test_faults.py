"""Faults that lose data or block runs (issue 23): each test injects one fault (an
incomplete record, a record of other code, a full disk while a claim is written, a kill
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
# 2. the command line names a stale record it reused; --retrain-stale trains it again
# ---------------------------------------------------------------------------------
def make_stale(results: Path) -> Path:
    entry = ResultStore(results).find(STORE_KIND, tiny().to_dict())
    path = entry.path / "result.json"
    record = json.loads(path.read_text())
    record["code"] = {**record["code"], "fingerprint": "0" * 16}  # as if other code had made it
    path.write_text(json.dumps(record))
    return entry.path


def test_train_says_it_reused_a_stale_record_and_retrains_it_when_asked(tmp_path, capsys):
    assert train_cli(tmp_path) == 0
    path = make_stale(tmp_path)
    capsys.readouterr()
    assert train_cli(tmp_path) == 0
    err = capsys.readouterr().err
    assert "reused a record made by code 000000000000" in err and str(path) in err and "--retrain-stale" in err
    assert train_cli(tmp_path, "--retrain-stale") == 0
    captured = capsys.readouterr()
    assert "reused a record" not in captured.err and "retraining" in captured.err
    assert json.loads(captured.out)["stale"] is False
    found = ResultStore(tmp_path).find(STORE_KIND, tiny().to_dict())
    assert found.path == path and not found.stale
    assert len(list(path.glob("result.json.stale-*"))) == 1  # the old record is kept aside


def test_sweep_says_it_reused_a_stale_record(tmp_path, capsys):
    assert train_cli(tmp_path) == 0
    path = make_stale(tmp_path)
    capsys.readouterr()
    assert main(["sweep", *TINY, "--results", str(tmp_path), "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert "reused a record made by code 000000000000" in err and str(path) in err


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
    path.write_text("")
    old = path.stat().st_mtime - 120  # written two minutes ago, never filled
    os.utime(path, (old, old))
    with store.claim(STORE_KIND, config, wait=0.5) as held:  # before: waited until it was 600 s old
        assert json.loads(path.read_text())["token"] == held.owner["token"]


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
    assert f"process {os.getpid()}" in waiting[0] and "at most" in waiting[0] and "stale after 600 s" in waiting[0]
