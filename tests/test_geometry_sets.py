"""The D.3 / D.5 helpers of bindcore.analysis.geometry_sets on small synthetic embedding sets.

No encoder runs here: sets are built from planted arrays (three objects per scene,
8 x 3 objects as in CLEVR), probes train for a few epochs, and every stored analysis
goes to a temporary result store. The whole file takes a few seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from bindcore.analysis import attribution as A
from bindcore.analysis import embedding_sets as ES
from bindcore.analysis import geometry as G
from bindcore.analysis import geometry_sets as GS
from bindcore.book import tables as T
from bindcore.experiments import geometry as EG
from bindcore.store import ResultStore
from bindcore.verdicts import core as CL
from bindcore.verdicts.additional import additional_claims

torch.set_num_threads(2)

VPC = [8, 3]
PARAMS = {"probe_epochs": 30, "probe_lr": 0.05, "mds_components": 2}


def planted_three(n: int = 240, d: int = 24, interaction: float = 1.0, seed: int = 0, noise: float = 0.05,
                  concept: float = 1.0):
    """``n`` scenes of three objects drawn independently (repeats allowed); a scene is
    the sum of its objects' vectors = concept part (scaled by ``concept``) + object-specific
    part (scaled by ``interaction``) plus a little noise. Returns (Z, objects [n, 3, 2])."""
    rng = np.random.default_rng(seed)
    u = int(np.prod(VPC))
    vals = G.object_values(np.arange(u), VPC)
    parts = sum(rng.normal(size=(v, d))[vals[:, c]] for c, v in enumerate(VPC))
    vectors = concept * parts + interaction * rng.normal(size=(u, d))
    ids = rng.integers(0, u, size=(n, 3))
    Z = vectors[ids].sum(1) + noise * rng.normal(size=(n, d))
    return Z.astype(np.float32), G.object_values(ids, VPC)


def make_set(occluded: bool, pretrained: bool = False, **kw) -> GS.EmbeddingSet:
    Z, obj = planted_three(**kw)
    return GS.EmbeddingSet(ES.THREE_OBJECT_DATASETS[occluded], "synthetic", "image", pretrained, Z, obj, VPC,
                           ["color", "shape"], [[f"c{i}" for i in range(8)], ["cube", "cylinder", "sphere"]])


@pytest.fixture()
def store(tmp_path):
    return ResultStore(tmp_path, published=None)


def test_three_object_table_columns_and_object_beats_concepts(store):
    sets = [make_set(False, seed=0), make_set(True, seed=1)]
    table = EG.three_object_table(sets, PARAMS, store=store)
    assert len(table) == 2
    for col in ("dataset", "occlusion", "encoder", "weights", "probing concepts", "probing objects",
                "R² held-out concepts (avg)", "R² held-out objects (avg)", "R² held-out concepts (lstsq)",
                "R² held-out objects (lstsq)", "retrieval objects (all scenes)", "retrieval objects (held-out)",
                "retrieval chance (held-out)", "held-out scenes", "n_excluded", "paper (CLIP): retrieval"):
        assert col in table.columns, col
    assert table["occlusion"].tolist() == [False, True]
    # planted object-specific parts: bags of objects explain more than bags of concepts
    assert (table["R² held-out objects (lstsq)"] >= table["R² held-out concepts (lstsq)"]).all()
    assert (table["R² held-out objects (avg)"] >= table["R² held-out concepts (avg)"]).all()
    assert (table["R² held-out objects (lstsq)"] > 0.9).all()
    # the object reconstructions of nearly additive scenes find their own scene
    assert (table["retrieval objects (all scenes)"] > 0.9).all()
    assert (table["retrieval chance (held-out)"] < 0.05).all()
    assert (table["held-out scenes"] == 48).all()
    # random-init rows never carry the paper's CLIP numbers
    assert (table["paper (CLIP): retrieval"] == "–").all()
    assert table["weights"].eq("random init (control)").all()


def test_paper_numbers_sit_beside_pretrained_rows_only(store):
    sets = [make_set(False, pretrained=True), make_set(True, pretrained=True), make_set(True, pretrained=False)]
    table = EG.three_object_table(sets, PARAMS, store=store)
    assert table["paper (CLIP): retrieval"].tolist() == [0.76, 0.65, "–"]
    assert table["paper (CLIP): probing"].tolist() == ["–", "0.91–0.93", "–"]
    claims = additional_claims(table, T.mds_table(sets[:1], [GS.mds_analysis(sets[0], PARAMS, store)]), "smoke")
    assert list(claims.columns) == CL.COLUMNS
    # three D.3 claims of the pretrained encoder, one of its control, one D.5 claim
    assert len(claims) == 3 + 3 + 1
    assert (claims[claims["subject"].str.contains("control")]["status"] == CL.UNTESTABLE).all()


def test_rare_objects_are_counted_and_excluded(store):
    s = make_set(False, n=12, seed=3)  # 36 occurrences of 24 objects: some never seen
    occ = GS.object_occurrences(s)
    assert occ["objects"] == 24 and occ["never_seen"] > 0
    df = GS.three_object_analysis(s, PARAMS, store)
    assert df.attrs["occurrences"] == occ
    assert (df["n_excluded_heldout"] >= 0).all() and (df["n_excluded_heldout"] <= df["n_heldout"]).all()
    row = EG.three_object_table([s], PARAMS, store)
    assert row["objects never seen"].iloc[0] == occ["never_seen"]


def test_stored_frame_returns_the_same_frame_twice(store):
    s = make_set(False, n=60)
    calls = []

    def compute():
        calls.append(1)
        df = pd.DataFrame({"a": [1.0, np.nan], "b": ["x", "y"]})
        df.attrs["info"] = {"n": 2}
        return df

    first = GS.stored_frame(s, "test", {"p": 1}, compute, store)
    second = GS.stored_frame(s, "test", {"p": 1}, compute, store)
    assert len(calls) == 1
    pd.testing.assert_frame_equal(first, second)
    assert first.attrs == second.attrs == {"info": {"n": 2}}
    # the stored D.3 analysis too: computed once, read back identically
    a = GS.three_object_analysis(s, PARAMS, store)
    b = GS.three_object_analysis(s, PARAMS, store)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs


def test_mds_analysis_of_a_planted_grid(store):
    # purely concept-additive objects: the object layout is a grid, neighbours share a value
    s = make_set(False, n=400, interaction=0.0, d=64)
    df = GS.mds_analysis(s, PARAMS, store)
    assert set(df["bank"]) == {"objects", "concepts"}
    assert (df["bank"] == "objects").sum() == 24 and (df["bank"] == "concepts").sum() == 11
    grid = T.mds_table([s], [df])
    assert grid["objects"].iloc[0] == 24
    assert grid["grid-likeness (full d)"].iloc[0] > grid["chance"].iloc[0] + 0.3
    # every object's 7 + 2 grid neighbours are its nearest points in the full embedding
    assert grid["grid neighbours"].iloc[0] == 9
    assert grid["grid-neighbour recall (full d)"].iloc[0] > 0.9
    # objects without shared concept structure: neighbours share a value at chance level
    s = make_set(False, n=400, interaction=1.0, concept=0.0, d=64)
    grid = T.mds_table([s], [GS.mds_analysis(s, PARAMS, store)])
    assert grid["grid-neighbour recall (full d)"].iloc[0] < grid["chance"].iloc[0] + 0.2
    assert 0 <= grid["grid-likeness (MDS)"].iloc[0] <= 1


def test_visibility_frame_marks_the_least_visible_object():
    class Fake:
        info = {"visible_fraction": [[1.0, 0.5, 1.0], [1.0, 1.0, 1.0]]}

    vf = ES.visibility_frame({True: Fake()})
    assert len(vf) == 6
    assert vf[vf["hidden"]]["visible_fraction"].tolist() == [0.5, 1.0]


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="three_object_scenes"):
        ES.three_object_datasets({"three_object_scenes": 1, "clevr3d_width": 96})
    with pytest.raises(ValueError, match="clevr3d_width"):
        ES.three_object_datasets({"three_object_scenes": 4, "clevr3d_width": 2})
    with pytest.raises(ValueError, match="holdout"):
        GS.three_object_analysis(make_set(False, n=20), PARAMS, holdout=1.5)


def _grid_binding_data(V: int, n: int, d: int = 12, seed: int = 0):
    """Binding data over the n x n sub-grid (first n values) of a V x V object space,
    planted additive embeddings plus noise."""
    from bindcore.analysis.probes import BindingData

    rng = np.random.default_rng(seed)
    grid = np.array([(a, b) for a in range(n) for b in range(n)])
    pairs = np.array([(x, y) for x in grid for y in grid])  # [N, 2, 2]
    emb = rng.normal(size=(2, V, d))
    z = emb[0][pairs[..., 0]].sum(1) + emb[1][pairs[..., 1]].sum(1) + 0.05 * rng.normal(size=(len(pairs), d))
    probes = [rng.normal(size=(V, d)) for _ in range(2)]
    return BindingData(pairs, z.astype(np.float32), [V, V], probes, rng.normal(size=(V * V, d)), name="planted")


def test_a_controlled_sub_grid_ranges_over_its_present_values():
    """On a 4 x 4 sub-grid of a 50 x 50 space, the set has 4 values per concept (named as
    the model's) and the permuted-ID controls of §4.2 have scenes to fit; before, the
    controls relabelled values to absent ones and no scene was left (a ValueError)."""
    sub = ES.controlled_set(_grid_binding_data(V=50, n=4))
    assert sub.values_per_concept == [4, 4] and sub.value_names[0] == ["0", "1", "2", "3"]
    frame = A.component_attribution(sub.Z, sub.objects, sub.values_per_concept, permutations=2,
                                     probe_kw=dict(epochs=20))
    assert frame["n_excluded"].max() == 0 and len(frame) == 5
    full = _grid_binding_data(V=4, n=4)  # a full grid is unchanged
    same = ES.controlled_set(full)
    assert same.values_per_concept == [4, 4] and np.array_equal(same.objects, full.objects)


def test_gaussian_null_keeps_size_and_spectrum_and_drops_the_labels():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(200, 16)) * np.linspace(3, 0.1, 16)
    N = ES.gaussian_like(Z, seed=1)
    assert N.shape == Z.shape and N.dtype == Z.dtype
    sv = lambda x: np.linalg.svd(x - x.mean(0), compute_uv=False)  # noqa: E731
    np.testing.assert_allclose(sv(N), sv(Z), rtol=0.35)
    np.testing.assert_allclose(N.mean(0), Z.mean(0), atol=0.5)
    assert np.array_equal(N, ES.gaussian_like(Z, seed=1)) and not np.array_equal(N, ES.gaussian_like(Z, seed=2))


def test_heldout_bag_ceiling_matches_the_metric():
    import torch

    from bindcore.analysis.metrics import bag_ceiling
    from bindcore.analysis.probes import bag_ceiling_of, heldout_bag_ceiling
    from bindcore.controlled.scenes import SceneSpace

    space = SceneSpace(3, 4, 2)
    rng = np.random.default_rng(0)
    ids = torch.as_tensor(rng.integers(0, space.n_objects, size=(300, 2)))
    values = space.object_values(ids).numpy()
    np.testing.assert_allclose(bag_ceiling_of(values), bag_ceiling(space, ids).numpy())
    data = _grid_binding_data(V=6, n=6)
    c = heldout_bag_ceiling(data, 0.5)
    assert 0.25 <= c <= 1.0


def test_a_set_that_names_its_embeddings_is_keyed_by_that_name(store):
    """A stored analysis of a set with an ``origin`` (stored embeddings, a model's weights)
    is found again for the same origin and labels whatever the last bits of the floats,
    and not for another origin; a set without one is keyed by its content."""
    from dataclasses import replace

    s = make_set(False, n=60)
    named = replace(s, origin={"embeddings": {"encoder": "x", "dataset": "y"}, "code": "z"})
    noisy = replace(named, Z=named.Z + 1e-6)
    assert named.content_hash() == noisy.content_hash() != s.content_hash()
    assert replace(s, Z=s.Z + 1e-6).content_hash() != s.content_hash()
    assert replace(named, origin={**named.origin, "code": "w"}).content_hash() != named.content_hash()
    relabelled = replace(named, objects=named.objects[::-1].copy())
    assert relabelled.content_hash() != named.content_hash()
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"a": [1.0]})

    GS.stored_frame(named, "test", {"p": 1}, compute, store)
    GS.stored_frame(noisy, "test", {"p": 1}, compute, store)
    assert len(calls) == 1
