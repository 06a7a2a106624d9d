"""Whether a smaller step cap changes §5.3's width numbers, read on validation objects only
(printed, not asserted).

For each budget (05_3's parameters over the profile's, as in ``bench_approximator_budget.py``)
the chapter's MLP width sweep of every model it reads is computed or read from the store
(:func:`bindcore.analysis.complexity.stored_sweeps`, so a budget already run costs nothing).
Printed per model: at the largest fraction, the validation-object recognition of width
``SMALL_WIDTH`` (the paper's smallest) and of the best width (the learning rate of each chosen
on the validation MSE, as the chapter chooses it), the share the small-MLP claim reads, the
gap from that width to the best, and where the approximators stopped. Then the median share
and gap per object-space size. A budget whose numbers tell the same story as the paper's cap
on every model may serve a cheaper profile; held-out objects are not read here, so the
choice cannot lean on them.

Usage: ``python benchmarks/approximator_cap.py --budget 'steps=2000 batch_size=4096 patience=4
fractions=[0.8]' --budget 'steps=10000 ...' [--profile quick] [--models 0 1 2]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from bindcore.analysis.approximators import select_best  # noqa: E402
from bindcore.analysis.complexity import stored_sweeps  # noqa: E402
from bindcore.experiments import controlled_datasets, controlled_jobs  # noqa: E402
from bindcore.parameters import chapter_parameters  # noqa: E402
from bindcore.runtime import set_threads  # noqa: E402
from bindcore.verdicts.approximators import SMALL_SHARE, SMALL_WIDTH  # noqa: E402


def validation_widths(records: list[dict]) -> dict[int, float]:
    """Width -> validation-object recognition of the MLPs at the largest fraction (one learning
    rate per width, chosen on the validation MSE)."""
    top = max(r["fraction"] for r in records)
    return {r["width"]: r["selected_val_object"] for r in select_best(records)
            if r["family"] == "mlp" and r["fraction"] == top}


def stops(records: list[dict]) -> str:
    """How the chosen approximators stopped: ``plateau``/``cap`` counts (fixed budget: ``-``)."""
    kinds = [r.get("stop") for r in select_best(records)]
    return "-" if not any(kinds) else ", ".join(f"{kinds.count(k)} {k}" for k in ("plateau", "cap") if k in kinds)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--budget", action="append", default=[], metavar="'NAME=VALUE ...'",
                    help="05_3 parameters (YAML values) over the profile's; repeat for each budget to compare")
    ap.add_argument("--models", type=int, nargs="*", default=None, help="indices of the chapter's models (default: all)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    set_threads(args.threads)
    base = chapter_parameters("controlled_complexity", args.profile)
    runs, datasets = controlled_datasets(args.profile, base, chapter_parameters("binding_generalization", args.profile))
    picked = range(len(datasets)) if args.models is None else args.models
    runs, datasets = [runs[i] for i in picked], [datasets[i] for i in picked]
    sizes = [r["config"]["n_values"] ** r["config"]["n_concepts"] for r in runs]
    print(f"validation objects only; the small-MLP claim reads width {SMALL_WIDTH}'s share of the best "
          f"(shown at >= {SMALL_SHARE:g})")
    for budget in args.budget or [""]:
        P = chapter_parameters("controlled_complexity", args.profile,
                               **{k: yaml.safe_load(v) for k, v in (s.split("=", 1) for s in budget.split())})
        print(f"\nsteps {P['steps']:,} (cap with patience {P['patience']}), batch {P['batch_size']}, "
              f"fractions {P['fractions']}, widths {P['widths']}, lrs {P['lrs']}")
        print(f"{'model':45} {SMALL_WIDTH:>6} {'best':>6} {'share':>6} {'gap':>6}  stopped")
        shares: dict[int, list[float]] = {}
        gaps: dict[int, list[float]] = {}
        for size, data, records in zip(sizes, datasets,
                                       stored_sweeps(controlled_jobs(datasets, P, ["mlp"], P["widths"]))):
            widths = validation_widths(records)
            small, best = widths.get(SMALL_WIDTH, math.nan), max(widths.values())
            share = small / best if best > 0 else math.nan  # no width recognises anything: no share
            shares.setdefault(size, []).append(share)
            gaps.setdefault(size, []).append(best - small)
            print(f"{data.name:45} {small:>6.3f} {best:>6.3f} {share:>6.3f} {best - small:>+6.3f}  "
                  f"{stops(records)}")
        for size in sorted(shares):
            print(f"|O| = {size:,}: median share {statistics.median(shares[size]):.3f}, "
                  f"median gap {statistics.median(gaps[size]):+.3f} ({len(shares[size])} models)")


if __name__ == "__main__":
    main()
