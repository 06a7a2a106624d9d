# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # §5.2 Binding generalization in controlled transformers
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bindcore-book/binding-concepts/blob/main/notebooks/05_2_binding_generalization.ipynb)
#
# **The paper's claim.** CLIP-like encoders fail to bind concepts to objects across
# modalities, but this is not a law of nature. Dual encoders trained from scratch on
# synthetic multi-object scenes learn to recognise objects they have *never seen*, once
# training covers a large enough share of the object space. Concept recognition
# generalizes at lower coverage than binding, held-out object recognition rises sharply
# with coverage and ends far above what a bag of concepts can do, and larger object
# spaces need a smaller *fraction* of their objects in training.
#
# **What this chapter does.** It trains the dual encoder of appendix B (two independent
# transformers, one for scenes and one for queries, compared by cosine similarity) on
# scenes of one or two objects built only from training objects, and measures concept
# and object recognition on scenes made only of held-out objects. The held-out objects
# are divided in two by a seed: **validation** objects, which any choice (a recipe, a
# number of steps) may read, and **test** objects, read once for the record. Binding is
# read from the swap-pair test of §3 (a held-out scene and its twin with one concept's
# values swapped, both recognised: any bag of concepts scores zero), with the
# bag-of-concepts floor and ceiling of §3 on the same scenes.
#
# **Two protocols.** Our headline protocol ranks each scene's objects against the *full*
# vocabulary of $V^C$ objects. The paper's numbers come from the released code's test
# protocol (batches of held-out scenes of one or two objects; the candidates of a
# batch are a capped random subset of its distinct objects plus one attribute-swap
# negative per two-object scene; one- and two-object scenes pooled), which is easier. Every
# evaluation here reports both (`release_*` columns), each with the bag of concepts
# under the same protocol, so the paper's number can be set beside the matching one.
#
# Two sets of runs: this build's own small sweep (profile below), and the `scale` sweep
# up to the paper's smaller object space ({glue:text}`paper_space` objects; its larger
# one, {glue:text}`paper_large_space` objects, is not run here), read from the records
# under `published/` that `bindcore sweep --profile scale` made.

# %% tags=["hide-input"]
import subprocess
import sys

if "google.colab" in sys.modules:  # install bindcore on Colab only, keeping Colab's own torch
    from importlib.metadata import version

    spec = "bindcore @ git+https://github.com/bindcore-book/binding-concepts@main"
    keep = [f"{p}=={version(p)}" for p in ("torch", "torchvision")]  # as installed
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec, *keep], check=True)

# %% tags=["parameters"]
profile = "quick"
sizes = [[2, 8], [2, 10]]  # list of [C, V] object spaces, e.g. [[2, 10], [2, 20]]
coverages = [0.2, 0.4, 0.6, 0.8]  # fractions of the object space used for training
steps = 8000  # training steps per run (the profile's recipe)
eval_scenes = 1024  # held-out scenes per evaluation of each run (the recipe's)
seeds = [0, 1, 2]  # training seeds (every claim about training rests on all of them)
ablations = True  # also run the one-phase and release-negatives variants
show_scale = True  # show the scale sweep's stored records (published/)
workers = None  # parallel CPU runs (default: number of cores; 1 on a GPU)
stack = 3  # runs of one object space and recipe trained together on a GPU (1, or a CPU: each alone)
executor = None  # where the runs execute: "local" (default), "ray" or "ray:<address>" (a Ray cluster)
device = None  # "cuda" or "cpu" (default: cuda when present)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import pandas as pd
import torch
from IPython.display import Markdown

import bindcore
from bindcore import resolve_device
from bindcore.analysis import (
    ABLATION_LABELS,
    ABLATION_NAMES,
    ONE_PHASE,
    RELEASE_NEGATIVES,
    ablation_configs,
    ablation_sentence,
    ablation_summary,
    generalization_configs,
    generalization_summary,
    protocol_comparison,
    results_table,
    seed_summary,
)
from bindcore.book import glue, per_size, show_claims, show_source, start_chapter
from bindcore.controlled import (
    BINDS_AT,
    COMPARISON_SIZES,
    EARLIER_DEPTH,
    FIT_MARGIN,
    FIT_TARGET,
    MIN_TEST_OBJECTS,
    PLAN_DEPTH,
    SCALE_BUDGETS,
    SCALE_CAPS,
    SCALE_SEEDS,
    SCALE_STEPS,
    STORE_KIND,
    DualEncoder,
    TrainConfig,
    comparison_depth,
    depth_fit,
    depth_label,
    fitted,
    lever_screen,
    load_model,
    object_query_additivity,
    planned_coverages,
    read_attempts,
    recipe_table,
    sample_scenes,
    train,
)
from bindcore.experiments import (
    ResultStore,
    chapter_recipe,
    describe_scale_records,
    has_weights,
    note_stored,
    run_sweep,
    scale_records,
)
from bindcore.figures import PAGE_WIDTH_IN, legend_below, plot_binding_curves, plot_scale
from bindcore.paper import PAPER_CLAIMS_5_2, PAPER_COVERAGE_ONSET, PAPER_OBJECT_SPACES
from bindcore.verdicts import (
    RULE_CHANGES,
    claim_outcomes,
    claim_support,
    claims_table,
    closing_sentence,
    generalization_claim_rules,
    transition_table,
)

P = start_chapter("binding_generalization", globals())
base = chapter_recipe(profile, P["steps"], P["eval_scenes"])
dev = resolve_device(device)
print(f"bindcore {bindcore.__version__}; profile {profile!r}; device {dev}; torch threads {torch.get_num_threads()}")
print(f"object spaces (C, V): {P['sizes']}; coverages: {P['coverages']}; seeds: {P['seeds']}; "
      f"{base.steps} steps per run")

# %% tags=["remove-cell"]
glue("transition", BINDS_AT, "g")
glue("paper_onset", PAPER_COVERAGE_ONSET[2_500], "g")
glue("paper_space", f"{PAPER_OBJECT_SPACES[0]:,}")
glue("paper_large_space", f"{PAPER_OBJECT_SPACES[1]:,}")
largest_space = max(v ** c for c, v in SCALE_CAPS)  # the scale plan's largest |O|
glue("largest_scale_space", f"{largest_space:,}")
glue("concept_weight", base.concept_loss_weight, "g")

# %% [markdown]
# ## The training recipe
#
# The `paper` profile uses the released code's recipe (its fields are listed below
# against this run's). That needs hours per run on a CPU, and a short CPU run of it stays
# at the bag-of-concepts level. The `quick` profile keeps the science — the same tokens,
# two independent transformer encoders pooled at EOS, cosine similarity, the
# multi-positive soft-target softmax loss over concept and object queries with
# attribute-swap hard negatives, the strict metric, and no held-out object anywhere in
# training — and changes the optimisation so that each run trains within minutes on a
# laptop CPU; whether a run binds is what its swap pairs below say, not what the recipe
# promises. The fields in which this run's recipe differs from the paper's:

# %% tags=["hide-input"]
recipe_table(profile)

# %% [markdown]
# The quick recipe also delays the concept loss. Object queries alone train until the
# model solves the training task well (training scenes recognised among the training
# objects at the rate `concept_loss_trigger`, checked at every evaluation, so no
# held-out object is involved); then the concept loss joins at full weight. The reason
# to try this is the argument of §3: a concept objective rewards scene and query
# embeddings that are sums of one vector per concept value, and a sum cannot tell
# {(a, x), (b, y)} from {(a, y), (b, x)}. Whether the delay matters is measured by the
# one-phase ablation at the end of this chapter.

# %% [markdown]
# ## The model and the objective (appendix B)
#
# Two encoders of the same shape, one for scenes and one for queries, each a small
# transformer over the token sequences of §3, read at the EOS token. Here is the model as
# one would write it to read it; `bindcore sync` exports these cells into the library
# (`bindcore/controlled/reference.py`), where the tests hold the fast encoder that every
# run trains (`bindcore.controlled.models`) to it.

# %% tags=["export"]
# export: bindcore/controlled/reference.py
# The reference dual encoder of appendix B.2, as the §5.2 chapter defines it.
import math

import torch
import torch.nn.functional as F
from torch import nn

from bindcore.controlled.models import EncoderConfig, sinusoidal_positions


class ReferenceBlock(nn.Module):
    """One pre-LayerNorm transformer layer: x + attention(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)  # queries, keys and values in one matrix
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """x ``[B, L, D]``; keep ``[B, L]``: False at PAD tokens, which no position attends to."""
        b, l, d = x.shape
        h = d // self.n_heads
        q, k, v = (t.view(b, l, self.n_heads, h).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(d, dim=-1))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(h)  # [B, heads, L, L]
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        attended = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, l, d)
        x = x + self.proj(attended)
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class ReferenceEncoder(nn.Module):
    """Tokens ``[B, L]`` (right-padded) -> ``[B, d_out]``: token embeddings plus fixed
    sinusoidal positions, the layers, the output at EOS (the last non-PAD token), a
    linear head."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.register_buffer("positions", sinusoidal_positions(cfg.max_len, cfg.d_model), persistent=False)
        self.blocks = nn.ModuleList(ReferenceBlock(cfg.d_model, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.head = nn.Linear(cfg.d_model, cfg.d_out)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        keep = tokens != self.cfg.pad_id
        x = self.embed(tokens) + self.positions[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x, keep)
        eos = keep.sum(dim=1) - 1
        return self.head(x[torch.arange(len(x)), eos])


class ReferenceDualEncoder(nn.Module):
    """A scene encoder, a query encoder of the same shape, and the learnable log-scale tau
    of the similarity (the logits are exp(tau) times the cosine, exp(tau) capped)."""

    def __init__(self, cfg: EncoderConfig, tau_init: float = 1.15) -> None:
        super().__init__()
        self.scene = ReferenceEncoder(cfg)
        self.query = ReferenceEncoder(cfg)
        self.tau = nn.Parameter(torch.tensor(float(tau_init)))

# %% [markdown]
# The runs train a faster encoder of the same parameters, which skips work whose result
# nothing reads and orders the rest for the hardware: on a CPU it packs the real tokens
# of a batch into one block (no PAD token is embedded, projected or fed forward), runs
# attention per group of sequences of equal length, computes the last layer at EOS only,
# and uses oneDNN's matrix kernels where the CPU has them
# (`bindcore.controlled.models`; on a GPU the padded form with the PAD keys masked). On a
# batch of this chapter's scenes and queries, with the same weights, it gives the
# reference's embeddings and gradients to float rounding. Over thousands of training
# steps such rounding differences grow, as they do between two kinds of CPU: a run
# retrained with another kernel lands within the spread of its seeds, not on the same
# digits.

# %%
fast = DualEncoder(base.encoder_config())
reference = ReferenceDualEncoder(base.encoder_config())
reference.load_state_dict(fast.state_dict())
batch = sample_scenes(base.split.train, 256, base.max_objects, torch.Generator().manual_seed(0))
inputs = {"scene": base.space.tokenize_scenes(batch), "query": base.space.object_query_tokens(batch[:, 0])}
for tower, tokens in inputs.items():
    a, b = getattr(fast, tower)(tokens), getattr(reference, tower)(tokens)
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    a.square().sum().backward()
    b.square().sum().backward()
# gradients: each parameter's within 1e-4 of the largest gradient (the key biases' true gradient is zero:
# a softmax ignores a shift shared by all keys, so theirs is float noise on both sides)
grads = [(name, p.grad, q.grad) for (name, p), q in zip(fast.named_parameters(), reference.parameters())
         if p.grad is not None]
scale = max(float(g.abs().max()) for _, _, g in grads)
worst = max((float((g - h).abs().max()) / scale, name) for name, g, h in grads)
assert worst[0] < 1e-4, f"gradients differ: {worst}"
print(f"fast == reference on {len(batch)} scenes and their queries: embeddings agree; the largest gradient "
      f"difference is {worst[0]:.1e} of the largest gradient ({worst[1]})")

# %% [markdown]
# One minibatch's loss (`bindcore.controlled.training`): the softmax over each scene's
# candidate queries with the scene's positives as a uniform target, for concept queries
# (weighted by the concept-loss weight of the recipe) and for object queries. The
# object candidates of a batch are its own objects plus random, near-miss and
# attribute-swap negatives, all kept only if they are in `allowed`: the training
# objects, so that no held-out object enters training (every object in the
# release-negatives ablation at the end of this chapter).
#
# The candidates, the loss and one minibatch's loss (both tasks through the query encoder
# in one call) are defined here; `bindcore sync` exports this cell into the library
# (`bindcore/controlled/objective.py`), where every run of the book draws its candidates
# and computes its loss with it.

# %% tags=["export"]
# export: bindcore/controlled/objective.py
# The §5.2 objective as the chapter defines it: a batch's object candidates, the soft-target loss, one minibatch's loss, one training step.
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from bindcore.controlled.models import DualEncoder, cosine_logits
from bindcore.controlled.scenes import SceneSpace, attribute_swaps, isin, object_labels, sample_scenes

if TYPE_CHECKING:
    from bindcore.controlled.training import TrainConfig


def capped(ids: torch.Tensor, cap: int, gen: torch.Generator) -> torch.Tensor:
    if len(ids) <= cap:
        return ids
    keep = torch.randperm(len(ids), generator=gen, device=gen.device)[:cap]
    return ids[keep]


def object_candidates(
    cfg: "TrainConfig", scenes: torch.Tensor, allowed: torch.Tensor, gen: torch.Generator
) -> torch.Tensor:
    """Object candidate ids for one batch (B.3).

    ``batch``: the distinct objects present (at most ``max_object_queries``), plus
    random negatives from the allowed list, near-miss negatives (a kept positive with
    one concept's value changed) and attribute-swap hard negatives; a near miss or swap
    that is not an allowed object is dropped. ``train_vocab``: every allowed object.
    """
    space = cfg.space
    if cfg.candidates == "train_vocab":
        return allowed
    present = scenes[scenes >= 0].unique()
    parts = [capped(present, cfg.max_object_queries, gen)]
    if cfg.random_negatives_per_positive:
        n = len(parts[0]) * cfg.random_negatives_per_positive
        parts.append(allowed[torch.randint(0, len(allowed), (n,), generator=gen, device=gen.device)])
    if cfg.near_miss_negatives_per_positive:
        misses = near_misses(space, parts[0], gen, cfg.near_miss_negatives_per_positive)
        parts.append(misses[isin(misses, allowed)])
    if cfg.swaps_per_scene:
        swaps = attribute_swaps(space, scenes, gen, cfg.swaps_per_scene)
        parts.append(swaps[isin(swaps, allowed)])
    return torch.cat(parts).unique()


def near_misses(space: SceneSpace, objects: torch.Tensor, gen: torch.Generator, per_object: int) -> torch.Tensor:
    """For each object, ``per_object`` objects that differ from it in exactly one concept
    (a random concept, shifted by a random non-zero amount mod V)."""
    vals = space.object_values(objects.repeat(per_object))
    rows = torch.arange(len(vals), device=vals.device)
    c = torch.randint(0, space.n_concepts, (len(vals),), generator=gen, device=gen.device)
    shift = torch.randint(1, space.n_values, (len(vals),), generator=gen, device=gen.device)
    vals[rows, c] = (vals[rows, c] + shift) % space.n_values
    return space.object_ids(vals)


def soft_target_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Scene -> query softmax cross-entropy with multi-hot targets normalised to sum 1,
    averaged over scenes with at least one positive."""
    y = labels.float()
    n_pos = y.sum(1)
    active = n_pos > 0
    if not bool(active.any()):
        return logits.sum() * 0.0
    target = y / n_pos.clamp(min=1.0)[:, None]
    per_scene = -(target * F.log_softmax(logits.float(), dim=1)).sum(1)
    return per_scene[active].mean()


@dataclass
class QuerySet:
    """Candidate queries for one task and their multi-hot labels against the scenes."""

    tokens: torch.Tensor  # [K, len]
    labels: torch.Tensor  # [B, K] bool


def concept_query_set(space: SceneSpace, scenes: torch.Tensor, cap: int, gen: torch.Generator) -> QuerySet:
    """Candidates: the distinct value tokens present in the batch (at most ``cap``)."""
    hot = space.concept_multi_hot(scenes)
    present = hot.any(0).nonzero().squeeze(1)
    cand = capped(present, cap, gen)
    return QuerySet(space.concept_query_tokens(cand), hot[:, cand])


def encode_queries(model: DualEncoder, space: SceneSpace, *token_sets: torch.Tensor) -> list[torch.Tensor]:
    """Several query sets through the query encoder in one call (right-padded to a
    common length; PAD keys are masked, so each embedding is unchanged)."""
    width = max(t.shape[1] for t in token_sets)
    padded = [F.pad(t, (0, width - t.shape[1]), value=space.pad) for t in token_sets]
    out = model.query(torch.cat(padded))
    return list(out.split([len(t) for t in token_sets]))


def train_loss(cfg: "TrainConfig", model: DualEncoder, scenes: torch.Tensor, allowed: torch.Tensor,
               gen: torch.Generator, w_c: float) -> tuple[torch.Tensor, dict[str, float]]:
    """One minibatch's loss: ``w_c`` x the concept loss + the object loss, each the
    soft-target loss of the scenes against their task's candidates."""
    space = cfg.space
    z = cfg.embed_training_scenes(model, scenes, gen)
    scale = model.logit_scale(cfg.logit_scale_cap)
    tasks: list[tuple[str, float, QuerySet]] = []
    if w_c > 0:
        tasks.append(("concept_loss", w_c, concept_query_set(space, scenes, cfg.max_concept_queries, gen)))
    if cfg.object_queries:
        cand = object_candidates(cfg, scenes, allowed, gen)
        tasks.append(("object_loss", 1.0, QuerySet(space.object_query_tokens(cand), object_labels(scenes, cand))))
    embeddings = encode_queries(model, space, *(qs.tokens for _, _, qs in tasks))
    total = z.new_zeros(())
    parts: dict[str, float] = {}
    for (name, weight, qs), e in zip(tasks, embeddings):
        loss = soft_target_loss(cosine_logits(z, e, scale), qs.labels)
        total = total + weight * loss
        parts[name] = float(loss.detach())
    return total, parts

# %% [markdown]
# One training step draws a minibatch of scenes from the training objects (with the
# sampler seeded by the run's seed and the step, so that a resumed run draws what it
# would have drawn; an optional curriculum first narrows the values a scene may use),
# computes its loss and takes an optimiser step:

# %% tags=["export"]
# export: bindcore/controlled/objective.py
def curriculum_limit(cfg: "TrainConfig", step: int) -> int:
    """Number of values per concept that training scenes may use at ``step`` (V when
    the curriculum is off or over)."""
    if not cfg.curriculum_values:
        return cfg.n_values
    ramp = cfg.curriculum_frac * cfg.steps
    grown = cfg.curriculum_values + (cfg.n_values - cfg.curriculum_values) * step / ramp
    return min(cfg.n_values, int(grown))


def curriculum_objects(cfg: "TrainConfig", train_objects: torch.Tensor, step: int) -> torch.Tensor:
    """The training objects a batch at ``step`` is drawn from: those whose values all lie
    below :func:`curriculum_limit` (at least the objects of the smallest non-empty range)."""
    limit = curriculum_limit(cfg, step)
    if limit >= cfg.n_values:
        return train_objects
    top = cfg.space.object_values(train_objects).amax(1)
    for lim in range(limit, cfg.n_values + 1):
        keep = train_objects[top < lim]
        if len(keep):
            return keep
    return train_objects


def step_generator(cfg: "TrainConfig", step: int, device: torch.device) -> torch.Generator:
    """The sampler's randomness is a function of (seed, step): resuming is exact."""
    return torch.Generator(device=device).manual_seed(cfg.seed * 1_000_003 + step)


def optimizer_step(cfg: "TrainConfig", model: DualEncoder, opt: torch.optim.Optimizer, train_objects: torch.Tensor,
                   allowed: torch.Tensor, step: int, dev: torch.device, amp: torch.dtype | None,
                   w_c: float) -> tuple[torch.Tensor, dict[str, float]]:
    """One training step: a minibatch of scenes of the step's training objects, then
    ``grad_steps_per_batch`` optimiser steps on it, the gradient's norm clipped to ``grad_clip``
    where it is > 0; (the last loss, its parts)."""
    gen = step_generator(cfg, step, dev)
    scenes = sample_scenes(curriculum_objects(cfg, train_objects, step), cfg.batch_size, cfg.max_objects, gen)
    for _ in range(cfg.grad_steps_per_batch):
        with torch.autocast(dev.type, dtype=amp, enabled=amp is not None):
            loss, parts = train_loss(cfg, model, scenes, allowed, gen, w_c)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
    return loss, parts

# %% [markdown]
# Evaluation scores every held-out scene against the full vocabulary with the strict
# rule of §3, and reads binding from the swap pairs, with the bag-of-concepts ceiling
# beside it (the §3 chapter defines all three; `bindcore sync` exports them to
# `bindcore/analysis/binding.py`; open the output below to read them):

# %% tags=["remove-input", "hide-output"]
from bindcore.analysis import bag_ceiling, strict_correct, swap_pair_recognition, swap_twins

show_source(strict_correct, swap_twins, swap_pair_recognition, bag_ceiling)

# %% [markdown]
# The release's protocol, defined here (`bindcore sync` exports the cell to
# `bindcore/controlled/release_protocol.py`, which every evaluation of the book calls):
# one test batch as the released code draws it, its rates averaged per batch, and the
# bag's ceiling under the same candidates.

# %% tags=["export"]
# export: bindcore/controlled/release_protocol.py
# The release's test protocol of §5.2: its batches, their per-batch strict-recognition rates and the bag's ceiling under them.
from collections.abc import Callable
from dataclasses import dataclass

import torch

from bindcore.analysis.binding import bag_ceiling, strict_correct
from bindcore.controlled.scenes import SceneSpace, attribute_swaps, object_labels, sample_scenes

RELEASE_BATCH = 512  # scenes per test batch
RELEASE_MAX_POSITIVES = 64  # at most this many of a batch's objects are candidates
RELEASE_BATCHES = 10  # batches at eval_scenes >= 1024 (fewer below, see release_batches)


def release_batches(eval_scenes: int) -> int:
    """Batches for ``eval_scenes`` scenes per object count: 10 from 1,024 on, fewer in
    proportion below (at least 1)."""
    return max(1, min(RELEASE_BATCHES, round(RELEASE_BATCHES * eval_scenes / 1024)))


@dataclass
class ReleaseBatch:
    """One test batch: its scenes and object candidates."""

    scenes: torch.Tensor  # [B, O_max] object ids, -1 padded
    candidates: torch.Tensor  # [K] distinct object ids


def release_batch(space: SceneSpace, objects: torch.Tensor, gen: torch.Generator) -> ReleaseBatch:
    """512 scenes of ``objects``; the candidates are at most 64 of their distinct objects
    plus one attribute-swap negative (any object) per two-object scene."""
    scenes = sample_scenes(objects, RELEASE_BATCH, space.max_objects, gen)
    present = scenes[scenes >= 0].unique()
    if len(present) > RELEASE_MAX_POSITIVES:
        present = present[torch.randperm(len(present), generator=gen, device=gen.device)[:RELEASE_MAX_POSITIVES]]
    swaps = attribute_swaps(space, scenes, gen, 1)
    return ReleaseBatch(scenes, torch.cat([present, swaps]).unique())


def batch_means(batches: list[ReleaseBatch], per_scene: Callable) -> dict[str, float]:
    """Mean over batches of each batch's mean of ``per_scene(batch, labels) -> [B]`` over the
    scenes with a positive candidate, ``pooled`` and per ``object_n`` (a batch without
    such scenes is left out)."""
    per: dict[str, list[float]] = {}
    for b in batches:
        labels = object_labels(b.scenes, b.candidates)
        active = labels.any(1)
        counts = (b.scenes >= 0).sum(1)
        values = per_scene(b, labels)
        groups = {"pooled": active, **{f"object_{n}": active & (counts == n) for n in counts.unique().tolist()}}
        for name, mask in groups.items():
            if bool(mask.any()):
                per.setdefault(name, []).append(values[mask].mean().item())
    return {k: sum(v) / len(v) for k, v in per.items()}


def release_rates(batches: list[ReleaseBatch], score: Callable) -> dict[str, float]:
    """Strict-recognition rates of ``score(scenes, candidates) -> [B, K]``, averaged as
    :func:`batch_means`."""
    return batch_means(batches, lambda b, labels: strict_correct(score(b.scenes, b.candidates), labels).float())


def release_ceiling(space: SceneSpace, batches: list[ReleaseBatch]) -> dict[str, float]:
    """The bag's ceiling under the protocol: per scene 1/k (k bindings of its bag) when the
    candidates hold another binding of the same bag, else 1; averaged as :func:`batch_means`."""

    def ceiling(b: ReleaseBatch, labels: torch.Tensor) -> torch.Tensor:
        out = torch.ones(len(b.scenes), device=b.scenes.device)
        two = ((b.scenes >= 0).sum(1) == 2).nonzero().squeeze(1)
        if len(two):
            v = space.object_values(b.scenes[two, :2])  # [T, 2, C]
            cv = space.object_values(b.candidates)  # [K, C]
            in_bag = ((cv[None] == v[:, 0, None]) | (cv[None] == v[:, 1, None])).all(-1)  # [T, K]
            other_binding = (in_bag & ~labels[two]).any(1)
            out[two] = torch.where(other_binding, bag_ceiling(space, b.scenes[two, :2]), 1.0)
        return out

    return batch_means(batches, ceiling)

# %% [markdown]
# ## One run, in full
#
# The experiment is one call per configuration: `train` samples scenes of training
# objects, takes the optimiser steps of the loss above, evaluates every so often on
# training, validation and test objects, and stores the result under a hash of its
# config (asking again reads it back). Here is one run of this build's sweep, the
# largest coverage of its largest object space, trained before the sweep (which then
# reads it from the store), with its curve: the training task (two-object scenes of
# training objects among the training objects), strict recognition of validation
# objects, and their swap pairs.

# %%
configs = generalization_configs(base, P)
one_cfg = max(configs, key=lambda c: (c.space.n_objects, c.coverage))
one = train(one_cfg, device=device)
curve = pd.DataFrame(one["history"])
fig, ax = plt.subplots(figsize=(PAGE_WIDTH_IN, 3.4))
for key, label in (("task_object_2", "training task"), ("val_object_2", "validation objects, strict"),
                   ("val_swap_pair", "validation swap pairs")):
    if key in curve:
        ax.plot(curve["step"], curve[key], "o-", ms=3, label=label)
ax.set_xlabel("training step")
ax.set_ylim(-0.03, 1.03)
ax.set_title(f"|O| = {one_cfg.space.n_objects:,}, coverage {one_cfg.coverage:g}, seed {one_cfg.seed}")
fig.tight_layout()
legend_below(fig, ax, ncol=3)  # off the curves
plt.show()

# %% [markdown]
# ## This build's sweep
#
# One run per object-space size, coverage and seed. Runs are stored under a hash of
# their config (`results/train-2/<hash>/`) with the version of the code that trained them,
# so re-executing this chapter costs seconds once they exist (a run made by other code is
# shown with a note naming that code); on a CPU, runs go to parallel one-thread worker
# processes; on a GPU, up to `stack` runs of one object space train together (the one
# model mapped over their parameters stacked along a leading dimension; each run is stored
# as its own record and equals a lone run of its config up to float rounding).

# %%
records = run_sweep(configs, workers=workers, device=device, executor=executor, stack=stack)
note_stored(records)
table = results_table(records)
table["profile"] = profile
print(f"{len(records)} runs; sources: {table['source'].value_counts().to_dict()}; "
      f"training time per run: {table['minutes'].mean():.1f} min on average ({table['device'].iloc[0]})")

# %% [markdown]
# Accuracies on test, validation and training objects (each column names its objects),
# for one- and two-object scenes ("strict": the scene recognised as exactly its
# objects); swap-pair recognition over all twins ("swap pairs") and over twins made only
# of test objects ("swap pairs (held-out twins)"); the bag-of-concepts floor ("bag
# floor", the tie-failing oracle) and ceiling ("bag ceiling") on the same scenes. The
# candidate set is the full vocabulary (all $V^C$ objects, all $C \cdot V$ concept
# values).

# %% tags=["hide-input", "hide-output", "full-width"]
cols = ["C", "V", "objects", "coverage", "seed", "values seen in training", "test_object_2", "test_swap_pair",
        "test_swap_pair_heldout", "boc_test_object_2", "boc_ceiling_test_object_2", "test_object_1",
        "test_concept_2", "val_object_2", "val_swap_pair", "train_object_2", "cpu minutes"]
table[[c for c in cols if c in table]].round(3)

# %% [markdown]
# The same runs under both protocols, per coverage: the median over seeds and its range
# (`min-max`). Under the release's protocol (`release_*`) the bag of concepts scores
# far higher than against the full vocabulary, because most candidate sets hold few of
# the objects a bag confuses; a binding claim has to clear the bag's ceiling under the
# protocol it is made in.

# %% tags=["hide-input", "full-width"]
seed_summary(table).round(3)

# %% [markdown]
# At low coverage some concept values never occur in any training object (column
# `values seen in training`): no model can recognise those values, which caps concept
# recognition there.

# %% tags=["hide-input"]
fig, axes = plt.subplots(1, 3, figsize=(PAGE_WIDTH_IN, 3.0))
plot_scale(axes, table)
fig.suptitle(f"This build's runs, profile '{profile}' ({base.steps} steps per run)", y=1.06)
plt.show()

# %%
summary = generalization_summary(table)
per_size(summary.round(3))  # a column per object-space size

# %% tags=["remove-cell"]
best = summary.loc[summary["objects"].idxmax()]
glue("own_objects", f"{int(best['objects']):,}")
glue("own_cov", best["chosen coverage"], "g")
glue("own_swap", best["swap pairs at chosen coverage"], ".2f")
glue("own_strict", best["objects at chosen coverage"], ".2f")
glue("own_ceiling", best["bag ceiling at chosen coverage"], ".2f")

# %% [markdown]
# Here, at |O| = {glue:text}`own_objects` and coverage {glue:text}`own_cov` (the coverage
# with the most validation swap pairs recognised), strict recognition of test objects is {glue:text}`own_strict` against a bag-of-concepts
# ceiling of {glue:text}`own_ceiling`, and {glue:text}`own_swap` of the swap pairs are
# recognised. Strict accuracy near the ceiling says nothing about binding; the swap
# pairs do.
#
# ## Up to the paper's smaller object space: the scale sweep
#
# The paper's headline is about object spaces of {glue:text}`paper_space` objects and
# more, which jump from chance to near-perfect held-out recognition at about
# {glue:text}`paper_onset` coverage. A CPU build cannot train those in its budget, so
# the `scale` recipe (below, against the quick recipe) was searched for and swept with
# `bindcore sweep --profile scale --publish`, and this page reads the stored records.

# %% tags=["hide-input"]
recipe_table("scale", against="quick")

# %% tags=["hide-input"]
scale_recs, scale_missing = scale_records() if P["show_scale"] else ([], [])
earlier_recs = scale_records(n_layers=EARLIER_DEPTH)[0] if P["show_scale"] else []
if P["show_scale"]:
    note_stored(scale_recs, what=f"scale runs ({depth_label(PLAN_DEPTH)})")
    display(Markdown(describe_scale_records(scale_recs, scale_missing)))
    steps_text = ", ".join(f"|O| = {v ** c:,}: {s:,}" for (c, v), s in SCALE_STEPS.items())
    raised = ", ".join(f"|O| = {v ** c:,} at coverage {cov:g}: {s:,}" for (c, v, cov), s in SCALE_BUDGETS.items())
    display(Markdown(f"Base steps per run by object space: {steps_text}. Raised by the fit rule: {raised or 'none'}. "
                     f"Layers per encoder: {PLAN_DEPTH} at every size."))
else:
    print("show_scale is off: the scale sweep's records are not shown")

# %% [markdown]
# **Training to fit.** A run that has not fitted its own training task says little about
# binding: the fixed budget of the first scale sweep left most runs at
# |O| = {glue:text}`paper_space` and above still climbing when it ended. So each point's
# budget follows the fit of its training task, read on training objects only: a run has
# fitted when its last evaluation recognises two-object training scenes among the
# training objects (`task_object_2`) at {glue:text}`fit_target` or more. A point keeps
# its size's base budget while the median over its runs of the steps to that level,
# times {glue:text}`fit_margin`, lies within the budget (so that the last third of the
# schedule, where the learning rate decays, comes after the fit); otherwise its next
# runs get twice the budget, up to a cap per size (`bindcore.controlled.recipes.fit_budgets`;
# a test recomputes the plan's budgets from the published runs and checks that test and
# `train_object_*` numbers cannot change them). A run that ends unfitted is kept, shown
# and counted (column `fitted` below). Where a point's longer runs are not computed yet,
# its runs at the largest earlier budget stand in, counted in the column `stand-ins at an
# earlier budget`, and the point is listed as not computed above. A run that did not fit
# tells nothing about where its transition lies: a size whose runs at its transition (or
# at its largest coverage, when it has none) mostly did not fit has an *unknown*
# transition and is left out of the comparison across sizes, neither a value nor a bound.
#
# **One recipe at every size.** Depth changes binding, not only the fit, so sizes are
# compared only when one architecture, optimiser and schedule trained them; only the step
# budget, set by the fit rule, differs from point to point. The depth is chosen by a rule
# written down before the runs it judges (`bindcore.controlled.recipes.comparison_depth`,
# committed before the three-layer runs at the two smaller sizes): the smallest number of
# layers per encoder at which, at every coverage of |O| = {glue:text}`depth_sizes`, a
# majority of the runs fitted their training task at the fit rule's budget, that budget
# at most twice the size's base steps. Two layers fail it at
# |O| = {glue:text}`paper_space` (the fit search, appendix B, lists the attempts); the plan
# therefore trains every size with three. The rule's status per depth, read from the
# stored runs:

# %% tags=["hide-input"]
depth_rows = []
if P["show_scale"]:
    stored_runs = [e.record() for e in ResultStore().entries(STORE_KIND)]
    for n in sorted({PLAN_DEPTH, EARLIER_DEPTH}):
        status, why = depth_fit(stored_runs, n)
        depth_rows.append({"recipe": depth_label(n), "depth rule": status, "where": why})
    chosen_depth = comparison_depth(stored_runs)
    display(pd.DataFrame(depth_rows))
    print("the depth rule's answer: " + (f"{chosen_depth} layers per encoder" if chosen_depth else
                                         "not decided yet (a depth is still open); the plan trains "
                                         f"{PLAN_DEPTH} layers, the smallest depth not ruled out"))

# %% [markdown]
# At |O| = {glue:text}`largest_scale_space` the three-layer recipe has no runs of the plan
# yet ({glue:text}`largest_space_fit` of the earlier two-layer recipe fitted its training
# task there): that size has no transition on the plan's recipe, unknown until its runs
# fit. The fit search (appendix B) trained the plan's recipe there on three seeds
# ({glue:text}`largest_space_control`) and then screened one lever at a time on
# {glue:text}`screen_seed`, on training objects only
# (`bindcore.controlled.recipes.lever_screen`); each lever's training task at the step
# every lever reached:

# %% tags=["hide-input"]
screen = lever_screen(read_attempts(None, "fit-search.json"), largest_space)
if screen:
    control_runs = screen["control"]["runs"]
    control_text = ("training task " + " / ".join(f"{r['last_task_object_2']:.2f}" for r in control_runs)
                    + f" at {control_runs[0]['curve'][-1]['step']:,} steps")  # glued below
    seed_text = f"seed {screen['seed']}" + (", the one it fitted least" if screen["slowest"] else "")
    display(pd.DataFrame(screen["rows"]).rename(columns={"task": f"training task at step {screen['step']:,}"})
            .round(2))
    best, fitted_levers = screen["best"], screen["fitted"]
    display(Markdown(
        f"The lever {fitted_levers[0]} fitted on every seed: this size could train as a second, labelled recipe, "
        "whose grid has not run here; on the plan's recipe it stays unknown (not fitted)." if fitted_levers
        else f"No lever fitted the training task (target {FIT_TARGET:.2f}) on {len(SCALE_SEEDS)} seeds by step "
        f"{screen['step']:,}; the one that moved it most ({best['lever']}: {best['task']:.2f}) rests on one seed. "
        "A lever used for one size alone makes a second recipe, shown as its own labelled row once three seeds "
        f"of it fit; none has, so |O| = {largest_space:,} stays unknown (not fitted) here."))
else:
    control_text = seed_text = "not run"
    display(Markdown("The lever screen has not run, so this size stays unknown (not fitted)."))

# %% [markdown]
# Every point is trained with {glue:text}`scale_seeds` seeds (the training seed sets
# the initialisation, the minibatches and the evaluation scenes). A point whose object
# split holds fewer than {glue:text}`min_test_objects` test objects (the smallest object
# space at its highest coverages) is trained on several object splits, each with every
# seed, so that its median rests on at least that many test objects. The figure draws
# every run as a dot and the median as the line; the claims below are judged on the
# median, with the range printed beside it.

# %% tags=["remove-cell"]
glue("scale_seeds", len(SCALE_SEEDS))
glue("fit_target", FIT_TARGET, ".2f")
glue("fit_margin", FIT_MARGIN, "g")
glue("min_test_objects", MIN_TEST_OBJECTS)


def sizes_text(sizes: list[int]) -> str:
    """``100, 400 and 2,500``."""
    words = [f"{n:,}" for n in sorted(sizes)]
    return ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else "".join(words)


glue("depth_sizes", sizes_text([v ** c for c, v in COMPARISON_SIZES]))
glue("earlier_sizes", sizes_text({r["config"]["n_values"] ** r["config"]["n_concepts"] for r in earlier_recs}
                                 - {PAPER_OBJECT_SPACES[0]}))
largest = [r for r in earlier_recs if r["config"]["n_values"] ** r["config"]["n_concepts"] == largest_space]
n_fitted = sum(fitted(r) for r in largest)
glue("largest_space_fit", f"{n_fitted} of the {len(largest)} runs" if largest else "no run")
glue("largest_space_control", control_text)
glue("screen_seed", seed_text)

# %% tags=["hide-input", "full-width"]
if scale_recs:
    scale_table = results_table(scale_recs)
    fig, axes = plt.subplots(1, 3, figsize=(PAGE_WIDTH_IN, 3.0))
    plot_scale(axes, scale_table)
    fig.suptitle(f"The scale sweep ({depth_label(PLAN_DEPTH)}; published records)", y=1.06)
    plt.show()
    display(seed_summary(scale_table).round(3))

# %% [markdown]
# The paper reports held-out recognition near one at |O| = {glue:text}`paper_space`
# and more from about {glue:text}`paper_onset` coverage, counted under the released
# code's test protocol. Our scale records under that protocol and under the full
# vocabulary, each with the bag's ceiling of the same scenes (median over seeds and
# range; only records that carry the release protocol):

# %% tags=["hide-input", "full-width"]
if scale_recs:
    comparison = protocol_comparison(scale_table, min_objects=PAPER_OBJECT_SPACES[0])
    if len(comparison):
        comparison.insert(comparison.columns.get_loc("seeds") + 1, "paper (release protocol)", PAPER_CLAIMS_5_2[1][1])
    display(comparison.round(3) if len(comparison) else
            Markdown("No scale record carries the release protocol yet (records made before it existed)."))

# %% [markdown]
# **The transition per size, recipe by recipe.** Each size's transition coverage (swap
# pairs at or above {glue:text}`transition` from there on), how many of its runs there
# fitted their training task, and its steps, for the plan's three-layer recipe (which the
# verdict below reads) and, as a second labelled row per size, the earlier two-layer
# recipe (which trained |O| = {glue:text}`earlier_sizes` before the depth rule; at
# |O| = {glue:text}`paper_space` its runs are those that failed the rule):

# %% tags=["hide-input", "full-width"]
by_recipe = {depth_label(PLAN_DEPTH): scale_recs, depth_label(EARLIER_DEPTH): earlier_recs}
transitions = transition_table(by_recipe, planned_coverages())
display(transitions if len(transitions) else Markdown("No scale record is stored."))

# %% [markdown]
# The earlier recipe's runs point by point (the plan's are above):

# %% tags=["hide-input", "hide-output", "full-width"]
if earlier_recs:
    display(seed_summary(results_table(earlier_recs)).round(3))

# %% [markdown]
# ### Binding over the course of training
#
# Swap-pair recognition of held-out objects over the course of training: a panel per
# object space, a colour per coverage, a thin line per seed and the median over the seeds
# thick.

# %% tags=["hide-input"]
curves = scale_recs if scale_recs else records
fig = plot_binding_curves(curves)
if fig is None:
    print("no run has a training history of held-out swap pairs")
else:
    fig.axes[0].set_ylabel("held-out swap pairs recognised")
    fig.suptitle(f"scale sweep ({depth_label(PLAN_DEPTH)}; published records)" if scale_recs
                 else f"this build's runs ('{profile}')", y=1.02)
    plt.show()

# %% [markdown]
# ## The paper's claims next to ours
#
# The rules by which the verdicts below follow from the numbers:

# %% tags=["hide-input"]
display(Markdown(generalization_claim_rules()))
frames = [claims_table(summary, profile)]
if scale_recs:
    frames.append(claims_table(generalization_summary(scale_table, planned=planned_coverages()),
                               f"{depth_label(PLAN_DEPTH)} (published records)"))
if earlier_recs:  # the second recipe: its comparison across sizes only, labelled
    earlier = claims_table(generalization_summary(results_table(earlier_recs), planned=planned_coverages()),
                           f"{depth_label(EARLIER_DEPTH)}, earlier plan (published records)")
    frames.append(earlier[earlier["subject"] == "across sizes"])
show_claims(pd.concat(frames, ignore_index=True), "05_2_binding_generalization")

# %% [markdown]
# The verdict across sizes is the three-layer recipe's: the one architecture the depth
# rule admits at every size compared. The two-layer row compares sizes whose runs the
# depth rule rejects at |O| = {glue:text}`paper_space`, and is shown only beside it. The
# rule across sizes has changed over time; each change, with the verdict on the records of
# its commit before and after it (since the change that removed the upper-bound rule, a
# rule change lands in a commit before the records it judges):

# %% tags=["hide-input"]
display(pd.DataFrame(RULE_CHANGES))

# %% [markdown]
# In words, claim by claim and source by source (generated from the verdicts above):

# %% tags=["hide-input"]
display(Markdown("\n".join(f"* {line}" for frame in frames for line in claim_outcomes(frame))))

# %% tags=["remove-cell"]
# what each size's verdicts rest on (held-out test objects and seeds), per source of records
support = {(profile, k): v for k, v in claim_support(records, summary).items()}
if scale_recs:
    scale_source = f"{depth_label(PLAN_DEPTH)} (published records)"
    support.update({(scale_source, k): v for k, v in
                    claim_support(scale_recs, generalization_summary(scale_table)).items()})
glue("generalization_closing", closing_sentence(pd.concat(frames, ignore_index=True), support))

# %% [markdown]
# ## How the scale recipe was found
#
# The `scale` recipe came out of two searches: a first one that kept attempts by their
# held-out numbers, before the held-out objects were divided into validation and test
# objects, and a second one, on training objects only, that set today's batch size and
# object candidates. Their logs, every attempt with what it was judged on, are on their
# own page: [How the scale recipe was found](b_recipe_search.ipynb).

# %% [markdown]
# ## Two ablations: the one-phase objective and the released code's negatives
#
# At the largest coverage of this build's largest object space we rerun two variants,
# once per training seed of the chapter, and compare each with the main recipe's run of
# the same seed:
#
# * **one-phase**: the concept loss (weight {glue:text}`concept_weight`) present from
#   the first step;
# * **release negatives**: everything as in the main runs, except that attribute-swap
#   negatives that happen to be held-out objects are kept as training negatives, as the
#   released code does (`train_probe_all_objects=True`). The query encoder then sees
#   held-out objects during training, always as negatives, so training pushes their
#   embeddings away from every scene.
#
# The last column measures how additive the query encoder's object embeddings are: the
# R² of the best fit $e(o) \approx b + \sum_c u_c[v_c(o)]$ over all objects. At $R^2 = 1$
# the embeddings are a bag of concepts and swapped objects score alike.

# %% tags=["hide-input", "full-width"]
if P["ablations"]:
    variants = ablation_configs(base, P)
    ab = run_sweep([cfg for _, cfg in variants], workers=workers, device=device, executor=executor, stack=stack)
    note_stored(ab, what="ablation runs")
    ab_table = results_table(ab)
    ab_table.insert(0, "variant", [key for key, _ in variants])
    ab_table["additive R² of object queries"] = [
        object_query_additivity(TrainConfig.from_dict(r["config"]), load_model(r))
        if has_weights(r) else float("nan")  # a record published without its weights
        for r in ab]
    display(ab_table.assign(variant=ab_table["variant"].map(ABLATION_LABELS))[
        ["variant", "seed", "objects", "coverage", "test_object_2", "test_swap_pair", "boc_test_object_2",
         "boc_ceiling_test_object_2", "test_object_1", "test_concept_2", "train_object_2",
         "additive R² of object queries"]].round(3))
    ab_summary = ablation_summary(ab_table)
    display(ab_summary.round(3))
    print(ablation_sentence(ab_summary))
    for key in (ONE_PHASE, RELEASE_NEGATIVES):
        if key not in set(ab_table["variant"]):
            print(f"{ABLATION_NAMES[key]}: not run, the {profile!r} recipe already is it")

# %% [markdown]
# ## What the profiles show
#
# The `quick` profile trains small models for a few CPU-minutes each, at small object
# spaces, and gives none of the paper's numbers. The scale sweep above is the same
# science at the two-concept object spaces of its plan, on a CPU (the paper's
# three-concept space is not run here). What they show is what their verdicts above
# say, and no more:
#
# ```{container} glued-prose
# {glue:text}`generalization_closing`
# ```
#
# The `paper` profile reruns this build's
# sweep with the released recipe at the paper's coverages and larger object spaces; run
# it on a GPU with
# `papermill notebooks/05_2_binding_generalization.ipynb out.ipynb -f notebooks/profiles/paper/05_2_binding_generalization.yaml`.
