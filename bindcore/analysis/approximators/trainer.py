"""Training approximators: protocols, selection on validation scenes (never on held-out
objects), and the stacked trainer, whose models each follow the trajectory they would
alone (init and sampling by their own seed; padding never reaches an output)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import torch

from bindcore.runtime import format_duration, progress_bar, resolve_device

from ..inputs import check_embeddings
from ..probes import (
    BindingData,
    ObjectLevelSplit,
    concept_recognition,
    functional_binding,
    object_recognition,
)
from .families import FAMILIES, PRODUCT_FAMILIES, PRODUCT_INITS, StackedApproximator, global_codes


# ---------------------------------------------------------------------------------
# protocols
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Protocol:
    """How approximators are trained (MSE, Adam); ``batch_size=None``: full batch, else
    minibatches drawn with replacement. ``patience``: a model stops once its validation MSE
    has not improved (by :data:`PLATEAU_DELTA`, relative) over that many evaluations
    (:func:`plateau_step`), else at ``steps``, the cap; its evaluations then read the MSEs alone,
    and every metric is computed at its best and its last step; None: every model runs ``steps``
    and every evaluation reads every metric."""

    name: str
    steps: int
    lrs: tuple[float, ...]
    batch_size: int | None
    eval_every: int
    patience: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.eval_every < 1:
            raise ValueError(f"eval_every must be >= 1, got {self.eval_every}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 or None, got {self.batch_size}")
        if not self.lrs or any(not (0 < lr < math.inf) for lr in self.lrs):
            raise ValueError(f"lrs must be positive and finite, got {self.lrs}")
        if self.patience is not None and self.patience < 1:
            raise ValueError(f"patience must be >= 1 or None, got {self.patience}")

    def key(self) -> dict[str, Any]:
        """The protocol as a stored sweep's key reads it (``patience`` only when set, so that the
        keys of sweeps run to a fixed budget stay as they were)."""
        out = asdict(self)
        if self.patience is None:
            del out["patience"]
        return out

    def __str__(self) -> str:
        """The protocol in words, as a page prints it."""
        batch = "full batch" if self.batch_size is None else f"batch {self.batch_size:,}"
        lrs = ", ".join(f"{lr:g}" for lr in self.lrs)
        steps = (f"{self.steps:,} steps" if self.patience is None else
                 f"until validation MSE stops improving ({self.patience} evaluations without a "
                 f"{PLATEAU_DELTA:.1%} gain) or {self.steps:,} steps")
        return (f"Adam, {steps}, {batch}, learning rate{'s' if len(self.lrs) > 1 else ''} {lrs} "
                f"(chosen per fit on validation scenes), evaluated every "
                f"{'step' if self.eval_every == 1 else f'{self.eval_every:,} steps'} "
                f"(based on the {self.name!r} protocol)")


# the least relative fall of the validation MSE that counts as an improvement (``Protocol.patience``)
PLATEAU_DELTA = 0.001


def plateau_step(curve: Sequence[dict[str, float]], patience: int, delta: float = PLATEAU_DELTA) -> int | None:
    """The step at which a model's validation MSE (``curve``: its evaluations, in order) has not
    fallen below ``(1 - delta)`` times its best so far for ``patience`` evaluations in a row:
    where it stops; None while it still improves (a curve still falling never stops)."""
    best, since = math.inf, 0
    for point in curve:
        v = point["val_mse"]
        if not math.isfinite(v):
            return None  # no validation scenes: nothing to stop on
        if v < best * (1 - delta) or best == math.inf:
            best, since = v, 0
        else:
            since += 1
            if since >= patience:
                return int(point["step"])
    return None


PROTOCOLS = {
    # reference-spec §8.4: full batch, 4,000 steps, Adam, lr 1e-2, constant (the cosine
    # scheduler is created but never stepped); evaluation every 100 steps
    "release": Protocol("release", steps=4000, lrs=(1e-2,), batch_size=None, eval_every=100),
    # paper Appendix D: Adam, lr in {1e-2, 1e-3, 1e-4}, batch 4096, 10,000 steps
    "paper": Protocol("paper", steps=10_000, lrs=(1e-2, 1e-3, 1e-4), batch_size=4096, eval_every=500),
}


def get_protocol(protocol: str | Protocol, **overrides: Any) -> Protocol:
    """A preset name or a :class:`Protocol`, with the non-None ``overrides`` applied."""
    if isinstance(protocol, str):
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, got {protocol!r}")
        protocol = PROTOCOLS[protocol]
    changes = {k: v for k, v in overrides.items() if v is not None}
    if "lrs" in changes:
        changes["lrs"] = tuple(float(x) for x in changes["lrs"])
    unknown = set(changes) - {"steps", "lrs", "batch_size", "eval_every", "patience"}
    if unknown:
        raise ValueError(f"unknown protocol field(s) {sorted(unknown)}")
    return replace(protocol, **changes)


# ---------------------------------------------------------------------------------
# model specs, planning stacks
# ---------------------------------------------------------------------------------
@dataclass
class ModelSpec:
    """One approximator to train (``width`` ignored by ``additive``; ``tags`` copied into the record)."""

    family: str
    width: int
    lr: float
    seed: int
    fit_index: np.ndarray
    val_index: np.ndarray
    split: ObjectLevelSplit
    fraction: float | None = None
    tags: dict[str, Any] = field(default_factory=dict)
    product_init: str = "one_plus"

    def __post_init__(self) -> None:
        if self.product_init not in PRODUCT_INITS:
            raise ValueError(f"product_init must be one of {PRODUCT_INITS}, got {self.product_init!r}")
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")
        if self.family == "additive":
            self.width = 0
        elif self.width < 1:
            raise ValueError(f"width must be >= 1 for {self.family}, got {self.width}")
        if not 0 < self.lr < math.inf:
            raise ValueError(f"lr must be positive and finite, got {self.lr}")
        self.fit_index = np.asarray(self.fit_index, dtype=np.int64)
        self.val_index = np.asarray(self.val_index, dtype=np.int64)
        if len(self.fit_index) == 0:
            raise ValueError("fit_index is empty: the split leaves no fitting scenes")
        allowed = set(self.split.train.tolist())
        if not set(self.fit_index.tolist()) <= allowed or not set(self.val_index.tolist()) <= allowed:
            raise ValueError("fit_index and val_index must be training scenes of the split")
        if np.intersect1d(self.fit_index, self.val_index).size:
            raise ValueError("fit_index and val_index overlap")


def _rows(spec: ModelSpec, batch_size: int | None) -> int:
    n = len(spec.fit_index)
    return n if batch_size is None else min(batch_size, n)


def step_work(width: int, rows: int, dim: int, n_slots: int) -> float:
    """Rough flops of one training step of one model, for planning stacks."""
    return 6.0 * rows * (width * (dim + n_slots) + n_slots * dim)


STACK_OVERHEAD_WORK = 5e7  # a stack's fixed cost per step, in step_work units (~1 ms on 2 CPU cores)


def plan_stacks(specs: Sequence[ModelSpec], batch_size: int | None, dim: int, n_slots: int,
                pad_work: float = STACK_OVERHEAD_WORK) -> list[list[int]]:
    """Spec indices grouped into stacks of one family: a model joins the current stack while
    the padding it adds costs at most ``pad_work`` per step (``inf``: one stack per family;
    ``0``: identical shapes only)."""
    by_family: dict[str, list[int]] = {}
    for i, s in enumerate(specs):
        by_family.setdefault(s.family, []).append(i)

    def work(members: list[int]) -> float:
        W = max(specs[j].width for j in members)
        B = max(_rows(specs[j], batch_size) for j in members)
        return len(members) * step_work(W, B, dim, n_slots)

    stacks = []
    for fam in FAMILIES:
        idx = sorted(by_family.get(fam, []), key=lambda i: (specs[i].width, _rows(specs[i], batch_size), i))
        cur: list[int] = []
        for i in idx:
            if cur and work(cur + [i]) - work(cur) - work([i]) > pad_work:
                stacks.append(cur)
                cur = [i]
            else:
                cur = cur + [i]
        if cur:
            stacks.append(cur)
    return stacks


# ---------------------------------------------------------------------------------
# the trainer
# ---------------------------------------------------------------------------------
class _Stack:
    """One stacked module with its models' data and samplers."""

    def __init__(self, data: BindingData, specs: list[ModelSpec], protocol: Protocol, codes: torch.Tensor,
                 targets: torch.Tensor, device: torch.device):
        self.specs = specs
        self.device = device
        self.batch_size = protocol.batch_size
        M = len(specs)
        self.rows = [_rows(s, protocol.batch_size) for s in specs]
        self.B = max(self.rows)
        self.sampled = [protocol.batch_size is not None and len(s.fit_index) > protocol.batch_size for s in specs]
        self.fit = [torch.as_tensor(s.fit_index, device=device) for s in specs]
        bias = np.stack([data.embeddings[s.fit_index].astype(np.float64).mean(0) for s in specs])
        self.model = StackedApproximator(specs[0].family, data.values_per_concept, data.dim,
                                         [s.width for s in specs], [s.seed for s in specs], bias, device,
                                         [s.product_init for s in specs])
        weights = torch.zeros(M, self.B, device=device)
        # padded rows repeat the model's first fitting scene (weight 0): no other scene's
        # target is ever read, not even multiplied by zero (a NaN would survive that)
        index = torch.stack([f[:1].expand(self.B) for f in self.fit]).clone()
        for m, n in enumerate(self.rows):
            weights[m, :n] = 1.0 / (n * data.dim)
            if not self.sampled[m]:
                index[m, :n] = self.fit[m]
        self.weights, self.index = weights, index
        self.generators = [torch.Generator().manual_seed(int(s.seed) * 1_000_003 + 7) for s in specs]
        self.codes_all, self.targets_all = codes, targets
        self._fixed = None if any(self.sampled) else (codes[index], targets[index])

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._fixed is not None:
            return self._fixed
        index = self.index.clone()
        for m, n in enumerate(self.rows):
            if self.sampled[m]:
                pick = torch.randint(len(self.fit[m]), (n,), generator=self.generators[m]).to(self.device)
                index[m, :n] = self.fit[m][pick]
        return self.codes_all[index], self.targets_all[index]

    def loss(self) -> torch.Tensor:
        codes, targets = self.batch()
        err = (self.model(codes) - targets).square().sum(-1)
        return (err * self.weights).sum()

    @torch.no_grad()
    def predict_all(self, chunk: int = 8192) -> np.ndarray:
        """``[M, N, d]`` predictions for every scene of the data."""
        M, N = len(self.specs), len(self.codes_all)
        outs = []
        for s in range(0, N, chunk):
            c = self.codes_all[s:s + chunk].unsqueeze(0).expand(M, -1, -1)
            outs.append(self.model(c).float().cpu())
        return torch.cat(outs, 1).numpy()


class _SliceAdam:
    """One fused Adam over per-model slices of stacked parameters, a group per learning rate
    (elementwise, so each slice gets the update it would get alone)."""

    def __init__(self, stacks: list[_Stack], betas=(0.9, 0.999), eps: float = 1e-8):
        self.pairs: list[tuple[torch.nn.Parameter, int, torch.Tensor]] = []
        groups: dict[float, list[torch.Tensor]] = {}
        for st in stacks:
            for p in st.model.parameters():
                for m, spec in enumerate(st.specs):
                    leaf = p.detach()[m].requires_grad_(True)
                    self.pairs.append((p, m, leaf))
                    groups.setdefault(float(spec.lr), []).append(leaf)
        dev = stacks[0].device
        fused = dev.type in ("cpu", "cuda")
        self.opt = torch.optim.Adam([{"params": v, "lr": lr} for lr, v in groups.items()], betas=betas, eps=eps,
                                    fused=fused)

    def step(self, frozen: Any = ()) -> None:
        """One Adam step; the slices in ``frozen`` (``(id(stacked parameter), model index)`` pairs)
        keep their weights."""
        for p, m, leaf in self.pairs:
            leaf.grad = None if (id(p), m) in frozen else p.grad[m]  # Adam skips a slice without a gradient
        self.opt.step()
        for p, _, leaf in self.pairs:
            leaf.grad = None
            p.grad = None


def _mse(data: BindingData, spec: ModelSpec, pred: np.ndarray) -> dict[str, float]:
    """The MSE on the fitting and the validation scenes (NaN without validation scenes)."""
    y = data.embeddings
    out = {"fit_mse": float(((pred[spec.fit_index] - y[spec.fit_index]) ** 2).mean())}
    out["val_mse"] = float(((pred[spec.val_index] - y[spec.val_index]) ** 2).mean()) if len(spec.val_index) \
        else float("nan")
    return out


def _metrics(data: BindingData, spec: ModelSpec, pred: np.ndarray) -> dict[str, float]:
    out = {**functional_binding(data, pred, spec.split), **_mse(data, spec, pred)}
    if len(spec.val_index):
        out["val_concept"] = concept_recognition(data, pred, spec.val_index)
        out["val_object"] = object_recognition(data, pred, spec.val_index)
    else:
        out["val_mse"] = out["val_concept"] = out["val_object"] = float("nan")
    return out


# steps timed before the cost line of a sweep (:func:`train_models` with ``estimate``)
ESTIMATE_STEPS = 5


def _build(data: BindingData, specs: list[ModelSpec], protocol: Protocol, device: torch.device,
           pad_work: float) -> tuple[list[list[int]], list[_Stack], _SliceAdam]:
    """(plan, stacks, optimizer) of one stacked run of ``specs``."""
    codes = torch.as_tensor(global_codes(data.slot_codes(), data.values_per_concept), device=device)
    targets = torch.as_tensor(data.embeddings, device=device)
    plan = plan_stacks(specs, protocol.batch_size, data.dim, 2 * data.n_concepts, pad_work)
    stacks = [_Stack(data, [specs[i] for i in group], protocol, codes, targets, device) for group in plan]
    return plan, stacks, _SliceAdam(stacks)


def _eval_steps(protocol: Protocol) -> set[int]:
    """The steps a run to the cap evaluates at (step 0 and the last included)."""
    return set(range(0, protocol.steps + 1, protocol.eval_every)) | {protocol.steps}


def _cap_seconds(protocol: Protocol, per_step: float, per_evaluation: float, per_full_evaluation: float) -> float:
    """A run's seconds at the step cap: its steps, its evaluations and, with ``patience``, the two
    evaluations of every metric once it ends (:func:`_train_group`)."""
    return (per_step * protocol.steps + per_evaluation * len(_eval_steps(protocol))
            + (2 * per_full_evaluation if protocol.patience is not None else 0.0))


def time_stacks(data: BindingData, specs: Sequence[ModelSpec], protocol: str | Protocol = "paper",
                device: str | torch.device | None = None, pad_work: float = STACK_OVERHEAD_WORK,
                steps: int = ESTIMATE_STEPS) -> dict[str, float]:
    """One stacked run of ``specs`` timed, not trained through: ``steps`` steps and one evaluation
    of each kind, on the wall clock and again on the process's CPU clock (``*_cpu``) -> seconds a
    step, seconds an evaluation (with ``patience``: one reading MSEs only, as training makes them),
    and the run's seconds at the step cap (with ``patience`` an upper bound, with the two full
    evaluations at its end; on a GPU read the wall clock)."""
    proto = get_protocol(protocol)
    dev = resolve_device(str(device) if device is not None else None)
    specs = list(specs)
    _, stacks, opt = _build(data, specs, proto, dev, pad_work)

    def step() -> None:
        sum(st.loss() for st in stacks).backward()
        opt.step()

    def evaluate(metrics: Any) -> None:
        for st in stacks:
            preds = st.predict_all()
            for m, spec in enumerate(st.specs):
                metrics(data, spec, preds[m])

    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    light = proto.patience is not None  # evaluations read MSEs; two full ones at the end (_train_group)
    step(), evaluate(_mse if light else _metrics)  # warm-up
    out: dict[str, float] = {"approximators": len(specs), "stacks": len(stacks),
                             "evaluations": len(_eval_steps(proto))}
    for clock, name in ((time.perf_counter, ""), (time.process_time, "_cpu")):  # wall, then CPU time
        t = [clock()]
        for _ in range(steps):
            step()
        for metrics in (_mse, _metrics):
            sync()
            t.append(clock())
            evaluate(metrics)
        sync()
        t.append(clock())
        per_step, light_eval, full_eval = (t[1] - t[0]) / steps, t[2] - t[1], t[3] - t[2]
        out[f"per_step{name}"], out[f"per_evaluation{name}"] = per_step, light_eval if light else full_eval
        out[f"per_full_evaluation{name}"] = full_eval
        out[f"at_cap{name}"] = _cap_seconds(proto, per_step, out[f"per_evaluation{name}"], full_eval)
    return out


def _train_group(data: BindingData, specs: list[ModelSpec], protocol: Protocol, device: torch.device,
                 pad_work: float, progress: bool, desc: str,
                 keep_predictions: bool, estimate: bool = False) -> tuple[list[dict[str, Any]], list[np.ndarray | None]]:
    plan, stacks, opt = _build(data, specs, protocol, device, pad_work)
    curves: list[list[dict]] = [[] for _ in specs]
    order = [i for group in plan for i in group]
    eval_steps = _eval_steps(protocol)

    stopped: set[int] = set()  # models (indices into specs) past their plateau (Protocol.patience)
    frozen: set[tuple[int, int]] = set()  # their slices, which the optimizer leaves as they are
    # with patience, evaluations read the MSEs only, and each model's slices are kept at its lowest
    # validation MSE so far: the full metrics are computed once training ends, at its best and last step
    light = protocol.patience is not None
    best: dict[int, dict[int, torch.Tensor]] = {}  # model -> its slices (by id of the stacked parameter)

    def evaluate(step: int) -> None:
        k = 0
        for st in stacks:
            preds = st.predict_all()
            for m, spec in enumerate(st.specs):
                i = order[k]
                k += 1
                if i in stopped:
                    continue
                point = (_mse if light else _metrics)(data, spec, preds[m])
                curves[i].append({"step": step, **point})
                if not light:
                    continue
                if len(curves[i]) == 1 or point["val_mse"] < min(c["val_mse"] for c in curves[i][:-1]):
                    best[i] = {id(p): p.detach()[m].clone() for p in st.model.parameters()}
                if plateau_step(curves[i], protocol.patience) is not None:
                    stopped.add(i)
                    frozen.update((id(p), m) for p in st.model.parameters())

    def full_metrics() -> None:
        """Each model's last and best evaluation with every metric (its weights at those steps)."""
        k = 0
        for st in stacks:
            params = list(st.model.parameters())
            last, kept = st.predict_all(), [p.detach().clone() for p in params]
            with torch.no_grad():
                for m in range(len(st.specs)):
                    for p in params:
                        p[m] = best[order[k + m]][id(p)]
                at_best = st.predict_all()
                for p, v in zip(params, kept):
                    p.copy_(v)
            for m, spec in enumerate(st.specs):
                curve = curves[order[k]]
                curve[-1] = {"step": curve[-1]["step"], **_metrics(data, spec, last[m])}
                if len(spec.val_index):
                    j = min(range(len(curve)), key=lambda n: (curve[n]["val_mse"], curve[n]["step"]))
                    curve[j] = {"step": curve[j]["step"], **_metrics(data, spec, at_best[m])}
                k += 1

    t_eval = time.perf_counter()
    evaluate(0)
    t_eval = time.perf_counter() - t_eval
    bar = progress_bar(range(1, protocol.steps + 1), enabled=progress, desc=desc, leave=False)
    t_steps, timed = time.perf_counter(), min(ESTIMATE_STEPS, protocol.steps)
    for step in bar:
        if len(stopped) == len(specs):
            break
        loss = sum(st.loss() for st in stacks)
        loss.backward()
        opt.step(frozen)
        if estimate and step == timed:
            per_step = (time.perf_counter() - t_steps) / timed
            total = _cap_seconds(protocol, per_step, t_eval, 0.0)  # a full evaluation is not timed here
            untimed = "; the 2 full evaluations at the end not timed" if light else ""
            print(f"cost: {len(specs)} approximator(s) in {len(stacks)} stack(s), {protocol.steps:,} steps, "
                  f"{len(eval_steps)} evaluations; about {format_duration(total)} on {device} "
                  f"(timed: {1e3 * per_step:.1f} ms a step, {t_eval:.2f} s an evaluation{untimed})", flush=True)
        if step in eval_steps:
            evaluate(step)
            bar.set_postfix(loss=f"{float(loss.detach()) / len(specs):.4g}")
    bar.close()
    if light:
        full_metrics()
    finals: list[np.ndarray | None] = [None] * len(specs)
    if keep_predictions:
        k = 0
        for st in stacks:
            preds = st.predict_all()
            for m in range(len(st.specs)):
                finals[order[k]] = preds[m]
                k += 1
    info = [{} for _ in specs]
    k = 0
    for st in stacks:
        for _ in st.specs:
            info[order[k]] = {"stack_size": len(st.specs), "padded_width": max(st.model.widths), "padded_rows": st.B}
            k += 1
    records = []
    for i, (curve, extra) in enumerate(zip(curves, info)):
        if protocol.patience is not None:  # where it stopped and why
            extra.update(stop="plateau" if i in stopped else "cap", steps_run=curve[-1]["step"])
        records.append({"curve": curve, **extra})
    return records, finals


def _record(spec: ModelSpec, protocol: Protocol, curve: list[dict], extra: dict) -> dict[str, Any]:
    final = curve[-1]
    has_val = len(spec.val_index) > 0
    if has_val:
        best = min(curve, key=lambda r: (r["val_mse"], r["step"]))
    else:
        best = final
    rec: dict[str, Any] = {
        "family": spec.family, "width": spec.width if spec.family != "additive" else None, "lr": spec.lr,
        "seed": spec.seed, "fraction": spec.fraction, "protocol": protocol.name, "steps": protocol.steps,
        "batch_size": protocol.batch_size, "n_fit": len(spec.fit_index), "n_val": len(spec.val_index),
        "n_train_objects": len(spec.split.train_objects), "n_heldout": len(spec.split.heldout),
        "final_step": final["step"], "selected_step": best["step"],
        "selected_by": "val_mse" if has_val else "final (no validation scenes)",
    }
    if spec.family in PRODUCT_FAMILIES:
        rec["product_init"] = spec.product_init
    for k, v in final.items():
        if k != "step":
            rec[f"final_{k}"] = v
    for k, v in best.items():
        if k != "step":
            rec[f"selected_{k}"] = v
    rec.update(spec.tags)
    rec.update(extra)
    return rec


def train_models(data: BindingData, specs: Sequence[ModelSpec], protocol: str | Protocol = "release", *,
                 steps: int | None = None, eval_every: int | None = None, batch_size: int | None = None,
                 device: str | torch.device | None = None, stacked: bool = True, pad_work: float = STACK_OVERHEAD_WORK,
                 keep_predictions: bool = False, progress: bool = True, estimate: bool = False) -> list[dict[str, Any]]:
    """One record per spec, in order: the spec's fields, ``final_*`` and ``selected_*`` (lowest
    ``val_mse``) metrics, ``curve`` (step 0 = init), ``seconds`` (wall time per model) and,
    with ``keep_predictions``, ``predictions`` ``[N, d]``. ``stacked=False``: one model at a
    time (the reference). ``estimate``: print the run's cost after :data:`ESTIMATE_STEPS`."""
    proto = get_protocol(protocol, steps=steps, eval_every=eval_every)
    if batch_size is not None:
        proto = replace(proto, batch_size=batch_size)
    specs = list(specs)
    if not specs:
        return []
    check_fit_rows(data, np.concatenate([s.fit_index for s in specs]))
    dev = resolve_device(str(device) if device is not None else None)
    t0 = time.perf_counter()
    if stacked:
        raw, finals = _train_group(data, specs, proto, dev, pad_work, progress,
                                   f"{proto.name}: {len(specs)} models", keep_predictions, estimate)
    else:
        raw, finals = [], []
        for i, spec in enumerate(specs):
            r, f = _train_group(data, [spec], proto, dev, pad_work, progress,
                                f"{proto.name}: model {i + 1}/{len(specs)}", keep_predictions)
            raw += r
            finals += f
    seconds = time.perf_counter() - t0
    out = []
    for spec, r, pred in zip(specs, raw, finals):
        extra = {k: v for k, v in r.items() if k != "curve"}
        extra.update(seconds=seconds / len(specs), trainer_seconds=seconds, trainer_models=len(specs),
                     stacked=stacked)
        rec = _record(spec, proto, r["curve"], extra)
        rec["curve"] = r["curve"]
        if keep_predictions:
            rec["predictions"] = pred
        out.append(rec)
    return out


def check_fit_rows(data: BindingData, rows: np.ndarray) -> None:
    """``ValueError`` unless the embeddings of the scenes ``rows`` a fit reads are finite."""
    check_embeddings(data.embeddings, f"{data.name or 'binding data'}: the embeddings of the fitting scenes",
                     rows=np.unique(rows), dtype=np.float32)


def default_width(family: str, data: BindingData) -> int:
    """MLP 1024 and product families d (the release's), additive 0."""
    if family == "mlp":
        return 1024
    return 0 if family == "additive" else data.dim


def make_specs(data: BindingData, split: ObjectLevelSplit, family: str, widths: Iterable[int] | None = None,
               lrs: Iterable[float] = (1e-2,), seeds: Iterable[int] = (0,), val_fraction: float = 0.2,
               val_seed: int = 0, fraction: float | None = None, tags: dict[str, Any] | None = None,
               product_init: str = "one_plus") -> list[ModelSpec]:
    """Specs for ``widths x lrs x seeds`` of one family, fitting on the split's training scenes
    less a ``val_fraction`` validation part."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must lie in [0, 1), got {val_fraction}")
    if family == "additive":
        widths = [0]
    elif widths is None:
        widths = [default_width(family, data)]
    if val_fraction > 0:
        fit, val = split.validation(val_fraction, seed=val_seed)
    else:
        fit, val = split.train, split.train[:0]
    specs = [ModelSpec(family, int(w), float(lr), int(s), fit, val, split, fraction, dict(tags or {}), product_init)
             for w in widths for lr in lrs for s in seeds]
    if not specs:
        raise ValueError(f"widths, lrs and seeds must each hold at least one value, got {list(widths)}, "
                         f"{list(lrs)}, {list(seeds)}")
    return specs
