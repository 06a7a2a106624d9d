"""The paper's experiments as the chapters run them: the science composed with a chapter's
parameters (the models and sets it trains, embeds and fits, and their tables). Nothing
here imports :mod:`bindcore.book`, which formats and judges what these return.

The chapters import from here what they run: these experiments, sweeps of training runs
(:func:`~bindcore.sweep.run_sweep`), the result store that keeps them, and the pixel
scenes' levels and palette (appendix E, :mod:`bindcore.data.pixels`)."""

from bindcore.data.pixels import LEVEL_LABELS, palette_separation
from bindcore.store import ResultStore, has_weights
from bindcore.sweep import run_sweep

from .complexity import (
    controlled_datasets,
    controlled_jobs,
    controlled_sweeps,
    figure9_runs,
    figure9_table,
    pretrained_sweeps,
    stop_summary,
)
from .generalization import chapter_recipe, describe_scale_records, note_stored, scale_records
from .geometry import geometry_nulls, geometry_sets, natural_table, three_object_long, three_object_table
from .inputs import data_and_weights_note, geometry_encoders, pretrained_encoders
from .pixels import pixel_approximator_params, pixel_base, pixel_binding_data, pixel_runs, pixel_sweeps
from .report import gather_results

__all__ = [
    "LEVEL_LABELS", "ResultStore", "chapter_recipe", "controlled_datasets", "controlled_jobs", "controlled_sweeps",
    "data_and_weights_note", "describe_scale_records", "figure9_runs", "figure9_table", "gather_results",
    "geometry_encoders", "geometry_nulls", "geometry_sets", "has_weights", "natural_table", "note_stored",
    "palette_separation", "pixel_approximator_params", "pixel_base", "pixel_binding_data", "pixel_runs",
    "pixel_sweeps", "pretrained_encoders", "pretrained_sweeps", "run_sweep", "scale_records", "stop_summary",
    "three_object_long", "three_object_table",
]
