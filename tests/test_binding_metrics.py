"""Metrics that tell binding from a bag of concepts: the bag ceiling and swap pairs,
checked on planted scorers (a pure bag scorer must score 0 on swap pairs and never beat
the ceiling; a scorer that knows the objects scores 1)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bindcore.analysis.metrics import (
    bag_ceiling,
    bag_of_concepts_scores,
    expected_bag_of_concepts_two_objects,
    strict_correct,
    swap_pair_recognition,
    swap_twins,
)
from bindcore.controlled.scenes import SceneSpace, coverage_split, object_labels


def all_pairs(objects: torch.Tensor) -> torch.Tensor:
    a, b = torch.meshgrid(objects, objects, indexing="ij")
    return torch.stack([a.flatten(), b.flatten()], 1)


def bag_scorer(space, scenes, candidates, tie_break):
    """Any function of (bag, candidate): the oracle's count plus a tie-break that may
    depend on the bag and the candidate but not on the binding."""
    bag = space.concept_multi_hot(scenes).float()
    base = bag_of_concepts_scores(space, scenes, candidates)
    bag_key = (bag * tie_break["bag"][None, :]).sum(1, keepdim=True)  # the same for scene and twin
    return base + 1e-3 * torch.sin(bag_key * tie_break["cand"][None, candidates])


def object_scorer(space, scenes, candidates):
    """Knows the objects: scores a candidate 1 if it is in the scene."""
    return object_labels(scenes, candidates).float()


def test_ceiling_on_full_vocabulary_matches_the_formula():
    for c, v in ((2, 10), (2, 8), (3, 4)):
        sp = SceneSpace(c, v, 2)
        objs = torch.arange(sp.n_objects)
        ceil = bag_ceiling(sp, all_pairs(objs)).mean().item()
        assert ceil == pytest.approx(bag_ceiling(sp, all_pairs(objs), objs).mean().item())
        if c == 2:  # 1 - P(objects differ in every concept) / 2
            assert ceil == pytest.approx(1 - (1 - 1 / v) ** 2 / 2, abs=1e-6)
        assert ceil >= expected_bag_of_concepts_two_objects(v, c) - 1e-6  # the oracle is a floor


def test_twins_keep_the_bag_and_change_the_binding():
    sp = SceneSpace(3, 4, 2)
    scenes = all_pairs(torch.arange(sp.n_objects))
    source, twins = swap_twins(sp, scenes)
    assert torch.equal(sp.concept_multi_hot(scenes[source]), sp.concept_multi_hot(twins))
    assert not (twins.sort(1).values == scenes[source].sort(1).values).all(1).any()
    differ = (sp.object_values(scenes[:, 0]) != sp.object_values(scenes[:, 1])).sum(1)
    per_scene = torch.bincount(source, minlength=len(scenes))
    # 2**(m-1) - 1 twins for objects differing in m >= 2 concepts, none otherwise
    expected = torch.where(differ >= 2, 2 ** (differ - 1) - 1, torch.zeros_like(differ))
    assert torch.equal(per_scene, expected)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), coverage=st.sampled_from([0.3, 0.5, 0.8]), c=st.sampled_from([2, 3]))
def test_a_bag_scorer_scores_zero_on_swap_pairs_and_never_beats_the_ceiling(seed, coverage, c):
    sp = SceneSpace(c, 5 if c == 2 else 3, 2)
    held = coverage_split(sp, coverage, seed).heldout
    scenes = all_pairs(held)  # every scene of two held-out objects: closed under held-out twins
    gen = torch.Generator().manual_seed(seed)
    tie = {"bag": torch.rand(sp.n_value_tokens, generator=gen) * 7,
           "cand": torch.rand(sp.n_objects, generator=gen) * 5}
    cands = torch.arange(sp.n_objects)
    ok = strict_correct(bag_scorer(sp, scenes, cands, tie), object_labels(scenes, cands))
    source, twins = swap_twins(sp, scenes)
    twin_ok = strict_correct(bag_scorer(sp, twins, cands, tie), object_labels(twins, cands))
    r = swap_pair_recognition(ok, source, twin_ok, torch.isin(twins, held).all(1))
    assert all(v == 0.0 for v in r.values()) and ("swap_pair" in r) == bool(len(source))
    assert ok.float().mean().item() <= bag_ceiling(sp, scenes, held).mean().item() + 1e-6


def test_a_scorer_that_knows_the_objects_scores_one():
    sp = SceneSpace(2, 6, 2)
    held = coverage_split(sp, 0.5, 0).heldout
    scenes = all_pairs(held)
    cands = torch.arange(sp.n_objects)
    ok = strict_correct(object_scorer(sp, scenes, cands), object_labels(scenes, cands))
    source, twins = swap_twins(sp, scenes)
    twin_ok = strict_correct(object_scorer(sp, twins, cands), object_labels(twins, cands))
    r = swap_pair_recognition(ok, source, twin_ok, torch.isin(twins, held).all(1))
    assert ok.all() and r["swap_pair"] == 1.0 and r["swap_pair_heldout"] == 1.0
    assert bag_ceiling(sp, scenes, held).mean().item() < 1.0


def test_the_best_bag_scorer_reaches_the_ceiling():
    # per bag, rank one binding first: on a twin-closed set that is exactly the ceiling
    sp = SceneSpace(2, 4, 2)
    objs = torch.arange(sp.n_objects)
    scenes = all_pairs(objs)
    v = sp.object_values(scenes)
    canon = torch.stack([v[:, :, 0].min(1).values, v[:, :, 0].max(1).values,
                         v[:, :, 1].min(1).values, v[:, :, 1].max(1).values], 1)
    # the chosen binding of each bag: pair the smaller value of concept 0 with the smaller of concept 1
    chosen = sp.object_ids(torch.stack([canon[:, [0, 2]], canon[:, [1, 3]]], 1))
    scores = object_labels(chosen, objs).float()
    ok = strict_correct(scores, object_labels(scenes, objs))
    assert ok.float().mean().item() == pytest.approx(bag_ceiling(sp, scenes, objs).mean().item())


def test_two_object_scenes_are_required():
    sp = SceneSpace(2, 4, 3)
    with pytest.raises(ValueError, match="two-object"):
        bag_ceiling(sp, torch.zeros(3, 3, dtype=torch.long), torch.arange(16))
