"""The §5.2 recipe search on training-task fit: how fast and how reliably a recipe fits
its own training binding task (``task_object_2``: two-object scenes of training objects
recognised among the training objects, strict rule), seed by seed. It reads no
held-out object: each evaluation is filtered through
:func:`bindcore.controlled.search.search_view` before this script sees it.

One attempt = a recipe (``--base``, default scale) with fields changed, trained on one
CPU thread for each of ``--seeds`` until ``task_object_2`` reaches ``--target`` (then
stopped: the step is the attempt's number) or the last step. Every attempt is appended
to ``published/fit-search.json`` with the metric it is judged on. An attempt stopped by
hand (Ctrl-C or SIGTERM, e.g. once its curve fell below the leading attempt's) is logged
too, with the curve so far, its CPU time and ``--reason`` as its status.

    python benchmarks/fit_search.py F1 '{"n_values": 50, "coverage": 0.5}' --seeds 0 1 2

With ``--from-results DIR`` nothing is trained: the attempt's runs are read from a result
store where a sweep finished them (``bindcore sweep --set ...``), each seed's curve its
full training-only history (not stopped at the target).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "published" / "fit-search.json"
CHOSEN_ON = "task_object_2 (training objects only)"


class Fitted(Exception):
    """Raised from the evaluation callback once the training task is fitted."""


def fit_run(cfg: Any, target: float, stop_at: int | None = None) -> dict[str, Any]:
    """Train ``cfg`` until ``task_object_2 >= target``, its last step or the first
    evaluation at or after ``stop_at``; the training-only curve, the step at which the
    target was reached (None: never) and CPU time."""
    from bindcore.cli import Terminated
    from bindcore.controlled.search import search_view
    from bindcore.controlled.training import run_training

    curve: list[dict[str, float]] = []
    reached: list[int] = []
    t0 = time.process_time()

    def on_eval(step: int, metrics: dict[str, float]) -> None:
        seen = search_view(metrics)
        curve.append({"step": step, "task_object_2": seen.get("task_object_2")})
        print(f"  step {step}: task_object_2 {seen.get('task_object_2'):.3f}", flush=True)
        if seen.get("task_object_2", 0.0) >= target:
            reached.append(step)
            raise Fitted
        if stop_at is not None and step >= stop_at:
            raise Fitted

    interrupted = False
    try:
        run_training(cfg, progress=False, on_eval=on_eval)
    except Fitted:
        pass
    except (KeyboardInterrupt, Terminated):
        interrupted = True
    return {"seed": cfg.seed, "steps_to_target": reached[0] if reached else None,
            "last_task_object_2": curve[-1]["task_object_2"] if curve else None,
            "cpu_minutes": (time.process_time() - t0) / 60, "curve": curve, "interrupted": interrupted}


def stored_record(cfg: Any, root: Path) -> dict[str, Any]:
    """The finished record of ``cfg`` in the store at ``root`` (a sweep trained it), or in
    ``published/`` when ``root`` is that folder (read-only: read through an empty local store)."""
    import tempfile

    from bindcore.store import ResultStore

    published = ROOT / "published"
    with tempfile.TemporaryDirectory(prefix="fit-search-") as empty:
        if root.resolve() == published.resolve():
            store = ResultStore(empty, published=published)
        else:
            store = ResultStore(root, published=None)
        entry = store.find(cfg.store_kind, cfg.to_dict())
        if entry is None:
            raise SystemExit(f"no finished run of seed {cfg.seed} with these changes in {root}")
        return entry.record()


def stored_run(record: dict[str, Any], target: float) -> dict[str, Any]:
    """:func:`fit_run`'s row of a finished ``record``: its whole training-only curve."""
    from bindcore.controlled.recipes import steps_to_fit
    from bindcore.controlled.search import search_view

    curve = [{"step": h["step"], "task_object_2": search_view(h).get("task_object_2")} for h in record["history"]]
    reached = steps_to_fit(record["history"], target=target)
    return {"seed": record["config"]["seed"], "steps_to_target": None if math.isinf(reached) else int(reached),
            "last_task_object_2": curve[-1]["task_object_2"] if curve else None,
            "cpu_minutes": (record.get("cpu_seconds") or 0.0) / 60, "curve": curve, "interrupted": False}


def append(row: dict[str, Any], log: Path = LOG) -> None:
    """Add ``row`` to the log (replacing an earlier row of the same name), atomically."""
    from bindcore.controlled.search import log_attempt

    log_attempt(log, row, __doc__.split("\n\n")[0])


def attempt_row(args: argparse.Namespace, changes: dict[str, Any], runs: list[dict[str, Any]],
                code: dict[str, Any]) -> dict[str, Any]:
    """The log's row of an attempt with the seeds run so far (``status`` says how many);
    ``code``: the training code as it was when the attempt started."""
    steps = [r["steps_to_target"] if r["steps_to_target"] is not None else float("inf") for r in runs]
    median = statistics.median(steps)
    done = len(runs) == len(args.seeds) and not runs[-1]["interrupted"]
    if runs[-1]["interrupted"]:
        last = runs[-1]["curve"][-1]["step"] if runs[-1]["curve"] else 0
        status = f"stopped by hand on seed {runs[-1]['seed']} after step {last}: {args.reason}"
    else:
        status = "finished" if done else f"{len(runs)} of {len(args.seeds)} seeds run"
    return {"name": args.name, "base": args.base, "changes": changes, "chosen on": CHOSEN_ON,
            "target": args.target, "stop at": args.stop_at, "seeds": args.seeds,
            "median steps to target": None if median == float("inf") else median,
            "every seed fitted": done and all(s != float("inf") for s in steps),
            "status": status,
            "runs": runs, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "code": code}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("name")
    p.add_argument("changes", help="JSON object of TrainConfig fields to change")
    p.add_argument("--base", default="scale")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--target", type=float, default=0.9)
    p.add_argument("--stop-at", type=int, default=None, help="give up at the first evaluation at or after this step")
    p.add_argument("--log", type=Path, default=LOG)
    p.add_argument("--from-results", type=Path, default=None,
                   help="read the runs from this result store (a sweep trained them) instead of training")
    p.add_argument("--reason", default="stopped by hand",
                   help="why, if the attempt is stopped by hand (Ctrl-C or SIGTERM): logged as its status")
    args = p.parse_args(argv)
    import signal

    import torch

    from bindcore.cli import _terminate
    from bindcore.controlled.recipes import recipe
    from bindcore.store import provenance

    torch.set_num_threads(1)
    changes = json.loads(args.changes)
    first = recipe(args.base, **{**changes, "seed": args.seeds[0]})
    code = {**provenance(), "kind": first.store_kind.name}  # before any training
    if args.from_results:  # the code that trained the stored runs
        code = {**(stored_record(first, args.from_results).get("code") or code), "kind": first.store_kind.name}
    before = signal.signal(signal.SIGTERM, _terminate)  # unwinds as Ctrl-C does: the attempt is logged
    try:
        runs = []
        for seed in args.seeds:
            cfg = recipe(args.base, **{**changes, "seed": seed})
            print(f"{args.name} seed {seed}", flush=True)
            runs.append(stored_run(stored_record(cfg, args.from_results), args.target) if args.from_results
                        else fit_run(cfg, args.target, args.stop_at))
            # logged after every seed, so that an attempt cut short keeps the seeds it finished
            row = attempt_row(args, changes, runs, code)
            append(row, args.log)
            if runs[-1]["interrupted"]:
                print(f"{args.name}: {row['status']} (logged)", file=sys.stderr)
                return 130
    finally:
        signal.signal(signal.SIGTERM, before)
    print(json.dumps({k: v for k, v in row.items() if k != "runs"}, default=str))
    return 0

if __name__ == "__main__":
    sys.exit(main())
