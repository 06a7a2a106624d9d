"""The approximator families as tables, figures and claims name them: one label per
family of :data:`~bindcore.analysis.approximators.FAMILIES` and per tree model (D.6).

A module of its own, imported by none of the package's computing modules."""

from __future__ import annotations

FAMILY_LABELS = {
    "mlp": "MLP", "additive": "additive (per slot)", "global_product": "global product",
    "sum_global_product": "additive + global product", "within_object_product": "within-object product",
    "sum_within_object_product": "additive + within-object product", "xgboost": "XGBoost",
    "random_forest": "random forest",
}
