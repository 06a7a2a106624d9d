"""Stacked training against the same runs one by one, printed (not asserted).

A recipe (``--profile``: scale by default, or quick, the book's own §5.2 runs) at
|O| = 2,500 (C = 2, V = 50, coverage 0.5) unless told otherwise, on one CPU thread (or
``--device cuda``): seconds per training step of one lone run (each seed's lone run, by
:func:`bindcore.controlled.objective.optimizer_step`) and of stacks of 3 and 4 runs
(seeds 0..R-1, :meth:`bindcore.controlled.stacked.StackedRuns.step`: the one model mapped
over stacked parameters by torch.func), and the ratio stacked / (sum of the same runs'
lone steps): below 1, the stack saves time. Measurements alternate lone and stacked steps
over several rounds; each figure is the median over rounds (another process on the
machine disturbs single rounds).

Usage: ``python benchmarks/bench_stacked.py [--profile scale|quick] [--device cpu|cuda] [--steps 10]
[--rounds 3] [--sizes 3 4] [--threads 1] [--values 50] [--coverage 0.5] [--batch-size B]``
(the quick book's points: ``--profile quick --values 10 --coverage 0.8``)

What decided where stacking runs (:mod:`bindcore.controlled.stacked`): before the stacked step
became a torch.func map, its CPU path (each run's lone loss, one optimizer) measured 1.009 (3
runs) and 0.995 (4 runs) on the scale profile and 0.93-0.96 at the quick point, one thread of a
shared two-core machine; on a CPU the runs of a stack now train one by one.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from bindcore.controlled.checkpoints import Clock  # noqa: E402
from bindcore.controlled.recipes import recipe  # noqa: E402
from bindcore.controlled.stacked import StackedRuns  # noqa: E402
from bindcore.controlled.training import (  # noqa: E402
    Run,
    autocast_dtype,
    build_model,
    concept_weight,
    make_optimizer,
    optimizer_step,
)


def new_run(cfg, dev):
    """A fresh run as train_runs starts it (no evaluation set: none is timed)."""
    model = build_model(cfg, dev)
    train = cfg.split.train.to(dev)
    return Run(cfg, model, make_optimizer(cfg, model), [], Clock(), None, train, train, 0)


class Lone:
    """One run stepped as train_runs steps it (no evaluation, no schedule)."""

    def __init__(self, cfg, dev):
        self.run, self.dev, self.amp = new_run(cfg, dev), dev, autocast_dtype(cfg, dev)
        self.step_no = 0

    def step(self):
        r = self.run
        optimizer_step(r.cfg, r.model, r.opt, r.train_objects, r.allowed, self.step_no, self.dev, self.amp,
                       concept_weight(r.cfg, self.step_no, 0))
        self.step_no += 1


class Stack:
    """R runs stepped as train_runs steps a stack (no evaluation, no schedule)."""

    def __init__(self, cfgs, dev):
        self.runs, self.dev, self.amp = [new_run(cfg, dev) for cfg in cfgs], dev, autocast_dtype(cfgs[0], dev)
        self.stack = StackedRuns(self.runs)
        self.step_no = 0

    def step(self):
        self.stack.step(self.runs, self.step_no, self.dev, self.amp)
        self.step_no += 1


def seconds_per_step(trainer, steps: int) -> float:
    if trainer.dev.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        trainer.step()
    if trainer.dev.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=["scale", "quick"], default="scale", help="recipe to stack")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per measurement")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (median reported)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[3, 4], help="stack sizes")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--values", type=int, default=50)
    ap.add_argument("--coverage", type=float, default=0.5)
    ap.add_argument("--batch-size", type=int, default=None, help="instead of the recipe's")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    warnings.filterwarnings("ignore", "There is a performance drop")  # vmap's loop where torch has no rule
    n_seeds = max(args.sizes)
    extra = {} if args.batch_size is None else {"batch_size": args.batch_size}
    cfgs = [recipe(args.profile, n_values=args.values, coverage=args.coverage, seed=s, **extra) for s in range(n_seeds)]
    c = cfgs[0]
    print(f"{args.profile} recipe: C={c.n_concepts} V={c.n_values} coverage={c.coverage} batch {c.batch_size}, "
          f"d_model {c.d_model}, {c.n_layers} layers, d_ff {c.d_ff}; {torch.get_num_threads()} thread(s), "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, torch {torch.__version__}, {dev}"
          + (f" ({torch.cuda.get_device_name(dev)}, {autocast_dtype(c, dev) or 'fp32'})" if dev.type == "cuda" else ""))
    lones = [Lone(cfg, dev) for cfg in cfgs]
    stacks = {r: Stack(cfgs[:r], dev) for r in args.sizes}
    for t in [*lones, *stacks.values()]:  # warm-up
        t.step()
    lone_t: list[list[float]] = [[] for _ in lones]
    stack_t: dict[int, list[float]] = {r: [] for r in args.sizes}
    for _ in range(args.rounds):
        for i, t in enumerate(lones):
            lone_t[i].append(seconds_per_step(t, args.steps))
        for r, t in stacks.items():
            stack_t[r].append(seconds_per_step(t, args.steps))
    lone_med = [statistics.median(ts) for ts in lone_t]
    print(f"lone run: {statistics.mean(lone_med):.4f} s/step (seeds 0..{n_seeds - 1}: "
          f"{', '.join(f'{x:.4f}' for x in lone_med)}; median of {args.rounds} rounds of {args.steps} steps)")
    for r in args.sizes:
        stacked = statistics.median(stack_t[r])
        alone = sum(lone_med[:r])
        print(f"stack of {r}: {stacked:.4f} s/step; the same {r} runs one by one {alone:.4f} s/step; "
              f"ratio stacked/(R x lone) = {stacked / alone:.3f}")


if __name__ == "__main__":
    main()
