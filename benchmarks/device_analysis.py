"""§5.3 and §5.4's approximator sweeps on the scale models that bind, on a lent GPU.

    OUT=/path python benchmarks/device_analysis.py            # on a CUDA machine
    python benchmarks/device_analysis.py --device cpu --set steps=2 --out /tmp/x   # the same path, tiny

The chapters' own computations with ``models = "scale"`` and a profile's other
parameters (default ``quick``): the binding data of every scale model that binds
(:func:`bindcore.experiments.generalization.binding_scale_runs`), then, stage by stage,
05_3's MLP sweep, 05_4's families, 05_4's two product initialisations, figure 9's global
product on each model's own split. Records go to a result store (``--results``); after
each stage its ``approximators-1`` records are packed into ``$OUT/approximators.tar``
(publish them with ``tar xf`` into a store, then ``bindcore publish``), so that a run cut
off by its time limit still returns the stages it finished. A record's key is its binding
data's origin (the run and its objects), not the arrays, so the CPU build finds these.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from device_sweep import pack  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "device-out")))
    p.add_argument("--results", type=Path, default=ROOT / "device-results")
    p.add_argument("--device", default="cuda")
    p.add_argument("--profile", default="quick")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="chapter parameters to change")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ["BINDCORE_RESULTS"] = str(args.results)

    import json

    from bindcore.analysis.approximators import FAMILIES
    from bindcore.analysis.complexity import protocol_for
    from bindcore.experiments.complexity import (
        controlled_datasets,
        controlled_sweeps,
        figure9_runs,
        figure9_table,
    )
    from bindcore.parameters import chapter_parameters

    given = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    P = chapter_parameters("controlled_complexity", args.profile, models="scale", **given)
    p52 = chapter_parameters("binding_generalization", args.profile)
    t0 = time.perf_counter()
    runs, datasets = controlled_datasets(args.profile, P, p52, device="cpu")  # (its GPU path: a note of this stop)
    print(f"{len(datasets)} scale models that bind: {[d.name for d in datasets]} ({time.perf_counter() - t0:.0f} s)",
          flush=True)
    top_only = {**P, "fractions": [max(P["fractions"])]}
    products = ["global_product", "sum_global_product", "within_object_product", "sum_within_object_product"]
    stages = [
        ("05_3 MLP widths", lambda: controlled_sweeps(datasets, P, ["mlp"], widths=P["widths"], device=args.device)),
        ("05_4 families", lambda: controlled_sweeps(datasets, P, list(FAMILIES), widths={"mlp": [max(P["widths"])]},
                                                    device=args.device)),
        *[(f"05_4 products, {init}", lambda init=init: controlled_sweeps(datasets, top_only, products, widths=None,
                                                                          device=args.device, product_init=init))
          for init in ("one_plus", "normal")],
        ("figure 9", lambda: figure9_table(protocol_for(P), P["max_objects"], figure9_runs(args.profile, P["models"])[0],
                                           device=args.device)),
    ]
    for name, stage in stages:
        t = time.perf_counter()
        stage()
        pack(args.results / "approximators-1", args.out / "approximators.tar")
        print(f"{name}: {time.perf_counter() - t:.0f} s", flush=True)
    print(f"all stages in {time.perf_counter() - t0:.0f} s on {args.device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
