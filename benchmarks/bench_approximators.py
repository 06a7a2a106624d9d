"""Stacked approximator training against fitting the same models one by one, printed
(not asserted).

The MLP width sweep of §5.1/§5.3 on a synthetic CLEVR-like binding function (8 colours
x 3 shapes = 24 objects, all 552 ordered pairs of distinct objects, d = 512 like CLIP
ViT-B), release protocol (full batch, Adam lr 1e-2), widths x data fractions, one
process, 2 CPU threads by default:

1. the whole sweep: ``train_models(..., stacked=True)`` (all models in one loop, one
   fused Adam step per iteration) against ``stacked=False`` (the same models, the same
   code, one at a time: identical numbers up to float rounding) and against a
   release-style loop (one ``nn.Module`` per model: d-dim slot embeddings ->
   ``Linear(2C d, w)`` -> ReLU -> ``Linear(w, d)``, ``torch.optim.Adam``; a different
   parameterisation of the same function class, shown for context);
2. per width: the fractions of one width stacked against one by one.

Every variant evaluates every ``--eval-every`` steps (functional binding with the frozen
probes), as the protocol does. Usage: ``python benchmarks/bench_approximators.py
[--steps 100] [--widths 64 128 ...] [--fractions 0.3 0.6 0.9] [--dim 512]
[--threads 2] [--no-release-style] [--no-per-width]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bindcore  # noqa: E402,F401  (its OpenMP policy, before torch loads)
from bindcore.analysis import approximators as A  # noqa: E402
from bindcore.analysis.probes import functional_binding, object_level_split  # noqa: E402
from bindcore.runtime import set_threads  # noqa: E402


def release_style_fit(data, spec, steps: int, eval_every: int) -> float:
    """One model as the released script fits it (reference-spec §8.3-8.4); seconds."""
    t0 = time.perf_counter()
    torch.manual_seed(spec.seed)
    n_slots, d = 2 * data.n_concepts, data.dim
    sizes = A.slot_sizes(data.values_per_concept)
    tables = torch.nn.ModuleList(torch.nn.Embedding(v, d) for v in sizes)
    mlp = torch.nn.Sequential(torch.nn.Linear(n_slots * d, spec.width), torch.nn.ReLU(),
                              torch.nn.Linear(spec.width, d))
    params = list(tables.parameters()) + list(mlp.parameters())
    opt = torch.optim.Adam(params, lr=spec.lr)
    codes = torch.as_tensor(data.slot_codes())
    y = torch.as_tensor(data.embeddings)

    def forward(c):
        return mlp(torch.cat([t(c[:, s]) for s, t in enumerate(tables)], 1))

    fit = torch.as_tensor(spec.fit_index)
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            with torch.no_grad():
                functional_binding(data, forward(codes).numpy(), spec.split)
        if step == steps:
            break
        loss = torch.nn.functional.mse_loss(forward(codes[fit]), y[fit])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048, 4096])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.3, 0.6, 0.9])
    ap.add_argument("--values", type=int, nargs="+", default=[8, 3])
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-release-style", action="store_true")
    ap.add_argument("--no-per-width", action="store_true")
    args = ap.parse_args()
    set_threads(args.threads)

    data = A.synthetic_binding_data(args.values, args.dim, "additive", noise=0.1, seed=0)
    specs = []
    for f in args.fractions:
        split = object_level_split(data, f, seed=0)
        specs += A.make_specs(data, split, "mlp", widths=args.widths, fraction=f)
    n_fit = sorted({len(s.fit_index) for s in specs})
    print(f"data: {len(data.embeddings)} scenes, d={data.dim}, values {args.values}; fitting scenes per fraction "
          f"{n_fit}; {len(specs)} MLPs (widths {args.widths} x fractions {args.fractions}); release protocol, "
          f"{args.steps} steps, evaluation every {args.eval_every}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    kw = dict(steps=args.steps, eval_every=args.eval_every, progress=False)
    A.train_models(data, specs[:1], "release", steps=3, eval_every=3, progress=False)  # warm-up

    t = time.perf_counter()
    A.train_models(data, specs, "release", stacked=False, **kw)
    t_one = time.perf_counter() - t
    t = time.perf_counter()
    recs = A.train_models(data, specs, "release", stacked=True, **kw)
    t_stack = time.perf_counter() - t
    stacks = sorted({(r["padded_width"], r["padded_rows"], r["stack_size"]) for r in recs})
    print("\nwhole sweep")
    print(f"  one by one (same code, stacked=False): {t_one:8.2f} s  ({1e3 * t_one / args.steps:.1f} ms/step)")
    print(f"  stacked                               : {t_stack:8.2f} s  ({1e3 * t_stack / args.steps:.1f} ms/step)"
          f"  in {len({(w, b) for w, b, _ in stacks})} stacks")
    print(f"  speedup stacked vs one by one         : {t_one / t_stack:8.2f} x")
    if not args.no_release_style:
        t_rel = sum(release_style_fit(data, s, args.steps, args.eval_every) for s in specs)
        print(f"  release-style loop, one by one        : {t_rel:8.2f} s  -> stacked is {t_rel / t_stack:.2f} x faster "
              "(includes the lighter first layer, not only stacking)")

    if not args.no_per_width:
        print("\nper width (the fractions of one width: stacked vs one by one)")
        print(f"  {'width':>6} {'one by one s':>13} {'stacked s':>10} {'speedup':>8} {'MFLOP/step/model':>17}")
        for w in args.widths:
            sub = [s for s in specs if s.width == w]
            t = time.perf_counter()
            A.train_models(data, sub, "release", stacked=False, **kw)
            a = time.perf_counter() - t
            t = time.perf_counter()
            A.train_models(data, sub, "release", stacked=True, **kw)
            b = time.perf_counter() - t
            work = np.mean([A.step_work(w, len(s.fit_index), data.dim, 2 * data.n_concepts) for s in sub]) / 1e6
            print(f"  {w:>6} {a:>13.2f} {b:>10.2f} {a / b:>7.2f}x {work:>17.1f}")


if __name__ == "__main__":
    main()
