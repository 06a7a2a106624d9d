"""Strict recognition, the bag-of-concepts baseline (§3, §5.2), caption retrieval and R².

A scene is recognised iff every positive candidate scores strictly above every negative
(ties fail); scenes without a positive candidate are not scored."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from bindcore.controlled.scenes import SceneSpace, object_labels

from .binding import bag_ceiling, strict_correct, swap_pair_recognition, swap_twins  # noqa: F401 (defined in §3)
from .inputs import check_embeddings, check_objects


def strict_correct_at(scores: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """:func:`strict_correct` with the positives of each row given by column index
    (``positives`` long ``[S, k]``, k >= 1, repeats allowed): the same answer, without
    the mask. ``scores`` is overwritten (its positives set to -inf)."""
    min_pos = scores.gather(1, positives).amin(1)
    return min_pos > scores.scatter_(1, positives, float("-inf")).amax(1)


def has_positive(positives: torch.Tensor) -> torch.Tensor:
    return positives.any(1)


def strict_accuracy(scores: torch.Tensor, positives: torch.Tensor) -> float:
    """Fraction of scenes with >= 1 positive that are strictly correct."""
    active = has_positive(positives)
    if not bool(active.any()):
        return float("nan")
    return strict_correct(scores, positives)[active].float().mean().item()


def bag_of_concepts_scores(space: SceneSpace, scenes: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """Oracle bag-of-concepts scores ``[S, K]``: how many of a candidate's concept values
    occur anywhere in the scene."""
    bag = space.concept_multi_hot(scenes).float()  # [S, C*V]
    cand = torch.zeros(len(candidates), space.n_value_tokens, device=scenes.device)
    toks = space.value_tokens(space.object_values(candidates.to(scenes.device)))
    cand.scatter_(1, toks, 1.0)
    return bag @ cand.T


def bag_of_concepts_accuracy(space: SceneSpace, scenes: torch.Tensor, candidates: torch.Tensor) -> float:
    """Strict object-recognition accuracy of the bag-of-concepts oracle."""
    scores = bag_of_concepts_scores(space, scenes, candidates)
    return strict_accuracy(scores, object_labels(scenes, candidates.to(scenes.device)))


def expected_bag_of_concepts_two_objects(n_values: int, n_concepts: int) -> float:
    """Analytic success rate of the oracle on two i.i.d. uniform objects against the full
    vocabulary: it fails iff they differ in >= 2 concepts."""
    p_same = 1.0 / n_values
    p_diff = 1.0 - p_same
    c = n_concepts
    return p_same**c + c * p_diff * p_same ** (c - 1)


def additive_r2(embeddings: torch.Tensor, values: torch.Tensor, n_values: int) -> float:
    """R² of the least-squares fit e(o) ~ b + sum_c u_c[v_c(o)] of ``embeddings`` ``[N, d]``
    from their concept ``values`` ``[N, C]``; 1 means a bag of concepts."""
    check_embeddings(embeddings.detach().cpu().numpy() if torch.is_tensor(embeddings) else embeddings, "embeddings")
    check_objects(np.asarray(values.cpu() if torch.is_tensor(values) else values)[:, None, :],
                  [n_values] * values.shape[1], n_scenes=len(embeddings), present=True, name="values",
                  rows_of="embeddings")
    n, c = values.shape
    onehot = torch.zeros(n, c * n_values, dtype=torch.float64)
    onehot.scatter_(1, values + torch.arange(c) * n_values, 1.0)
    design = torch.cat([torch.ones(n, 1, dtype=torch.float64), onehot], dim=1)
    y = embeddings.to(torch.float64)
    coef = torch.linalg.lstsq(design, y, driver="gelsd").solution
    return r2(y.numpy(), (design @ coef).numpy())


def r2(y: Any, pred: Any, reference_mean: Any = None) -> float:
    """R² = 1 - SSE / SST of ``pred`` for the rows of ``y`` ``[N, d]``, in float64; SST is
    about ``reference_mean`` when given (§5: the mean of all scenes, as the release does),
    else about these rows' mean."""
    y = np.asarray(y, dtype=np.float64)
    pred = np.asarray(pred, dtype=np.float64)
    mu = y.mean(0) if reference_mean is None else np.asarray(reference_mean, dtype=np.float64)
    return float(1.0 - ((y - pred) ** 2).sum() / ((y - mu) ** 2).sum())


def caption_retrieval(image_emb, text_emb, objects) -> dict[str, float]:
    """Fractions of images whose nearest caption (cosine) is their own scene, has the same
    objects in any order, or the same bag of values; and chance. ``objects``
    ``[N, O_max, C]`` (-1 = absent) is the scene of image i and caption i."""
    img = torch.nn.functional.normalize(torch.as_tensor(image_emb, dtype=torch.float32), dim=1)
    txt = torch.nn.functional.normalize(torch.as_tensor(text_emb, dtype=torch.float32), dim=1)
    obj = torch.as_tensor(objects)
    top = (img @ txt.T).argmax(1)
    n = len(obj)

    def canon_objects(o: torch.Tensor) -> list[tuple]:
        return [tuple(sorted(tuple(x) for x in scene.tolist() if x[0] >= 0)) for scene in o]

    def canon_bag(o: torch.Tensor) -> list[tuple]:
        return [tuple(sorted({(c, v) for x in scene.tolist() if x[0] >= 0 for c, v in enumerate(x)})) for scene in o]

    same_obj, same_bag = canon_objects(obj), canon_bag(obj)
    idx = top.tolist()
    return {
        "exact scene": float((top == torch.arange(n)).float().mean()),
        "same objects, any order": sum(same_obj[i] == same_obj[j] for i, j in enumerate(idx)) / n,
        "same bag of concepts": sum(same_bag[i] == same_bag[j] for i, j in enumerate(idx)) / n,
        "chance (exact scene)": 1.0 / n,
    }
