"""The executors of a sweep side by side, printed (not asserted).

1. Overhead per run: one smoke training run at a time through ``run_sweep`` with each
   executor, interleaved (``--repeats`` rounds, each run a new config), as wall time of
   the call minus the training time the run records: local in this process, local in a
   worker process (``LocalExecutor(2)``), Ray on a started local instance with a worker
   that has run a task before (warm) and, once, with a new worker (cold; its first
   import of torch). Ray's own start (``ray.init``, a new local instance) is printed
   apart: a sweep pays it once.
2. A smoke sweep end to end: ``bindcore sweep --profile smoke --coverages 0.5 0.75``
   (the §5.2 chapter's smoke grid, 2 runs) as a fresh command, each executor in turn,
   from the command's start to its end (interpreter, imports, Ray's start included).

Usage: ``python benchmarks/bench_executors.py [--repeats 3] [--cpus 2]`` (needs
``bindcore[cluster]``). Run it with ``nice`` on a shared machine and say so.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bindcore.controlled.recipes import recipe  # noqa: E402
from bindcore.runner import LocalExecutor, RayExecutor  # noqa: E402
from bindcore.store import ResultStore  # noqa: E402
from bindcore.sweep import run_sweep  # noqa: E402


def overhead(cfg, store, executor) -> tuple[float, float]:
    """(wall seconds of one run through the executor, of which the run's own training)."""
    t0 = time.perf_counter()
    (rec,) = run_sweep([cfg], store=store, progress=False, executor=executor)
    return time.perf_counter() - t0, rec["seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    args = ap.parse_args()
    import ray

    tmp = Path(tempfile.mkdtemp(prefix="bench-executors-"))
    store = ResultStore(tmp / "runs", published=None)
    seeds = iter(range(10_000))

    def cfg():
        return recipe("smoke", seed=next(seeds))

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; nice {os.nice(0)}")
    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False)
    print(f"ray.init (a new local instance, {args.cpus} CPUs): {time.perf_counter() - t0:.1f} s")
    ray_ex = RayExecutor()
    wall, train = overhead(cfg(), store, ray_ex)
    print(f"ray, new worker (first task): {wall:.2f} s wall, {train:.2f} s training, overhead {wall - train:.2f} s")
    rows = {"local, this process": LocalExecutor(1), "local, worker process": LocalExecutor(2), "ray, warm worker": ray_ex}
    found: dict[str, list[tuple[float, float]]] = {k: [] for k in rows}
    for _ in range(args.repeats):
        for name, ex in rows.items():
            found[name].append(overhead(cfg(), store, ex))
    print(f"one smoke run ({recipe('smoke').steps} steps), median of {args.repeats}, interleaved:")
    for name, vals in found.items():
        wall = statistics.median(w for w, _ in vals)
        over = statistics.median(w - t for w, t in vals)
        print(f"  {name:24s} wall {wall:6.2f} s, overhead (wall - training) {over:6.2f} s")
    ray.shutdown()

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}
    env.pop("RAY_ADDRESS", None)
    sweep = [sys.executable, "-m", "bindcore", "sweep", "--profile", "smoke", "--coverages", "0.5", "0.75", "--quiet"]
    times: dict[str, list[float]] = {"local": [], "ray": []}
    for i in range(args.repeats):
        for name in times:
            t0 = time.perf_counter()
            subprocess.run([*sweep, "--executor", name, "--results", str(tmp / f"sweep-{name}-{i}")], env=env,
                           check=True, capture_output=True)
            times[name].append(time.perf_counter() - t0)
    print(f"bindcore sweep --profile smoke --coverages 0.5 0.75 (2 runs), whole command, median of {args.repeats}:")
    for name, vals in times.items():
        print(f"  --executor {name:6s} {statistics.median(vals):6.1f} s  (all: {', '.join(f'{v:.1f}' for v in vals)})")


if __name__ == "__main__":
    main()
