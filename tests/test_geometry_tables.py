"""The §4 chapters' tables (bindcore.analysis.geometry_sets) on small planted embedding sets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bindcore.analysis import geometry_sets as G
from bindcore.book import tables as T
from bindcore.experiments import geometry as EG
from bindcore.experiments import inputs
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
    table = T.decomposition_table(sets, frames)
    # random init never beside CLIP; a pretrained text encoder other than CLIP is named a substitute
    clip = "CLIP ViT-B/32 (open_clip ViT-B-32-quickgelu / openai)"  # the paper's model, named exactly
    assert list(table["paper: model"]) == [f"{clip} (ours: text-True, a substitute)", "random init", "–"]
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
    att = T.attribution_table(sets, [G.attribution(s, PARAMS, store=store) for s in sets])
    assert set(att["variant"]) == {"original", "minus concepts", "minus objects", "permuted concepts",
                                   "permuted objects"}
    first = att[att["encoder"] == "text-True"].set_index("variant")
    assert first.loc["minus objects", "objects"] < 0.2 < first.loc["permuted objects", "objects"]
    assert (att[att["encoder"] == "image-False"]["paper (CLIP): concepts / objects"] == "–").all()
    assert (first["paper (CLIP): concepts / objects"] != "–").all()
    ed = T.editing_table(sets, [G.editing(s, PARAMS, store=store) for s in sets])
    assert set(ed["bank"]) == {"obj-avg", "pos-avg", "single"}
    assert (ed["retrieval (all)"] > 0.9).all()  # exact object vectors: edits land on the counterfactual


def test_encoder_choice_where_clip_is_reachable(monkeypatch):
    """Where pretrained CLIP loads, both modalities use it, with the random-init control
    beside it; offline, MiniLM for text and only the control for images."""
    from bindcore import encoders

    class FakeClip:
        name, architecture, normalize = "CLIP ViT-B/32 (open_clip ViT-B-32-quickgelu / openai)", "ViT-B-32-quickgelu", True
        image_size, quick_gelu = 224, True
        _device_arg, precision = None, "fp32"

    clip = FakeClip()
    monkeypatch.setattr(encoders, "default_encoders",
                        lambda **kw: encoders.DefaultEncoders(image=clip, text=clip, pretrained_clip=True, note="CLIP"))
    chosen, note = inputs.geometry_encoders()
    assert [(e.name, p) for e, p in chosen["image"]][0] == (clip.name, True)
    assert [p for _, p in chosen["text"]] == [True, False] and [p for _, p in chosen["image"]] == [True, False]
    assert isinstance(chosen["image"][1][0], encoders.RandomInitClipEncoder)
    named, _ = inputs.pretrained_encoders()
    assert list(named.values())[0] is clip and list(named)[0] == clip.name  # its open_clip model and tag

    offline = encoders.DefaultEncoders(image=encoders.RandomInitClipEncoder("ViT-B-32-quickgelu", seed=0),
                                       text=object(), pretrained_clip=False, note="offline")
    monkeypatch.setattr(encoders, "default_encoders", lambda **kw: offline)
    chosen, note = inputs.geometry_encoders()
    assert [p for _, p in chosen["image"]] == [False] and [p for _, p in chosen["text"]] == [True, False]
    assert note == "offline"


def test_nearest_after_edit_finds_the_counterfactual():
    from bindcore.analysis.geometry import nearest_after_edit, object_banks, object_ids

    s = _planted_set("text", True)
    bank = object_banks(*s.args(), s.Z_single, s.objects_single)["single"]  # the exact object vectors
    ids = object_ids(s.objects, VPC)
    scene, new = 5, int((ids[5, 0] + 1) % 12)
    if new == ids[5, 1]:
        new = (new + 1) % 12
    near = nearest_after_edit(*s.args(), bank, scene, 0, new, k=1.0, top=3)
    assert list(near["rank"]) == [1, 2, 3] and near["cosine"].is_monotonic_decreasing
    assert tuple(ids[near["scene"].iloc[0]]) == (new, ids[scene, 1])
    assert near["scene"].iloc[0] != scene


def test_natural_table_has_chance_levels(store):
    s = _planted_set("image", True, 4)
    t = EG.natural_table([s], PARAMS, store=store)
    r = t.iloc[0]
    assert r["scenes"] == len(s.Z) and r["objects"] == 12 and r["edits"] > 0
    assert r["retrieval"] > 0.9 > 0.1 > r["retrieval chance"] > 0  # exact object vectors: far above chance
    assert r["edit retrieval"] > 0.9 and 0 < r["edit chance"] < 0.1
    assert r["R² objects (avg)"] > r["R² concepts (avg)"]
    # the claim's null: the same retrieval on Gaussian embeddings of the same size and spectrum
    assert 0 <= r["retrieval null"] < r["retrieval"] and 0 <= r["edit retrieval null"] < r["edit retrieval"]
    from bindcore.verdicts.additional import natural_claims
    from bindcore.verdicts.core import SHOWN

    assert natural_claims(t, "smoke")["status"].tolist() == [SHOWN]


def test_paper_numbers_name_substitute_data_and_stay_with_their_encoder():
    from types import SimpleNamespace

    def s(dataset: str, encoder: str) -> SimpleNamespace:
        return SimpleNamespace(dataset=dataset, encoder=encoder, source="image", pretrained=True)

    row = T._paper_decomposition(s("CLEVR-like 3-D", "CLIP ViT-B/32 (pretrained)"))
    clip = "CLIP ViT-B/32 (open_clip ViT-B-32-quickgelu / openai)"
    assert row["model"] == f"{clip} on CLEVR (ours: CLEVR-like scenes ray-cast here, substitute data)"
    assert T._paper_decomposition(s("CLEVR (authors' images)", "CLIP ViT-B/32"))["model"] == f"{clip} on CLEVR"
    # CLIP's numbers never stand beside DINOv2; DINOv2's stand beside DINOv2 on PUG:SPARE
    assert T._paper_decomposition(s("CLEVR-like 3-D", "DINOv2 ViT-B/14")) is None
    assert T._paper_decomposition(s("PUG:SPARE", "DINOv2 ViT-B/14"))["model"] == "DINOv2 on PUG:SPARE"
    assert T._paper_editing(s("CLEVR-2D", "DINOv2 ViT-B/14")) == {}


def test_geometry_claims_end_to_end_against_their_gaussian_null(store):
    """Sums of object vectors pass "objects explain more than concepts" against
    their Gaussian null; Gaussian noise with the same labels (the null of the null) passes
    nothing, although in-sample its bag of objects fits more than its bag of concepts."""
    from bindcore.analysis.embedding_sets import gaussian_null
    from bindcore.experiments.geometry import geometry_nulls
    from bindcore.verdicts import core as CL
    from bindcore.verdicts.geometry import geometry_claims

    real = _planted_set("text", True)
    noise = gaussian_null(real, seed=7)
    sets = [real, noise]
    frames = [G.decomposition(s, PARAMS, store=store) for s in sets]
    edits = [G.editing(s, PARAMS, store=store) for s in sets]
    null_frames, null_edits = geometry_nulls(sets, PARAMS, store=store)
    df = geometry_claims(sets, frames, edits, "smoke", null_frames=null_frames, null_edit_frames=null_edits, k=1.0,
                         case="all")
    by = df.set_index(["subject", "claim"])["status"]
    assert by[(f"planted | {real.encoder}", "objects explain more than concepts")] == CL.SHOWN
    assert by[(f"planted | {real.encoder}", "object reconstructions retrieve their scene")] == CL.SHOWN
    assert (df[df["subject"] == f"planted | {noise.encoder}"]["status"] == CL.NOT_SHOWN).all()
