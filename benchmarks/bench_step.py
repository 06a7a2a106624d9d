"""How close a training step comes to the CPU's matrix-product throughput, before and
after the packed CPU path of the fast encoder, printed side by side (not asserted).

1. Single-thread fp32 matrix products: GFLOP/s of ``torch.mm`` (the BLAS behind
   F.linear, MKL in the locked torch) and of oneDNN's inner product (what the fast
   encoder's linear layers run on the CPU), at a few square sizes and at the shape of
   the feed-forward block's first product in the scale recipe (4608 x 64 x 256: 512
   scenes of 9 tokens, d_model 64, FFN 256).
2. The scale recipe's step (:func:`bindcore.controlled.objective.optimizer_step` at
   |O| = 2,500, coverage 0.5: batch 512, d_model 64, 2 layers, FFN 256, near-miss
   negatives): GFLOP per step (``torch.utils.flop_counter.FlopCounterMode``; each
   version counts its own work: the old one computes at PAD positions, the new one at
   a few padding rows), ms per step, GFLOP/s and its share of each matrix product's.
3. The paper recipe's step (C=2, V=10, O_max=2, batch 256, d_model 128, 4 layers, FFN
   2048; ``bench_training.py``'s sizes) against the release-style step
   (``release_style.py``) in fp32 and bf16 autocast.
4. Where the working tree's fp32 steps spend their time (``torch.profiler``, self CPU
   time): the matrix products (linear layers, ``mm``, ``bmm``) against everything else
   (layer norms, GELU, softmax, copies, the optimiser, Python), with the products' own
   GFLOP/s. Two bounds follow: the share of the matrix-product rate a step would reach
   if everything else took no time, and the most the paper step could gain on the
   release-style step while it does the same products.

"Before" is the encoder of another commit (``--before``, default: the last commit
before the packed path), read with ``git show`` into a temporary module; "after" is
the working tree's. Both train from the same initial weights on the same batches.
Variants alternate step by step blocks over several rounds; each time is the median
of the thread's CPU time per step (another process on the machine stretches wall time,
shown beside it, far more than CPU time).

Usage: ``python benchmarks/bench_step.py [--threads 1] [--steps 5] [--rounds 6]
[--before f3449ad] [--skip-paper]``; pin it to one core (``taskset -c 0``) on a busy machine.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from release_style import ReleaseStyleStep  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from bindcore.controlled import models  # noqa: E402
from bindcore.controlled.recipes import recipe  # noqa: E402
from bindcore.controlled.training import build_model, make_optimizer, optimizer_step  # noqa: E402

# the last commit whose encoder padded every batch (SDPA attention, F.linear)
BEFORE = "f3449ad"
PAPER_SIZES = dict(n_concepts=2, n_values=10, max_objects=2, coverage=0.8, batch_size=256, d_model=128, n_heads=4,
                   n_layers=4, d_ff=2048, d_out=64)  # bench_training.py's
SQUARE = (256, 512, 1024, 2048)
FFN_SHAPE = (4608, 64, 256)


def old_models(rev: str):
    """bindcore/controlled/models.py at ``rev`` as a module (None if git cannot show it)."""
    try:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:bindcore/controlled/models.py"],
                              check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"(no 'before' column: git show {rev} failed: {err})")
        return None
    path = Path(tempfile.mkdtemp()) / "models_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("bindcore_models_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def interleaved(fns: dict[str, Callable[[int], object]], steps: int, rounds: int, first: int = 0
                ) -> dict[str, tuple[float, float]]:
    """Each fn(i) over ``rounds`` rounds of ``steps`` calls, the variants in turn within a
    round: per variant (median CPU seconds, median wall seconds) per call."""
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    wall: dict[str, list[float]] = {k: [] for k in fns}
    i = first
    for _ in range(rounds):
        for name, fn in fns.items():
            for j in range(steps):
                t, c = time.perf_counter(), time.thread_time()
                fn(i + j)
                cpu[name].append(time.thread_time() - c)
                wall[name].append(time.perf_counter() - t)
        i += steps
    return {k: (statistics.median(cpu[k]), statistics.median(wall[k])) for k in fns}


def bench_matmul(rounds: int) -> dict[tuple[int, int, int], dict[str, float]]:
    shapes = [(n, n, n) for n in SQUARE] + [FFN_SHAPE]
    onednn = models._onednn_linear_works()
    out = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        bt = b.t().contiguous()  # oneDNN's weight: [out, in]
        fns = {"torch.mm": lambda i, a=a, b=b: torch.mm(a, b)}
        if onednn:
            fns["oneDNN"] = lambda i, a=a, bt=bt: models._onednn(a, bt, None)
        reps = max(3, int(2e9 / (2 * m * k * n)))  # about 2 GFLOP per repetition block
        for fn in fns.values():
            fn(0)
        times = interleaved(fns, reps, rounds)
        out[(m, k, n)] = {name: 2 * m * k * n / cpu / 1e9 for name, (cpu, _) in times.items()}
    return out


def step_flops(cfg, model, opt, step: int, use_f_linear: bool) -> float:
    """GFLOP of one optimizer step (FlopCounterMode counts aten ops; oneDNN's linear op
    has no formula, so the fast path is counted on F.linear, the same products)."""
    saved = models.use_onednn
    if use_f_linear:
        models.use_onednn = lambda x: False
    try:
        with FlopCounterMode(display=False) as counter:
            optimizer_step(cfg, model, opt, cfg.split.train, cfg.split.train, step, torch.device("cpu"), None,
                           cfg.concept_loss_weight)
    finally:
        models.use_onednn = saved
    return counter.get_total_flops() / 1e9


def versions(cfg, before_module) -> dict[str, torch.nn.Module]:
    after = build_model(cfg, torch.device("cpu"))
    out = {}
    if before_module is not None:
        before = before_module.DualEncoder(cfg.encoder_config(), tau_init=cfg.tau_init)
        before.load_state_dict(after.state_dict())
        out["before"] = before
    out["after"] = after
    return out


def bench_scale(before_module, steps: int, rounds: int, matmul: dict, rev: str) -> None:
    cfg = recipe("scale", n_values=50, coverage=0.5)
    train = cfg.split.train
    dev = torch.device("cpu")
    runs = {name: (m, make_optimizer(cfg, m)) for name, m in versions(cfg, before_module).items()}

    def stepper(name):
        model, opt = runs[name]
        return lambda i: optimizer_step(cfg, model, opt, train, train, i, dev, None, cfg.concept_loss_weight)

    fns = {name: stepper(name) for name in runs}
    warm = 10  # oneDNN builds a kernel per new row count: the first steps meet most of them
    for fn in fns.values():
        for i in range(warm):
            fn(i)
    flops = {name: step_flops(cfg, *runs[name], warm, name == "after") for name in runs}
    times = interleaved(fns, steps, rounds, first=warm + 1)
    ffn = matmul[FFN_SHAPE]
    print(f"\nscale recipe step: C=2 V=50 coverage 0.5 (|O| = 2,500), batch {cfg.batch_size}, d_model {cfg.d_model}, "
          f"{cfg.n_layers} layers, FFN {cfg.d_ff}, near misses {cfg.near_miss_negatives_per_positive} per positive; "
          f"fp32, {torch.get_num_threads()} thread(s); {rounds} rounds x {steps} steps, interleaved (median)")
    share_cols = "".join(f"{'/ ' + k + ' FFN':>17s}" for k in ffn)
    print(f"  {'version':22s}{'GFLOP':>7s}{'ms CPU':>9s}{'ms wall':>9s}{'GFLOP/s':>9s}{share_cols}")
    for name, (cpu, wall) in times.items():
        label = f"{name} ({rev})" if name == "before" else f"{name} (working tree)"
        rate = flops[name] / cpu
        shares = "".join(f"{rate / g:17.0%}" for g in ffn.values())
        print(f"  {label:22s}{flops[name]:7.2f}{cpu * 1e3:9.1f}{wall * 1e3:9.1f}{rate:9.1f}{shares}")
    if "before" in times:
        print(f"  after / before: {times['before'][0] / times['after'][0]:.2f}x less CPU time per step "
              f"({times['before'][1] / times['after'][1]:.2f}x wall)")


def bench_paper(before_module, steps: int, rounds: int) -> float:
    cfg = recipe("paper", **PAPER_SIZES)
    train = cfg.split.train
    dev = torch.device("cpu")
    amps = {"fp32": None, "bf16": torch.bfloat16}
    fns: dict[str, Callable[[int], object]] = {}
    for prec, amp in amps.items():
        release = ReleaseStyleStep(2, 10, 2, train.tolist(), cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff,
                                   cfg.d_out, cfg.lr, cfg.batch_size)

        def release_step(i, release=release, amp=amp):
            with torch.autocast("cpu", dtype=amp, enabled=amp is not None):
                release.step()

        fns[f"release-style {prec}"] = release_step
        for name, model in versions(cfg, before_module).items():
            opt = make_optimizer(cfg, model)
            fns[f"{name} {prec}"] = (lambda i, model=model, opt=opt, amp=amp: optimizer_step(
                cfg, model, opt, train, train, i, dev, amp, cfg.concept_loss_weight))
    for fn in fns.values():
        for i in range(3):
            fn(i)
    times = interleaved(fns, steps, rounds, first=3)
    print(f"\npaper recipe step: C=2 V=10 O_max=2 batch {cfg.batch_size}, d_model {cfg.d_model}, {cfg.n_layers} layers, "
          f"FFN {cfg.d_ff}; {torch.get_num_threads()} thread(s); {rounds} rounds x {steps} steps, interleaved (median)")
    print(f"  {'implementation':22s}{'ms CPU':>9s}{'ms wall':>9s}{'release-style / this (CPU)':>29s}")
    for key, (cpu, wall) in times.items():
        prec = key.rsplit(" ", 1)[1]
        base = times[f"release-style {prec}"][0]
        print(f"  {key:22s}{cpu * 1e3:9.1f}{wall * 1e3:9.1f}{base / cpu:28.2f}x")
    return times["release-style fp32"][0] * 1e3


PRODUCT_OPS = ("mkldnn::_linear_pointwise", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def time_split(step: Callable[[int], object], first: int, steps: int) -> tuple[float, float]:
    """(seconds in matrix products, seconds in all) per step: self CPU time under torch.profiler
    (its own overhead inflates both, the rest more than the products)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(first, first + steps):
            step(i)
    events = prof.key_averages()
    products = sum(e.self_cpu_time_total for e in events if e.key in PRODUCT_OPS)
    total = sum(e.self_cpu_time_total for e in events)
    return products / steps / 1e6, total / steps / 1e6


def bench_split(paper_release_ms: float | None, ffn_rate: float) -> None:
    """Section 4: where the fp32 steps of the working tree spend their time."""
    dev = torch.device("cpu")
    print("\nwhere the working tree's fp32 step spends its time (torch.profiler, self CPU time, 3 steps)")
    print(f"  {'step':10s}{'products ms':>13s}{'rest ms':>9s}{'products':>10s}{'GFLOP/s':>9s}"
          f"{'share if rest = 0':>19s}")
    rows = [("scale", recipe("scale", n_values=50, coverage=0.5)), ("paper", recipe("paper", **PAPER_SIZES))]
    for name, cfg in rows:
        model = build_model(cfg, dev)
        opt = make_optimizer(cfg, model)
        train = cfg.split.train

        def step(i, cfg=cfg, model=model, opt=opt, train=train):
            optimizer_step(cfg, model, opt, train, train, i, dev, None, cfg.concept_loss_weight)

        for i in range(10):
            step(i)
        gflop = step_flops(cfg, model, opt, 10, use_f_linear=True)
        products, total = time_split(step, 11, 3)
        rate = gflop / products
        print(f"  {name:10s}{products * 1e3:13.1f}{(total - products) * 1e3:9.1f}{products / total:10.0%}"
              f"{rate:9.1f}{rate / ffn_rate:19.0%}")
        if name == "paper" and paper_release_ms:
            print(f"  paper step: the release-style fp32 step ({paper_release_ms:.0f} ms) over this step's matrix "
                  f"products alone: at most {paper_release_ms / (products * 1e3):.2f}x with the same products")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5, help="steps per variant per round (scale step)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--paper-steps", type=int, default=2)
    ap.add_argument("--paper-rounds", type=int, default=3)
    ap.add_argument("--before", default=BEFORE, help="git revision of the 'before' encoder ('' for none)")
    ap.add_argument("--skip-paper", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    before = old_models(args.before) if args.before else None
    print(f"torch {torch.__version__}, {args.threads} thread(s), OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, "
          f"oneDNN linear {'on' if models._onednn_linear_works() else 'unavailable'}")
    matmul = bench_matmul(args.rounds)
    names = list(next(iter(matmul.values())))
    print(f"\nsingle-thread fp32 matrix product, GFLOP/s (median over {args.rounds} rounds)")
    print(f"  {'M x K x N':22s}" + "".join(f"{n:>12s}" for n in names))
    for (m, k, n), rates in matmul.items():
        label = f"{m} x {k} x {n}" + (" (FFN)" if (m, k, n) == FFN_SHAPE else "")
        print(f"  {label:22s}" + "".join(f"{rates[c]:12.1f}" for c in names))
    bench_scale(before, args.steps, args.rounds, matmul, args.before)
    release_ms = None if args.skip_paper else bench_paper(before, args.paper_steps, args.paper_rounds)
    bench_split(release_ms, matmul[FFN_SHAPE]["torch.mm"])


if __name__ == "__main__":
    main()
