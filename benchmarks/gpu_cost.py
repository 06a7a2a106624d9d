"""GPU time of each chapter's training work per profile, estimated from counted FLOPs
without a GPU; printed (not asserted).

Two GPUs: a Colab T4 (16 GB; no native bf16, so ``precision="auto"`` trains in fp32,
8.1 TFLOP/s fp32 peak) and an H100/H200-class GPU (bf16 autocast, 990 TFLOP/s bf16
dense peak; 67 TFLOP/s fp32 without tensor cores).

What is counted, per chapter and profile (:data:`bindcore.runtime.PROFILES`):

* Training runs: the configs the chapter trains, from the library: §5.2
  (``05_2``) ``generalization_configs`` + ``ablation_configs`` (when ``ablations``);
  appendix E ``level_configs`` of the pixel recipe; the §5.2 models that 04_1, 04_2,
  05_3 and 05_4 use (``generalizing_runs``: the largest coverage of each size) are
  shared through the result store and counted once, under §5.2 (a chapter whose
  ``controlled_steps`` / ``controlled_eval_scenes`` give other configs trains those
  itself and they count there). Configs are deduplicated.
* FLOPs of a training step: ``torch.utils.flop_counter.FlopCounterMode`` around one
  ``optimizer_step`` of the config on the CPU (the concept loss on), one count per
  distinct step (``bindcore.sweep.SAME_STEP_FIELDS``: fields said to leave a step's cost
  alone) and, for token scenes, per coverage: a token step encodes each distinct scene
  of its batch once and draws its candidates from the training objects, so at small
  object spaces its cost grows with coverage (paper recipe, V = 10: 41 GFLOP at
  coverage 0.1, 138 at 0.9), which ``SAME_STEP_FIELDS`` does not say.
  FlopCounterMode counts matmuls, convolutions and attention (the CPU attention kernels
  through the formulas torch uses for the GPU ones, which it would otherwise miss), not
  elementwise ops, layer norms or Adam (memory-bound; left to the per-step overhead).
* Evaluations: one ``evaluate`` counted the same way (at 128 and 256 scenes per object
  count, extrapolated linearly to the config's ``eval_scenes``), times the run's
  evaluations (every ``eval_every`` steps and the final one). ``evaluate`` runs outside
  autocast: fp32 on both GPUs. Rendering (pixels) and the bag-of-concepts baseline are
  not counted.
* GPU time = training FLOPs / (peak x utilisation) + evaluation FLOPs / (fp32 peak x
  utilisation) + steps x a per-step launch overhead (small models are launch-bound).
* Approximators (05_1, 05_3, 05_4, e_pixel_encoders): every stacked fit the chapter
  runs (families x widths x learning rates x data fractions, per binding data set;
  05_4 also the product-init comparison and figure 9's global product on each stored
  §5.2 run's own split), FLOPs per step from the library's own count
  (``bindcore.analysis.approximators.step_work``: 6 x rows x the parameters a row
  touches, about 6 x active parameters x batch) over the stacks that
  ``plan_stacks`` forms (padding included), rows = the batch or, with batch None, every
  fitting scene (0.8 x n_train^2 ordered pairs, n_train = fraction x objects), plus a
  prediction of every scene at each evaluation (every steps/10: 11). The trainer has
  no autocast: fp32 on both GPUs. Time adds, per step of each sweep, the launch overhead
  and a host cost per minibatch-sampled model (its CPU generator and copy to the
  GPU). Trees (XGBoost, random forests) run on the CPU and are not counted; nor are
  the image approximators of 05_1 (run only with the authors' folders).
* CPU column: work the library does on the CPU even on a GPU machine, in TFLOPs: the
  binding data of controlled and pixel models (every ordered pair of the sub-grid
  embedded; ``controlled_binding_data`` is called with ``device="cpu"`` unless a
  chapter's ``device`` is set, always for pixels) and the approximators' probe
  metrics (NumPy/torch on the CPU at every evaluation of every model). Linear probes,
  caption and image embeddings of pretrained encoders, trees and renders are not counted.

Every assumption is a named constant below and is printed. Usage:
``python benchmarks/gpu_cost.py [--profiles quick paper] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch.utils.flop_counter import (  # noqa: E402
    FlopCounterMode,
    sdpa_backward_flop_count,
    sdpa_flop_count,
)

import bindcore  # noqa: E402,F401  (its OpenMP policy, before torch loads)
from bindcore.analysis.approximators import FAMILIES, plan_stacks, step_work  # noqa: E402
from bindcore.analysis.complexity import protocol_for  # noqa: E402
from bindcore.analysis.generalization import ablation_configs, generalization_configs  # noqa: E402
from bindcore.controlled.pixels import level_configs  # noqa: E402
from bindcore.controlled.training import (  # noqa: E402
    build_model,
    concept_weight,
    evaluate,
    make_eval_set,
    make_optimizer,
    optimizer_step,
)
from bindcore.experiments.complexity import PRETRAINED_FAMILIES  # noqa: E402
from bindcore.experiments.generalization import chapter_recipe, generalizing_configs  # noqa: E402
from bindcore.experiments.pixels import pixel_approximator_params  # noqa: E402
from bindcore.io import atomic_write_json  # noqa: E402
from bindcore.parameters import chapter_parameters  # noqa: E402
from bindcore.runtime import PROFILES  # noqa: E402
from bindcore.sweep import step_key  # noqa: E402


# ---------------------------------------------------------------------------------
# assumptions
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gpu:
    name: str
    train_precision: str  # what precision="auto" trains in there
    train_peak: float  # FLOP/s at that precision (dense)
    train_util: float  # fraction of it small models reach
    fp32_peak: float  # FLOP/s in fp32 (evaluation, approximators: no autocast)
    fp32_util: float
    step_overhead: float  # seconds added per optimiser step (kernel launches, Python: small models are launch-bound)


GPUS = (
    Gpu("T4", "fp32", train_peak=8.1e12, train_util=0.35, fp32_peak=8.1e12, fp32_util=0.35, step_overhead=4e-3),
    Gpu("H100", "bf16", train_peak=990e12, train_util=0.25, fp32_peak=67e12, fp32_util=0.35, step_overhead=1.5e-3),
)
APPROX_HOST_PER_MODEL = 20e-6  # s per step per minibatch-sampled approximator (CPU randint + copy)
EVAL_PROBE_SCENES = 128  # evaluate() is counted at this and twice this many scenes, then extrapolated
APPROX_VAL_FRACTION = 0.2  # of a split's training scenes carved off for validation (make_specs)
TEXT_ENCODER_DIMS = (512, 512)  # §5.1's two text encoders (CLIP text towers; MiniLM, if used, has 384)
MLP_DEFAULT_WIDTH = 1024  # bindcore.analysis.approximators.default_width

# book order; 05_2 is costed first so that the §5.2 models shared through the store count there
CHAPTERS = ("04_1_geometry", "04_2_component_attribution", "05_1_pretrained_binding_complexity",
            "05_2_binding_generalization", "05_3_binding_function_complexity", "05_4_functional_form",
            "e_pixel_encoders")
NOT_COSTED = "03_formalisation, c1_datasets, d_additional, reproduction_report (no training, no approximators)"


# ---------------------------------------------------------------------------------
# FLOPs of training steps, evaluations and scene embeddings (counted on the CPU)
# ---------------------------------------------------------------------------------
# the CPU's attention kernels, which FlopCounterMode does not know (it counts the GPU ones);
# the same formulas as torch's for those
_ATTENTION = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:
        lambda q, k, v, *_, out_shape=None, **__: sdpa_flop_count(q, k, v),
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward:
        lambda g, q, k, v, *_, out_shape=None, **__: sdpa_backward_flop_count(g, q, k, v),
}


def count_flops(fn) -> int:
    with FlopCounterMode(display=False, custom_mapping=_ATTENTION) as counter:
        fn()
    return counter.get_total_flops()


def step_flops(cfg) -> int:
    """FLOPs of one optimiser step of ``cfg`` (as :func:`~bindcore.controlled.training.seconds_per_step`
    builds it, without the warm-up), the concept loss on."""
    dev = torch.device("cpu")
    train_objects = cfg.split.train
    allowed = torch.arange(cfg.space.n_objects) if cfg.heldout_as_negatives else train_objects
    model = build_model(cfg, dev)
    opt = make_optimizer(cfg, model)
    w_c = concept_weight(cfg, 0, None) or cfg.concept_loss_weight
    return count_flops(lambda: optimizer_step(cfg, model, opt, train_objects, allowed, 0, dev, None, w_c))


def eval_flops(cfg) -> float:
    """FLOPs of one ``evaluate`` of ``cfg``: counted at EVAL_PROBE_SCENES and twice that
    scenes per object count, linear in the number of scenes beyond (the object and
    concept query embeddings are the fixed part)."""
    def at(n: int) -> int:
        c = cfg.with_(eval_scenes=n)
        model = build_model(c, torch.device("cpu"))
        es = make_eval_set(c, c.split, torch.device("cpu"))
        return count_flops(lambda: evaluate(c, model, es))

    if cfg.eval_scenes <= EVAL_PROBE_SCENES:
        return float(at(cfg.eval_scenes))
    a, b = at(EVAL_PROBE_SCENES), at(2 * EVAL_PROBE_SCENES)
    return a + (b - a) * (cfg.eval_scenes - EVAL_PROBE_SCENES) / EVAL_PROBE_SCENES


def scene_flops(cfg, n: int = 64) -> float:
    """FLOPs of embedding one two-object scene with the scene tower (binding data)."""
    model = build_model(cfg, torch.device("cpu"))
    ids = torch.arange(min(n, cfg.space.n_objects))
    pairs = torch.cartesian_prod(ids, ids)[:n]
    if cfg.max_objects > 2:
        pairs = torch.nn.functional.pad(pairs, (0, cfg.max_objects - 2), value=-1)
    with torch.no_grad():
        return count_flops(lambda: cfg.embed_eval_scenes(model, pairs)) / len(pairs)


class Costs:
    """Counted FLOPs: an evaluation and a scene embedding per distinct step
    (``step_key``), a training step also per coverage for token scenes (a token step
    encodes each distinct scene of the batch once and draws candidates from the training
    objects, so at small object spaces its cost grows with coverage; pixel scenes are
    rendered and encoded one by one, and their step is counted once)."""

    def __init__(self) -> None:
        self.cache: dict[tuple, dict[str, Any]] = {}

    def of(self, cfg) -> dict[str, Any]:
        key = step_key(cfg)
        if key not in self.cache:
            t = time.perf_counter()
            self.cache[key] = {"what": describe(cfg), "eval": eval_flops(cfg), "scene": scene_flops(cfg),
                               "step_by_coverage": {}, "count_seconds": time.perf_counter() - t}
        entry = self.cache[key]
        steps = entry["step_by_coverage"]
        coverage = "any" if getattr(cfg, "scene_input", "tokens") == "pixels" else str(cfg.coverage)
        if coverage not in steps:
            t = time.perf_counter()
            steps[coverage] = float(step_flops(cfg))
            entry["count_seconds"] += time.perf_counter() - t
        return {**entry, "step": steps[coverage]}


def describe(cfg) -> str:
    pixels = f", pixels {cfg.image_size}px {cfg.scene_layers}L" if getattr(cfg, "scene_input", "") == "pixels" else ""
    return (f"C={cfg.n_concepts} V={cfg.n_values} d={cfg.d_model} {cfg.n_layers}L batch {cfg.batch_size} "
            f"eval {cfg.eval_scenes}{pixels}")


def n_evaluations(cfg) -> int:
    """Evaluations of a run: every ``eval_every`` steps before the last, and the final one."""
    return ((cfg.steps - 1) // cfg.eval_every if cfg.eval_every else 0) + 1


# ---------------------------------------------------------------------------------
# approximator sweeps
# ---------------------------------------------------------------------------------
def grid_side(cfg, max_objects: int) -> int:
    return min(cfg.n_values, math.ceil(max_objects ** (1 / cfg.n_concepts) - 1e-9))  # probes.sub_grid_objects' side


def sweep_cost(values: list[int], dim: int, train_counts: list[int], families, widths, protocol) -> dict[str, float]:
    """One stacked fit (``train_models``): every family x width x lr at every split with
    ``train_counts`` training objects, on the ordered pairs of ``prod(values)`` objects
    with ``dim``-dim embeddings. FLOPs (training + predictions at each evaluation), the
    number of models, of those sampled per step, and the CPU FLOPs of their metrics."""
    n_slots, n_objects = 2 * len(values), math.prod(values)
    scenes = n_objects ** 2
    specs, cpu = [], 0.0
    for n_train in train_counts:
        n_fit = max(1, int((1 - APPROX_VAL_FRACTION) * n_train ** 2))
        heldout = (n_objects - n_train) ** 2
        for fam in families:
            w = widths.get(fam) if isinstance(widths, dict) else widths
            ws = [0] if fam == "additive" else (w if w is not None else [MLP_DEFAULT_WIDTH if fam == "mlp" else dim])
            for width in ws:
                for _ in protocol.lrs:
                    specs.append(SimpleNamespace(family=fam, width=int(width), fit_index=range(n_fit)))
                    cpu += 2.0 * dim * (n_objects + sum(values)) * (scenes + heldout)
    evals = len(set(range(0, protocol.steps + 1, protocol.eval_every)) | {protocol.steps})
    step = predict = 0.0
    for stack in plan_stacks(specs, protocol.batch_size, dim, n_slots):
        width = max(specs[i].width for i in stack)
        rows = max(len(specs[i].fit_index) if protocol.batch_size is None else
                   min(protocol.batch_size, len(specs[i].fit_index)) for i in stack)
        step += len(stack) * step_work(width, rows, dim, n_slots)
        predict += len(stack) * step_work(width, scenes, dim, n_slots) / 3  # forward only
    sampled = sum(protocol.batch_size is not None and len(s.fit_index) > protocol.batch_size for s in specs)
    return {"fits": len(specs), "flops": protocol.steps * step + evals * predict, "steps": protocol.steps,
            "sampled": sampled, "cpu_flops": evals * cpu}


def fraction_counts(n_objects: int, fractions) -> list[int]:
    return [int(n_objects * f) for f in fractions]


# ---------------------------------------------------------------------------------
# the chapters' work
# ---------------------------------------------------------------------------------
@dataclass
class Work:
    configs: list  # training runs first trained here
    sweeps: list  # sweep_cost dicts
    cpu_flops: float = 0.0  # binding data embedded on the CPU
    note: str = ""


def binding_data_flops(costs: Costs, configs: list, max_objects: int, renders: int = 1) -> float:
    return sum(costs.of(c)["scene"] * grid_side(c, max_objects) ** (2 * c.n_concepts) * renders for c in configs)


def controlled_sweeps(configs: list, max_objects: int, fractions, families, widths, protocol) -> list:
    out = []
    for c in configs:
        values = [grid_side(c, max_objects)] * c.n_concepts
        out.append(sweep_cost(values, c.d_out, fraction_counts(math.prod(values), fractions), families, widths,
                              protocol))
    return out


def chapter_work(chapter: str, profile: str, costs: Costs, token_runs: list) -> Work:
    """What ``chapter`` runs on ``profile``; ``token_runs``: the §5.2 runs the store holds
    so far (figure 9 of 05_4 fits one approximator per stored run)."""
    if chapter == "05_2_binding_generalization":
        p = chapter_parameters("binding_generalization", profile)
        base = chapter_recipe(profile, p["steps"], p.get("eval_scenes"))
        configs = generalization_configs(base, p)
        if p["ablations"]:
            configs += [cfg for _, cfg in ablation_configs(base, p)]
        return Work(configs, [])
    if chapter in ("04_1_geometry", "04_2_component_attribution"):
        p = chapter_parameters("geometry", profile)
        if not p.get("controlled", True):
            return Work([], [], note="controlled=False")
        configs = generalizing_configs(profile, p, chapter_parameters("binding_generalization", profile))
        return Work(configs, [], binding_data_flops(costs, configs, p["controlled_objects"]), "§5.2 models")
    if chapter == "05_1_pretrained_binding_complexity":
        p = chapter_parameters("pretrained_complexity", profile)
        protocol = protocol_for(p)
        families = [f for f in PRETRAINED_FAMILIES if f in FAMILIES]
        sweeps = [sweep_cost(list(p["text_space"]), dim, fraction_counts(math.prod(p["text_space"]), p["fractions"]),
                             families, {"mlp": p["widths"]}, protocol) for dim in TEXT_ENCODER_DIMS]
        return Work([], sweeps, note="trees, probes: CPU")
    if chapter in ("05_3_binding_function_complexity", "05_4_functional_form"):
        p = chapter_parameters("controlled_complexity", profile)
        protocol = protocol_for(p)
        configs = generalizing_configs(profile, p, chapter_parameters("binding_generalization", profile))
        cpu = binding_data_flops(costs, configs, p["max_objects"])
        if chapter.startswith("05_3"):
            return Work(configs, controlled_sweeps(configs, p["max_objects"], p["fractions"], ["mlp"], p["widths"],
                                                   protocol), cpu, "§5.2 models")
        products = ["global_product", "sum_global_product", "within_object_product", "sum_within_object_product"]
        sweeps = controlled_sweeps(configs, p["max_objects"], p["fractions"], FAMILIES, {"mlp": [max(p["widths"])]},
                                   protocol)
        for _ in ("one_plus", "normal"):  # the product-init comparison, largest fraction
            sweeps += controlled_sweeps(configs, p["max_objects"], [max(p["fractions"])], products, None, protocol)
        for c in token_runs:  # figure 9: the global product on each stored run's own split
            values = [grid_side(c, p["max_objects"])] * c.n_concepts
            n_train = round(c.coverage * math.prod(values))
            sweeps.append(sweep_cost(values, c.d_out, [n_train], ["global_product"], None, protocol))
            cpu += costs.of(c)["scene"] * math.prod(values) ** 2
        return Work(configs, sweeps, cpu, f"§5.2 models; figure 9 over {len(token_runs)} stored runs")
    if chapter == "e_pixel_encoders":
        p = chapter_parameters("pixel_encoders", profile)
        base = chapter_recipe(profile, p["steps"], p.get("eval_scenes"), pixels=True)
        configs = level_configs(base, p)
        top = [base.with_(level=lv, coverage=max(p["coverages"]), seed=p["seeds"][0]) for lv in p["levels"]]
        protocol = protocol_for(pixel_approximator_params(p))
        sweeps = controlled_sweeps(top, p["max_objects"], p["fractions"], ["mlp"], p["widths"], protocol)
        sweeps += controlled_sweeps(top, p["max_objects"], p["fractions"], FAMILIES, {"mlp": [max(p["widths"])]},
                                    protocol)
        return Work(configs, sweeps, binding_data_flops(costs, top, p["max_objects"], p["renders"]))
    raise ValueError(f"unknown chapter {chapter!r}")


# ---------------------------------------------------------------------------------
# rows of the table
# ---------------------------------------------------------------------------------
def training_seconds(train: float, evals: float, steps: int, gpu: Gpu) -> float:
    return train / (gpu.train_peak * gpu.train_util) + evals / (gpu.fp32_peak * gpu.fp32_util) + steps * gpu.step_overhead


def approximator_seconds(sweep: dict[str, float], gpu: Gpu) -> float:
    return (sweep["flops"] / (gpu.fp32_peak * gpu.fp32_util)
            + sweep["steps"] * (gpu.step_overhead + sweep["sampled"] * APPROX_HOST_PER_MODEL))


def profile_rows(profile: str, costs: Costs) -> list[dict[str, Any]]:
    claimed: set[str] = set()
    token_runs: list = []
    rows: dict[str, dict[str, Any]] = {}
    for chapter in ("05_2_binding_generalization", *[c for c in CHAPTERS if not c.startswith("05_2")]):
        work = chapter_work(chapter, profile, costs, token_runs)
        new = []
        for c in work.configs:
            key = json.dumps(c.to_dict(), sort_keys=True)
            if key not in claimed:
                claimed.add(key)
                new.append(c)
                if getattr(c, "scene_input", "tokens") != "pixels":
                    token_runs.append(c)
        train = sum(costs.of(c)["step"] * c.steps for c in new)
        evals = sum(costs.of(c)["eval"] * n_evaluations(c) for c in new)
        steps = sum(c.steps for c in new)
        row: dict[str, Any] = {"chapter": chapter, "profile": profile, "runs": len(new), "steps": steps,
                               "train_tflop": (train + evals) / 1e12, "eval_tflop": evals / 1e12,
                               "fits": int(sum(s["fits"] for s in work.sweeps)),
                               "approx_tflop": sum(s["flops"] for s in work.sweeps) / 1e12,
                               "cpu_tflop": (work.cpu_flops + sum(s["cpu_flops"] for s in work.sweeps)) / 1e12,
                               "note": work.note}
        for gpu in GPUS:
            row[f"train_{gpu.name}_h"] = training_seconds(train, evals, steps, gpu) / 3600
            row[f"approx_{gpu.name}_h"] = sum(approximator_seconds(s, gpu) for s in work.sweeps) / 3600
            row[f"total_{gpu.name}_h"] = row[f"train_{gpu.name}_h"] + row[f"approx_{gpu.name}_h"]
        rows[chapter] = row
    out = [rows[c] for c in CHAPTERS]
    total = {"chapter": "total", "profile": profile, "note": ""}
    for k, v in out[0].items():
        if isinstance(v, (int, float)) and k not in total:
            total[k] = sum(r[k] for r in out)
    return out + [total]


# ---------------------------------------------------------------------------------
# printing
# ---------------------------------------------------------------------------------
# (row key, header, width, format: "s" text, "d" count, "g" quantity)
COLUMNS = [("chapter", "chapter", 34, "s"), ("profile", "profile", 7, "s"), ("runs", "runs", 5, "d"),
           ("steps", "steps", 10, "d"), ("train_tflop", "train TF", 9, "g"), ("train_T4_h", "T4 h", 8, "g"),
           ("train_H100_h", "H100 h", 8, "g"), ("fits", "fits", 6, "d"), ("approx_tflop", "apx TF", 8, "g"),
           ("approx_T4_h", "T4 h", 8, "g"), ("approx_H100_h", "H100 h", 8, "g"),
           ("total_T4_h", "tot T4 h", 9, "g"), ("total_H100_h", "tot H100", 9, "g"),
           ("cpu_tflop", "CPU TF", 8, "g")]


def quantity(v: float) -> str:
    """Three significant digits, thousands in full, tiny values in exponent form."""
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) >= 0.01 else f"{v:.1e}"


def print_header() -> None:
    print("GPU time estimated from counted FLOPs (no GPU used); assumptions:")
    for g in GPUS:
        print(f"  {g.name}: training in {g.train_precision} at {g.train_peak / 1e12:g} TFLOP/s peak x {g.train_util:g} "
              f"utilisation; evaluation and approximators in fp32 at {g.fp32_peak / 1e12:g} TFLOP/s x "
              f"{g.fp32_util:g}; + {g.step_overhead * 1e3:g} ms launch overhead per optimiser step")
    print(f"  approximators: + {APPROX_HOST_PER_MODEL * 1e6:g} us host time per step per minibatch-sampled model; "
          f"fitting scenes {1 - APPROX_VAL_FRACTION:g} x n_train^2; §5.1 text encoders of {TEXT_ENCODER_DIMS} dims")
    print("  training FLOPs: FlopCounterMode over one optimizer_step per distinct step (matmuls, convolutions, "
          "attention; not elementwise ops or Adam), times steps; + evaluate() (at "
          f"{EVAL_PROBE_SCENES} and {2 * EVAL_PROBE_SCENES} scenes, extrapolated) x evaluations; rendering not counted")
    print("  approximator FLOPs: step_work (about 6 x active parameters x rows) over plan_stacks' stacks, padding "
          "included, x steps; + a prediction of every scene at each evaluation; trees not counted")
    print("  §5.2 models of 04_1/04_2/05_3/05_4 are counted once, under 05_2; CPU TF: binding-data embeddings and "
          "approximator metrics, which the library runs on the CPU (not in the GPU hours)")
    print(f"  not costed: {NOT_COSTED}")


def print_table(rows: list[dict[str, Any]]) -> None:
    def cell(value: Any, width: int, kind: str) -> str:
        if kind == "s":
            return f"{value:<{width}}"
        return f"{value:>{width},d}" if kind == "d" else f"{quantity(value):>{width}}"

    print()
    print(" ".join(f"{h:<{w}}" if kind == "s" else f"{h:>{w}}" for _, h, w, kind in COLUMNS))
    for r in rows:
        line = " ".join(cell(r[k], w, kind) for k, _, w, kind in COLUMNS)
        print(line + (f"  {r['note']}" if r.get("note") else ""))


def print_step_costs(costs: Costs) -> None:
    print("\ncounted FLOPs (GFLOP) per distinct model: a training step (range over coverages), one evaluation, "
          "one scene embedding")
    for c in costs.cache.values():
        lo, hi = min(c["step_by_coverage"].values()) / 1e9, max(c["step_by_coverage"].values()) / 1e9
        step = f"{lo:.3g}" if lo == hi else f"{lo:.3g}-{hi:.3g}"
        print(f"  {c['what']:<54s} step {step:>13s}  eval {c['eval'] / 1e9:8.3g}  scene {c['scene'] / 1e9:8.3g}"
              f"  (counted in {c['count_seconds']:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", nargs="+", default=list(PROFILES), choices=list(PROFILES))
    ap.add_argument("--json", type=Path, default=None, help="also write the table as JSON here")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print_header()
    costs = Costs()
    rows = [r for profile in args.profiles for r in profile_rows(profile, costs)]
    print_table(rows)
    print_step_costs(costs)
    print(f"\n{time.perf_counter() - t0:.0f} s, torch threads {torch.get_num_threads()}")
    if args.json:
        atomic_write_json(args.json, {"gpus": [asdict(g) for g in GPUS], "approx_host_per_model_s": APPROX_HOST_PER_MODEL,
                               "eval_probe_scenes": EVAL_PROBE_SCENES, "text_encoder_dims": TEXT_ENCODER_DIMS,
                               "rows": rows, "step_costs": list(costs.cache.values())})
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
