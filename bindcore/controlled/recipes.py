"""Training recipes per profile (smoke / quick / paper).

``paper`` is the released code's recipe (README command line of the authors'
release: d_model 256, 6 layers, FFN 2048, d_out 64, lr 3e-5, batch 512, 50k steps),
with one deliberate difference: held-out objects are never used as training
negatives (set ``heldout_as_negatives=True`` for the release's behaviour).

``quick`` keeps the science (same tokens, two independent transformer encoders,
EOS pooling, cosine similarity, soft-target softmax loss over concept and object
queries, strict metric, no held-out object in training) and changes the
optimisation so that binding appears within minutes on a CPU: a small model, a
higher learning rate with a short warmup, the logit-scale cap at 100, and a two-phase
schedule in which the concept loss joins only once object queries alone have taught
the model to recognise training objects in two-object scenes (``concept_loss_trigger``).
See the binding-generalization chapter for why.

``smoke`` exercises every code path in seconds; its numbers mean nothing.
"""

from __future__ import annotations

from typing import Any

from bindcore.runtime import check_profile

from .training import TrainConfig, check_fields

_RECIPES: dict[str, dict[str, Any]] = {
    "paper": dict(
        n_concepts=2, n_values=20, max_objects=2, coverage=0.8,
        d_model=256, n_heads=4, n_layers=6, d_ff=2048, d_out=64,
        lr=3e-5, weight_decay=0.1, beta2=0.999, batch_size=512, steps=50_000, warmup_frac=0.1,
        logit_scale_cap=10.0, concept_loss_weight=1.0, concept_loss_start=0.0,
        candidates="batch", max_concept_queries=64, max_object_queries=64, swaps_per_scene=1,
        eval_every=1000, eval_scenes=2048, checkpoint_every=2500,
    ),
    "quick": dict(
        n_concepts=2, n_values=10, max_objects=2, coverage=0.8,
        d_model=64, n_heads=4, n_layers=2, d_ff=256, d_out=64,
        lr=3e-3, weight_decay=0.1, beta2=0.98, batch_size=256, steps=8000, warmup_frac=0.02,
        logit_scale_cap=100.0, concept_loss_weight=1.0, concept_loss_start=0.0, concept_loss_trigger=0.6,
        candidates="batch", max_concept_queries=64, max_object_queries=64, swaps_per_scene=1,
        eval_every=500, eval_scenes=1024, checkpoint_every=1000,
    ),
    "smoke": dict(
        n_concepts=2, n_values=4, max_objects=2, coverage=0.75,
        d_model=16, n_heads=2, n_layers=1, d_ff=32, d_out=8,
        lr=3e-3, weight_decay=0.1, beta2=0.98, batch_size=32, steps=30, warmup_frac=0.1,
        logit_scale_cap=100.0, concept_loss_weight=0.1, concept_loss_start=0.45,
        candidates="batch", eval_every=10, eval_scenes=64, checkpoint_every=10,
    ),
}


def recipe(profile: str, **overrides: Any) -> TrainConfig:
    """The training config of a profile, with fields overridden one by one (values as
    their fields' types or as text: ``recipe("quick", n_values="20")``)."""
    check_profile(profile)
    check_fields(overrides)
    return TrainConfig(**{**_RECIPES[profile], **overrides})


def recipe_differences(a: str = "paper", b: str = "quick") -> dict[str, tuple[Any, Any]]:
    """Fields in which two recipes differ: {field: (value in a, value in b)}."""
    ra, rb = recipe(a).to_dict(), recipe(b).to_dict()
    return {k: (ra[k], rb[k]) for k in ra if ra[k] != rb[k]}


def recipe_table(profile: str, against: str = "paper"):
    """A table of the fields in which ``profile``'s recipe differs from ``against``'s
    (all fields when they are the same recipe), values as text."""
    import pandas as pd

    if profile == against:
        cfg = recipe(profile).to_dict()
        return pd.DataFrame({f"{profile} recipe": {k: str(v) for k, v in cfg.items()}})
    diff = recipe_differences(against, profile)
    return pd.DataFrame({f"{against} recipe": {k: str(v[0]) for k, v in diff.items()},
                         f"{profile} recipe": {k: str(v[1]) for k, v in diff.items()}})
