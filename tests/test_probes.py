"""Linear probes, the object-level split, functional binding, controlled binding data."""

import numpy as np
import pytest

from bindcore.analysis.probes import (
    BindingData,
    LinearProbes,
    controlled_binding_data,
    functional_binding,
    heldout_by_values,
    object_level_split,
    scene_split,
)

V = [6, 4]


def all_pairs(values):
    objs = np.array([(a, b) for b in range(values[1]) for a in range(values[0])])
    return np.stack(np.meshgrid(np.arange(len(objs)), np.arange(len(objs)), indexing="ij"), -1).reshape(-1, 2), objs


def synthetic(kind: str, d: int = 48, seed: int = 0) -> BindingData:
    """Scenes of all ordered object pairs; embeddings a sum over objects of either
    concept vectors (bag of concepts) or object-specific vectors (bag of objects)."""
    rng = np.random.default_rng(seed)
    pairs, objs = all_pairs(V)
    u = [rng.normal(size=(v, d)) for v in V]
    ids = objs[:, 0] + V[0] * objs[:, 1]
    if kind == "concepts":
        vec = u[0][objs[:, 0]] + u[1][objs[:, 1]]
    else:
        vec = rng.normal(size=(len(objs), d))
    emb = vec[pairs[:, 0]] + vec[pairs[:, 1]]
    objects = objs[pairs]  # [N, 2, C]
    obj_probe = np.zeros((len(objs), d))
    obj_probe[ids] = vec
    return BindingData(objects, emb, V, u, obj_probe, name=kind)


def test_object_level_split_never_mixes_and_nests():
    data = synthetic("objects")
    ids = data.object_ids()
    prev = None
    for f in (0.2, 0.5, 0.8):
        sp = object_level_split(data, f, seed=3)
        train = set(sp.train_objects.tolist())
        assert all(set(ids[i]) <= train for i in sp.train)
        assert all(not set(ids[i]) & train for i in sp.heldout)
        assert all(len(set(ids[i]) & train) == 1 for i in sp.mixed)
        assert len(sp.train) + len(sp.heldout) + len(sp.mixed) == len(data.objects)
        fit, val = sp.validation(0.2, seed=1)
        assert set(fit) | set(val) == set(sp.train) and not set(fit) & set(val)
        if prev is not None:
            assert prev <= train  # nested: a larger fraction keeps the smaller one's objects
        prev = train
    with pytest.raises(ValueError, match="fraction"):
        object_level_split(data, 1.0)


def test_functional_binding_of_true_embeddings():
    sp = object_level_split(synthetic("objects"), 0.5)
    objects_model = functional_binding(synthetic("objects"), synthetic("objects").embeddings, sp)
    assert objects_model["heldout_object"] == 1.0 and objects_model["heldout_r2"] == pytest.approx(1.0)
    concepts = synthetic("concepts")
    bag = functional_binding(concepts, concepts.embeddings, sp)
    # a bag of concepts cannot separate (a,x)+(b,y) from (a,y)+(b,x): object recognition fails
    # on the scenes whose objects differ in both concepts
    assert bag["heldout_object"] < 0.6


def test_heldout_scenes_split_by_values_seen_in_training():
    data = synthetic("objects")
    sp = object_level_split(data, 0.2, seed=0)  # 4 training objects of 24: some values never seen
    seen, unseen = heldout_by_values(data, sp)
    assert len(unseen) > 0 and len(seen) + len(unseen) == len(sp.heldout)
    train_vals = [set(data.objects[sp.train][:, :, c].ravel().tolist()) for c in range(2)]
    for i in seen:
        assert all(v in train_vals[c] for c in range(2) for v in data.objects[i, :, c])
    for i in unseen:
        assert any(v not in train_vals[c] for c in range(2) for v in data.objects[i, :, c])
    m = functional_binding(data, data.embeddings, sp)
    assert m["n_heldout_unseen"] == len(unseen) and m["heldout_unseen_object"] > 0.9


def test_binding_data_validates_shapes():
    d = synthetic("objects")
    with pytest.raises(ValueError, match="object probe"):
        BindingData(d.objects, d.embeddings, V, d.concept_probes, d.object_probe[:-1])
    with pytest.raises(ValueError, match="two-object"):
        BindingData(d.objects[:, :1], d.embeddings, V, d.concept_probes, d.object_probe)


def test_linear_probes_estimator_interface_and_accuracy():
    data = synthetic("objects", d=64)
    X, objs = data.embeddings, data.objects
    tr, te = scene_split(len(X), 0.4, seed=0)
    assert len(tr) == int(0.4 * len(X)) and not set(tr) & set(te)
    probe = LinearProbes(V, epochs=300, seed=1)
    assert probe.get_params()["epochs"] == 300
    clone = LinearProbes(**probe.get_params())
    assert clone.get_params() == probe.get_params()
    with pytest.raises(RuntimeError, match="not fitted"):
        probe.predict(X)
    with pytest.raises(ValueError, match="no parameter"):
        probe.set_params(colour=1)
    probe.fit(X[tr], objs[tr])
    s = probe.scores(X[te], objs[te])
    assert s["object"] > 0.95 and s["concept"] > 0.95
    assert probe.score(X[te], objs[te]) == s["object"]
    top2 = probe.predict(X[te[:20]])
    true = data.object_ids()[te[:20]]
    assert np.mean([set(p) == set(t) for p, t in zip(top2, true) if t[0] != t[1]]) > 0.9
    assert set(probe.decision_function(X[:3])) == {"concept_0", "concept_1", "object"}
    bd = probe.binding_data(objs, X)
    assert bd.object_probe.shape == (24, 64)
    # refitting with the same seed gives the same probe
    again = LinearProbes(**probe.get_params()).fit(X[tr], objs[tr])
    assert np.allclose(again.object_weights_, probe.object_weights_)


def test_linear_probes_handle_single_object_scenes_and_bad_input():
    data = synthetic("objects")
    objs = data.objects.copy()
    objs[:10, 1] = -1  # ten single-object scenes
    probe = LinearProbes(V, epochs=50).fit(data.embeddings, objs)
    assert 0.0 <= probe.scores(data.embeddings, objs)["concept"] <= 1.0
    assert probe.binding_data(objs, data.embeddings).objects.shape[0] == len(objs) - 10
    with pytest.raises(ValueError, match="objects must be"):
        LinearProbes(V).fit(data.embeddings, objs[:, :, :1])


def test_controlled_binding_data_from_a_stored_run(tmp_path):
    from bindcore.controlled.recipes import recipe
    from bindcore.controlled.runs import train
    from bindcore.controlled.training import TrainConfig
    from bindcore.store import ResultStore

    rec = train(recipe("smoke", steps=4), store=ResultStore(tmp_path, published=None), progress=False)
    data = controlled_binding_data(rec)
    assert data.objects.shape == (16 * 16, 2, 2) and data.embeddings.shape == (256, 8)
    assert data.object_probe.shape == (16, 8)
    assert np.allclose(np.linalg.norm(data.object_probe, axis=1), 1.0, atol=1e-5)
    sub = controlled_binding_data(rec, objects="test")
    held = set(TrainConfig.from_dict(rec["config"]).split.test.tolist())
    assert set(sub.object_ids().ravel().tolist()) <= held
    with pytest.raises(ValueError, match="objects"):
        controlled_binding_data(rec, objects="some")


def test_controlled_binding_data_is_keyed_by_the_weights_not_the_floats(tmp_path):
    """The binding data of a stored model names the run and a digest of its weights: the
    same key at any thread count (the floats may differ in their last bits), another key
    for other weights, other objects and for the Gaussian null of its embedding set."""
    import torch

    from bindcore.analysis.complexity import binding_data_hash
    from bindcore.analysis.embedding_sets import controlled_set, gaussian_null
    from bindcore.controlled.recipes import recipe
    from bindcore.controlled.runs import train
    from bindcore.store import ResultStore

    store = ResultStore(tmp_path, published=None)
    rec = train(recipe("smoke", steps=4), store=store, progress=False)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = controlled_binding_data(rec)
        torch.set_num_threads(2)
        two = controlled_binding_data(rec)
    finally:
        torch.set_num_threads(threads)
    assert one.origin["weights"] and one.origin == two.origin
    assert np.allclose(one.embeddings, two.embeddings, atol=1e-5)
    assert binding_data_hash(one) == binding_data_hash(two)
    assert controlled_set(one).content_hash() == controlled_set(two).content_hash()
    assert gaussian_null(controlled_set(one)).content_hash() != controlled_set(one).content_hash()
    assert binding_data_hash(controlled_binding_data(rec, objects="test")) != binding_data_hash(one)
    longer = train(recipe("smoke", steps=6), store=store, progress=False)
    other = controlled_binding_data(longer)
    assert other.origin["weights"] != one.origin["weights"]
    assert binding_data_hash(other) != binding_data_hash(one)


def test_pretrained_probes_are_fitted_once_and_read_back_from_the_store(tmp_path, monkeypatch):
    from bindcore import encoders as E
    from bindcore.analysis import embedding_sets as S
    from bindcore.store import RESULTS_ENV, ResultStore

    monkeypatch.setenv(RESULTS_ENV, str(tmp_path / "results"))  # the embeddings' default store
    store, fits = ResultStore(tmp_path / "results", published=None), []
    params = {"text_space": [3, 3], "probe_epochs": 20, "probe_lr": 0.1}
    enc = {"tiny": E.RandomInitClipEncoder("ViT-S-32-alt", seed=0, image_size=64, device="cpu")}
    fit = S.LinearProbes.fit
    monkeypatch.setattr(S.LinearProbes, "fit", lambda self, *a: fits.append(1) or fit(self, *a))
    first, table = S.pretrained_binding(params, enc, store=store)
    again, table_again = S.pretrained_binding(params, enc, store=store)
    assert fits == [1] and table.equals(table_again)
    a, b = first["tiny"], again["tiny"]
    assert np.array_equal(a.object_probe, b.object_probe) and a.origin == b.origin
    assert all(np.array_equal(x, y) for x, y in zip(a.concept_probes, b.concept_probes))
    assert len(list(store.entries(S.PROBES_KIND))) == 1
