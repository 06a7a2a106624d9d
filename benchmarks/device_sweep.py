"""The §5.2 grid with the paper's own recipe on a lent GPU, within a wall-clock budget.

    OUT=/path python benchmarks/device_sweep.py                       # on a CUDA machine
    python benchmarks/device_sweep.py --out /tmp/x --device cpu --set steps=4 --set eval_scenes=16 \\
        --values 4 --coverages 0.5 0.75 --budget 120                 # the same path on a CPU, tiny

For each object space (``--values``, largest first: |O| = 2,500 before the smaller ones)
it runs ``bindcore sweep --profile paper`` over ``--coverages`` and ``--seeds``, the
runs of one size side by side (``--workers`` processes on the one device), each size
in what is left of ``--budget`` seconds (``--stack N``: N runs in one process, their
parameters stacked, which on a GPU costs about as many kernel launches per step as one
run); a size cut off by the budget keeps its checkpoints in ``--results`` (a second call
resumes it). Then every finished run's config and result (no weights) are copied to
``$OUT/published/train-2/<hash>/``, the layout of ``published/``, and packed into
``$OUT/published.tar`` too (a lent machine returns files at most two folders down);
``$OUT/device-sweep.json`` says on which machine and device, when, how long, which runs
finished, and for each run the budget cut off, the history of its last checkpoint (the
step it reached and the evaluations so far: a trajectory, not a record).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # bindcore from this checkout where it is not installed (a lent machine)
PAPER_COVERAGES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
SUMMARY_KEYS = ("test_object_2", "test_swap_pair", "release_test_pooled", "release_test_object_2",
                "val_swap_pair", "task_object_2")


def device_name(device: str) -> str:
    """The accelerator in words (``cpu`` on a CPU)."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def sweep_command(values: int, args: argparse.Namespace, runs: int = 1) -> list[str]:
    """The ``bindcore sweep`` command of one object space (of ``runs`` runs: by default
    as many processes as it takes to run them all at once, ``--stack`` to a process)."""
    cmd = [sys.executable, "-m", "bindcore.cli", "sweep", "--profile", args.profile, "--values", str(values),
           "--coverages", *map(str, args.coverages), *(["--seeds", *map(str, args.seeds)] if args.seeds else []),
           "--device", args.device, "--workers", str(args.workers or -(-runs // args.stack)),
           "--stack", str(args.stack), "--results", str(args.results)]
    for s in args.set:
        cmd += ["--set", s]
    return cmd


def run_within(cmd: list[str], seconds: float) -> str:
    """Run ``cmd`` in its own process group; ``finished``, ``failed`` or ``cut off`` (the
    group interrupted, then killed, when ``seconds`` run out)."""
    if seconds <= 0:
        return "cut off"
    env = {**os.environ, "TQDM_MININTERVAL": os.environ.get("TQDM_MININTERVAL", "30")}  # a bar line per 30 s
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, env=env)
    try:
        return "finished" if proc.wait(timeout=seconds) == 0 else "failed"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return "cut off"


def collect(args: argparse.Namespace, configs: list[Any]) -> list[dict[str, Any]]:
    """Copy every finished run of ``configs`` to ``$OUT/published`` (config and result,
    no weights); one line per config: its hash, size, coverage, seed, and numbers."""
    from bindcore.io import config_hash
    from bindcore.store import ResultStore

    store = ResultStore(args.results, published=None)
    dest = ResultStore(args.results, published=args.out / "published")
    rows = []
    for cfg in configs:
        entry = store.find(cfg.store_kind, cfg.to_dict())
        row = {"hash": config_hash(cfg.to_dict()), "V": cfg.n_values, "C": cfg.n_concepts,
               "coverage": cfg.coverage, "seed": cfg.seed, "finished": entry is not None}
        if entry is not None:
            dest.publish(entry)
            m = entry.result["metrics"]
            row.update({k: m[k] for k in SUMMARY_KEYS if k in m})
            row["cpu_seconds"], row["seconds"] = entry.result.get("cpu_seconds"), entry.result.get("seconds")
        else:
            row.update(cut_off_history(store.local_dir(cfg.store_kind, cfg.to_dict())))
        rows.append(row)
    return rows


def cut_off_history(entry_dir: Path) -> dict[str, Any]:
    """What the latest readable checkpoint of an unfinished run holds: the step it
    reached, its seconds and its evaluations so far ({} when it has none)."""
    import torch

    for name in ("checkpoint.pt", "checkpoint.prev.pt"):
        try:
            state = torch.load(entry_dir / name, map_location="cpu", weights_only=True)
        except Exception:  # absent, or cut short by the kill: the previous one
            continue
        return {"checkpoint_step": int(state["step"]), "checkpoint_clock": state.get("clock"),
                "history": state.get("history", [])}
    return {}


def pack(folder: Path, archive: Path) -> None:
    """``folder`` as one tar file (relative paths), written atomically."""
    tmp = archive.with_name(f".{archive.name}.tmp")
    with tarfile.open(tmp, "w") as tar:
        if folder.exists():
            tar.add(folder, arcname=folder.name)
    os.replace(tmp, archive)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "device-out")))
    p.add_argument("--results", type=Path, default=ROOT / "device-results",
                   help="the run store (default: device-results/ of the checkout, which a lent machine keeps "
                   "between calls while warm, unlike OUT, so that a second call resumes the runs cut off)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--profile", default="paper", choices=["paper", "scale"],
                   help="the recipe: the paper's own, or the scale plan's (its steps per point, its seeds and splits)")
    p.add_argument("--values", type=int, nargs="+", default=[50, 20, 10], help="V per size, C = 2")
    p.add_argument("--coverages", type=float, nargs="+", default=list(PAPER_COVERAGES))
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="default: 0 (paper), the plan's (scale)")
    p.add_argument("--workers", type=int, default=None, help="processes at once (default: one size's runs)")
    p.add_argument("--stack", type=int, default=1, help="runs per process, their parameters stacked")
    p.add_argument("--budget", type=float, default=540.0, help="wall seconds for all sizes")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="recipe fields to change")
    args = p.parse_args(argv)
    if args.seeds is None and args.profile == "paper":
        args.seeds = [0]
    args.out.mkdir(parents=True, exist_ok=True)

    from bindcore.cli import RunOptions, sweep_configs
    from bindcore.io import atomic_write_json
    from bindcore.store import machine_info

    sets = dict(s.split("=", 1) for s in args.set)
    start, t0 = time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.perf_counter()
    sizes, configs = [], []
    for v in args.values:
        group = sweep_configs(RunOptions(profile=args.profile, sets=list(args.set)),
                              {"n_values": [v], "coverage": args.coverages, "seed": args.seeds})
        configs += group
        left = args.budget - (time.perf_counter() - t0)
        t1 = time.perf_counter()
        status = run_within(sweep_command(v, args, len(group)), left)
        if status == "failed" and args.stack > 1:  # the stacked path failed here: the runs one by one
            print(f"|O| = {v * v:,}: the stack failed; again with --stack 1", flush=True)
            args.stack = 1
            status = run_within(sweep_command(v, args, len(group)), args.budget - (time.perf_counter() - t0))
        sizes.append({"V": v, "objects": v * v, "runs": len(group), "status": status,
                      "wall_seconds": time.perf_counter() - t1})
        print(f"|O| = {v * v:,}: {status} after {sizes[-1]['wall_seconds']:.0f} s", flush=True)
    runs = collect(args, configs)
    summary = {"machine": machine_info(), "device": args.device, "device_name": device_name(args.device),
               "started": start, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "wall_seconds": time.perf_counter() - t0, "budget_seconds": args.budget,
               "recipe": args.profile, "changes": sets, "sizes": sizes, "runs": runs}
    atomic_write_json(args.out / "device-sweep.json", summary)
    pack(args.out / "published", args.out / "published.tar")
    done = sum(r["finished"] for r in runs)
    print(f"{done} of {len(runs)} runs finished in {summary['wall_seconds']:.0f} s on {summary['device_name']}; "
          f"records in {args.out / 'published'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
