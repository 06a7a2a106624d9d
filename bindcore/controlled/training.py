"""Training the controlled dual encoder (appendix B.3, B.4) as a pure function of its config, with
periodic evaluation (§5.2), checkpoints and resume. A :class:`TrainConfig` subclass may give the scene
tower another input by overriding its scene methods and ``store_kind``."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_type_hints

import torch
import torch.nn.functional as F
from pydantic import Field

from bindcore.io import config_hash
from bindcore.runtime import progress_bar, resolve_device
from bindcore.settings import check, coerce, scalar_type, unknown_name
from bindcore.store import Kind

from .checkpoints import Clock, deliver, resume, save_checkpoint, signals_between_steps
from .evaluation import (
    MAX_EVALUATION_BYTES,
    EvalSet,
    bag_of_concepts_baseline,
    embed_in_chunks,
    evaluate,
    evaluation_memory,
    make_eval_set,
    memory_text,
)
from .models import DualEncoder, EncoderConfig, count_parameters
from .objective import (  # noqa: F401 (defined in §5.2; tests and benchmarks import them from here)
    near_misses,
    object_candidates,
    optimizer_step,
    soft_target_loss,
    step_generator,
    train_loss,
)
from .scenes import (
    ObjectSplit,
    SceneSpace,
    coverage_split,
)

log = logging.getLogger(__name__)

# training runs in the result store (stacked ones too): bump the version when their results change
STORE_KIND = Kind("train-2", required=("hash", "config", "metrics"), weights=("model.pt",))
SEED_LIMIT = 2**40  # |seed| and steps: (seed, step) seeds the sampler as seed * 1_000_003 + step (int64)

# each field's range (checked by validate); size bounds lie far above any recipe's and below what
# would fail only later, in an allocation
Unit = Annotated[float, Field(ge=0, lt=1)]  # [0, 1)
Count = Annotated[int, Field(ge=0, le=2**10)]
Seed = Annotated[int, Field(gt=-SEED_LIMIT, lt=SEED_LIMIT)]
Queries = Annotated[int, Field(ge=1, le=2**20)]


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run. The run is a pure function of it."""

    # scene space (B.1) and object-coverage split (§5.2)
    n_concepts: Annotated[int, Field(ge=1)] = 2
    n_values: Annotated[int, Field(ge=2)] = 10
    max_objects: Annotated[int, Field(ge=1, le=64)] = 2
    coverage: Annotated[float, Field(gt=0, lt=1)] = 0.8
    split_seed: Seed = 0
    # encoders (B.2)
    d_model: Annotated[int, Field(ge=1, le=2**14)] = 256
    n_heads: Annotated[int, Field(ge=1, le=256)] = 4
    n_layers: Annotated[int, Field(ge=1, le=256)] = 6
    d_ff: Annotated[int, Field(ge=1, le=2**17)] = 2048
    d_out: Annotated[int, Field(ge=1, le=2**14)] = 64
    # objective (B.3)
    concept_queries: bool = True
    object_queries: bool = True
    concept_loss_weight: Annotated[float, Field(ge=0)] = 1.0
    concept_loss_start: Unit = 0.0  # fraction of the steps trained on object queries alone
    # > 0: the concept loss joins only at the first evaluation (after concept_loss_start)
    # at which the training task (training scenes among training objects) is solved at this rate
    concept_loss_trigger: Annotated[float, Field(ge=0, le=1)] = 0.0  # 0 = off
    swaps_per_scene: Count = 1
    random_negatives_per_positive: Count = 0
    # near-miss negatives: per kept positive, this many copies with one concept's value
    # changed at random (kept only if an allowed object); the release's "perturbation"
    # negatives, which it offers only without a coverage split
    near_miss_negatives_per_positive: Count = 0
    max_concept_queries: Queries = 64
    max_object_queries: Queries = 64
    candidates: Literal["batch", "train_vocab"] = "batch"  # "batch": batch positives + negatives; "train_vocab": all training objects
    heldout_as_negatives: bool = False  # the released code's behaviour when True
    tau_init: float = 1.15
    logit_scale_cap: Annotated[float, Field(gt=0)] = 10.0
    # optimisation (B.4)
    steps: Annotated[int, Field(ge=1, le=SEED_LIMIT)] = 50_000
    batch_size: Annotated[int, Field(ge=1, le=2**20)] = 512
    lr: Annotated[float, Field(gt=0)] = 3e-5
    weight_decay: Annotated[float, Field(ge=0)] = 0.1
    decay_scope: Literal["all", "matrices"] = "all"  # "all": every parameter, tau included (the release); "matrices": weights only
    beta1: Unit = 0.9
    beta2: Unit = 0.999
    warmup_frac: Unit = 0.1
    grad_steps_per_batch: Annotated[int, Field(ge=1, le=2**10)] = 1
    grad_clip: Annotated[float, Field(ge=0)] = 0.0  # > 0: the gradient's norm clipped to it; 0 = off
    # curriculum over values: > 0 starts training on the training objects whose values all
    # lie below this number, and lets that number grow linearly to V over the first
    # ``curriculum_frac`` of the steps (held-out objects are never used either way)
    curriculum_values: Annotated[int, Field(ge=0)] = 0  # 0 = off
    curriculum_frac: Unit = 0.0
    seed: Seed = 0
    precision: Literal["auto", "fp32", "bf16"] = "auto"  # "auto": bf16 autocast on CUDA with native bf16 (Ampere+), else fp32
    # evaluation
    eval_every: Annotated[int, Field(ge=0)] = 1000  # 0 = only at the end
    eval_scenes: Annotated[int, Field(ge=1, le=2**22)] = 1024  # per object count
    checkpoint_every: Annotated[int, Field(ge=0)] = 1000  # 0 = never

    # the result store's folder of runs of this config type
    store_kind: ClassVar[Kind] = STORE_KIND
    # fields added after runs were stored, each with its "off" value: a config holding that value
    # leaves the field out of its dict, so that every earlier record keeps its hash
    added_fields: ClassVar[dict[str, Any]] = {"grad_clip": 0.0}

    def __post_init__(self) -> None:
        # every value as its field's declared type (bindcore.settings.coerce)
        for name, tp in field_types(type(self)).items():
            value = getattr(self, name)
            typed = coerce(value, tp, f"{type(self).__name__}.{name}")
            if typed is not value:
                object.__setattr__(self, name, typed)
        validate(self)

    @property
    def space(self) -> SceneSpace:
        return SceneSpace(self.n_concepts, self.n_values, self.max_objects)

    @property
    def split(self) -> ObjectSplit:
        return coverage_split(self.space, self.coverage, self.split_seed)

    def encoder_config(self) -> EncoderConfig:
        s = self.space
        return EncoderConfig(
            vocab_size=s.vocab_size,
            max_len=s.max_len,
            pad_id=s.pad,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            d_ff=self.d_ff,
            d_out=self.d_out,
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields as a record keeps them (:attr:`added_fields` at their "off" value left out)."""
        return {k: v for k, v in asdict(self).items() if k not in self.added_fields or v != self.added_fields[k]}

    # -- the scene tower's input: token scenes (a subclass may override these) --------
    def make_model(self) -> torch.nn.Module:
        """A freshly initialised dual encoder of this config (on the CPU)."""
        return DualEncoder(self.encoder_config(), tau_init=self.tau_init)

    def embed_training_scenes(self, model: torch.nn.Module, scenes: torch.Tensor,
                              gen: torch.Generator) -> torch.Tensor:
        """Scene embeddings of a training minibatch (with gradients); ``gen``: the step's generator."""
        return encode_scenes(model, self.space, scenes)

    def embed_eval_scenes(self, model: torch.nn.Module, scenes: torch.Tensor, seed: int = 0) -> torch.Tensor:
        """Scene embeddings for evaluation (no gradients). ``seed`` picks a rendering for inputs that
        have several; a token scene has one, so it must be 0."""
        if seed != 0:
            raise ValueError(f"seed = {seed}: a token scene has a single input sequence (seed must be 0)")
        return embed_in_chunks(model.scene, self.space.tokenize_scenes(scenes))

    def short_name(self) -> str:
        """The model in a few words (binding data, tables)."""
        return f"controlled C={self.n_concepts} V={self.n_values} coverage={self.coverage:g}"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        """A config from field values (coerced to each field's type; an unknown field is a
        ``ValueError``). On ``TrainConfig``, ``scene_input`` picks the subclass (:func:`scene_input_class`)."""
        if cls is TrainConfig and "scene_input" in d:
            sub = scene_input_class(coerce(d["scene_input"], str, "TrainConfig.scene_input"))
            if sub is not TrainConfig:
                return sub.from_dict(d)
            d = {k: v for k, v in d.items() if k != "scene_input"}
        check_fields(d, cls)
        return cls(**d)

    def with_(self, **changes: Any) -> TrainConfig:
        check_fields(changes, type(self))
        return replace(self, **changes)


def scene_input_class(name: str) -> type[TrainConfig]:
    """The config class of scene input ``name``: ``"tokens"`` (:class:`TrainConfig`) or ``"pixels"``
    (imported only then: token runs never import the pixel code)."""
    if name == "pixels":
        from .pixels import PixelTrainConfig

        return PixelTrainConfig
    if name != "tokens":
        raise ValueError(f"TrainConfig.scene_input = {name!r}: must be one of ('tokens', 'pixels')")
    return TrainConfig


@cache
def field_types(cls: type[TrainConfig] | None = None) -> dict[str, type]:
    """Every field of ``cls`` (default :class:`TrainConfig`) and the type :func:`coerce` reads it as."""
    hints = get_type_hints(cls or TrainConfig)
    return {f.name: scalar_type(hints[f.name]) for f in fields(cls or TrainConfig)}


@cache
def field_rules(cls: type[TrainConfig]) -> dict[str, Any]:
    """The fields of ``cls`` declared with a range or choices, and that declaration (pydantic)."""
    hints = get_type_hints(cls, include_extras=True)
    return {f.name: hints[f.name] for f in fields(cls) if hints[f.name] is not field_types(cls)[f.name]}


def check_fields(names: Any, cls: type[TrainConfig] | None = None) -> None:
    """A ``ValueError`` naming the first of ``names`` not a field of ``cls`` (default TrainConfig)."""
    known = field_types(cls)
    for name in names:
        if name not in known:
            raise unknown_name(name, known, f"{(cls or TrainConfig).__name__} field")


def validate(cfg: TrainConfig) -> None:
    """Fail before any work with a message that names the field."""

    def need(ok: bool, name: str, rule: str) -> None:
        if not ok:
            raise ValueError(f"{type(cfg).__name__}.{name} = {getattr(cfg, name)!r}: {rule}")

    for name, rule in field_rules(type(cfg)).items():
        check(rule, getattr(cfg, name), f"{type(cfg).__name__}.{name}")
    # the object space (V**C objects) before anything is allocated for it
    digits = cfg.n_concepts * math.log2(cfg.n_values) if cfg.n_concepts <= 256 else math.inf
    n_obj = cfg.n_values**cfg.n_concepts if digits < 256 else None
    parts = (evaluation_memory(n_obj, cfg.n_concepts, cfg.n_values, cfg.d_out) if n_obj is not None
             else {"objects": math.inf, "embeddings": 0})
    need_bytes = sum(parts.values())
    if need_bytes > MAX_EVALUATION_BYTES:
        size = f"{n_obj:.3g}" if n_obj is not None else "more than 2**256"
        if parts["embeddings"] > parts["objects"]:
            name = "d_out"
        else:
            name = "n_values" if cfg.n_values > cfg.n_concepts else "n_concepts"
        amount = f"about {memory_text(need_bytes)}" if need_bytes < 2**100 else "far more than any machine's"
        need(False, name, f"the object space of V**C = {cfg.n_values}**{cfg.n_concepts} = {size} objects "
             f"(embeddings of d_out = {cfg.d_out}) would need {amount} of memory to evaluate (limit "
             f"{memory_text(MAX_EVALUATION_BYTES)}: bindcore.controlled.evaluation.MAX_EVALUATION_BYTES)")
    n_train = int(n_obj * cfg.coverage)
    need(n_train >= 1, "coverage", f"leaves no training object among {n_obj}")
    need(n_train < n_obj, "coverage", f"leaves no held-out object among {n_obj}")
    need(cfg.d_model % cfg.n_heads == 0, "d_model", f"must be divisible by n_heads={cfg.n_heads}")
    need(cfg.concept_queries or cfg.object_queries, "object_queries", "at least one query type must be on")
    need(cfg.concept_loss_trigger == 0 or cfg.eval_every > 0, "concept_loss_trigger",
         "needs periodic evaluation (eval_every > 0)")
    need(cfg.curriculum_values <= cfg.n_values, "curriculum_values", "must lie in [0, V] (0 = off)")
    need(cfg.curriculum_values == 0 or cfg.curriculum_frac > 0, "curriculum_frac",
         "must be > 0 when curriculum_values is set")


# ---------------------------------------------------------------------------------
# optimisation
# ---------------------------------------------------------------------------------
def lr_factor(step: int, total: int, warmup_frac: float) -> float:
    """Linear warmup over the first ``warmup_frac`` of the steps, then linear decay to 0."""
    w = int(warmup_frac * total)
    if step < w:
        return step / w
    return max(0.0, (total - step) / max(1, total - w))


def make_optimizer(cfg: TrainConfig, model: torch.nn.Module | Iterable[torch.Tensor], lead: int = 0
                   ) -> torch.optim.AdamW:
    """Fused AdamW over both encoders and tau (``model``'s parameters, or the tensors given, each with
    ``lead`` leading run dimensions). ``decay_scope="all"`` decays every parameter (as the release);
    ``"matrices"`` only 2-D ones (not tau, biases or LayerNorm)."""
    params = list(model.parameters() if isinstance(model, torch.nn.Module) else model)
    if cfg.decay_scope == "all":
        groups: Any = params
    else:
        groups = [{"params": [p for p in params if p.dim() - lead >= 2]},
                  {"params": [p for p in params if p.dim() - lead < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), weight_decay=cfg.weight_decay,
                             fused=True)


def concept_weight(cfg: TrainConfig, step: int, concept_from: int | None) -> float:
    """Weight of the concept loss at ``step``; ``concept_from``: the step it joins (None: not yet)."""
    if not cfg.concept_queries or concept_from is None:
        return 0.0
    return cfg.concept_loss_weight if step >= concept_from else 0.0


def concept_loss_onset(cfg: TrainConfig, history: list[dict[str, float]]) -> int | None:
    """The step the concept loss joins: ``concept_loss_start`` of the steps, or with a trigger the first
    evaluation at or after it whose ``task_object_{max_objects}`` reaches the trigger (None until then)."""
    start = int(cfg.concept_loss_start * cfg.steps)
    if cfg.concept_loss_trigger <= 0:
        return start
    key = f"task_object_{cfg.max_objects}"
    for h in history:
        if h["step"] >= start and h.get(key, 0.0) >= cfg.concept_loss_trigger:
            return int(h["step"])
    return None


def autocast_dtype(cfg: TrainConfig, device: torch.device) -> torch.dtype | None:
    """bf16 where asked, or under "auto" on a CUDA GPU with native bf16 (Ampere+); else None (fp32)."""
    if cfg.precision == "bf16":
        return torch.bfloat16
    if cfg.precision == "auto" and device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 8:
        return torch.bfloat16
    return None


def encode_scenes(model: DualEncoder, space: SceneSpace, scenes: torch.Tensor) -> torch.Tensor:
    """Scene embeddings, each distinct scene of the batch computed once (same result)."""
    uniq, inverse = torch.unique(scenes, dim=0, return_inverse=True)
    return model.scene(space.tokenize_scenes(uniq))[inverse]


# ---------------------------------------------------------------------------------
# the training loop
# ---------------------------------------------------------------------------------
def build_model(cfg: TrainConfig, device: torch.device) -> DualEncoder:
    torch.manual_seed(cfg.seed)
    return cfg.make_model().to(device)


def start_state(cfg: TrainConfig, device: torch.device, checkpoint: Path | None
                ) -> tuple[DualEncoder, torch.optim.Optimizer, int, list, dict | None]:
    """(model, optimizer, step, history, clock) to train from: fresh, or the latest good checkpoint's."""

    def fresh() -> tuple[DualEncoder, torch.optim.Optimizer]:
        model = build_model(cfg, device)
        return model, make_optimizer(cfg, model)

    return resume(fresh, device, checkpoint, config_hash(cfg.to_dict()))


class Diverged(ValueError):
    """A run whose weights stopped being finite: a failed run, never stored as finished."""


def check_finite(cfg: TrainConfig, model: torch.nn.Module, step: int) -> None:
    """:class:`Diverged` naming the run unless every weight of ``model`` is finite."""
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise Diverged(f"{cfg.short_name()} seed {cfg.seed} diverged: its weights are not finite at step {step} "
                       f"(lr {cfg.lr:g}); the run failed and nothing of it is stored as finished")


@dataclass
class TrainOutput:
    model: DualEncoder
    metrics: dict[str, float]
    baseline: dict[str, float]
    history: list[dict[str, float]]
    seconds: float  # wall time of all calls that trained this run (resumes included; in a stack, its share)
    steps_run: int  # optimiser steps of this call
    concept_loss_from: int | None = None
    cpu_seconds: float = 0.0  # CPU time of all calls that trained this run
    trained_by: list[str] = field(default_factory=list)  # the code versions that trained it, resumes included


@dataclass
class Run:
    """One run of the training loop: its config, model and optimizer (in a stack, copies of its slices
    where evaluations and checkpoints read them), and what it has recorded."""

    cfg: TrainConfig
    model: DualEncoder
    opt: torch.optim.Optimizer
    history: list
    clock: Clock
    es: EvalSet
    train_objects: torch.Tensor
    allowed: torch.Tensor  # the objects candidates are drawn from
    concept_from: int | None
    parts: dict[str, float] = field(default_factory=dict)  # the last step's loss parts

    def output(self, metrics: dict[str, float], baseline: dict[str, float], done: int) -> TrainOutput:
        spent = self.clock.so_far()
        return TrainOutput(self.model, metrics, baseline, self.history, spent["seconds"], done, self.concept_from,
                           spent["cpu_seconds"], spent["trained_by"])


def run_training(
    cfg: TrainConfig,
    device: str | torch.device | None = None,
    checkpoint: Path | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    on_eval: Callable[[int, dict[str, float]], None] | None = None,
) -> TrainOutput:
    """Train one dual encoder (:func:`train_runs` of one config)."""
    return train_runs([cfg], device, [checkpoint], progress, stop_after, on_eval)[0]


def train_runs(
    cfgs: list[TrainConfig],
    device: str | torch.device | None = None,
    checkpoints: list[Path | None] | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    on_eval: Callable[[int, dict[str, float]], None] | None = None,
) -> list[TrainOutput]:
    """Train each config for its ``steps`` steps, evaluating every ``eval_every`` steps and at the end
    (each seen by ``on_eval(step, metrics)``); several configs train as one stack
    (:class:`bindcore.controlled.stacked.StackedRuns`, each run's time its share of the stack's).
    ``checkpoints`` (one per config): resume from them if present (a stack: if all are at one step,
    else it starts afresh) and save every ``checkpoint_every`` steps. ``stop_after``: stop after that
    many steps of this call."""
    dev = resolve_device(str(device) if device is not None else None)
    checkpoints = list(checkpoints) if checkpoints is not None else [None] * len(cfgs)
    started = [start_state(cfg, dev, ckpt) for cfg, ckpt in zip(cfgs, checkpoints)]
    if len({s[2] for s in started}) > 1:
        log.warning("the runs' checkpoints are at different steps (%s): the stack starts afresh",
                    sorted(s[2] for s in started))
        started = [start_state(cfg, dev, None) for cfg in cfgs]
    runs, start = [], started[0][2]
    for cfg, (model, opt, _, history, before) in zip(cfgs, started):
        train_objects = cfg.split.train.to(dev)
        allowed = torch.arange(cfg.space.n_objects, device=dev) if cfg.heldout_as_negatives else train_objects
        runs.append(Run(cfg, model, opt, history, Clock(before, share=len(cfgs)), make_eval_set(cfg, cfg.split, dev),
                        train_objects, allowed, concept_loss_onset(cfg, history)))
    from .stacked import StackedRuns

    stack = StackedRuns(runs) if len(runs) > 1 else None
    cfg, opt = runs[0].cfg, stack.opt if stack else runs[0].opt
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg.steps, cfg.warmup_frac))
    if start:  # (the first scheduler set each group's initial_lr, which a resumed one needs)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg.steps, cfg.warmup_frac),
                                                  last_epoch=start - 1)
    amp = autocast_dtype(cfg, dev)
    log.info("dual encoder: %d parameters per encoder", count_parameters(runs[0].model.scene))
    bar = progress_bar(range(start, cfg.steps), enabled=progress, initial=start, total=cfg.steps,
                       desc=f"train V={cfg.n_values} C={cfg.n_concepts} cov={cfg.coverage:g}"
                       + (f" +{len(runs) - 1} runs" if stack else ""), mininterval=1.0)
    done, stopped = 0, []
    with signals_between_steps() as pending:
        for step in bar:
            if stack:
                loss, parts = stack.step(runs, step, dev, amp)
            else:
                r = runs[0]
                loss, part = optimizer_step(cfg, r.model, r.opt, r.train_objects, r.allowed, step, dev, amp,
                                            concept_weight(cfg, step, r.concept_from))
                parts = [part]
            sched.step()
            done, n = done + 1, step + 1
            if n == cfg.steps and not pending:
                break
            for r, part in zip(runs, parts):
                r.parts = part
            due = [r for r in runs if r.cfg.eval_every and n % r.cfg.eval_every == 0 and not pending]
            if stack and due:
                stack.copy_to(runs)
            for r in due:
                check_finite(r.cfg, r.model, n)
                seen = _evaluation(r, n, r.parts, on_eval)
                r.concept_from = concept_loss_onset(r.cfg, r.history)
            if due:
                bar.set_postfix(val_obj2=f"{seen.get('val_object_2', seen.get('val_object_1', 0)):.2f}",
                                loss=f"{float(loss.detach()):.3f}")
            stopping = bool(pending) or (stop_after is not None and done >= stop_after)
            saving = any(checkpoints) and (stopping or bool(cfg.checkpoint_every and n % cfg.checkpoint_every == 0))
            if stack and saving and not due:
                stack.copy_to(runs)
            for r, ckpt in zip(runs, checkpoints):
                if saving and ckpt is not None:
                    save_checkpoint(ckpt, r.model, r.opt, n, r.history, r.clock, config_hash(r.cfg.to_dict()))
            if stopping:
                stopped = list(pending)
                break
    bar.close()
    if stack:
        stack.copy_to(runs)
    if stopped or (stop_after is not None and done >= stop_after and done + start < cfg.steps):
        deliver(stopped)  # Ctrl-C or SIGTERM during a step: raised here, after its last checkpoint
        return [r.output({}, {}, done) for r in runs]
    for r in runs:
        check_finite(r.cfg, r.model, cfg.steps)
    return [r.output(_evaluation(r, cfg.steps, {}, on_eval), bag_of_concepts_baseline(r.cfg, r.es), done)
            for r in runs]


def _evaluation(run: Run, step: int, parts: dict[str, float],
                on_eval: Callable[[int, dict[str, float]], None] | None) -> dict[str, float]:
    """Evaluate ``run`` at ``step``, append to its history (with loss ``parts``), call ``on_eval``; the
    metrics."""
    metrics = evaluate(run.cfg, run.model, run.es)
    run.history.append({"step": step, **metrics, **parts})
    if on_eval:
        on_eval(step, metrics)
    return metrics


@torch.no_grad()
def object_query_additivity(cfg: TrainConfig, model: DualEncoder) -> float:
    """R² of an additive (bag-of-concepts) fit to the normalised query embeddings of all V**C objects."""
    from bindcore.analysis.metrics import additive_r2

    space = cfg.space
    device = next(model.parameters()).device
    ids = torch.arange(space.n_objects, device=device)
    emb = F.normalize(embed_in_chunks(model.query.eval(), space.object_query_tokens(ids)), dim=1)
    return additive_r2(emb.cpu(), space.object_values(ids).cpu(), space.n_values)
