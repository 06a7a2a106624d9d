"""The controlled setting of the paper (§3, §5.2, appendix B, E): scene space and
tokens, the dual encoder, its training loop and the training recipes of each profile.

The chapters import from here what they use. This package and :mod:`bindcore.analysis`
import each other's modules: each loads the other first, so that either can be imported first."""

import bindcore.analysis  # noqa: F401 (before this package's modules: see above)

from .models import DualEncoder
from .recipes import (
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
    comparison_depth,
    depth_fit,
    depth_label,
    fitted,
    lever_screen,
    pixel_recipe,
    planned_coverages,
    recipe_table,
)
from .runs import load_model, train
from .scenes import EMPTY, SceneSpace, coverage_split, object_labels, sample_scenes
from .search import BINDS_AT, hidden_from_choices, read_attempts
from .training import STORE_KIND, TrainConfig, object_query_additivity

__all__ = [
    "BINDS_AT", "COMPARISON_SIZES", "EARLIER_DEPTH", "EMPTY", "FIT_MARGIN", "FIT_TARGET", "MIN_TEST_OBJECTS",
    "PLAN_DEPTH", "SCALE_BUDGETS", "SCALE_CAPS", "SCALE_SEEDS", "SCALE_STEPS", "STORE_KIND", "DualEncoder",
    "SceneSpace", "TrainConfig", "comparison_depth", "coverage_split", "depth_fit", "depth_label", "fitted", "lever_screen",
    "hidden_from_choices", "load_model", "object_labels", "object_query_additivity", "pixel_recipe",
    "planned_coverages", "read_attempts", "recipe_table", "sample_scenes", "train",
]
