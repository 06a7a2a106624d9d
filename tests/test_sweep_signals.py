"""A local sweep told to stop (SIGTERM, Ctrl-C) stops: no queued run starts after the
signal, the running worker processes get it and save their checkpoints, and the command
exits with 143 / 130 at once instead of training the rest first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

LONG = ["--set", "steps=3000", "--set", "eval_every=100000", "--set", "checkpoint_every=20", "--set", "eval_scenes=16"]


def test_a_stopped_sweep_starts_no_queued_run_and_its_workers_stop_too(tmp_path, sig=signal.SIGTERM, code=143):
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "bindcore.cli", "sweep", "--profile", "smoke", "--threads", "1", "--quiet", *LONG,
           "--seeds", "0", "1", "2", "3", "--workers", "2", "--results", str(results)]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "BINDCORE_CONTEXT": '{"published": false}'}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)

    def checkpoints() -> list[Path]:
        return list(results.glob("train-2/*/checkpoint.pt"))

    deadline = time.monotonic() + 120
    while len(checkpoints()) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(checkpoints()) == 2, proc.communicate()[0] if proc.poll() is not None else "no two runs started"
    proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the sweep went on after the signal") from None
    assert proc.returncode == code, out
    assert len(checkpoints()) == 2, "a queued run started after the signal"
    assert not list(results.glob("train-2/*/result.json")), "a run trained to its end after the signal"
    # the runs it stopped resume from their checkpoints: nothing is lost
    assert all(p.stat().st_size > 0 for p in checkpoints())
