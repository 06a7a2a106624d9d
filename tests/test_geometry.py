"""bindcore.analysis.geometry on synthetic embeddings with planted structure.

Small on purpose (at most 30 objects, 900 scenes, d <= 32, probes of 300 epochs):
the whole file runs in a few seconds on two shared cores.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bindcore.analysis import attribution as A
from bindcore.analysis import geometry as G

torch.set_num_threads(2)

V = [6, 5]  # 30 objects, 900 ordered two-object scenes (identical pairs included)


def all_pairs(values_per_concept, singles: bool = False):
    """Labels of every ordered pair of objects (and optionally every single object)
    -> (objects [N, 2, C], object ids [N, 2] with -1 for absent)."""
    u = int(np.prod(values_per_concept))
    ids = np.stack(np.meshgrid(np.arange(u), np.arange(u), indexing="ij"), -1).reshape(-1, 2)
    if singles:
        ids = np.concatenate([ids, np.stack([np.arange(u), np.full(u, -1)], 1)])
    return G.object_values(ids, values_per_concept), ids


def sum_of_objects(vectors: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Scene = sum of its objects' vectors (absent objects add nothing)."""
    return np.where((ids >= 0)[..., None], vectors[ids.clip(0)], 0.0).sum(1)


def planted_shares(values_per_concept, concept_share: float, d: int = 32, seed: int = 0) -> np.ndarray:
    """Object vectors = concept-additive part + object-specific (interaction) part,
    scaled so that over all ordered pairs the concept part carries ``concept_share`` of
    the scene variance. The object-specific part is double-centred on the object grid,
    so no concept-additive function explains any of it."""
    rng = np.random.default_rng(seed)
    vpc = list(values_per_concept)
    vals = G.object_values(np.arange(int(np.prod(vpc))), vpc)
    concept = sum(rng.normal(size=(v, d))[vals[:, c]] for c, v in enumerate(vpc))
    inter = rng.normal(size=(vpc[1], vpc[0], d))  # [v1, v0]: object id = v0 + V0 * v1
    inter = inter - inter.mean(0, keepdims=True) - inter.mean(1, keepdims=True) + inter.mean((0, 1), keepdims=True)
    inter = inter.reshape(-1, d)
    _, ids = all_pairs(vpc)
    var_c = sum_of_objects(concept, ids).var(0).sum()
    var_i = sum_of_objects(inter, ids).var(0).sum()
    return concept * np.sqrt(concept_share / var_c) + inter * np.sqrt((1 - concept_share) / var_i)


# ---------------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------------
def test_object_ids_round_trip_and_permuted_labels():
    objects, ids = all_pairs(V, singles=True)
    assert (G.object_ids(objects, V) == ids).all()
    assert (objects[ids < 0] == -1).all()
    for kind in G.KINDS:
        perm = G.permute_labels(objects, V, kind, seed=3)
        assert (perm[ids < 0] == -1).all()
        new = G.object_ids(perm, V)
        # a bijection of the object ids, the same for every occurrence
        mapping = dict(zip(ids[ids >= 0].tolist(), new[ids >= 0].tolist()))
        assert sorted(mapping.values()) == list(range(30))
        assert (G.object_ids(G.permute_labels(objects, V, kind, seed=3), V) == new).all()
    perm = G.permute_labels(objects, V, "concepts", seed=3)
    # concept permutations act on each concept separately
    for c in range(2):
        pairs = set(zip(objects[..., c][ids >= 0].tolist(), perm[..., c][ids >= 0].tolist()))
        assert len(pairs) == V[c]


# ---------------------------------------------------------------------------------
# §4.1 additive decomposition
# ---------------------------------------------------------------------------------
def test_bag_of_objects_is_exact_on_object_additive_embeddings():
    rng = np.random.default_rng(0)
    u = rng.normal(size=(30, 24))
    objects, ids = all_pairs(V, singles=True)  # 900 pairs + 30 single objects
    Z = sum_of_objects(u, ids)
    for est in ("lstsq", "pos-lstsq"):
        comps = G.estimate_components(Z, objects, V, "objects", est)
        assert G.r2_score(Z, comps.reconstruct(objects)) == pytest.approx(1.0, abs=1e-6)
        assert np.allclose(comps.reconstruct(objects), Z, atol=1e-8)
    # the averaging estimators are exact on the complete two-object design
    pairs = ids[:, 1] >= 0
    df = G.additive_decomposition(Z[pairs], objects[pairs], V)
    objs = df[df.kind == "objects"].set_index("estimator")
    assert np.allclose(objs["r2_eval"], 1.0, atol=1e-6)
    assert (objs["retrieval"] == 1.0).all()  # any-order hit: (a, b) and (b, a) both count
    # a position-independent reconstruction cannot tell (a, b) from (b, a): exact order is a coin flip
    assert 0.3 < objs.loc["avg", "retrieval_exact"] < 0.7
    # random object vectors are far from a bag of concepts: about (V0-1 + V1-1) / (U-1) = 0.31 of the variance
    conc = df[df.kind == "concepts"].set_index("estimator")
    assert (conc["r2_eval"] < 0.5).all() and (conc["retrieval"] < objs["retrieval"]).all()
    assert set(df.columns) >= {"kind", "estimator", "r2_fit", "r2_eval", "n_fit", "n_eval", "n_excluded",
                               "retrieval", "retrieval_exact", "retrieval_chance"}


def test_concept_r2_recovers_the_planted_concept_share():
    share = 0.7
    objects, ids = all_pairs(V)
    Z = sum_of_objects(planted_shares(V, share), ids)
    df = G.additive_decomposition(Z, objects, V, retrieval=False).set_index(["kind", "estimator"])
    # on the complete design the concept part and the double-centred part are exactly
    # orthogonal, so every estimator recovers the share to rounding error
    assert np.allclose(df.loc["concepts", "r2_eval"], share, atol=1e-6)
    assert np.allclose(df.loc["objects", "r2_eval"], 1.0, atol=1e-6)
    # A random 500 of the 900 scenes, noise taking 10 % of the variance (so the target
    # is 0.9 * share = 0.63), fit on 350 scenes and evaluated on the other 150. The
    # concept fit has p = 9 (shared) or 18 (per-slot) free coefficients per dimension,
    # so in-sample R² is optimistic by about p / n * (1 - 0.63) = 0.01 / 0.02 and held-out
    # R² pessimistic by about twice that; the sampling SD is about 0.01 (40 seeds, when
    # this test was written: fit in [0.62, 0.66], held-out in [0.57, 0.64]). Tolerances:
    # 0.04 in sample, 0.07 held out.
    rng = np.random.default_rng(1)
    keep = np.sort(rng.choice(len(Z), 500, replace=False))
    noise = rng.normal(size=Z.shape) * np.sqrt(0.1 / 0.9 * Z.var(0).sum() / Z.shape[1])
    Zn = (Z + noise)[keep]
    held = G.additive_decomposition(Zn, objects[keep], V, holdout=0.3, seed=2, retrieval=False,
                                    estimators=("lstsq", "pos-lstsq")).set_index(["kind", "estimator"])
    for est in ("lstsq", "pos-lstsq"):
        assert held.loc[("concepts", est), "r2_fit"] == pytest.approx(0.9 * share, abs=0.04)
        assert held.loc[("concepts", est), "r2_eval"] == pytest.approx(0.9 * share, abs=0.07)
        assert held.loc[("objects", est), "r2_eval"] > held.loc[("concepts", est), "r2_eval"] + 0.1
    assert (held["n_fit"] == 350).all() and (held["n_eval"] == 150).all()


def test_unseen_objects_are_nan_and_excluded_from_metrics():
    rng = np.random.default_rng(0)
    u = rng.normal(size=(30, 16))
    objects, ids = all_pairs(V)
    Z = sum_of_objects(u, ids)
    has0 = (ids == 0).any(1)
    fit, ev = np.flatnonzero(~has0), np.arange(len(Z))
    for est in G.ESTIMATORS:
        comps = G.estimate_components(Z[fit], objects[fit], V, "objects", est)
        assert np.isnan(comps.vectors[:, 0]).all() and (comps.counts[:, 0] == 0).all()
        assert np.isfinite(comps.vectors[:, 1:]).all()
        rec = comps.reconstruct(objects)
        assert np.isnan(rec[has0]).all() and np.isfinite(rec[~has0]).all()
    df = G.additive_decomposition(Z, objects, V, holdout=(fit, ev), kinds=("objects",))
    assert (df["n_excluded"] == has0.sum()).all()
    assert np.isfinite(df["r2_eval"]).all() and np.isfinite(df["retrieval"]).all()
    lst = df.set_index("estimator").loc["lstsq"]
    assert lst["r2_eval"] == pytest.approx(1.0, abs=1e-6) and lst["retrieval"] == 1.0
    frame = G.estimate_components(Z[fit], objects[fit], V, "objects", "avg").frame()
    assert frame.loc[0, "count"] == 0 and {"value_0", "value_1", "norm"} <= set(frame.columns)


def test_ridge_shrinks_components_and_matches_lstsq_at_zero():
    rng = np.random.default_rng(0)
    objects, ids = all_pairs(V)
    Z = sum_of_objects(rng.normal(size=(30, 8)), ids)
    plain = G.fit_additive(Z, objects, V, "concepts", ridge=0.0)
    tiny = G.fit_additive(Z, objects, V, "concepts", ridge=1e-9)
    big = G.fit_additive(Z, objects, V, "concepts", ridge=1e4)
    assert np.allclose(plain.reconstruct(objects), tiny.reconstruct(objects), atol=1e-6)
    assert np.linalg.norm(big.vectors) < 0.1 * np.linalg.norm(plain.vectors)
    assert np.allclose(big.intercept, Z.mean(0), atol=1e-2)  # the intercept is not shrunk


def test_probing_reconstructions():
    vpc = [4, 3]
    rng = np.random.default_rng(0)
    objects, ids = all_pairs(vpc)
    Z = sum_of_objects(rng.normal(size=(12, 24)), ids)
    df = G.additive_decomposition(Z, objects, vpc, estimators=("avg",), probes="fit",
                                  probe_kw={"epochs": 300}).set_index("kind")
    assert df.attrs["probe_real"]["object"] > 0.9
    assert df.loc["objects", "probe_object"] > 0.9 and df.loc["objects", "probe_concept"] > 0.9
    # a bag of concepts loses which values go together
    assert df.loc["concepts", "probe_object"] < df.loc["objects", "probe_object"] - 0.2


# ---------------------------------------------------------------------------------
# §4.2 / D.1 component attribution
# ---------------------------------------------------------------------------------
def test_subtracting_object_components_removes_what_probes_read():
    vpc = [5, 4]
    rng = np.random.default_rng(0)
    objects, ids = all_pairs(vpc)
    Z = sum_of_objects(rng.normal(size=(20, 32)), ids) + 0.1 * rng.normal(size=(400, 32))
    df = A.component_attribution(Z, objects, vpc, estimator="pos-lstsq", probe_kw={"epochs": 300}).set_index("variant")
    assert df.loc["original", "object"] > 0.9 and df.loc["original", "concept"] > 0.9
    # what is left is noise: chance is 1 / C(20, 2) ~ 0.005 for objects and ~0.25 for a concept
    assert df.loc["minus objects", "object"] < 0.1 and df.loc["minus objects", "concept"] < 0.45
    # the permuted control removes the same vectors from the wrong scenes: still decodable
    assert df.loc["permuted objects (control)", "object"] > 0.8
    assert df.loc["permuted objects (control)", "removed_norm_ratio"] == pytest.approx(
        df.loc["minus objects", "removed_norm_ratio"], rel=0.2)
    assert df.loc["minus objects", "residual_norm_ratio"] < 0.1 < df.loc["permuted objects (control)",
                                                                          "residual_norm_ratio"]
    assert df.loc["original", "residual_norm_ratio"] == pytest.approx(1.0)
    assert set(df.columns) >= {"removed", "permuted", "concept", "object", "removed_norm_ratio",
                               "residual_norm_ratio", "fixed_fraction"}


# ---------------------------------------------------------------------------------
# D.2 editing
# ---------------------------------------------------------------------------------
def test_sample_edits_are_valid_counterfactuals():
    objects, _ = all_pairs(V)
    edits = G.sample_edits(objects, V, concept=0, max_edits=200, seed=5)
    assert len(edits) == 200 and edits.equals(G.sample_edits(objects, V, concept=0, max_edits=200, seed=5))
    old, new = G.object_values(edits["old"].to_numpy(), V), G.object_values(edits["new"].to_numpy(), V)
    assert (old[:, 1] == new[:, 1]).all() and (old[:, 0] != new[:, 0]).all()  # only the colour changes
    base = objects[edits["scene"].to_numpy()]
    assert not (base[:, :, 0] == new[:, None, 0]).any()  # the new colour is not in the scene
    cf = G.counterfactual_objects(objects, V, edits)
    assert (G.scene_codes(cf, V) == G.scene_codes(objects[edits["target"].to_numpy()], V)).all()
    assert edits["target_exact"].all()  # the complete design holds every ordered scene
    other = base[np.arange(len(base)), 1 - edits["slot"].to_numpy()]
    assert (edits["shared_scene"] == (other == old).any(1)).all()
    anyobj = G.sample_edits(objects, V, concept=None, max_edits=50, seed=0)
    assert len(anyobj) == 50 and (anyobj["old"] != anyobj["new"]).all()
    # with only one ordering of each pair in the data, a counterfactual may exist only
    # in the other order: it is still a valid target (any-order rule), flagged as such
    _, ids = all_pairs(V)
    half = ids[:, 0] <= ids[:, 1]
    ed = G.sample_edits(objects[half], V, concept=0, max_edits=10_000)
    assert (~ed["target_exact"]).any() and ed["target_exact"].any()
    cf = G.counterfactual_objects(objects[half], V, ed)
    assert (G.scene_codes(cf, V) == G.scene_codes(objects[half][ed["target"].to_numpy()], V)).all()
    exact = ed[ed["target_exact"]]
    assert (G.scene_codes(cf[ed["target_exact"].to_numpy()], V, any_order=False)
            == G.scene_codes(objects[half][exact["target"].to_numpy()], V, any_order=False)).all()


def test_editing_with_exact_object_vectors_retrieves_the_counterfactual():
    vpc = [4, 3]
    rng = np.random.default_rng(0)
    u = rng.normal(size=(12, 24))
    objects, ids = all_pairs(vpc)
    Z = sum_of_objects(u, ids)
    singles = G.object_values(np.arange(12), vpc)[:, None, :]
    sw = G.editing_sweep(Z, objects, vpc, Z_single=u, objects_single=singles, ks=(0.0, 1.0), max_edits=150,
                         probe_kw={"epochs": 300})
    assert set(sw["bank"]) == {"obj-avg", "pos-avg", "single"}
    at1 = sw[(sw.k == 1.0)]
    assert (at1["retrieval"] == 1.0).all()
    assert (at1["probe_concepts"] > 0.9).all() and (at1["probe_object"] > 0.9).all()
    assert (sw[sw.k == 0.0]["retrieval"] == 0.0).all()  # unedited: the base scene itself is nearest
    n = sw[(sw.k == 1.0) & (sw.bank == "obj-avg")].set_index("case")["n"]
    assert n["all"] == 150 and n["shared"] + n["different"] == 150 and n["shared"] > 0 and n["different"] > 0
    # positional banks are exact too; the exact-order rule holds for them
    pos = at1[(at1.bank == "pos-avg") & (at1.case == "all")]
    assert pos["retrieval_exact"].iloc[0] >= 0.45
    # a bank without some objects makes fewer edits instead of wrong ones
    partial = G.single_object_components(u[:6], singles[:6], vpc)
    edits = G.sample_edits(objects, vpc, max_edits=150)
    per = G.evaluate_edits(Z, objects, vpc, edits, partial, 1.0)
    can = (edits["old"] < 6) & (edits["new"] < 6)
    assert len(per) == can.sum() and per["hit"].all()


# ---------------------------------------------------------------------------------
# D.5 MDS
# ---------------------------------------------------------------------------------
def test_classical_mds_reproduces_euclidean_distances():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 2))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    coords, evals = G.classical_mds(d, 2)
    assert np.allclose(np.sqrt(((coords[:, None] - coords[None]) ** 2).sum(-1)), d, atol=1e-8)
    assert np.allclose(evals[2:], 0.0, atol=1e-8)


def test_mds_of_a_planted_grid_is_grid_like():
    rng = np.random.default_rng(0)
    d = 32
    basis = np.linalg.qr(rng.normal(size=(d, 3)))[0].T  # three orthonormal directions
    vals = G.object_values(np.arange(30), V)
    grid = 5.0 * basis[0] + 0.3 * (vals[:, :1] * basis[1] + vals[:, 1:] * basis[2])
    u = grid + 0.01 * rng.normal(size=grid.shape)
    coords = G.mds(u, 2)
    g = G.grid_likeness(coords, vals, n_neighbors=2)
    assert g["score"] > 0.95 and g["chance"] == pytest.approx(9 / 29)
    shuffled = G.grid_likeness(coords, vals[rng.permutation(30)], n_neighbors=2)
    assert shuffled["score"] < 0.7
    # through a bank estimated from scenes of those objects
    objects, ids = all_pairs(V)
    bank = G.average_components(sum_of_objects(u, ids), objects, V, "objects")
    frame = G.mds_frame(bank, 2)
    assert len(frame) == 30 and {"value_0", "value_1", "mds_1", "mds_2"} <= set(frame.columns)
    assert G.grid_likeness(frame[["mds_1", "mds_2"]].to_numpy(), frame[["value_0", "value_1"]].to_numpy())[
        "score"] > 0.9
    assert G.mds(u, 3, distance="cosine").shape == (30, 3)
    cframe = G.mds_frame(G.average_components(sum_of_objects(u, ids), objects, V, "concepts"), 2)
    assert len(cframe) == 11 and {"concept", "value"} <= set(cframe.columns)


def test_smacof_mds_runs():
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    assert G.mds(rng.normal(size=(10, 8)), 2, method="smacof").shape == (10, 2)


# ---------------------------------------------------------------------------------
# bad inputs
# ---------------------------------------------------------------------------------
def test_bad_inputs_raise_clear_errors():
    objects, _ = all_pairs(V)
    Z = np.zeros((len(objects), 4))
    with pytest.raises(ValueError, match="2-D embedding matrix"):
        G.additive_decomposition(Z[:, 0], objects, V)
    with pytest.raises(ValueError, match=r"\[N, O_max, C\]"):
        G.additive_decomposition(Z, objects[..., 0], V)
    with pytest.raises(ValueError, match="Z has 899 rows"):
        G.additive_decomposition(Z[:-1], objects, V)
    with pytest.raises(ValueError, match="values_per_concept has 3 entries"):
        G.estimate_components(Z, objects, [6, 5, 2])
    with pytest.raises(ValueError, match="values_per_concept does not match"):
        G.estimate_components(Z, objects, [6, 4])
    with pytest.raises(ValueError, match="positive integers"):
        G.estimate_components(Z, objects, [6, 0])
    half = objects.copy()
    half[0, 1, 0] = -1
    with pytest.raises(ValueError, match="absent"):
        G.fit_additive(Z, half, V)
    with pytest.raises(ValueError, match="NaN"):
        G.fit_additive(np.full_like(Z, np.nan), objects, V)
    with pytest.raises(ValueError, match="estimator must be one of"):
        G.estimate_components(Z, objects, V, estimator="mean")
    with pytest.raises(ValueError, match="kind must be one of"):
        G.estimate_components(Z, objects, V, kind="scenes")
    with pytest.raises(ValueError, match="holdout fraction"):
        G.additive_decomposition(Z, objects, V, holdout=1.5)
    with pytest.raises(ValueError, match="exactly one object"):
        G.single_object_components(Z, objects, V)
    with pytest.raises(ValueError, match="concept must be None or in"):
        G.sample_edits(objects, V, concept=2)
    with pytest.raises(ValueError, match="shared must be"):
        G.editing_sweep(Z, objects, V, shared="colour", probes=None)
    with pytest.raises(ValueError, match="Z_hat"):
        G.r2_score(Z, Z[:, :2])
    with pytest.raises(ValueError, match="same K"):
        G.grid_likeness(np.zeros((5, 2)), np.zeros((4, 2)))


def test_permuted_controls_are_derangements_of_every_value():
    vpc = [4, 3]
    objects, ids = all_pairs(vpc)
    for seed in range(5):
        for kind in G.KINDS:
            perm = G.permute_labels(objects, vpc, kind, seed=seed)
            # no concept value keeps its label, and the relabelling is a bijection of the objects
            assert (perm != objects).all()
            mapping = dict(zip(ids.ravel().tolist(), G.object_ids(perm, vpc).ravel().tolist()))
            assert sorted(mapping.values()) == list(range(12))
    # without derange, the release's uniform permutation may keep labels
    kept = [(G.permute_labels(objects, vpc, "concepts", seed=s, derange=False) == objects).any() for s in range(10)]
    assert any(kept)


def test_object_derangements_are_not_products_of_concept_derangements():
    vpc = [5, 5]
    objects, ids = all_pairs(vpc)
    perm = G.permute_labels(objects, vpc, "objects", seed=0)
    # a product permutation maps all objects with one value of concept 0 to one value
    images = {tuple(sorted(set(perm[..., 0][objects[..., 0] == v].tolist()))) for v in range(5)}
    assert any(len(img) > 1 for img in images)


def test_attribution_controls_report_their_spread():
    vpc = [4, 3]
    rng = np.random.default_rng(1)
    objects, ids = all_pairs(vpc)
    Z = sum_of_objects(rng.normal(size=(12, 16)), ids) + 0.1 * rng.normal(size=(len(ids), 16))
    df = A.component_attribution(Z, objects, vpc, permutations=3, probe_kw={"epochs": 100}).set_index("variant")
    ctrl = df.loc["permuted objects (control)"]
    assert ctrl["permutations"] == 3 and ctrl["fixed_fraction"] == 0 and ctrl["fixed_value_fraction"] == 0
    assert ctrl["object_min"] <= ctrl["object"] <= ctrl["object_max"] and ctrl["object_sd"] >= 0
    assert np.isnan(df.loc["original"].get("permutations", np.nan))
    with pytest.raises(ValueError, match="permutations"):
        A.component_attribution(Z, objects, vpc, permutations=0)


def test_release_edit_cases():
    """The release's "Shared" edits share only the edited colour; its "Different" edits
    share nothing; same-shape scenes (which the release skips) are in neither."""
    vpc = [4, 3]
    objects, ids = all_pairs(vpc)
    edits = G.sample_edits(objects, vpc, concept=0, max_edits=10_000)
    base = objects[edits["scene"].to_numpy()]
    slot = edits["slot"].to_numpy()
    old, other = base[np.arange(len(base)), slot], base[np.arange(len(base)), 1 - slot]
    same_colour, same_shape = old[:, 0] == other[:, 0], old[:, 1] == other[:, 1]
    assert (edits["shared_release"] == (same_colour & ~same_shape)).all()
    assert (~edits["shared_scene"] == (~same_colour & ~same_shape)).all()
    Z = sum_of_objects(np.random.default_rng(0).normal(size=(12, 8)), ids)
    df = G.editing_sweep(Z, objects, vpc, ks=[1.0], edits=edits, probes=None)
    n = df[df["bank"] == "obj-avg"].set_index("case")["n"]
    assert n["shared (release)"] == (same_colour & ~same_shape).sum() < n["shared"]
    assert n["different"] + n["shared"] == n["all"]


def test_attribution_components_are_cross_fitted():
    """Fitted on all scenes, the closed-form components leave a residual
    orthogonal to every slot-additive direction of those scenes, so removal collapses by
    construction; cross-fitted (the default), no scene loses components fitted on
    itself, and on noise with labels the two differ."""
    vpc = [5, 4]
    rng = np.random.default_rng(2)
    objects, ids = all_pairs(vpc)
    Z = sum_of_objects(rng.normal(size=(20, 32)), ids) + 0.1 * rng.normal(size=(400, 32))
    kw = dict(estimator="pos-lstsq", controls=False, probe_kw={"epochs": 100})
    cross = A.component_attribution(Z, objects, vpc, **kw).set_index("variant")
    alone = A.component_attribution(Z, objects, vpc, folds=None, **kw).set_index("variant")
    # additive embeddings: removal is a finding and still collapses object decoding
    assert cross.loc["minus objects", "object"] < 0.1
    # the in-sample residual is smaller than the cross-fitted one (the fit sees the noise)
    assert alone.loc["minus objects", "residual_norm_ratio"] < cross.loc["minus objects", "residual_norm_ratio"]
    with pytest.raises(ValueError, match="folds"):
        A.component_attribution(Z, objects, vpc, folds=1)
