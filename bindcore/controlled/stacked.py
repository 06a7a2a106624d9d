"""Several token-scene training runs of one model size as one stack, on a CUDA GPU: the one model
mapped over stacked parameters (``torch.func.functional_call`` under ``torch.func.vmap``), one fused
AdamW step for all, each run equal to its lone run up to float rounding and stored as its own record.
Runs may differ only in :data:`PER_RUN_FIELDS`.

Where it pays: the GPU step of these small models is bound by the host (kernel launches, not
arithmetic), and a stack launches about as many kernels as one run (H200, scale recipe at
|O| = 2,500: 16.4 ms a lone fp32 step, 23.0 ms bf16; a stack of six in bf16, 9.4 ms a run-step with
its evaluations, by the hand-written batched forward this map replaced; ``benchmarks/device-logs/``;
``benchmarks/bench_stacked.py --device cuda`` measures this one). On a CPU each run costs its own arithmetic: the former
CPU stack (each run's lone loss, one optimizer) measured 1.01 and 0.995 of the same runs one by one for
stacks of 3 and 4 of the scale recipe and 0.93-0.96 at the quick point, and this map 1.3-1.5 (torch has no
vmap rule for the CPU's attention kernel; ``benchmarks/bench_stacked.py``, one thread), so there the runs
of a stack train one by one."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap

from bindcore.io import config_hash
from bindcore.runtime import resolve_device
from bindcore.store import ResultStore

from .models import cosine_logits
from .objective import concept_query_set, curriculum_objects, object_candidates, step_generator
from .runs import clear_checkpoints, finished_run, train
from .scenes import object_labels, sample_scenes
from .training import STORE_KIND, Run, TrainConfig, concept_weight, make_optimizer, train_runs

# fields that may differ within a stack: they change a run's data, not a parameter's shape or the optimiser's
PER_RUN_FIELDS = frozenset({
    "seed", "split_seed", "coverage",
    "concept_queries", "object_queries", "concept_loss_weight", "concept_loss_start", "concept_loss_trigger",
    "swaps_per_scene", "random_negatives_per_positive", "near_miss_negatives_per_positive",
    "max_concept_queries", "max_object_queries", "candidates", "heldout_as_negatives",
    "tau_init", "logit_scale_cap", "curriculum_values", "curriculum_frac",
    "eval_every", "eval_scenes",
})
# the devices where :func:`train_stacked` trains a stack as one (see the module docstring)
STACKING_DEVICES = ("cuda",)
TASKS = ("concept_loss", "object_loss")


def stackable(cfgs: list[TrainConfig]) -> None:
    """A ``ValueError`` naming the field unless ``cfgs`` are plain :class:`TrainConfig` (not a subclass)
    agreeing on every field but :data:`PER_RUN_FIELDS`."""
    if not cfgs:
        raise ValueError("a stack needs at least one config")
    for cfg in cfgs:
        if cfg.grad_clip > 0:
            raise ValueError(f"grad_clip = {cfg.grad_clip:g}: a stack's step does not clip each run's gradient on "
                             "its own; train it alone with bindcore.controlled.training.train")
        if type(cfg) is not TrainConfig:
            raise ValueError(f"stacked training reads token scenes only (TrainConfig); got {type(cfg).__name__}: "
                             f"train it alone with bindcore.controlled.training.train")
    for f in fields(TrainConfig):
        if f.name in PER_RUN_FIELDS:
            continue
        values = [getattr(cfg, f.name) for cfg in cfgs]
        if any(v != values[0] for v in values):
            raise ValueError(f"TrainConfig.{f.name} differs between the configs of a stack ({values}): runs of "
                             f"one stack must share every field but {sorted(PER_RUN_FIELDS)}")


def stack_key(cfg: TrainConfig) -> tuple:
    """Configs with one key can share a stack (:func:`stackable`)."""
    return tuple((k, v) for k, v in sorted(cfg.to_dict().items()) if k not in PER_RUN_FIELDS)


def stacks(cfgs: list[TrainConfig], size: int) -> list[list[TrainConfig]]:
    """``cfgs`` grouped into stacks of at most ``size`` stackable configs, in first-seen order."""
    if size < 1:
        raise ValueError(f"stack size must be >= 1, got {size}")
    groups: dict[tuple, list[TrainConfig]] = {}
    for cfg in cfgs:
        groups.setdefault(stack_key(cfg), []).append(cfg)
    return [g[i:i + size] for g in groups.values() for i in range(0, len(g), size)]


def masked_soft_target_loss(logits: torch.Tensor, labels: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """:func:`~bindcore.controlled.objective.soft_target_loss` of one run, its candidates padded: logits and
    labels ``[B, K]``, ``valid`` ``[K]`` (False: padding, out of the softmax); no branch on values (vmap)."""
    y = (labels & valid).float()
    n_pos = y.sum(1)
    active = (n_pos > 0).float()
    logp = F.log_softmax(logits.float().masked_fill(~valid, float("-inf")), dim=1).masked_fill(~valid, 0.0)
    per_scene = -(y / n_pos.clamp(min=1.0)[:, None] * logp).sum(1)
    return (per_scene * active).sum() / active.sum().clamp(min=1.0)


class StackedRuns:
    """The parameters and optimizer of a stack of runs (:func:`bindcore.controlled.training.train_runs`
    trains it): each parameter of the runs' models as one leaf ``[R, ...]``, the optimizers' states likewise."""

    def __init__(self, runs: list[Run]) -> None:
        stackable([r.cfg for r in runs])
        self.model = runs[0].model  # the one model, its parameters replaced by each run's in functional_call
        named = [dict(r.model.named_parameters()) for r in runs]
        self.params = {name: torch.stack([n[name].detach() for n in named]).requires_grad_(True) for name in named[0]}
        self.opt = make_optimizer(runs[0].cfg, self.params.values(), lead=1)
        for name, p in self.params.items():  # a resumed run's optimizer state
            lone = [r.opt.state.get(n[name]) for r, n in zip(runs, named)]
            if all(lone):
                self.opt.state[p] = {"step": lone[0]["step"].clone(), **{
                    k: torch.stack([s[k] for s in lone]) for k in ("exp_avg", "exp_avg_sq")}}

    @torch.no_grad()
    def copy_to(self, runs: list[Run]) -> None:
        """Each run's slices into its own model and optimizer (for evaluations and checkpoints)."""
        for r, run in enumerate(runs):
            for name, p in run.model.named_parameters():
                p.copy_(self.params[name][r])
                st = self.opt.state.get(self.params[name])
                if st:
                    run.opt.state[p] = {"step": st["step"].clone(), "exp_avg": st["exp_avg"][r].clone(),
                                        "exp_avg_sq": st["exp_avg_sq"][r].clone()}
            for g, sg in zip(run.opt.param_groups, self.opt.param_groups):
                g["lr"], g["initial_lr"] = sg["lr"], sg["initial_lr"]

    def step(self, runs: list[Run], step: int, dev: torch.device, amp: torch.dtype | None
             ) -> tuple[torch.Tensor, list[dict[str, float]]]:
        """``optimizer_step`` of every run at once (each minibatch from its own step generator, then
        ``grad_steps_per_batch`` steps, candidates redrawn each); (the summed loss, each run's parts)."""
        weights = [concept_weight(r.cfg, step, r.concept_from) for r in runs]
        gens = [step_generator(r.cfg, step, dev) for r in runs]
        scenes = [sample_scenes(curriculum_objects(r.cfg, r.train_objects, step), r.cfg.batch_size,
                                r.cfg.max_objects, g) for r, g in zip(runs, gens)]
        for _ in range(runs[0].cfg.grad_steps_per_batch):
            with torch.autocast(dev.type, dtype=amp, enabled=amp is not None):
                loss, parts = self.loss(runs, scenes, gens, weights)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
        return loss, parts

    def loss(self, runs: list[Run], scenes: list[torch.Tensor], gens: list[torch.Generator], weights: list[float]
             ) -> tuple[torch.Tensor, list[dict[str, float]]]:
        """The sum of each run's ``train_loss`` on its minibatch, and each run's loss parts: the candidates
        drawn per run in ``train_loss``'s order, padded to common counts, then the one model mapped over runs."""
        space, dev = runs[0].cfg.space, scenes[0].device
        drawn = []
        for r, s, g, w_c in zip(runs, scenes, gens, weights):
            d = {}
            if w_c > 0:
                qs = concept_query_set(space, s, r.cfg.max_concept_queries, g)
                d["concept_loss"] = (qs.tokens, qs.labels)
            if r.cfg.object_queries:
                cand = object_candidates(r.cfg, s, r.allowed, g)
                d["object_loss"] = (space.object_query_tokens(cand), object_labels(s, cand))
            drawn.append(d)
        names = [name for name in TASKS if any(name in d for d in drawn)]
        counts = [max(len(d[name][0]) if name in d else 0 for d in drawn) for name in names]
        width = max(t.shape[1] for d in drawn for t, _ in d.values())
        dummy = torch.full((1, width), space.pad, dtype=torch.long, device=dev)  # padding: the query [EOS]
        dummy[0, 0] = space.eos
        tokens, labels, valid = [], [], []
        for d, s in zip(drawn, scenes):
            run_tokens, run_labels, run_valid = [], [], []
            for name, k in zip(names, counts):
                t, y = d.get(name, (dummy[:0], torch.zeros(len(s), 0, dtype=torch.bool, device=dev)))
                run_tokens += [F.pad(t, (0, width - t.shape[1]), value=space.pad), dummy.expand(k - len(t), width)]
                run_labels.append(F.pad(y, (0, k - y.shape[1])))
                # padding out of the softmax; a task this run did not draw keeps one unlabelled column in it
                run_valid.append(torch.arange(k, device=dev) < max(len(t), 1))
            tokens.append(torch.cat(run_tokens))
            labels.append(torch.cat(run_labels, dim=1))
            valid.append(torch.cat(run_valid))
        scene_tokens = torch.stack([space.tokenize_scenes(s) for s in scenes])
        scene_tokens = scene_tokens[..., :int((scene_tokens != space.pad).sum(-1).max())]
        caps = torch.tensor([r.cfg.logit_scale_cap for r in runs], device=dev)

        def run_losses(p: dict[str, torch.Tensor], scenes: torch.Tensor, queries: torch.Tensor, labels: torch.Tensor,
                       valid: torch.Tensor, cap: torch.Tensor) -> torch.Tensor:
            z, e = functional_call(self.model, p, (scenes, queries), {"mapped": True})
            logits = cosine_logits(z, e, torch.minimum(p["tau"].exp(), cap))
            return torch.stack([masked_soft_target_loss(*t) for t in zip(
                logits.split(counts, 1), labels.split(counts, 1), valid.split(counts))])

        losses = vmap(run_losses)(self.params, scene_tokens, torch.stack(tokens), torch.stack(labels),
                                  torch.stack(valid), caps)  # [R, tasks]
        task_weights = torch.tensor([[w_c if name == "concept_loss" else float(r.cfg.object_queries)
                                      for name in names] for r, w_c in zip(runs, weights)], device=dev)
        values = losses.detach().tolist()
        return (task_weights * losses).sum(), [{name: v for name, v in zip(names, row) if name in d}
                                               for d, row in zip(drawn, values)]


def train_stacked(
    cfgs: list[TrainConfig],
    store: ResultStore | None = None,
    device: str | None = None,
    progress: bool = True,
    keep_weights: bool = True,
) -> list[dict[str, Any]]:
    """``train`` of each config (records in ``cfgs``' order). On a device of :data:`STACKING_DEVICES` those
    not stored train as one stack, each stored under its own config with ``stacked_with`` (the config
    hashes of its stack), every run's claim held meanwhile (taken in hash order); elsewhere one by one."""
    stackable(cfgs)
    store = store or ResultStore()
    dev = resolve_device(device)
    unique = {config_hash(c.to_dict()): c for c in cfgs}
    records: dict[str, dict[str, Any]] = {}
    if dev.type not in STACKING_DEVICES or len(unique) == 1:
        for h, cfg in unique.items():
            records[h] = train(cfg, store, str(dev), progress, keep_weights)
        return [records[config_hash(c.to_dict())] for c in cfgs]
    todo: list[tuple[TrainConfig, Path]] = []  # the runs to train: config and entry folder
    outs: dict[Path, Any] = {}

    def claim(hashes: list[str]) -> None:
        """Each config's stored entry, or under its claim (nested in the ones before) a place in the stack."""
        if not hashes:
            if todo:
                trained = train_runs([c for c, _ in todo], dev, [p / "checkpoint.pt" for _, p in todo], progress)
                outs.update(zip([p for _, p in todo], trained))
            return
        cfg, joined = unique[hashes[0]], []

        def compute(path: Path) -> dict[str, Any]:
            joined.append(path)
            todo.append((cfg, path))
            claim(hashes[1:])
            stack = [config_hash(c.to_dict()) for c, _ in todo]
            return {**finished_run(cfg, outs[path], path, dev, keep_weights),
                    **({"stacked_with": stack} if len(stack) > 1 else {})}

        entry = store.cached_entry(STORE_KIND, cfg.to_dict(), compute)
        if not joined:
            claim(hashes[1:])
        records[hashes[0]] = entry.record()

    claim(sorted(unique))
    for _, path in todo:
        clear_checkpoints(path)
    return [records[config_hash(c.to_dict())] for c in cfgs]
