"""Training throughput and time-to-accuracy, printed (not asserted).

1. The paper recipe's training step (C=2, V=10, O_max=2, batch 256, d_model 128,
   4 layers, FFN 2048, d_out 64), bindcore against a release-style step
   (``release_style.py``) at the same sizes, measured side by side in one process:
   milliseconds per step, steps/s, scenes/s, and the data-pipeline share.
2. Time to accuracy of the quick recipe: wall time until held-out two-object
   recognition first reaches 0.9 at C=2, V=10, coverage 0.8 (``--time-to-accuracy``).

Usage: ``python benchmarks/bench_training.py [--steps 30] [--threads N] [--device cuda]
[--time-to-accuracy] [--bf16]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from release_style import ReleaseStyleStep, parameter_count  # noqa: E402

from bindcore.recipes import recipe  # noqa: E402
from bindcore.scenes import sample_scenes  # noqa: E402
from bindcore.training import (  # noqa: E402
    autocast_dtype,
    build_model,
    make_optimizer,
    run_training,
    step_generator,
    train_loss,
)

SIZES = dict(n_concepts=2, n_values=10, max_objects=2, coverage=0.8, batch_size=256, d_model=128, n_heads=4,
             n_layers=4, d_ff=2048, d_out=64)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_it(fn, n: int, device: torch.device) -> float:
    sync(device)
    t = time.perf_counter()
    for i in range(n):
        fn(i)
    sync(device)
    return (time.perf_counter() - t) / n


def bench_steps(steps: int, device: torch.device, bf16: bool) -> None:
    cfg = recipe("paper", **SIZES, precision="bf16" if bf16 else "fp32")
    split = cfg.split
    model = build_model(cfg, device)
    opt = make_optimizer(cfg, model)
    amp = autocast_dtype(cfg, device)

    def ours_data(i):
        gen = step_generator(cfg, i, device)
        return gen, sample_scenes(split.train, cfg.batch_size, cfg.max_objects, gen)

    def ours(i):
        gen, scenes = ours_data(i)
        with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
            loss, _ = train_loss(cfg, model, scenes, split.train.to(device), gen, cfg.concept_loss_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    ref = ReleaseStyleStep(2, 10, 2, split.train.tolist(), cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff,
                           cfg.d_out, cfg.lr, cfg.batch_size, device=str(device))

    def release(i):
        with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
            ref.step()

    for fn in (ours, release):  # warm up
        for i in range(3):
            fn(i)
    t_ours, t_rel = [], []
    for rep in range(3):  # interleave to share drift
        t_ours.append(time_it(ours, steps, device))
        t_rel.append(time_it(release, steps, device))
    t_ours, t_rel = min(t_ours), min(t_rel)
    d_ours = time_it(ours_data, steps, device)
    d_rel = time_it(lambda i: ref.data(), max(5, steps // 3), device)
    print(f"paper recipe step: C=2 V=10 O_max=2 batch {cfg.batch_size}, d_model {cfg.d_model}, {cfg.n_layers} layers, "
          f"FFN {cfg.d_ff}, d_out {cfg.d_out}; {parameter_count(model.scene):,} parameters per encoder")
    print(f"device {device}, torch threads {torch.get_num_threads()}, precision {'bf16 autocast' if amp else 'fp32'}")
    print(f"{'':24s}{'ms/step':>10s}{'steps/s':>10s}{'scenes/s':>11s}{'data ms':>10s}")
    for name, t, d in (("release-style", t_rel, d_rel), ("bindcore", t_ours, d_ours)):
        print(f"{name:24s}{t * 1e3:10.1f}{1 / t:10.2f}{cfg.batch_size / t:11.0f}{d * 1e3:10.2f}")
    print(f"speedup (release-style / bindcore): {t_rel / t_ours:.2f}x")


def bench_time_to_accuracy(device: torch.device, target: float) -> None:
    cfg = recipe("quick", n_values=10, coverage=0.8, eval_every=250, checkpoint_every=0)
    t0 = time.perf_counter()
    reached: list[tuple[int, float]] = []

    def on_eval(step, m):
        if not reached and m["test_object_2"] >= target:
            reached.append((step, time.perf_counter() - t0))
        print(f"  step {step:6d}  {time.perf_counter() - t0:7.1f} s  held-out 2-object {m['test_object_2']:.3f}  "
              f"concepts {m['test_concept_2']:.3f}", flush=True)

    out = run_training(cfg, device=device, progress=False, on_eval=on_eval)
    total = time.perf_counter() - t0
    print(f"quick recipe, C=2 V=10 coverage 0.8, {cfg.steps} steps, {torch.get_num_threads()} thread(s), {device}: "
          f"final held-out 2-object {out.metrics['test_object_2']:.3f} "
          f"(bag of concepts {out.baseline['test_object_2']:.3f}) after {total / 60:.1f} min")
    if reached:
        print(f"reached {target} at step {reached[0][0]} after {reached[0][1] / 60:.1f} min")
    else:
        print(f"did not reach {target} within the recipe's {cfg.steps} steps")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30, help="timed steps per repetition")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast for both implementations")
    ap.add_argument("--time-to-accuracy", action="store_true", help="also run the quick recipe to its target")
    ap.add_argument("--target", type=float, default=0.9)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    bench_steps(args.steps, device, args.bf16)
    if args.time_to_accuracy:
        bench_time_to_accuracy(device, args.target)


if __name__ == "__main__":
    main()
