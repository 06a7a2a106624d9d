"""Many token-scene training runs of one model size in one process, each equal to its lone run up to
float rounding: parameters carry a leading run dimension, one fused AdamW step updates them all, and
each run is stored as its own record. Runs may differ only in :data:`PER_RUN_FIELDS`."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from bindcore.io import atomic_torch_save, config_hash
from bindcore.runtime import progress_bar, resolve_device
from bindcore.store import ResultStore

from .checkpoints import Clock, previous_checkpoint, save_checkpoint
from .evaluation import bag_of_concepts_baseline, evaluate, make_eval_set
from .models import DualEncoder, cosine_logits, packed_encode
from .objective import (
    concept_query_set,
    curriculum_objects,
    object_candidates,
    soft_target_loss,
    step_generator,
)
from .runs import train_record
from .scenes import SceneSpace, object_labels, sample_scenes
from .training import (
    STORE_KIND,
    TrainConfig,
    TrainOutput,
    autocast_dtype,
    build_model,
    check_finite,
    concept_loss_onset,
    concept_weight,
    count_parameters,
    lr_factor,
    make_optimizer,
    start_state,
)

log = logging.getLogger(__name__)

# fields that may differ within a stack: they change a run's data, not a parameter's shape or the optimiser's
PER_RUN_FIELDS = frozenset({
    "seed", "split_seed", "coverage",
    "concept_queries", "object_queries", "concept_loss_weight", "concept_loss_start", "concept_loss_trigger",
    "swaps_per_scene", "random_negatives_per_positive", "near_miss_negatives_per_positive",
    "max_concept_queries", "max_object_queries", "candidates", "heldout_as_negatives",
    "tau_init", "logit_scale_cap", "curriculum_values", "curriculum_frac",
    "eval_every", "eval_scenes",
})


def stackable(cfgs: list[TrainConfig]) -> None:
    """A ``ValueError`` naming the field unless ``cfgs`` are plain :class:`TrainConfig` (not a subclass)
    agreeing on every field but :data:`PER_RUN_FIELDS`."""
    if not cfgs:
        raise ValueError("a stack needs at least one config")
    for cfg in cfgs:
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


# ---------------------------------------------------------------------------------
# stacked parameters and the batched forward pass
# ---------------------------------------------------------------------------------
def stack_parameters(models: list[DualEncoder]) -> dict[str, torch.Tensor]:
    """Every parameter of the R models as one leaf tensor ``[R, ...]``, by ``named_parameters`` name."""
    named = [dict(m.named_parameters()) for m in models]
    return {name: torch.stack([n[name].detach() for n in named]).requires_grad_(True) for name in named[0]}


@torch.no_grad()
def copy_run(params: dict[str, torch.Tensor], r: int, model: DualEncoder) -> DualEncoder:
    """Run ``r``'s parameters copied into the lone ``model``; returns it."""
    for name, p in model.named_parameters():
        p.copy_(params[name][r])
    return model


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-run ``F.linear``: x ``[R, ..., in]``, w ``[R, out, in]``, b ``[R, out]``."""
    shape = x.shape
    y = torch.baddbmm(b[:, None, :], x.reshape(shape[0], -1, shape[-1]), w.transpose(1, 2))
    return y.view(*shape[:-1], w.shape[1])


def _layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    extra = (slice(None), *(None,) * (x.dim() - 2))
    return torch.addcmul(b[extra], F.layer_norm(x, x.shape[-1:]), w[extra])


def _heads(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``[R, B, L, D]`` -> ``[R*B, H, L, D/H]``."""
    r, b, length, d = t.shape
    return t.reshape(r * b, length, n_heads, d // n_heads).transpose(1, 2)


def _ffn(p: dict[str, torch.Tensor], pre: str, x: torch.Tensor) -> torch.Tensor:
    h = _layer_norm(x, p[pre + "ln2.weight"], p[pre + "ln2.bias"])
    return _linear(F.gelu(_linear(h, p[pre + "ff1.weight"], p[pre + "ff1.bias"])), p[pre + "ff2.weight"],
                   p[pre + "ff2.bias"])


def token_index(keep: torch.Tensor) -> torch.Tensor | None:
    """Per run, flat positions of its non-PAD tokens (``keep`` ``[R, N, L]``) first, padded with distinct
    PAD positions to the largest count -> ``[R, M]``; None when no run has PAD."""
    flat = keep.reshape(keep.shape[0], -1)
    if bool(flat.all()):
        return None
    m = int(flat.sum(1).max())
    return torch.argsort((~flat).to(torch.uint8), dim=1, stable=True)[:, :m]


def _block(p: dict[str, torch.Tensor], pre: str, x: torch.Tensor, attend: torch.Tensor, n_heads: int,
           tokens_idx: torch.Tensor | None) -> torch.Tensor:
    """One pre-LN layer (:meth:`Block.forward`), the feed-forward at ``tokens_idx`` only; PAD positions
    may carry garbage, as they are never keys nor pooled."""
    r, b, length, d = x.shape
    q, k, v = _linear(_layer_norm(x, p[pre + "ln1.weight"], p[pre + "ln1.bias"]), p[pre + "qkv.weight"],
                      p[pre + "qkv.bias"]).split(d, dim=-1)
    a = F.scaled_dot_product_attention(_heads(q, n_heads), _heads(k, n_heads), _heads(v, n_heads), attn_mask=attend)
    x = x + _linear(a.transpose(1, 2).reshape(r, b, length, d), p[pre + "proj.weight"], p[pre + "proj.bias"])
    if tokens_idx is None:
        return x + _ffn(p, pre, x)
    flat = x.reshape(r, b * length, d)
    index = tokens_idx[:, :, None].expand(-1, -1, d)
    return flat.scatter_add(1, index, _ffn(p, pre, flat.gather(1, index))).view(r, b, length, d)


def _block_at(p: dict[str, torch.Tensor], pre: str, x: torch.Tensor, attend: torch.Tensor, at: torch.Tensor,
              n_heads: int) -> torch.Tensor:
    """:meth:`Block.forward_at` per run: x ``[R, B, L, D]``, at ``[R, B]`` -> ``[R, B, D]``."""
    r, b, length, d = x.shape
    h = _layer_norm(x, p[pre + "ln1.weight"], p[pre + "ln1.bias"])
    w_q, w_kv = p[pre + "qkv.weight"].split([d, 2 * d], dim=1)
    b_q, b_kv = p[pre + "qkv.bias"].split([d, 2 * d], dim=1)
    index = at[:, :, None, None].expand(r, b, 1, d)
    q = _linear(h.gather(2, index), w_q, b_q)  # [R, B, 1, D]
    k, v = _linear(h, w_kv, b_kv).split(d, dim=-1)
    a = F.scaled_dot_product_attention(_heads(q, n_heads), _heads(k, n_heads), _heads(v, n_heads), attn_mask=attend)
    y = x.gather(2, index)[:, :, 0] + _linear(a.reshape(r, b, d), p[pre + "proj.weight"], p[pre + "proj.bias"])
    return y + _ffn(p, pre, y)


def encode(p: dict[str, torch.Tensor], tower: str, tokens: torch.Tensor, cfg: TrainConfig,
           positions: torch.Tensor) -> torch.Tensor:
    """:meth:`Encoder.forward` for every run: tokens ``[R, N, L]`` (right-padded) through run r's
    ``tower`` ("scene" or "query") -> ``[R, N, d_out]``."""
    pad = cfg.space.pad
    keep = tokens != pad
    lengths = keep.sum(2)
    if bool((lengths == 0).any()):
        raise ValueError("a sequence consists only of PAD tokens")
    width = int(lengths.max())
    tokens, keep = tokens[:, :, :width], keep[:, :, :width]
    r, n, _ = tokens.shape
    runs = torch.arange(r, device=tokens.device)[:, None, None]
    x = p[f"{tower}.embed.weight"][runs, tokens] + positions[:width]
    attend = keep.reshape(r * n, 1, 1, width)
    idx = token_index(keep) if cfg.n_layers > 1 else None
    for i in range(cfg.n_layers - 1):
        x = _block(p, f"{tower}.blocks.{i}.", x, attend, cfg.n_heads, idx)
    pooled = _block_at(p, f"{tower}.blocks.{cfg.n_layers - 1}.", x, attend, lengths - 1, cfg.n_heads)
    return _linear(pooled, p[f"{tower}.head.weight"], p[f"{tower}.head.bias"])


def pad_rows(t: torch.Tensor, count: int, filler: torch.Tensor) -> torch.Tensor:
    """``t`` ``[n, ...]`` padded to ``count`` rows with copies of ``filler`` ``[1, ...]``."""
    return torch.cat([t, filler.expand(count - len(t), *filler.shape[1:])])


def masked_soft_target_loss(logits: torch.Tensor, labels: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """:func:`~bindcore.controlled.objective.soft_target_loss` per run: logits and labels ``[R, B, K]``,
    ``valid`` ``[R, K]`` (False: padding, out of the softmax) -> ``[R]``; 0 for a run without candidates."""
    # a run with no candidate keeps its first (dummy) column in the softmax: finite, unlabelled
    none = ~valid.any(1)
    valid = valid.clone()
    valid[none, 0] = True
    y = (labels & valid[:, None, :]).float()
    n_pos = y.sum(2)
    active = n_pos > 0
    target = y / n_pos.clamp(min=1.0)[:, :, None]
    logp = F.log_softmax(logits.float().masked_fill(~valid[:, None, :], float("-inf")), dim=2)
    per_scene = -(target * logp.masked_fill(~valid[:, None, :], 0.0)).sum(2)
    return (per_scene * active).sum(1) / active.sum(1).clamp(min=1)


# ---------------------------------------------------------------------------------
# one stacked training step
# ---------------------------------------------------------------------------------
@dataclass
class Run:
    """One run of a stack: its config and what its lone training loop would hold."""

    cfg: TrainConfig
    model: DualEncoder  # its lone model: evaluation and checkpoints (parameters copied in)
    train_objects: torch.Tensor
    allowed: torch.Tensor
    history: list
    concept_from: int | None
    clock: Clock
    parts: dict[str, float]


def draw_queries(cfg: TrainConfig, scenes: torch.Tensor, allowed: torch.Tensor, gen: torch.Generator,
                 w_c: float) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """A run's candidate queries, drawn in ``train_loss``'s order: name -> (tokens, labels)."""
    space = cfg.space
    out = {}
    if w_c > 0:
        qs = concept_query_set(space, scenes, cfg.max_concept_queries, gen)
        out["concept_loss"] = (qs.tokens, qs.labels)
    if cfg.object_queries:
        cand = object_candidates(cfg, scenes, allowed, gen)
        out["object_loss"] = (space.object_query_tokens(cand), object_labels(scenes, cand))
    return out


def stacked_scene_embeddings(p: dict[str, torch.Tensor], cfg: TrainConfig, scenes: list[torch.Tensor],
                             positions: torch.Tensor) -> torch.Tensor:
    """Each run's minibatch through its scene tower -> ``[R, B, d_out]``, each distinct scene once."""
    uniq, inverse = zip(*(torch.unique(s, dim=0, return_inverse=True) for s in scenes))
    u_max = max(len(u) for u in uniq)
    tokens = torch.stack([cfg.space.tokenize_scenes(pad_rows(u, u_max, u[:1])) for u in uniq])
    z = encode(p, "scene", tokens, cfg, positions)
    return z.gather(1, torch.stack(inverse)[:, :, None].expand(-1, -1, z.shape[2]))


@dataclass
class Candidates:
    """Every run's candidate queries padded per task: ``tokens`` ``[R, K, W]`` (tasks in turn,
    ``counts[name]`` rows each), per task ``valid`` ``[R, k]`` (False: padding), ``labels`` ``[R, B, k]``."""

    tokens: torch.Tensor
    counts: dict[str, int]
    valid: dict[str, torch.Tensor]
    labels: dict[str, torch.Tensor]


def stack_candidates(drawn: list[dict[str, tuple[torch.Tensor, torch.Tensor]]], names: list[str],
                     space: SceneSpace, batch: int, dev: torch.device) -> Candidates:
    """The runs' drawn queries as one padded batch; padding rows are the query ``[EOS]``, masked out."""
    width = max(t.shape[1] for d in drawn for t, _ in d.values())
    dummy = torch.full((1, width), space.pad, dtype=torch.long, device=dev)
    dummy[0, 0] = space.eos
    empty = (dummy[:0], torch.zeros(batch, 0, dtype=torch.bool, device=dev))
    per_task = {name: [d.get(name, empty) for d in drawn] for name in names}  # per run (tokens, labels)
    counts = {name: max(len(tok) for tok, _ in runs) for name, runs in per_task.items()}
    rows = [[pad_rows(F.pad(tok, (0, width - tok.shape[1]), value=space.pad), counts[name], dummy)
             for tok, _ in runs] for name, runs in per_task.items()]
    tokens = torch.stack([torch.cat(run_rows) for run_rows in zip(*rows)])
    valid, labels = {}, {}
    for name, runs in per_task.items():
        k = counts[name]
        n = torch.tensor([len(tok) for tok, _ in runs], device=dev)
        valid[name] = torch.arange(k, device=dev)[None, :] < n[:, None]
        labels[name] = torch.stack([F.pad(lab, (0, k - lab.shape[1])) for _, lab in runs])
    return Candidates(tokens, counts, valid, labels)


def stacked_loss(p: dict[str, torch.Tensor], runs: list[Run], scenes: list[torch.Tensor],
                 gens: list[torch.Generator], weights: list[float], positions: torch.Tensor
                 ) -> tuple[torch.Tensor, list[dict[str, float]]]:
    """(sum over runs of each one's ``train_loss`` on its minibatch, each run's loss parts); ``weights``:
    concept-loss weights. On the CPU: :func:`per_run_losses`."""
    if positions.device.type == "cpu":
        return per_run_losses(p, runs, scenes, gens, weights, positions)
    cfg0 = runs[0].cfg
    dev = positions.device
    z = stacked_scene_embeddings(p, cfg0, scenes, positions)
    caps = torch.tensor([r.cfg.logit_scale_cap for r in runs], device=dev)
    scale = p["tau"].exp().clamp(max=caps)
    drawn = [draw_queries(r.cfg, s, r.allowed, g, w) for r, s, g, w in zip(runs, scenes, gens, weights)]
    task_weights = {"concept_loss": weights, "object_loss": [float(r.cfg.object_queries) for r in runs]}
    names = [name for name in task_weights if any(name in d for d in drawn)]
    cand = stack_candidates(drawn, names, cfg0.space, z.shape[1], dev)
    e = encode(p, "query", cand.tokens, cfg0, positions).split([cand.counts[name] for name in names], dim=1)
    zn = z / (z.norm(dim=-1, keepdim=True) + 1e-6)
    total = z.new_zeros(())
    parts: list[dict[str, float]] = [{} for _ in runs]
    for name, emb in zip(names, e):
        en = emb / (emb.norm(dim=-1, keepdim=True) + 1e-6)
        logits = (scale[:, None, None] * zn) @ en.transpose(1, 2)  # cosine_logits of every run
        loss = masked_soft_target_loss(logits, cand.labels[name], cand.valid[name])
        total = total + (torch.tensor(task_weights[name], device=dev) * loss).sum()
        for part, d, value in zip(parts, drawn, loss.detach().tolist()):
            if name in d:
                part[name] = value
    return total, parts


def per_run_losses(p: dict[str, torch.Tensor], runs: list[Run], scenes: list[torch.Tensor],
                   gens: list[torch.Generator], weights: list[float], positions: torch.Tensor
                   ) -> tuple[torch.Tensor, list[dict[str, float]]]:
    """:func:`stacked_loss` on the CPU: each run's lone loss on views of its parameter slices, through
    the packed path (faster there than batched products), so loss and gradient match its lone run."""
    names = list(p)
    views = [dict(zip(names, slices)) for slices in zip(*(p[name].unbind(0) for name in names))]
    enc = runs[0].cfg.encoder_config()
    total: torch.Tensor | None = None
    parts: list[dict[str, float]] = []
    for run, v, s, g, w_c in zip(runs, views, scenes, gens, weights):
        space = run.cfg.space
        uniq, inverse = torch.unique(s, dim=0, return_inverse=True)  # encode_scenes
        z = packed_encode(v, "scene.", enc, positions, space.tokenize_scenes(uniq))[inverse]
        scale = v["tau"].exp().clamp(max=run.cfg.logit_scale_cap)  # DualEncoder.logit_scale
        drawn = draw_queries(run.cfg, s, run.allowed, g, w_c)
        width = max(tokens.shape[1] for tokens, _ in drawn.values())  # encode_queries
        queries = torch.cat([F.pad(tokens, (0, width - tokens.shape[1]), value=space.pad) for tokens, _ in drawn.values()])
        e = packed_encode(v, "query.", enc, positions, queries).split([len(tokens) for tokens, _ in drawn.values()])
        run_total, part = z.new_zeros(()), {}
        for (name, (_, labels)), emb in zip(drawn.items(), e):
            loss = soft_target_loss(cosine_logits(z, emb, scale), labels)
            run_total = run_total + (w_c if name == "concept_loss" else 1.0) * loss
            part[name] = float(loss.detach())
        total = run_total if total is None else total + run_total
        parts.append(part)
    assert total is not None
    return total, parts


def stacked_step(runs: list[Run], params: dict[str, torch.Tensor], opt: torch.optim.Optimizer, step: int,
                 amp: torch.dtype | None, positions: torch.Tensor) -> list[dict[str, float]]:
    """``optimizer_step`` of every run at once (each minibatch from its own step generator, then
    ``grad_steps_per_batch`` steps, candidates redrawn each); each run's last loss parts."""
    dev = positions.device
    weights = [concept_weight(run.cfg, step, run.concept_from) for run in runs]
    gens = [step_generator(run.cfg, step, dev) for run in runs]
    scenes = [sample_scenes(curriculum_objects(run.cfg, run.train_objects, step), run.cfg.batch_size,
                            run.cfg.max_objects, g) for run, g in zip(runs, gens)]
    for _ in range(runs[0].cfg.grad_steps_per_batch):
        with torch.autocast(dev.type, dtype=amp, enabled=amp is not None):
            loss, parts = stacked_loss(params, runs, scenes, gens, weights, positions)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return parts


def new_run(cfg: TrainConfig, model: DualEncoder, dev: torch.device, history: list | None = None,
            before: dict | None = None, share: int = 1) -> Run:
    """A run of a stack as its lone run starts (``history``, ``before``: a checkpoint's; ``share``: stack
    size)."""
    split_train = cfg.split.train.to(dev)
    allowed = torch.arange(cfg.space.n_objects, device=dev) if cfg.heldout_as_negatives else split_train
    history = list(history or [])
    return Run(cfg, model, split_train, allowed, history, concept_loss_onset(cfg, history),
               ShareClock(before, share), {})


def make_stacked_optimizer(cfg: TrainConfig, params: dict[str, torch.Tensor]) -> torch.optim.AdamW:
    """``make_optimizer`` over the stacked tensors (a lone parameter has one dimension fewer)."""
    tensors = list(params.values())
    if cfg.decay_scope == "all":
        groups: Any = tensors
    else:
        groups = [{"params": [p for p in tensors if p.dim() - 1 >= 2]},
                  {"params": [p for p in tensors if p.dim() - 1 < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), weight_decay=cfg.weight_decay,
                             fused=True)


def _lone_optimizer(run: Run, params: dict[str, torch.Tensor], opt: torch.optim.Optimizer,
                    r: int) -> torch.optim.Optimizer:
    """Run ``r``'s slice of the stacked optimizer as a lone optimizer of ``run.model``."""
    lone = make_optimizer(run.cfg, run.model)
    for g, sg in zip(lone.param_groups, opt.param_groups):
        g["lr"], g["initial_lr"] = sg["lr"], sg["initial_lr"]
    for name, p in run.model.named_parameters():
        st = opt.state.get(params[name])
        if st:
            lone.state[p] = {"step": st["step"].clone(), "exp_avg": st["exp_avg"][r].clone(),
                             "exp_avg_sq": st["exp_avg_sq"][r].clone()}
    return lone


def _load_stacked_state(runs: list[Run], opts: list[torch.optim.Optimizer], params: dict[str, torch.Tensor],
                        opt: torch.optim.Optimizer) -> None:
    """The stacked optimizer's state from the runs' lone optimizers (resumed ones)."""
    for name, p in params.items():
        lone = [o.state.get(dict(run.model.named_parameters())[name]) for run, o in zip(runs, opts)]
        if all(lone):
            opt.state[p] = {"step": lone[0]["step"].clone(),
                            "exp_avg": torch.stack([s["exp_avg"] for s in lone]),
                            "exp_avg_sq": torch.stack([s["exp_avg_sq"] for s in lone])}


class ShareClock(Clock):
    """A run's share of the stack's wall and CPU time (the stack's divided by its runs)."""

    def __init__(self, before: dict[str, float] | None, share: int) -> None:
        super().__init__(before)
        self.share = share

    def so_far(self) -> dict[str, float]:
        now = super().so_far()
        return {**now, **{k: self.before.get(k, 0.0) + (now[k] - self.before.get(k, 0.0)) / self.share
                          for k in ("seconds", "cpu_seconds")}}


def _start_runs(cfgs: list[TrainConfig], dev: torch.device, checkpoints: list[Path | None]
                ) -> tuple[list[DualEncoder], list[torch.optim.Optimizer], int, list[list], list[dict | None]]:
    """Every run's lone (model, optimizer, history, clock) and the start step: from checkpoints when all
    are at one step, else fresh."""
    started = [start_state(cfg, dev, ckpt) for cfg, ckpt in zip(cfgs, checkpoints)]
    steps = {s[2] for s in started}
    if len(steps) == 1:
        step = steps.pop()
        return [s[0] for s in started], [s[1] for s in started], step, [s[3] for s in started], \
            [s[4] for s in started]
    log.warning("the runs' checkpoints are at different steps (%s): the stack starts afresh",
                sorted(s[2] for s in started))
    models = [build_model(cfg, dev) for cfg in cfgs]
    return models, [make_optimizer(c, m) for c, m in zip(cfgs, models)], 0, [[] for _ in cfgs], [None for _ in cfgs]


def run_stacked(
    cfgs: list[TrainConfig],
    device: str | torch.device | None = None,
    checkpoints: list[Path | None] | None = None,
    progress: bool = True,
    stop_after: int | None = None,
) -> list[TrainOutput]:
    """Train ``cfgs`` as one stack; per run what ``run_training`` returns (time: the stack's divided by
    its runs). ``checkpoints`` (one per run, lone format): resume when all are at one step, save every
    ``checkpoint_every`` steps. ``stop_after``: stop after that many steps of this call."""
    stackable(cfgs)
    cfg0 = cfgs[0]
    dev = resolve_device(str(device) if device is not None else None)
    checkpoints = list(checkpoints) if checkpoints is not None else [None] * len(cfgs)
    models, lone_opts, start, histories, befores = _start_runs(cfgs, dev, checkpoints)
    runs = [new_run(cfg, model, dev, history, before, len(cfgs))
            for cfg, model, history, before in zip(cfgs, models, histories, befores)]
    params = stack_parameters(models)
    opt = make_stacked_optimizer(cfg0, params)
    _load_stacked_state(runs, lone_opts, params, opt)
    del lone_opts
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg0.steps, cfg0.warmup_frac))
    if start:
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: lr_factor(s, cfg0.steps, cfg0.warmup_frac), last_epoch=start - 1)
    eval_sets = [make_eval_set(run.cfg, run.cfg.split, dev) for run in runs]
    amp = autocast_dtype(cfg0, dev)
    positions = models[0].scene.positions.to(dev)
    log.info("stack of %d runs: %d parameters per encoder each", len(runs), count_parameters(models[0].scene))
    bar = progress_bar(range(start, cfg0.steps), enabled=progress, initial=start, total=cfg0.steps,
                       desc=f"stack of {len(runs)} V={cfg0.n_values} C={cfg0.n_concepts}", mininterval=1.0)
    done = 0
    for step in bar:
        parts = stacked_step(runs, params, opt, step, amp, positions)
        sched.step()
        done += 1
        n = step + 1
        for r, (run, es) in enumerate(zip(runs, eval_sets)):
            run.parts = parts[r]
            if run.cfg.eval_every and n % run.cfg.eval_every == 0 and n < cfg0.steps:
                check_finite(run.cfg, copy_run(params, r, run.model), n)
                last = evaluate(run.cfg, run.model, es)
                run.history.append({"step": n, **last, **run.parts})
                run.concept_from = concept_loss_onset(run.cfg, run.history)
        stopping = stop_after is not None and done >= stop_after and n < cfg0.steps
        periodic = cfg0.checkpoint_every and n % cfg0.checkpoint_every == 0 and n < cfg0.steps
        if periodic or stopping:
            for r, (run, ckpt) in enumerate(zip(runs, checkpoints)):
                if ckpt is not None:
                    copy_run(params, r, run.model)
                    save_checkpoint(ckpt, run.model, _lone_optimizer(run, params, opt, r), n, run.history,
                                     run.clock)
        if stopping:
            bar.close()
            return [TrainOutput(copy_run(params, r, run.model), {}, {}, run.history, run.clock.so_far()["seconds"],
                                done, run.concept_from, run.clock.so_far()["cpu_seconds"])
                    for r, run in enumerate(runs)]
    bar.close()
    outs = []
    for r, run in enumerate(runs):
        check_finite(run.cfg, copy_run(params, r, run.model), cfg0.steps)
    for run, es in zip(runs, eval_sets):
        final = evaluate(run.cfg, run.model, es)
        run.history.append({"step": cfg0.steps, **final})
        spent = run.clock.so_far()
        outs.append(TrainOutput(run.model, final, bag_of_concepts_baseline(run.cfg, es), run.history,
                                spent["seconds"], done, run.concept_from, spent["cpu_seconds"], spent["trained_by"]))
    return outs


# ---------------------------------------------------------------------------------
# stored runs
# ---------------------------------------------------------------------------------
def stacked_record(cfg: TrainConfig, out: TrainOutput, dev: torch.device, stack: list[TrainConfig]) -> dict[str, Any]:
    """A run's lone record plus ``stacked_with``: the config hashes of its stack (its own included)."""
    return {**train_record(cfg, out, dev), "stacked_with": [config_hash(c.to_dict()) for c in stack]}


def train_stacked(
    cfgs: list[TrainConfig],
    store: ResultStore | None = None,
    device: str | None = None,
    progress: bool = True,
    keep_weights: bool = True,
) -> list[dict[str, Any]]:
    """``train`` for a stack: each config's record (order kept), those not stored trained as one stack,
    each stored under its own config so ``train(cfg)`` finds it. Holds every run's claim (taken in hash
    order) while training; checkpoints lie in each run's entry."""
    stackable(cfgs)
    store = store or ResultStore()
    kind = STORE_KIND
    unique = {config_hash(c.to_dict()): c for c in cfgs}
    records: dict[str, dict[str, Any]] = {}
    for h, cfg in unique.items():
        found = store.find(kind, cfg.to_dict())
        if found is not None:
            records[h] = found.record()
    todo = sorted(h for h in unique if h not in records)
    if todo:
        dev = resolve_device(device)
        with contextlib.ExitStack() as held:
            for h in todo:
                held.enter_context(store.claim(kind, unique[h].to_dict()))
            for h in list(todo):  # finished by another process while this one waited
                found = store.find(kind, unique[h].to_dict())
                if found is not None:
                    records[h] = found.record()
                    todo.remove(h)
            if todo:
                stack = [unique[h] for h in todo]
                entries = [store.prepare(kind, cfg.to_dict()) for cfg in stack]
                ckpts = [e.path / "checkpoint.pt" for e in entries]
                outs = run_stacked(stack, device=dev, checkpoints=ckpts, progress=progress)
                for h, cfg, entry, ckpt, out in zip(todo, stack, entries, ckpts, outs):
                    if keep_weights:
                        atomic_torch_save(entry.path / "model.pt", out.model.state_dict())
                    store.finish(entry, stacked_record(cfg, out, dev, stack))
                    ckpt.unlink(missing_ok=True)
                    previous_checkpoint(ckpt).unlink(missing_ok=True)
                    records[h] = entry.record()
    return [records[config_hash(c.to_dict())] for c in cfgs]
