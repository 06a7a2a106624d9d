"""Tree approximators (D.6, not in the release): XGBoost and Random Forest through a PCA of
the embeddings. The PCA is NumPy's SVD: scikit-learn's (SciPy's LAPACK) differs in the last
bits, which breaks a random forest's many tied splits another way and changes its numbers."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from bindcore.runtime import progress_bar

from ..inputs import check_embeddings
from ..probes import BindingData, ObjectLevelSplit
from .families import one_hot_codes
from .trainer import _metrics, check_fit_rows, make_specs

TREE_KINDS = ("xgboost", "random_forest")
# The random forest regresses PCA scores rounded to float32 (see PCATreeRegressor.fit); its
# stored records name this in their key, so that those fitted before the rounding are not reused.
FOREST_TARGETS = {"forest targets": "float32 PCA scores"}

TREE_GRIDS: dict[str, list[dict[str, Any]]] = {
    "xgboost": [dict(n_estimators=300, learning_rate=0.1, max_depth=d, subsample=0.8, colsample_bytree=0.8)
                for d in (3, 6)],
    "random_forest": [dict(n_estimators=200, max_features=f, min_samples_leaf=1) for f in (1.0, 0.33)],
}


class PCATreeRegressor:
    """A seeded multi-output XGBoost or Random Forest regressing the scores of the fewest top
    principal components of ``Y`` that keep ``variance`` (1 .. ``max_components``); predicts
    ``mean + scores @ components``."""

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

    def fit(self, X: np.ndarray, Y: np.ndarray) -> PCATreeRegressor:
        X = check_embeddings(X, "X", dtype=np.float32)
        Y = check_embeddings(Y, "Y", n_rows=len(X))
        self.mean_ = Y.mean(0)
        _, s, vt = np.linalg.svd(Y - self.mean_, full_matrices=False)
        var = s ** 2
        total = var.sum()
        if total <= 0:
            k = 1
            ratio = np.ones(1)
        else:
            ratio = np.cumsum(var) / total
            k = int(np.searchsorted(ratio, self.variance - 1e-12) + 1)
        self.n_components_ = max(1, min(k, self.max_components, len(vt)))
        self.components_ = vt[: self.n_components_]
        self.explained_variance_ratio_ = float(ratio[self.n_components_ - 1]) if total > 0 else 0.0
        # rounded to float32: the last bits of an SVD differ from one CPU to another, and a
        # forest's tied splits would follow them (its numbers would depend on the machine)
        scores = ((Y - self.mean_) @ self.components_.T).astype(np.float32)
        self.model_ = self._regressor().fit(X, scores if scores.shape[1] > 1 else scores[:, 0])
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        s = np.asarray(self.model_.predict(np.asarray(X, dtype=np.float32)), dtype=np.float64)
        s = s.reshape(len(X), self.n_components_)
        return (self.mean_ + s @ self.components_).astype(np.float32)


def fit_trees(data: BindingData, split: ObjectLevelSplit, kind: str, grid: list[dict[str, Any]] | None = None,
              val_fraction: float = 0.2, seed: int = 0, variance: float = 0.95, max_components: int = 32,
              n_jobs: int = 1, progress: bool = True, fraction: float | None = None,
              keep_predictions: bool = False) -> list[dict[str, Any]]:
    """One record per grid point (default :data:`TREE_GRIDS`), fitted on the split's fit scenes,
    shaped like :func:`train_models`'s (``width``/``lr`` None, ``selected_*`` = ``final_*``)."""
    if kind not in TREE_KINDS:
        raise ValueError(f"kind must be one of {TREE_KINDS}, got {kind!r}")
    grid = TREE_GRIDS[kind] if grid is None else grid
    spec = make_specs(data, split, "additive", val_fraction=val_fraction, val_seed=seed, fraction=fraction)[0]
    check_fit_rows(data, spec.fit_index)
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
