"""What §5.3 and §5.4's approximator sweeps cost at a profile's budget, printed (not asserted).

For one controlled model of each object-space size that the chapters read (``models`` of the
profile, :func:`bindcore.experiments.controlled_datasets`), each sweep the two chapters run is
built as they build it (:func:`bindcore.experiments.controlled_jobs`, the torch families; 05_4
has no tree kinds) and timed, not trained through
(:func:`bindcore.analysis.approximators.time_stacks`): a few steps and one evaluation of its
stacks. Printed per sweep and size: approximators, stacks, ms a step, approximator-steps a
second, seconds an evaluation, and CPU-minutes at the step cap, for one model and for every
model of that size; then the two chapters' sum, figure 9 included (the global product with
the chapter's learning rates on each of its models' own training objects, timed on the same
binding data: its objects are capped at ``max_objects`` whatever the size). With ``patience``
set a model stops on its validation plateau, so the cap's time is an upper bound.

Usage: ``python benchmarks/bench_approximator_budget.py [--profile quick] [--budget 'steps=10000
batch_size=4096 patience=4' ...] [--threads 1] [--steps 5]``. The datasets come from the
stored §5.2 runs (published records), so nothing trains but the timed steps.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from bindcore.analysis.approximators import FAMILIES, PRODUCT_FAMILIES, sweep_specs, time_stacks  # noqa: E402
from bindcore.experiments import controlled_datasets, controlled_jobs, figure9_runs  # noqa: E402
from bindcore.parameters import chapter_parameters  # noqa: E402
from bindcore.runtime import set_threads  # noqa: E402


def chapter_jobs(datasets, P):
    """(name, jobs) of every approximator sweep 05_3 and 05_4 run, as their cells call them."""
    top_only = {**P, "fractions": [max(P["fractions"])]}
    yield "§5.3 MLP widths", controlled_jobs(datasets, P, ["mlp"], P["widths"])
    yield "§5.4 families", controlled_jobs(datasets, P, list(FAMILIES), {"mlp": [max(P["widths"])]})
    for init in ("one_plus", "normal"):
        yield f"§5.4 product inits ({init})", controlled_jobs(datasets, top_only, list(PRODUCT_FAMILIES), None, product_init=init)
    yield "figure 9 (per model)", controlled_jobs(datasets, top_only, ["global_product"], None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--budget", action="append", default=[], metavar="'NAME=VALUE ...'",
                    help="05_3 parameters (YAML values) over the profile's, e.g. 'steps=10000 patience=4'; "
                         "repeat to time several budgets on the same models (default: the profile's own)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5, help="timed steps per sweep")
    args = ap.parse_args()
    set_threads(args.threads)
    base = chapter_parameters("controlled_complexity", args.profile)
    runs, datasets = controlled_datasets(args.profile, base, chapter_parameters("binding_generalization", args.profile))
    by_size: dict[int, list] = {}
    for r, d in zip(runs, datasets):
        by_size.setdefault(r["config"]["n_values"] ** r["config"]["n_concepts"], []).append(d)
    fig9, _ = figure9_runs(args.profile, base["models"])
    print(f"profile {args.profile!r}: models per size {dict((k, len(v)) for k, v in sorted(by_size.items()))}; "
          f"figure 9: {len(fig9)} models; {args.threads} thread(s); CPU time")
    for budget in args.budget or [""]:
        P = chapter_parameters("controlled_complexity", args.profile,
                               **{k: yaml.safe_load(v) for k, v in (s.split("=", 1) for s in budget.split())})
        report(P, by_size, len(fig9), args.steps)


def report(P: dict, by_size: dict[int, list], n_figure9: int, steps: int) -> None:
    """The table of one budget (``P``: the chapter's parameters) and its sum."""
    print(f"\nsteps {P['steps']:,} (cap), batch {P['batch_size']}, patience {P['patience']}, fractions "
          f"{P['fractions']}, widths {P['widths']}, lrs {P['lrs']}")
    print(f"{'sweep':30} {'|O|':>6} {'approx.':>7} {'stacks':>6} {'ms/step':>8} {'appr.-steps/s':>13} "
          f"{'s/eval':>7} {'CPU-min/model':>13} {'models':>6} {'CPU-min':>8}")
    total = 0.0
    for size, ds in sorted(by_size.items()):
        for name, jobs in chapter_jobs(ds[:1], P):
            figure9 = name.startswith("figure 9")
            if figure9 and size != max(by_size):
                continue  # figure 9's models all fit on data capped at max_objects: timed once, for all
            job = jobs[0]
            specs = sweep_specs(job["data"], job["fractions"], job["families"], job["widths"], job["protocol"].lrs,
                                product_init=job.get("product_init", "one_plus"))
            t = time_stacks(job["data"], specs, job["protocol"], steps=steps)
            n, minutes = (n_figure9 if figure9 else len(ds)), t["at_cap_cpu"] / 60
            total += minutes * n
            print(f"{name:30} {'all' if figure9 else f'{size:,}':>6} {t['approximators']:>7} {t['stacks']:>6} "
                  f"{1e3 * t['per_step_cpu']:>8.1f} {t['approximators'] / t['per_step_cpu']:>13.0f} "
                  f"{t['per_evaluation_cpu']:>7.2f} {minutes:>13.1f} {n:>6} {minutes * n:>8.1f}")
    print(f"§5.3 + §5.4 at the cap: {total:.0f} CPU-min ({total / 60:.1f} CPU-h)")


if __name__ == "__main__":
    main()
