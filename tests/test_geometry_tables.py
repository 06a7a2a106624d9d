"""The §4 chapters' tables (bindcore.geometry_sets) on small planted embedding sets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bindcore import geometry_sets as G
from bindcore.store import ResultStore

VPC = [4, 3]
PARAMS = {"probe_epochs": 150, "probe_lr": 0.05, "ks": [0.0, 1.0], "max_edits": 40}


def _planted_set(source: str, pretrained: bool, seed: int = 0) -> G.EmbeddingSet:
    """All ordered pairs of 12 objects; embedding = sum of random object vectors (+ noise),
    with single-object scenes = the object vectors themselves."""
    rng = np.random.default_rng(seed)
    objs = np.array(list(itertools.product(range(VPC[0]), range(VPC[1]))))
    u = rng.normal(size=(len(objs), 24))
    pairs = np.array([(i, j) for i in range(len(objs)) for j in range(len(objs)) if i != j])
    Z = u[pairs[:, 0]] + u[pairs[:, 1]] + 0.01 * rng.normal(size=(len(pairs), 24))
    objects = np.stack([objs[pairs[:, 0]], objs[pairs[:, 1]]], 1)
    return G.EmbeddingSet("planted", f"{source}-{pretrained}", source, pretrained, Z, objects, VPC,
                          ["colour", "shape"], [list("abcd"), list("xyz")], u, objs[:, None, :])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> ResultStore:
    return ResultStore(tmp_path_factory.mktemp("store"), published=None)


def test_decomposition_table_objects_beat_concepts_and_paper_rows_match_weights(store):
    sets = [_planted_set("text", True), _planted_set("text", False, 1), _planted_set("image", False, 2)]
    frames = [G.decomposition(s, PARAMS, store=store) for s in sets]
    for df in frames:
        o = df[(df["kind"] == "objects") & (df["estimator"] == "avg")].iloc[0]
        c = df[(df["kind"] == "concepts") & (df["estimator"] == "avg")].iloc[0]
        assert o["r2_eval"] > 0.99 > c["r2_eval"]
        assert o["retrieval"] > 0.95
    table = G.decomposition_table(sets, frames)
    assert list(table["paper: model"]) == ["CLIP ViT-B/32", "random init", "–"]  # random init never beside CLIP
    assert len(table) == 3


def test_stored_frames_are_reused(store):
    s = _planted_set("text", True)
    first = G.decomposition(s, PARAMS, store=store)
    n = len(list((store.root / G.GEOMETRY_STORE_KIND).iterdir()))
    again = G.decomposition(s, PARAMS, store=store)
    assert again.equals(first) and again.attrs == first.attrs
    assert len(list((store.root / G.GEOMETRY_STORE_KIND).iterdir())) == n
    G.decomposition(s, {**PARAMS, "probe_epochs": 151}, store=store)  # other parameters: a new entry
    assert len(list((store.root / G.GEOMETRY_STORE_KIND).iterdir())) == n + 1


def test_attribution_and_editing_tables(store):
    sets = [_planted_set("text", True), _planted_set("image", False, 3)]
    att = G.attribution_table(sets, [G.attribution(s, PARAMS, store=store) for s in sets])
    assert set(att["variant"]) == {"original", "minus concepts", "minus objects", "permuted concepts",
                                   "permuted objects"}
    first = att[att["encoder"] == "text-True"].set_index("variant")
    assert first.loc["minus objects", "objects"] < 0.2 < first.loc["permuted objects", "objects"]
    assert (att[att["encoder"] == "image-False"]["paper (CLIP): concepts / objects"] == "–").all()
    assert (first["paper (CLIP): concepts / objects"] != "–").all()
    ed = G.editing_table(sets, [G.editing(s, PARAMS, store=store) for s in sets])
    assert set(ed["bank"]) == {"obj-avg", "pos-avg", "single"}
    assert (ed["retrieval (all)"] > 0.9).all()  # exact object vectors: edits land on the counterfactual
