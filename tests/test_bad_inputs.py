"""Nothing silent: embeddings and labels go through one input check
(bindcore.analysis.inputs) in probes, approximators, geometry and metrics: a NaN, a
float or out-of-range label, a wrong shape or too few rows is an error that says what
and where, never a NaN model that reports accuracy 0."""

from __future__ import annotations

import numpy as np
import pytest

from bindcore.analysis import approximators as A
from bindcore.analysis import geometry as G
from bindcore.analysis.probes import BindingData, LinearProbes, object_level_split

V = [3, 2]


def _scenes(n: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8)).astype(np.float32)
    objects = np.stack([rng.integers(0, 3, (n, 2)), rng.integers(0, 2, (n, 2))], -1)
    return X, objects


def test_one_input_check_shared_by_probes_approximators_and_geometry():
    from bindcore.analysis import inputs

    # geometry's check is the one in analysis/inputs, not a copy
    assert G.check_inputs is inputs.check_inputs and G.check_objects is inputs.check_objects
    import bindcore.analysis.approximators.trainer as trainer
    import bindcore.analysis.probes as probes

    assert probes.check_inputs is inputs.check_inputs and trainer.check_embeddings is inputs.check_embeddings


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_linear_probes_refuse_non_finite_embeddings(bad):
    X, objects = _scenes()
    X[3, 2] = bad
    with pytest.raises(ValueError, match="NaN or infinite.*row 3"):
        LinearProbes(V, epochs=5).fit(X, objects)  # trained NaN weights and reported accuracy 0.0
    probes = LinearProbes(V, epochs=5).fit(np.nan_to_num(X, posinf=0.0), objects)
    with pytest.raises(ValueError, match="NaN"):
        probes.scores(X, objects)
    with pytest.raises(ValueError, match="columns"):
        probes.decision_function(X[:, :4])


@pytest.mark.parametrize("epochs", [0, -3, 2.5, True])
def test_linear_probes_refuse_epochs_that_train_nothing(epochs):
    X, objects = _scenes()
    with pytest.raises(ValueError, match="epochs"):
        LinearProbes(V, epochs=epochs).fit(X, objects)  # returned untrained probes
    with pytest.raises(ValueError, match="lr"):
        LinearProbes(V, lr=0.0).fit(X, objects)


def test_labels_are_never_truncated_or_dropped():
    X, objects = _scenes()
    with pytest.raises(ValueError, match="integer concept indices"):
        LinearProbes(V, epochs=5).fit(X, objects + 0.7)  # was truncated to objects
    neg = objects.copy()
    neg[0, 0] = -3
    with pytest.raises(ValueError, match="index -3"):
        LinearProbes(V, epochs=5).fit(X, neg)  # a -3 row was dropped as "absent"
    big = objects.copy()
    big[1, 1, 0] = 3
    with pytest.raises(ValueError, match="index 3"):
        LinearProbes(V, epochs=5).fit(X, big)
    with pytest.raises(ValueError, match="rows"):
        LinearProbes(V, epochs=5).fit(X[:0], objects[:0])  # no scene to fit on


def _binding(seed: int = 0) -> BindingData:
    return A.synthetic_binding_data((3, 3), dim=8, seed=seed)


def test_binding_data_refuses_float_labels_and_non_finite_probes():
    d = _binding()
    with pytest.raises(ValueError, match="integer"):
        BindingData(d.objects + 0.5, d.embeddings, d.values_per_concept, d.concept_probes, d.object_probe)
    probe = d.object_probe.copy()
    probe[0, 0] = np.nan
    with pytest.raises(ValueError, match="object probe.*NaN"):
        BindingData(d.objects, d.embeddings, d.values_per_concept, d.concept_probes, probe)


def test_a_nan_in_one_fitting_scene_is_an_error_not_accuracy_zero():
    d = _binding()
    split = object_level_split(d, 0.6, seed=0)
    specs = A.make_specs(d, split, "mlp", widths=[8], val_fraction=0.2)
    y = d.embeddings.copy()
    y[specs[0].fit_index[0], 0] = np.nan
    poisoned = BindingData(d.objects, y, d.values_per_concept, d.concept_probes, d.object_probe)
    with pytest.raises(ValueError, match="fitting scenes.*NaN.*1 row"):
        A.train_models(poisoned, specs, steps=5, eval_every=5, progress=False)
    with pytest.raises(ValueError, match="fitting scenes.*NaN"):
        A.fit_trees(poisoned, split, "random_forest", grid=[dict(n_estimators=3)], progress=False)
    with pytest.raises(ValueError, match="Y holds NaN"):
        A.PCATreeRegressor("random_forest").fit(np.zeros((len(y), 3)), y)


def test_empty_sweeps_are_errors():
    d = _binding()
    split = object_level_split(d, 0.6, seed=0)
    with pytest.raises(ValueError, match="at least one"):
        A.make_specs(d, split, "mlp", widths=[8], lrs=[])
    with pytest.raises(ValueError, match="at least one"):
        A.sweep_fractions(d, [], ["mlp"], progress=False)


def test_geometry_and_metrics_share_the_check():
    import torch

    from bindcore.analysis.geometry_sets import EmbeddingSet
    from bindcore.analysis.metrics import additive_r2

    X, objects = _scenes()
    Z = X.astype(np.float64)
    Z[5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        G.r2_score(Z, np.zeros_like(Z))  # Z is data: a NaN row in it is an error (Z_hat may hold NaN rows)
    with pytest.raises(ValueError, match="NaN"):
        G.cosine_distances(Z)
    with pytest.raises(ValueError, match="NaN"):
        EmbeddingSet("d", "e", "text", True, Z, objects, V)
    with pytest.raises(ValueError, match="index 5"):
        additive_r2(torch.zeros(4, 3), torch.tensor([[0, 1], [5, 0], [1, 1], [0, 0]]), 3)
    with pytest.raises(ValueError, match="NaN"):
        additive_r2(torch.full((4, 3), float("nan")), torch.tensor([[0, 1], [2, 0], [1, 1], [0, 0]]), 3)
