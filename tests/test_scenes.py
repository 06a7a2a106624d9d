"""Scene space, tokenization, split and labels (paper §3, B.1)."""

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bindcore.controlled.scenes import (
    EMPTY,
    SceneSpace,
    attribute_swaps,
    coverage_split,
    n_objects_in,
    object_labels,
    sample_scenes,
)

spaces = st.builds(
    SceneSpace,
    n_concepts=st.integers(1, 4),
    n_values=st.integers(2, 7),
    max_objects=st.integers(1, 4),
)


def test_tokens_match_the_paper_example():
    s = SceneSpace(n_concepts=2, n_values=10, max_objects=2)
    assert (s.soo, s.eoo, s.eos, s.pad, s.vocab_size, s.max_len) == (20, 21, 22, 23, 24, 9)
    # object (v0=3, v1=7) has id 3 + 7*10 = 73; tokens t(0,3)=3, t(1,7)=17
    assert s.object_ids(torch.tensor([3, 7])).item() == 73
    scenes = torch.tensor([[73, 5], [73, EMPTY]])
    toks = s.tokenize_scenes(scenes)
    assert toks[0].tolist() == [20, 3, 17, 21, 20, 5, 10, 21, 22]
    assert toks[1].tolist() == [20, 3, 17, 21, 22, 23, 23, 23, 23]
    assert s.object_query_tokens(torch.tensor([73]))[0].tolist() == [20, 3, 17, 21, 22]
    assert s.concept_query_tokens(torch.tensor([17]))[0].tolist() == [17, 22]
    assert s.pad_to_max_len(s.concept_query_tokens(torch.tensor([17])))[0].tolist() == [17, 22] + [23] * 7


@settings(max_examples=60, deadline=None)
@given(space=spaces, seed=st.integers(0, 2**16))
def test_tokenize_round_trip(space, seed):
    gen = torch.Generator().manual_seed(seed)
    scenes = sample_scenes(torch.arange(space.n_objects), 64, space.max_objects, gen)
    toks = space.tokenize_scenes(scenes)
    assert toks.shape == (64, space.max_len)
    assert torch.equal(space.detokenize_scenes(toks), scenes)
    # exactly one EOS, at (C+2) * n_objects, PAD after it, no PAD before it
    n = n_objects_in(scenes)
    eos_pos = (toks == space.eos).nonzero()[:, 1]
    assert torch.equal(eos_pos, n * space.block_len)
    pos = torch.arange(space.max_len)
    assert torch.equal(toks == space.pad, pos[None, :] > eos_pos[:, None])


@settings(max_examples=60, deadline=None)
@given(space=spaces)
def test_object_id_round_trip(space):
    ids = torch.arange(space.n_objects)
    vals = space.object_values(ids)
    assert vals.min() >= 0 and vals.max() < space.n_values
    assert torch.equal(space.object_ids(vals), ids)
    # concept 0 is the least-significant digit
    assert torch.equal(vals[:, 0], ids % space.n_values)


@settings(max_examples=40, deadline=None)
@given(space=spaces, coverage=st.floats(0.05, 0.95), seed=st.integers(0, 1000))
def test_split_is_a_disjoint_cover(space, coverage, seed):
    n = space.n_objects
    n_train = int(n * coverage)
    if n_train < 1 or n_train >= n:
        with pytest.raises(ValueError, match="coverage"):
            coverage_split(space, coverage, seed)
        return
    sp = coverage_split(space, coverage, seed)
    tr, va, te = set(sp.train.tolist()), set(sp.val.tolist()), set(sp.test.tolist())
    assert not tr & te and not tr & va and not va & te
    assert tr | va | te == set(range(n))
    assert set(sp.heldout.tolist()) == va | te
    assert len(tr) == n_train
    assert len(va) == (n - n_train) // 2  # the held-out objects halved, the odd one tests
    # deterministic in the seed
    assert torch.equal(coverage_split(space, coverage, seed).train, sp.train)


def test_split_rejects_bad_coverage():
    s = SceneSpace(2, 10, 2)
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="coverage"):
            coverage_split(s, bad)


def test_space_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_values"):
        SceneSpace(2, 1, 2)
    with pytest.raises(ValueError, match="max_objects"):
        SceneSpace(2, 10, 0)


def test_sampled_scenes_use_only_allowed_objects_and_uniform_counts():
    allowed = torch.tensor([1, 5, 42, 99])
    gen = torch.Generator().manual_seed(0)
    scenes = sample_scenes(allowed, 6000, 3, gen)
    objs = scenes[scenes >= 0]
    assert set(objs.unique().tolist()) == set(allowed.tolist())
    counts = torch.bincount(n_objects_in(scenes), minlength=4)[1:].float() / 6000
    assert torch.allclose(counts, torch.full((3,), 1 / 3), atol=0.03)
    # padding only after the last object
    present = scenes >= 0
    assert torch.equal(present, torch.arange(3)[None, :] < n_objects_in(scenes)[:, None])


@settings(max_examples=40, deadline=None)
@given(space=spaces, seed=st.integers(0, 2**16))
def test_labels_agree_with_a_per_scene_reference(space, seed):
    gen = torch.Generator().manual_seed(seed)
    scenes = sample_scenes(torch.arange(space.n_objects), 16, space.max_objects, gen)
    cands = torch.arange(min(space.n_objects, 50))
    lab = object_labels(scenes, cands)
    hot = space.concept_multi_hot(scenes)
    for b in range(16):
        objs = [o for o in scenes[b].tolist() if o >= 0]
        assert lab[b].tolist() == [c in objs for c in cands.tolist()]
        vals = {(c, space.object_values(torch.tensor(o))[c].item()) for o in objs for c in range(space.n_concepts)}
        expect = [(tok // space.n_values, tok % space.n_values) in vals for tok in range(space.n_value_tokens)]
        assert hot[b].tolist() == expect


def test_attribute_swaps_take_one_concept_from_another_object():
    s = SceneSpace(3, 5, 2)
    gen = torch.Generator().manual_seed(1)
    scenes = sample_scenes(torch.arange(s.n_objects), 500, 2, gen, n_objects=2)
    swaps = attribute_swaps(s, scenes, gen)
    assert len(swaps) == 500
    a, b, w = s.object_values(scenes[:, 0]), s.object_values(scenes[:, 1]), s.object_values(swaps)
    for x, y, z in zip(a.tolist(), b.tolist(), w.tolist()):
        # z is x with one concept from y, or y with one concept from x
        ok = any(
            z == [y[c] if c == k else x[c] for c in range(3)] or z == [x[c] if c == k else y[c] for c in range(3)]
            for k in range(3)
        )
        assert ok
    # single-object scenes give no swap
    single = sample_scenes(torch.arange(s.n_objects), 10, 2, gen, n_objects=1)
    assert len(attribute_swaps(s, single, gen)) == 0


def test_every_object_pair_tokenizes_distinctly():
    s = SceneSpace(2, 3, 2)
    pairs = torch.tensor(list(itertools.product(range(9), repeat=2)))
    toks = s.tokenize_scenes(pairs)
    assert len({tuple(t) for t in toks.tolist()}) == 81
