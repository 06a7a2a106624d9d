"""The runner (bindcore.runner) on this machine: choosing an executor, the progress bar
and failure report, a killed local worker failing alone, the CLI's executor options, and
approximator sweeps spread over worker processes. Ray itself: tests/test_ray_executor.py;
the book's chapters side by side: tests/test_book.py."""

from __future__ import annotations

import json
import operator
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from bindcore import runner
from bindcore.cli import main
from bindcore.controlled.recipes import recipe
from bindcore.controlled.training import STORE_KIND
from bindcore.io import config_hash
from bindcore.runner import (
    LocalExecutor,
    RayExecutor,
    SweepError,
    Task,
    make_executor,
    ray_installed,
    run_tasks,
)
from bindcore.store import ResultStore
from bindcore.sweep import run_sweep


def test_executors_are_chosen_by_a_parameter():
    assert make_executor(None).name == "local" and make_executor("local", workers=3).workers == 3
    with pytest.raises(ValueError, match="executor must be"):
        make_executor("slurm")
    with pytest.raises(ValueError, match="workers must be"):
        make_executor("local", workers=0)
    ex = LocalExecutor(2)
    assert make_executor(ex) is ex
    if ray_installed():
        assert make_executor("ray").address is None
        assert make_executor("ray:auto").address == "auto"
        assert make_executor("ray://head:10001").address == "ray://head:10001"
        with pytest.raises(ValueError, match="cpus per run"):
            RayExecutor(cpus_per_run=0)


def test_ray_missing_is_one_line_naming_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    with pytest.raises(ValueError, match=r"bindcore\[cluster\]"):
        make_executor("ray")
    assert main(["sweep", "--profile", "smoke", "--executor", "ray", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "bindcore[cluster]" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("extra,option", [
    (["--address", "auto"], "--address"), (["--gpus-per-run", "1"], "--gpus-per-run"),
    (["--executor", "slurm"], "--executor"), (["--cpus-per-run", "0"], "--cpus-per-run"),
])
def test_bad_executor_options_are_one_line_with_exit_code_2(tmp_path, capsys, extra, option):
    assert main(["sweep", "--profile", "smoke", "--results", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert option in err and len(err.splitlines()) == 1
    assert not (tmp_path / STORE_KIND).exists()


@pytest.mark.skipif(not ray_installed(), reason="ray is not installed (pip install 'bindcore[cluster]')")
def test_a_gpu_device_on_ray_needs_gpus_per_run(tmp_path, capsys):
    assert main(["sweep", "--profile", "smoke", "--results", str(tmp_path), "--executor", "ray",
                 "--device", "cuda"]) == 2
    assert "--gpus-per-run" in capsys.readouterr().err


class RecordingBar:
    """Stands in for the progress bar: keeps every postfix it is given."""

    def __init__(self, **kwargs):
        self.postfixes = []

    def set_postfix_str(self, text, refresh=True):
        self.postfixes.append(text)

    def update(self, n):
        pass

    def close(self):
        pass


def test_one_bar_counts_runs_running_and_failed_and_failures_are_named_once_the_others_end(tmp_path, monkeypatch):
    bar = RecordingBar()
    monkeypatch.setattr(runner, "progress_bar", lambda **kw: bar)
    tasks = [Task(operator.add, (1, 2), "add", tmp_path / "add.log"),
             Task(operator.truediv, (1, 0), "divide", tmp_path / "divide.log"),
             Task(operator.add, (3, 4), "after", tmp_path / "after.log", after_earlier=True)]
    with pytest.raises(SweepError, match="2 of 3 sweep run") as info:
        run_tasks(tasks, LocalExecutor(2))
    assert "running 2, failed 0" in bar.postfixes and bar.postfixes[-1] == "running 0, failed 1"
    failed, not_run = info.value.failures
    assert str(failed) == f"divide: ZeroDivisionError: division by zero (log: {tmp_path / 'divide.log'})"
    assert "Traceback" in failed.task.log.read_text() and "add on" in (tmp_path / "add.log").read_text()
    assert not_run.task.label == "after" and "not run" in not_run.error  # it waits for every task before it
    # a result comes back from the worker process; in this process too
    assert run_tasks(tasks[:1], LocalExecutor(2), progress=False) == {"add": 3}
    assert run_tasks([tasks[0], tasks[2]], LocalExecutor(1), progress=False) == {"add": 3, "after": 7}
    with pytest.raises(ValueError, match="distinct labels"):
        run_tasks([tasks[0], tasks[0]], LocalExecutor(2))


def _kill_when_training(store: ResultStore, cfg, done: threading.Event) -> None:
    """SIGKILL the process that trains ``cfg`` (the owner of its claim) once its first
    checkpoint is written."""
    entry = store.local_dir(STORE_KIND, cfg.to_dict())
    while not done.is_set():
        claim = entry / "claim.json"
        if (entry / "checkpoint.pt").exists() and claim.exists():
            try:
                pid = json.loads(claim.read_text())["pid"]
            except (ValueError, KeyError, OSError):
                continue
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.02)


def test_a_killed_local_worker_fails_alone_and_a_rerun_resumes_it(tmp_path):
    store = ResultStore(tmp_path, published=None)
    victim = recipe("smoke", steps=150, eval_every=50, eval_scenes=16, checkpoint_every=5)
    other = victim.with_(steps=10, coverage=0.5)
    done = threading.Event()
    killer = threading.Thread(target=_kill_when_training, args=(store, victim, done))
    killer.start()
    try:
        with pytest.raises(SweepError, match="1 of 2") as info:
            run_sweep([victim, other], store=store, workers=2, progress=False)
    finally:
        done.set()
        killer.join()
    (failure,) = info.value.failures
    assert "killed by SIGKILL" in failure.error and config_hash(victim.to_dict()) in str(failure)
    assert store.find(STORE_KIND, other.to_dict()) is not None
    # the rerun (here in this process) trains only the missing run, from its checkpoint
    # (the claim of its dead owner is taken over at once)
    rec = run_sweep([victim, other], store=store, workers=1, progress=False)[0]
    assert 0 < rec["steps_run"] < victim.steps
    assert "resuming from" in Path(rec["path"], "worker.log").read_text()


def test_pixel_and_token_runs_in_worker_processes_go_to_their_own_store_folders(tmp_path):
    """A worker reads a config's class from its JSON (``scene_input``): a pixel run in a
    worker process stores the record that training it in this process stores."""
    from bindcore.controlled.pixels import PIXEL_STORE_KIND
    from bindcore.controlled.recipes import pixel_recipe

    pixel = pixel_recipe("smoke", steps=6, eval_every=3, eval_scenes=16)
    token = recipe("smoke", steps=6, eval_every=3, eval_scenes=16)
    store = ResultStore(tmp_path / "workers", published=None)
    there = run_sweep([pixel, token], store=store, workers=2, progress=False)
    assert [Path(r["path"]).parent.name for r in there] == [PIXEL_STORE_KIND.name, STORE_KIND.name]
    assert there[0]["config"] == pixel.to_dict() and "worker" not in there[0]
    here = run_sweep([pixel], store=ResultStore(tmp_path / "here", published=None), workers=1, progress=False)[0]
    for k, v in here["metrics"].items():  # one thread there, the default here: sums in another order
        assert there[0]["metrics"][k] == pytest.approx(v, abs=1e-6), k


def test_approximator_sweeps_in_worker_processes_store_what_this_process_would(tmp_path):
    from bindcore.analysis import approximators as A
    from bindcore.analysis.complexity import stored_sweep, stored_sweeps

    datas = [A.synthetic_binding_data((4, 4), 8, form, noise=0.05, seed=1) for form in ("additive", "product")]
    proto = A.get_protocol("release", steps=20, eval_every=10)
    jobs = [dict(data=d, fractions=[0.5], families=["additive", "mlp"], protocol=proto, widths=[8]) for d in datas]
    here = [stored_sweep(**job, store=ResultStore(tmp_path / "a", published=None)) for job in jobs]
    store = ResultStore(tmp_path / "b", published=None)
    there = stored_sweeps(jobs, store=store, executor="local", workers=2)
    def numbers(sweeps):  # all but the timings
        return [{k: v for k, v in r.items() if not k.endswith("seconds")} for records in sweeps for r in records]

    assert numbers(here) == numbers(there) and len(numbers(there)) == 4
    assert stored_sweeps(jobs, store=store) == there  # stored: read back in this process
