"""Analyses of embeddings (§3, §4, §5, C.2, D): metrics, probes, binding-function
approximators, the geometry of scene embeddings.

The chapters import from here what they use. This package and :mod:`bindcore.controlled`
import each other's modules (the metrics read the controlled scenes; the controlled models
are evaluated with the metrics; §5.2's summaries read the recipes): each package loads the
other first, so that either can be imported first."""

import bindcore.controlled  # noqa: F401 (before this package's modules: see above)
from bindcore.ids import object_values

from .approximators import FAMILIES, PRODUCT_FAMILIES, PCATreeRegressor, StackedApproximator, global_codes
from .approximators.labels import FAMILY_LABELS
from .approximators.reference import approximator_output
from .binding import bag_ceiling, strict_correct, swap_pair_recognition, swap_twins
from .complexity import protocol_for, true_embedding_ceiling
from .embedding_sets import (
    frame_row,
    natural_dataset,
    natural_sets,
    pretrained_binding,
    three_object_datasets,
    three_object_sets,
    visibility_frame,
)
from .generalization import (
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
from .geometry import edit_embeddings, grid_likeness, nearest_after_edit, object_banks, sample_edits
from .geometry_sets import HOLDOUT, decomposition, editing, mds_analysis
from .metrics import (
    bag_of_concepts_accuracy,
    bag_of_concepts_scores,
    caption_retrieval,
    expected_bag_of_concepts_two_objects,
)
from .probes import PROBE_TRAIN_FRACTION

__all__ = [
    "ABLATION_LABELS", "ABLATION_NAMES", "FAMILIES", "FAMILY_LABELS", "HOLDOUT", "ONE_PHASE", "PRODUCT_FAMILIES",
    "PROBE_TRAIN_FRACTION", "RELEASE_NEGATIVES", "PCATreeRegressor", "StackedApproximator",
    "ablation_configs", "ablation_sentence", "ablation_summary", "approximator_output", "bag_ceiling",
    "bag_of_concepts_accuracy", "bag_of_concepts_scores", "caption_retrieval", "decomposition",
    "edit_embeddings", "editing", "expected_bag_of_concepts_two_objects", "frame_row",
    "generalization_configs", "generalization_summary", "global_codes", "grid_likeness", "mds_analysis",
    "natural_dataset", "natural_sets", "nearest_after_edit", "object_banks", "object_values",
    "pretrained_binding", "protocol_comparison", "protocol_for", "results_table", "sample_edits",
    "seed_summary", "strict_correct", "swap_pair_recognition", "swap_twins", "three_object_datasets",
    "three_object_sets", "true_embedding_ceiling", "visibility_frame",
]
