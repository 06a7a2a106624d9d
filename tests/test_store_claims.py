"""Claims of the result store (bindcore.store.ResultStore.claim): two trainings of one
config, in threads or processes, train it once; a claim of a live process is
waited for and one of a process that died taken at once.

New APIs are imported inside the tests, so that each test fails on its own on code
without them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bindcore.controlled.recipes import recipe
from bindcore.controlled.runs import train
from bindcore.controlled.training import STORE_KIND
from bindcore.store import ResultStore

TINY = ["--profile", "smoke", "--set", "steps=4", "--set", "eval_every=2", "--set", "eval_scenes=16", "--quiet"]
ROOT = Path(__file__).resolve().parents[1]


def tiny(**kw):
    return recipe("smoke", **{"steps": 4, "eval_every": 2, "eval_scenes": 16, **kw})


# ---------------------------------------------------------------------------------
# claims: one training of a config at a time
# ---------------------------------------------------------------------------------
def test_two_trainings_of_one_config_at_once_train_it_once(tmp_path, monkeypatch):
    import bindcore.controlled.runs as T

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


def test_a_claim_of_a_live_process_is_waited_for_and_one_of_a_dead_process_taken(tmp_path):
    from bindcore.store import ClaimBusy

    store = ResultStore(tmp_path, published=None)
    cfg = tiny().to_dict()
    with store.claim(STORE_KIND, cfg) as c:
        path = c.path
        assert store.holder(STORE_KIND, cfg)["pid"] == os.getpid()
        assert path.stat().st_mode & 0o044  # readable by the group, like the records
        with pytest.raises(ClaimBusy, match=f"process {os.getpid()}"):
            with store.claim(STORE_KIND, cfg, wait=0.3):
                pass
    assert not path.exists() and store.holder(STORE_KIND, cfg) is None
    # another process holds it: waited for while it lives, taken once it is killed
    code = ("import sys; from bindcore.store import ResultStore; from bindcore.controlled.training import STORE_KIND;"
            "import json; cfg = json.loads(sys.argv[1]); s = ResultStore(sys.argv[2], published=None)\n"
            "with s.claim(STORE_KIND, cfg):\n print('held', flush=True); sys.stdin.read()")
    other = subprocess.Popen([sys.executable, "-c", code, json.dumps(cfg), str(tmp_path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert other.stdout.readline().strip() == "held"
        assert store.holder(STORE_KIND, cfg)["pid"] == other.pid
        with pytest.raises(ClaimBusy, match=f"process {other.pid}"):
            with store.claim(STORE_KIND, cfg, wait=0.3):
                pass
        other.kill()  # no release: the claim file stays, its lock goes with the process
        other.wait()
        assert path.exists()
        with store.claim(STORE_KIND, cfg, wait=5) as c:
            assert c.owner["pid"] == os.getpid()
    finally:
        other.kill()


