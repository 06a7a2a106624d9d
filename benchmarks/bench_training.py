"""Training throughput and time-to-accuracy, printed (not asserted).

1. The paper recipe's training step (C=2, V=10, O_max=2, batch 256, d_model 128,
   4 layers, FFN 2048, d_out 64), bindcore against a release-style step
   (``release_style.py``) at the same sizes, measured side by side in one process:
   milliseconds per step, steps/s, scenes/s, and the data-pipeline share.
2. The recipe's own step (default: the scale recipe at |O| = 2,500, coverage 0.5;
   ``--recipe``, ``--values``, ``--coverage`` change it) in each precision, interleaved:
   whether bf16 autocast pays at the sizes the CPU sweeps train (it does at the paper's).
3. Where the recipe step's time goes (``--profile-steps N``): ``torch.profiler`` over N
   steps (bf16 on a GPU, else fp32), the ops that take most host time and most device
   time, and how many times the host waited for the device (synchronisations).
4. Time to accuracy (``--time-to-accuracy``): one run of that recipe, the step, wall
   time and CPU time at which two-object recognition and swap pairs of *validation*
   objects first reach 0.9 (the test objects are not read).

Usage: ``python benchmarks/bench_training.py [--steps 20] [--threads N] [--device cuda]
[--precisions fp32 bf16] [--time-to-accuracy]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from release_style import ReleaseStyleStep, parameter_count  # noqa: E402

import bindcore  # noqa: E402,F401  (its OpenMP policy, before torch loads)
from bindcore.controlled.recipes import SCALE_STEPS, recipe  # noqa: E402
from bindcore.controlled.scenes import sample_scenes  # noqa: E402
from bindcore.controlled.search import search_view  # noqa: E402
from bindcore.controlled.training import (  # noqa: E402
    autocast_dtype,
    build_model,
    make_optimizer,
    optimizer_step,
    run_training,
    step_generator,
    train_loss,
)
from bindcore.runtime import resolve_device, set_threads  # noqa: E402

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


def bench_steps(steps: int, device: torch.device, precisions: list[str]) -> None:
    """Both implementations at each precision, interleaved, speedups against the
    release-style step in fp32 (the released trainer has no mixed precision)."""
    cfg = recipe("paper", **SIZES)
    split = cfg.split
    model = build_model(cfg, device)
    opt = make_optimizer(cfg, model)
    ref = ReleaseStyleStep(2, 10, 2, split.train.tolist(), cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff,
                           cfg.d_out, cfg.lr, cfg.batch_size, device=str(device))

    def ours_data(i):
        gen = step_generator(cfg, i, device)
        return gen, sample_scenes(split.train, cfg.batch_size, cfg.max_objects, gen)

    def ours(amp):
        def step(i):
            gen, scenes = ours_data(i)
            with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
                loss, _ = train_loss(cfg, model, scenes, split.train.to(device), gen, cfg.concept_loss_weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        return step

    def release(amp):
        def step(i):
            with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
                ref.step()
        return step

    dtypes = {"fp32": None, "bf16": torch.bfloat16}
    runs = {(impl, p): fn(dtypes[p]) for p in precisions for impl, fn in (("release-style", release),
                                                                          ("bindcore", ours))}
    for fn in runs.values():  # warm up
        for i in range(3):
            fn(i)
    times: dict[tuple[str, str], float] = {}
    for _ in range(3):  # interleave repetitions so that both share any drift of the machine
        for key, fn in runs.items():
            times[key] = min(times.get(key, float("inf")), time_it(fn, steps, device))
    data = {"release-style": time_it(lambda i: ref.data(), max(5, steps // 3), device),
            "bindcore": time_it(ours_data, steps, device)}
    base = times[("release-style", "fp32")] if ("release-style", "fp32") in times else None
    print(f"paper recipe step: C=2 V=10 O_max=2 batch {cfg.batch_size}, d_model {cfg.d_model}, {cfg.n_layers} layers, "
          f"FFN {cfg.d_ff}, d_out {cfg.d_out}; {parameter_count(model.scene):,} parameters per encoder")
    print(f"device {device}, torch threads {torch.get_num_threads()}, {steps} timed steps x 3 repetitions (best)")
    print(f"{'implementation':16s}{'precision':>10s}{'ms/step':>10s}{'steps/s':>9s}{'scenes/s':>10s}"
          f"{'data ms':>9s}{'vs release fp32':>17s}")
    for (impl, p), t in times.items():
        rel = f"{base / t:.2f}x" if base else "-"
        print(f"{impl:16s}{p:>10s}{t * 1e3:10.1f}{1 / t:9.2f}{cfg.batch_size / t:10.0f}{data[impl] * 1e3:9.2f}{rel:>17s}")
    for p in precisions:
        print(f"same precision ({p}): bindcore is {times[('release-style', p)] / times[('bindcore', p)]:.2f}x "
              "faster than the release-style step")


def bench_recipe_step(steps: int, device: torch.device, precisions: list[str], profile: str = "scale",
                      n_concepts: int = 2, n_values: int = 50, coverage: float = 0.5) -> None:
    """The recipe's own optimiser step (:func:`optimizer_step`: its scenes, candidates,
    near misses and loss) in each precision, interleaved over three repetitions (best)."""
    cfg = recipe(profile, n_concepts=n_concepts, n_values=n_values, coverage=coverage)
    train_objects, allowed = cfg.split.train.to(device), cfg.split.train.to(device)
    dtypes = {"fp32": None, "bf16": torch.bfloat16}
    models = {p: build_model(cfg, device) for p in precisions}
    opts = {p: make_optimizer(cfg, m) for p, m in models.items()}

    def step_fn(p):
        return lambda i: optimizer_step(cfg, models[p], opts[p], train_objects, allowed, i, device, dtypes[p],
                                        cfg.concept_loss_weight)

    fns = {p: step_fn(p) for p in precisions}
    for fn in fns.values():  # warm up
        for i in range(3):
            fn(i)
    times: dict[str, float] = {}
    for _ in range(3):
        for p, fn in fns.items():
            times[p] = min(times.get(p, float("inf")), time_it(fn, steps, device))
    print(f"{profile} recipe step: C={n_concepts} V={n_values} coverage {coverage:g}, batch {cfg.batch_size}, "
          f"d_model {cfg.d_model}, {cfg.n_layers} layers, FFN {cfg.d_ff}; device {device}, "
          f"{torch.get_num_threads()} thread(s), {steps} timed steps x 3 repetitions (best)")
    for p, t in times.items():
        rel = f"; fp32/{p} = {times['fp32'] / t:.2f}x" if "fp32" in times and p != "fp32" else ""
        print(f"  {p}: {t * 1e3:.1f} ms/step{rel}")


def profile_recipe_step(steps: int, device: torch.device, profile: str = "scale", n_concepts: int = 2,
                        n_values: int = 50, coverage: float = 0.5, rows: int = 12) -> None:
    """``torch.profiler`` over ``steps`` recipe steps (after three warm-up steps): the
    ops with the most self host time and the most self device time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    cfg = recipe(profile, n_concepts=n_concepts, n_values=n_values, coverage=coverage)
    train_objects = cfg.split.train.to(device)
    amp = autocast_dtype(cfg, device)  # what the recipe trains in there (bf16 on a GPU with it, else fp32)
    model = build_model(cfg, device)
    opt = make_optimizer(cfg, model)

    def step(i):
        optimizer_step(cfg, model, opt, train_objects, train_objects, i, device, amp, cfg.concept_loss_weight)

    for i in range(3):
        step(i)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sync(device)
    t = time.perf_counter()
    with torch_profile(activities=activities) as prof:
        for i in range(steps):
            step(3 + i)
        sync(device)
    wall = (time.perf_counter() - t) / steps
    events = prof.key_averages()
    print(f"{profile} recipe step profiled: {steps} steps, {wall * 1e3:.1f} ms/step under the profiler, {device}, "
          f"{'bf16' if amp else 'fp32'}; {sum(e.count for e in events) / steps:.0f} ops a step")
    print(events.table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=48))
    if device.type == "cuda":
        print(events.table(sort_by="self_device_time_total", row_limit=rows, max_name_column_width=48))
        syncs = sum(e.count for e in events if "Synchronize" in e.key or e.key == "aten::_local_scalar_dense")
        print(f"host waits for the device (synchronisations and scalar reads): {syncs / steps:.1f} a step")


def bench_time_to_accuracy(device: torch.device, target: float, profile: str = "scale", n_concepts: int = 2,
                           n_values: int = 50, coverage: float = 0.5) -> None:
    """Train one run of ``profile``'s recipe (steps: the scale plan's for this size) and
    print the step, wall time and CPU time at which two-object recognition (strict) and
    swap pairs of validation objects first reach ``target``."""
    steps = SCALE_STEPS.get((n_concepts, n_values)) if profile == "scale" else None
    cfg = recipe(profile, n_concepts=n_concepts, n_values=n_values, coverage=coverage, checkpoint_every=0,
                 **({"steps": steps} if steps else {}))
    t0, c0 = time.perf_counter(), time.process_time()
    reached: dict[str, tuple[int, float, float]] = {}

    def on_eval(step, m):
        m = search_view(m)  # validation and training objects only
        for key in ("val_object_2", "val_swap_pair"):
            if key not in reached and m.get(key, 0.0) >= target:
                reached[key] = (step, time.perf_counter() - t0, time.process_time() - c0)
        print(f"  step {step:6d}  {time.perf_counter() - t0:7.1f} s  validation 2-object {m['val_object_2']:.3f}  "
              f"swap pairs {m.get('val_swap_pair', float('nan')):.3f}  concepts {m['val_concept_2']:.3f}", flush=True)

    out = run_training(cfg, device=device, progress=False, on_eval=on_eval)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{profile} recipe, |O| = {n_values ** n_concepts:,} (C={n_concepts} V={n_values}) coverage {coverage:g}, "
          f"{cfg.steps} steps, {torch.get_num_threads()} thread(s), {device}: final validation 2-object "
          f"{out.metrics['val_object_2']:.3f}, swap pairs {out.metrics.get('val_swap_pair', float('nan')):.3f} "
          f"(bag ceiling {out.baseline.get('ceiling_val_object_2', float('nan')):.3f}) after {total / 60:.1f} min "
          f"wall, {cpu / 60:.1f} CPU-min")
    for key, what in (("val_object_2", "validation 2-object (strict)"), ("val_swap_pair", "validation swap pairs")):
        if key in reached:
            step, wall, c = reached[key]
            print(f"{what} reached {target} at step {step}: {wall / 60:.1f} min wall, {c / 60:.1f} CPU-min")
        else:
            print(f"{what} did not reach {target} within the recipe's {cfg.steps} steps")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20, help="timed steps per repetition")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"],
                    help="precisions to time (bf16 = autocast; fast on CPUs with AMX and on GPUs)")
    ap.add_argument("--time-to-accuracy", action="store_true",
                    help="also train one run to its target (default: the scale recipe at |O| = 2,500, coverage 0.5)")
    ap.add_argument("--target", type=float, default=0.9)
    ap.add_argument("--recipe", default="scale", help="recipe profile of the recipe-step and time-to-accuracy runs")
    ap.add_argument("--values", type=int, default=50, help="V of the recipe-step and time-to-accuracy runs (C = 2)")
    ap.add_argument("--coverage", type=float, default=0.5, help="their coverage")
    ap.add_argument("--recipe-only", action="store_true", help="skip the paper-size step (1.)")
    ap.add_argument("--profile-steps", type=int, default=0, help="profile this many recipe steps (3.)")
    args = ap.parse_args()
    set_threads(args.threads)
    device = resolve_device(args.device)
    if not args.recipe_only:
        bench_steps(args.steps, device, args.precisions)
    bench_recipe_step(args.steps, device, args.precisions, args.recipe, 2, args.values, args.coverage)
    if args.profile_steps:
        profile_recipe_step(args.profile_steps, device, args.recipe, 2, args.values, args.coverage)
    if args.time_to_accuracy:
        bench_time_to_accuracy(device, args.target, args.recipe, 2, args.values, args.coverage)


if __name__ == "__main__":
    main()
