"""Binding-function approximators (§5.1, §5.3, §5.4, C.4, D.6; reference-spec §8): maps from a
scene's slot codes ``[N, 2C]`` to its embedding ``[N, d]``, read by the encoder's frozen probes."""

from .families import (
    FAMILIES,
    PRODUCT_FAMILIES,
    PRODUCT_INITS,
    StackedApproximator,
    global_codes,
    make_approximator,
    one_hot_codes,
    slot_sizes,
)
from .sweeps import GROUP_KEYS, fit_family, select_best, sweep_fractions, sweep_specs
from .synthetic import synthetic_binding_data
from .trainer import (
    PLATEAU_DELTA,
    PROTOCOLS,
    STACK_OVERHEAD_WORK,
    ModelSpec,
    Protocol,
    default_width,
    get_protocol,
    make_specs,
    plan_stacks,
    plateau_step,
    step_work,
    time_stacks,
    train_models,
)
from .trees import TREE_GRIDS, TREE_KINDS, PCATreeRegressor, fit_trees

__all__ = [
    "FAMILIES", "GROUP_KEYS", "PLATEAU_DELTA", "PRODUCT_FAMILIES", "PRODUCT_INITS", "PROTOCOLS",
    "STACK_OVERHEAD_WORK", "TREE_GRIDS", "TREE_KINDS", "ModelSpec", "PCATreeRegressor", "Protocol",
    "StackedApproximator", "default_width", "fit_family", "fit_trees", "get_protocol", "global_codes",
    "make_approximator", "make_specs", "one_hot_codes", "plan_stacks", "plateau_step", "select_best", "slot_sizes",
    "step_work", "sweep_fractions", "sweep_specs", "synthetic_binding_data", "time_stacks", "train_models",
]
