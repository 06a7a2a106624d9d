"""The Ray executor on a local Ray instance with 2 CPUs: `bindcore sweep --executor ray`
stores the records the local executor stores; a task whose worker is killed mid-run is
retried and resumes from its checkpoint; two tasks of one config never train it at once;
a sweep restarted after a crash of its driver reruns only the missing runs.

Skipped where Ray is not installed (`pip install 'bindcore[cluster]'`), except in CI
(`CI` set), which installs it (`make test`) and must run these tests."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bindcore.runner import RayExecutor, SweepError
from bindcore.store import ResultStore
from bindcore.sweep import grid, run_sweep

if not os.environ.get("CI"):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'bindcore[cluster]')")
import ray  # noqa: E402  (in CI a missing Ray is an error, not a skip)

from bindcore.cli import main  # noqa: E402
from bindcore.controlled.recipes import recipe  # noqa: E402
from bindcore.controlled.training import STORE_KIND  # noqa: E402

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[1]
SMOKE = ["--profile", "smoke", "--coverages", "0.5", "0.75", "--quiet"]
# every field of a training record but where, when and how fast it ran
TIMING = {"seconds", "cpu_seconds", "steps_per_second", "finished_at", "machine", "code", "path", "worker"}


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance with 2 CPUs for this module (started once: seconds)."""
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def _records(root: Path) -> dict[str, dict]:
    out = {}
    for path in sorted((root / STORE_KIND).glob("*/result.json")):
        rec = json.loads(path.read_text())
        out[path.parent.name] = {k: v for k, v in rec.items() if k not in TIMING}
    return out


def test_cli_sweep_on_ray_stores_the_records_of_the_local_executor(local_ray, tmp_path, capsys):
    import torch

    assert main(["sweep", *SMOKE, "--executor", "ray", "--results", str(tmp_path / "ray")]) == 0
    assert main(["sweep", *SMOKE, "--executor", "local", "--workers", "2", "--results", str(tmp_path / "local")]) == 0
    out = capsys.readouterr().out
    assert "executor ray" in out and "executor local" in out
    on_ray, local = _records(tmp_path / "ray"), _records(tmp_path / "local")
    assert len(on_ray) == 2 and on_ray == local  # metrics, history, baselines, config, steps, threads
    for h in on_ray:
        a = torch.load(tmp_path / "ray" / STORE_KIND / h / "model.pt", weights_only=True)
        b = torch.load(tmp_path / "local" / STORE_KIND / h / "model.pt", weights_only=True)
        assert all(torch.equal(a[k], b[k]) for k in a)


def _claim_pid(entry: Path, after_checkpoint: bool = True) -> int | None:
    claim = entry / "claim.json"
    if after_checkpoint and not (entry / "checkpoint.pt").exists():
        return None
    try:
        return json.loads(claim.read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def test_a_task_killed_mid_run_is_retried_and_resumes(local_ray, tmp_path):
    store = ResultStore(tmp_path, published=None)
    cfg = recipe("smoke", steps=150, eval_every=50, eval_scenes=16, checkpoint_every=5)
    entry = store.local_dir(STORE_KIND, cfg.to_dict())
    killed = []

    def kill_the_worker():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            pid = _claim_pid(entry)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)  # the Ray worker that trains it
                killed.append(pid)
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    (rec,) = run_sweep([cfg], store=store, progress=False, executor=RayExecutor(max_retries=2))
    killer.join()
    assert killed, "the run ended before the test could kill its worker"
    assert 0 < rec["steps_run"] < cfg.steps  # resumed from a checkpoint, not from step 0
    log = (entry / "worker.log").read_text()
    # the killed worker's claim went with its process: the retry took it at once
    assert log.count("train_task on") == 2 and "resuming from" in log and "waiting for" not in log


def test_two_tasks_of_one_config_never_train_it_at_once(local_ray, tmp_path):
    store = ResultStore(tmp_path, published=None)
    cfg = recipe("smoke", steps=20, eval_every=10, eval_scenes=16)
    log = store.local_dir(STORE_KIND, cfg.to_dict()) / "worker.log"
    out = [None, None]

    def sweep(i):  # two sweeps (two drivers' worth of tasks) asking for one config at once
        out[i] = run_sweep([cfg], store=store, progress=False, executor="ray")[0]

    threads = [threading.Thread(target=sweep, args=(i,)) for i in range(2)]
    with store.claim(STORE_KIND, cfg.to_dict()):  # held here until both tasks run and wait for it
        for t in threads:
            t.start()
        deadline = time.monotonic() + 180
        while not (log.exists() and log.read_text().count("waiting for") == 2):
            assert time.monotonic() < deadline, "two Ray tasks of the config did not run at once"
            time.sleep(0.05)
    for t in threads:
        t.join()
    assert out[0]["finished_at"] == out[1]["finished_at"] and out[0]["seconds"] == out[1]["seconds"]
    assert log.read_text().count("dual encoder:") == 1  # one trained (run_training logs this as it starts),
    # the other waited for its claim, then read its record


def _session(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[3])  # fields after the name: state, ppid, pgrp, session


def _kill_session(sid: int) -> None:
    """SIGKILL every process of the session ``sid`` (one this test started), as a crash would."""
    for _ in range(3):  # again, for any process started meanwhile
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and _session(int(entry.name)) == sid:
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_a_sweep_restarted_after_a_crash_reruns_only_missing_runs(local_ray, tmp_path, caplog):
    first, second = grid(recipe("smoke", steps=150, eval_every=50, eval_scenes=16, checkpoint_every=5),
                         coverage=[0.5, 0.75])
    store = ResultStore(tmp_path, published=None)
    done = store.local_dir(STORE_KIND, first.to_dict())
    running = store.local_dir(STORE_KIND, second.to_dict())
    # a driver of its own (a new local Ray instance), one run at a time, killed with all its processes
    cmd = [sys.executable, "-m", "bindcore", "sweep", "--profile", "smoke", "--set", "steps=150",
           "--set", "eval_every=50", "--set", "eval_scenes=16", "--set", "checkpoint_every=5",
           "--coverages", "0.5", "0.75", "--executor", "ray", "--workers", "1", "--results", str(tmp_path), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
    env.pop("RAY_ADDRESS", None)
    driver = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not ((done / "result.json").exists() and _claim_pid(running) is not None):
            assert driver.poll() is None, driver.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the sweep did not get to its second run"
            time.sleep(0.05)
        worker = _claim_pid(running)
    finally:
        _kill_session(driver.pid)  # the driver, its Ray instance and its workers (own process groups)
        driver.communicate()
    assert not _alive(worker)
    stamp = (done / "result.json").stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="bindcore"):
        recs = run_sweep([first, second], store=store, progress=False, executor="ray")
    assert "sweep of 2 runs: 1 stored, 1 to run" in caplog.text
    assert (done / "result.json").stat().st_mtime_ns == stamp  # the finished run was not run again
    assert 0 < recs[1]["steps_run"] < second.steps  # the interrupted one resumed from its checkpoint


def test_a_failed_ray_task_names_its_run_and_the_others_go_on(local_ray, tmp_path):
    store = ResultStore(tmp_path, published=None)
    bad, good = grid(recipe("smoke", steps=4, eval_every=2, eval_scenes=16), coverage=[0.5, 0.75])
    (store.prepare(STORE_KIND, bad.to_dict()).path / "model.pt").mkdir()  # its weights cannot be written
    with pytest.raises(SweepError, match="1 of 2") as info:
        run_sweep([bad, good], store=store, progress=False, executor="ray")
    (failure,) = info.value.failures
    assert "worker.log" in str(failure) and "Error" in failure.error and "\n" not in failure.error
    assert store.find(STORE_KIND, good.to_dict()) is not None


def test_approximator_sweeps_on_ray_store_what_this_process_would(local_ray, tmp_path):
    from bindcore.analysis import approximators as A
    from bindcore.analysis.complexity import stored_sweep, stored_sweeps

    datas = [A.synthetic_binding_data((4, 4), 8, form, noise=0.05, seed=1) for form in ("additive", "product")]
    proto = A.get_protocol("release", steps=20, eval_every=10)
    jobs = [dict(data=d, fractions=[0.5], families=["additive"], protocol=proto) for d in datas]
    here = [stored_sweep(**job, store=ResultStore(tmp_path / "a", published=None)) for job in jobs]
    there = stored_sweeps(jobs, store=ResultStore(tmp_path / "b", published=None), executor="ray")

    def numbers(sweeps):
        return [{k: v for k, v in r.items() if not k.endswith("seconds")} for records in sweeps for r in records]

    assert numbers(here) == numbers(there) and len(numbers(there)) == 2


def test_asking_for_more_than_the_cluster_has_is_refused_up_front(local_ray, tmp_path, capsys):
    """A run that asks for more CPUs or GPUs than the whole cluster has would wait for
    ever: the sweep is refused before any work, naming the option."""
    assert main(["sweep", *SMOKE, "--executor", "ray", "--cpus-per-run", "64", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--cpus-per-run" in err and "the Ray cluster has 2 in all" in err
    assert main(["sweep", *SMOKE, "--executor", "ray", "--gpus-per-run", "1", "--device", "cuda",
                 "--results", str(tmp_path)]) == 2
    assert "GPUs per run, and the Ray cluster has 0 in all" in capsys.readouterr().err
    assert not (tmp_path / STORE_KIND).exists()


def test_sigterm_to_a_ray_sweep_ends_it_as_a_local_sweep_ends(tmp_path):
    """Ray's core replaces the driver's SIGTERM handler with one that aborts (exit 134, a stack
    dump); the sweep puts its own back, so `kill` ends it with 143 and one line, and the stopped
    run's checkpoint is there to resume from."""
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "bindcore.cli", "sweep", "--profile", "smoke", "--executor", "ray", "--workers", "1",
           "--quiet", "--set", "steps=20000", "--set", "checkpoint_every=20", "--set", "eval_every=100000",
           "--results", str(results)]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "BINDCORE_CONTEXT": '{"published": false}'}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 180
    while not list(results.glob(f"{STORE_KIND}/*/checkpoint.pt")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()[0]
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the Ray sweep went on after SIGTERM") from None
    assert proc.returncode == 143, out[-2000:]
    assert "terminated (SIGTERM)" in out and "SIGTERM received" not in out, out[-2000:]
    assert list(results.glob(f"{STORE_KIND}/*/checkpoint.pt")) and not list(results.glob(f"{STORE_KIND}/*/result.json"))
