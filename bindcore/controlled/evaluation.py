"""Evaluation of a controlled dual encoder (§5.2) on training, validation and test objects, against
the full vocabulary and under the release's protocol, with the bag-of-concepts floor and ceiling."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from bindcore.analysis.metrics import (
    bag_ceiling,
    bag_of_concepts_scores,
    strict_correct,
    swap_pair_recognition,
    swap_twins,
)

from .models import DualEncoder, cosine_logits
from .release_protocol import ReleaseBatch, release_batch, release_batches, release_ceiling, release_rates
from .scenes import SceneSpace, isin, object_labels, sample_scenes

if TYPE_CHECKING:
    from .training import TrainConfig

HELDOUT_SETS = ("val", "test")
# the most memory the evaluation of one object space may need (see evaluation_memory)
MAX_EVALUATION_BYTES = 32 * 2**30


def evaluation_memory(n_objects: int, n_concepts: int, n_values: int, d_out: int) -> dict[str, int]:
    """Approximate bytes evaluating an object space needs: ``objects`` (per-object tokens, split,
    bag row and [1024, n_objects] chunk matrices) and ``embeddings`` (every object's query embedding)."""
    return {"objects": n_objects * (8 * (n_concepts + 3) + 16 + 4 * n_concepts * n_values + 1024 * 17),
            "embeddings": n_objects * 4 * d_out}


def memory_text(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"


@dataclass
class EvalSet:
    """Fixed evaluation scenes: per object set and object count n, ``eval_scenes`` scenes of exactly n
    objects; ``release[set]``: the release protocol's batches of the held-out sets."""

    test: dict[int, torch.Tensor] = field(default_factory=dict)
    train: dict[int, torch.Tensor] = field(default_factory=dict)
    val: dict[int, torch.Tensor] = field(default_factory=dict)
    release: dict[str, list[ReleaseBatch]] = field(default_factory=dict)

    def heldout(self) -> dict[str, dict[int, torch.Tensor]]:
        """The held-out sets that have scenes: ``{"val": ..., "test": ...}``."""
        return {k: v for k, v in (("val", self.val), ("test", self.test)) if v}


def make_eval_set(cfg: TrainConfig, split, device: torch.device) -> EvalSet:
    """A run's fixed evaluation scenes, a function of its seed and split. Training and test scenes
    come from one generator, validation and release scenes from a second (so the former do not
    depend on the latter)."""
    gen = torch.Generator(device=device).manual_seed(10_007 + cfg.seed)
    es = EvalSet()
    for n in range(1, cfg.max_objects + 1):
        es.test[n] = sample_scenes(split.test, cfg.eval_scenes, cfg.max_objects, gen, n_objects=n)
        es.train[n] = sample_scenes(split.train, cfg.eval_scenes, cfg.max_objects, gen, n_objects=n)
    gen2 = torch.Generator(device=device).manual_seed(20_011 + cfg.seed)
    if len(split.val):
        for n in range(1, cfg.max_objects + 1):
            es.val[n] = sample_scenes(split.val, cfg.eval_scenes, cfg.max_objects, gen2, n_objects=n)
    for which in HELDOUT_SETS:
        objects = getattr(split, which)
        if len(objects):
            es.release[which] = [release_batch(cfg.space, objects.to(device), gen2)
                                 for _ in range(release_batches(cfg.eval_scenes))]
    return es


@torch.no_grad()
def embed_in_chunks(encoder: torch.nn.Module, tokens: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    return torch.cat([encoder(tokens[i : i + chunk]).float() for i in range(0, len(tokens), chunk)])


@torch.no_grad()
def recognition_flags(
    space: SceneSpace,
    model: DualEncoder,
    scenes: torch.Tensor,
    object_emb: torch.Tensor,
    concept_emb: torch.Tensor,
    task_candidates: torch.Tensor | None = None,
    z: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Per scene, bool ``[S]`` strict ``object`` and ``concept`` recognition against the full
    vocabularies, and ``task`` (among ``task_candidates`` only) if given. ``z``: precomputed scene
    embeddings (default: the token scene encoder's)."""
    if z is None:
        z = embed_in_chunks(model.scene, space.tokenize_scenes(scenes))
    all_obj = torch.arange(space.n_objects, device=scenes.device)
    ok: dict[str, list[torch.Tensor]] = {"object": [], "concept": [], "task": []}
    for i in range(0, len(z), 1024):
        sc, zi = scenes[i : i + 1024], z[i : i + 1024]
        obj_scores = cosine_logits(zi, object_emb, 1.0)
        ok["object"].append(strict_correct(obj_scores, object_labels(sc, all_obj)))
        ok["concept"].append(strict_correct(cosine_logits(zi, concept_emb, 1.0), space.concept_multi_hot(sc)))
        if task_candidates is not None:
            ok["task"].append(strict_correct(obj_scores[:, task_candidates], object_labels(sc, task_candidates)))
    return {k: torch.cat(v) for k, v in ok.items() if v}


@torch.no_grad()
def evaluate(cfg: TrainConfig, model: DualEncoder, es: EvalSet) -> dict[str, float]:
    """Recognition metrics: ``{set}_object_n`` / ``{set}_concept_n`` for train, val and test;
    ``task_object_n`` (training scenes among training objects only); ``{val,test}_swap_pair*``; and
    ``release_{val,test}_*``."""
    space = cfg.space
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    all_obj = torch.arange(space.n_objects, device=device)
    object_emb = embed_in_chunks(model.query, space.object_query_tokens(all_obj))
    concept_emb = embed_in_chunks(
        model.query, space.concept_query_tokens(torch.arange(space.n_value_tokens, device=device))
    )
    split = cfg.split
    train_ids = split.train.to(device)
    out: dict[str, float] = {}
    for which, sets in (("test", es.test), ("train", es.train), ("val", es.val)):
        for n, scenes in sets.items():
            r = recognition_flags(space, model, scenes, object_emb, concept_emb,
                                  task_candidates=train_ids if which == "train" else None,
                                  z=cfg.embed_eval_scenes(model, scenes))
            out[f"{which}_object_{n}"] = r["object"].float().mean().item()
            out[f"{which}_concept_{n}"] = r["concept"].float().mean().item()
            if "task" in r:
                out[f"task_object_{n}"] = r["task"].float().mean().item()
            if which != "train" and n == 2:
                pairs = swap_pairs(cfg, model, scenes, r["object"], object_emb, getattr(split, which).to(device))
                out.update({f"{which}_{k}": v for k, v in pairs.items()})
    for which, batches in es.release.items():

        def score(scenes: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
            return cosine_logits(cfg.embed_eval_scenes(model, scenes), object_emb[candidates], 1.0)

        out.update({f"release_{which}_{k}": v for k, v in release_rates(batches, score).items()})
    model.train(was_training)
    return out


@torch.no_grad()
def swap_pairs(cfg: TrainConfig, model: DualEncoder, scenes: torch.Tensor, scene_correct: torch.Tensor,
               object_emb: torch.Tensor, objects: torch.Tensor) -> dict[str, float]:
    """Swap-pair recognition (scene and its attribute-swapped twin both recognised): ``swap_pair``,
    and ``swap_pair_heldout`` over twins made of ``objects`` only."""
    space = cfg.space
    source, twins = swap_twins(space, scenes[:, :2])
    if len(twins) == 0:
        return {}
    twins = torch.nn.functional.pad(twins, (0, space.max_objects - 2), value=-1)
    z = cfg.embed_eval_scenes(model, twins)
    all_obj = torch.arange(space.n_objects, device=scenes.device)
    twin_ok = torch.cat([strict_correct(cosine_logits(z[i:i + 1024], object_emb, 1.0),
                                        object_labels(twins[i:i + 1024], all_obj)) for i in range(0, len(z), 1024)])
    return swap_pair_recognition(scene_correct, source, twin_ok, isin(twins[:, :2], objects).all(1))


def bag_of_concepts_baseline(cfg: TrainConfig, es: EvalSet) -> dict[str, float]:
    """Bag-of-concepts baselines on the model's held-out scenes: the count scorer's floor
    (``{set}_object_n``, ``release_{set}_*``) and the best any bag scorer can do, not knowing which
    objects were held out (``ceiling_{set}_object_2``, ``ceiling_release_{set}_*``)."""
    space = cfg.space
    out = {}
    for which, sets in es.heldout().items():
        for n, scenes in sets.items():
            all_obj = torch.arange(space.n_objects, device=scenes.device)
            ok = []
            for i in range(0, len(scenes), 1024):
                sc = scenes[i : i + 1024]
                ok.append(strict_correct(bag_of_concepts_scores(space, sc, all_obj), object_labels(sc, all_obj)))
            out[f"{which}_object_{n}"] = torch.cat(ok).float().mean().item()
            if n == 2:
                out[f"ceiling_{which}_object_2"] = bag_ceiling(space, scenes[:, :2]).mean().item()
    for which, batches in es.release.items():
        rates = release_rates(batches, lambda sc, cand: bag_of_concepts_scores(space, sc, cand))
        out.update({f"release_{which}_{k}": v for k, v in rates.items()})
        out.update({f"ceiling_release_{which}_{k}": v for k, v in release_ceiling(space, batches).items()})
    return out
