"""Binding-function approximators (paper §5.1, §5.3, §5.4, C.4, D.6; reference-spec §8).

An approximator maps a two-object scene's slot codes (``BindingData.slot_codes()``,
``[N, 2C]``: one concept index per object slot, object-major) to the frozen encoder's
scene embedding ``[N, d]``. Its quality is read with the encoder's frozen probes
(:func:`bindcore.analysis.probes.functional_binding`): can the probes still recognise the
concepts and the objects of held-out scenes from the *predicted* embedding?

The package, one module per concept:

* :mod:`~.families`: the function classes (six torch families) and their initialisation;
* :mod:`~.trainer`: the training protocols, model selection on validation scenes, and
  the stacked trainer (many models in one loop);
* :mod:`~.sweeps`: a family, or every family, over data fractions, and choosing among
  learning rates;
* :mod:`~.trees`: XGBoost and Random Forest through a PCA of the embeddings (D.6);
* :mod:`~.synthetic`: binding functions of known form (tests, benchmarks).
"""

from .families import (
    FAMILIES,
    PRODUCT_INITS,
    StackedApproximator,
    global_codes,
    make_approximator,
    one_hot_codes,
    slot_sizes,
)
from .sweeps import GROUP_KEYS, fit_family, select_best, sweep_fractions
from .synthetic import synthetic_binding_data
from .trainer import (
    PROTOCOLS,
    STACK_OVERHEAD_WORK,
    ModelSpec,
    Protocol,
    default_width,
    get_protocol,
    make_specs,
    plan_stacks,
    step_work,
    train_models,
)
from .trees import TREE_GRIDS, TREE_KINDS, PCATreeRegressor, fit_trees

__all__ = [
    "FAMILIES", "GROUP_KEYS", "PRODUCT_INITS", "PROTOCOLS", "STACK_OVERHEAD_WORK", "TREE_GRIDS", "TREE_KINDS",
    "ModelSpec", "PCATreeRegressor", "Protocol", "StackedApproximator", "default_width", "fit_family", "fit_trees",
    "get_protocol", "global_codes", "make_approximator", "make_specs", "one_hot_codes", "plan_stacks",
    "select_best", "slot_sizes", "step_work", "sweep_fractions", "synthetic_binding_data", "train_models",
]
