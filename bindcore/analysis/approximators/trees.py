"""Tree approximators (paper D.6).

Tree approximators (paper D.6, not in the released code): XGBoost and Random Forest
regressors on the one-hot slot codes (:class:`PCATreeRegressor`). The d-dimensional
target is regressed through a low-rank projection: PCA on the *fitting* embeddings,
the top k components (the fewest that keep ``variance`` of the fitting variance, at
most ``max_components``) are the regression targets, predictions are mapped back with
the PCA basis and mean.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from bindcore.runtime import progress_bar

from ..probes import BindingData, ObjectLevelSplit
from .families import one_hot_codes
from .trainer import _metrics, make_specs

TREE_KINDS = ("xgboost", "random_forest")

TREE_GRIDS: dict[str, list[dict[str, Any]]] = {
    "xgboost": [dict(n_estimators=300, learning_rate=0.1, max_depth=d, subsample=0.8, colsample_bytree=0.8)
                for d in (3, 6)],
    "random_forest": [dict(n_estimators=200, max_features=f, min_samples_leaf=1) for f in (1.0, 0.33)],
}


def _centred_pca(n_components: int):
    """scikit-learn's ``PCA`` whose ``transform`` centres before it projects,
    ``(Y - mean) @ components.T``, where scikit-learn projects and then subtracts the
    projected mean. The two differ in the last bits, and a random forest's splits turn
    such differences into other trees (its exact ties break another way)."""
    from sklearn.decomposition import PCA

    class CentredPCA(PCA):
        def transform(self, X):
            return (np.asarray(X, dtype=np.float64) - self.mean_) @ self.components_.T

    return CentredPCA(n_components, svd_solver="full")


class PCATreeRegressor:
    """XGBoost or Random Forest on one-hot slot codes, predicting a d-dimensional
    embedding through PCA: scikit-learn's ``TransformedTargetRegressor`` with a ``PCA``
    of the targets.

    ``fit(X, Y)``: the fewest top principal components of ``Y`` whose explained variance
    reaches ``variance`` (at most ``max_components``, at least 1) are the targets of one
    multi-output regressor (XGBoost: one tree per component per round; Random Forest:
    trees with k-dimensional leaves); ``predict`` maps the k predicted scores back through
    the PCA (``mean + scores @ components``). The discarded directions are predicted as
    the mean. Everything is seeded with ``seed``."""

    def __init__(self, kind: str = "xgboost", variance: float = 0.95, max_components: int = 32, seed: int = 0,
                 n_jobs: int = 1, **params: Any):
        if kind not in TREE_KINDS:
            raise ValueError(f"kind must be one of {TREE_KINDS}, got {kind!r}")
        if not 0 < variance <= 1:
            raise ValueError(f"variance must lie in (0, 1], got {variance}")
        if max_components < 1:
            raise ValueError(f"max_components must be >= 1, got {max_components}")
        self.kind, self.variance, self.max_components = kind, variance, max_components
        self.seed, self.n_jobs, self.params = seed, n_jobs, params

    def _regressor(self):
        if self.kind == "xgboost":
            from xgboost import XGBRegressor

            return XGBRegressor(tree_method="hist", random_state=self.seed, n_jobs=self.n_jobs,
                                multi_strategy="one_output_per_tree", **self.params)
        from sklearn.ensemble import RandomForestRegressor

        return RandomForestRegressor(random_state=self.seed, n_jobs=self.n_jobs, **self.params)

    def _n_components(self, Y: np.ndarray) -> tuple[int, float]:
        """(k, the share of the variance the top k components explain)."""
        from sklearn.decomposition import PCA

        spectrum = PCA(svd_solver="full").fit(Y)
        if spectrum.explained_variance_.sum() <= 0:
            return 1, 0.0
        ratio = np.cumsum(spectrum.explained_variance_ratio_)
        k = int(np.searchsorted(ratio, self.variance - 1e-12) + 1)
        k = max(1, min(k, self.max_components, len(ratio)))
        return k, float(ratio[k - 1])

    def fit(self, X: np.ndarray, Y: np.ndarray) -> PCATreeRegressor:
        from sklearn.compose import TransformedTargetRegressor

        X = np.asarray(X, dtype=np.float32)
        Y = np.asarray(Y, dtype=np.float64)
        if len(X) != len(Y) or len(X) < 1:
            raise ValueError(f"X has {len(X)} rows and Y {len(Y)}")
        self.n_components_, self.explained_variance_ratio_ = self._n_components(Y)
        self.model_ = TransformedTargetRegressor(
            regressor=self._regressor(), transformer=_centred_pca(self.n_components_),
            check_inverse=False).fit(X, Y)
        pca = self.model_.transformer_
        self.mean_, self.components_ = pca.mean_, pca.components_
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.model_.predict(np.asarray(X, dtype=np.float32)), dtype=np.float32)


def fit_trees(data: BindingData, split: ObjectLevelSplit, kind: str, grid: list[dict[str, Any]] | None = None,
              val_fraction: float = 0.2, seed: int = 0, variance: float = 0.95, max_components: int = 32,
              n_jobs: int = 1, progress: bool = True, fraction: float | None = None,
              keep_predictions: bool = False) -> list[dict[str, Any]]:
    """One :class:`PCATreeRegressor` per grid point (default :data:`TREE_GRIDS`), fitted
    on the split's training scenes minus the validation part; records shaped like
    :func:`train_models`'s (``width``/``lr`` None, ``params``; ``selected_*`` =
    ``final_*``, a tree has no steps). Pick the grid point with :func:`select_best`."""
    if kind not in TREE_KINDS:
        raise ValueError(f"kind must be one of {TREE_KINDS}, got {kind!r}")
    grid = TREE_GRIDS[kind] if grid is None else grid
    spec = make_specs(data, split, "additive", val_fraction=val_fraction, val_seed=seed, fraction=fraction)[0]
    X = one_hot_codes(data)
    out = []
    for params in progress_bar(grid, enabled=progress, desc=f"{kind}", leave=False):
        t0 = time.perf_counter()
        reg = PCATreeRegressor(kind, variance, max_components, seed, n_jobs, **params)
        reg.fit(X[spec.fit_index], data.embeddings[spec.fit_index])
        pred = reg.predict(X)
        seconds = time.perf_counter() - t0
        m = _metrics(data, spec, pred)
        rec: dict[str, Any] = {
            "family": kind, "width": None, "lr": None, "seed": seed, "fraction": fraction, "protocol": "trees",
            "steps": None, "batch_size": None, "n_fit": len(spec.fit_index), "n_val": len(spec.val_index),
            "n_train_objects": len(split.train_objects), "n_heldout": len(split.heldout),
            "final_step": None, "selected_step": None,
            "selected_by": "final (grid point chosen by select_best)",
            "params": dict(params), "n_components": reg.n_components_,
            "explained_variance": reg.explained_variance_ratio_,
        }
        for k, v in m.items():
            rec[f"final_{k}"] = v
            rec[f"selected_{k}"] = v
        rec.update(curve=[{"step": 0, **m}], seconds=seconds, trainer_seconds=seconds, trainer_models=1,
                   stacked=False)
        if keep_predictions:
            rec["predictions"] = pred
        out.append(rec)
    return out
