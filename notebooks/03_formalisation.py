# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # §3 Formalising binding
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bindcore-book/binding-concepts/blob/main/notebooks/03_formalisation.ipynb)
#
# The paper starts by making "binding" precise. A **concept** is a property such as
# colour or shape; each concept takes one of $V$ **values**. An **object** fixes one value
# of every concept, $o = (c_1, \dots, c_C)$, so there are $|O| = V^C$ possible objects.
# A **scene** is an ordered tuple of one to $O_{max}$ objects. A model *binds* when it can
# tell not only which values are present in a scene (**concept recognition**) but also
# which values belong to the same object (**object recognition**).
#
# This chapter builds that scene space with `bindcore.controlled.scenes`, shows how the controlled
# models of §5 read scenes as token sequences (appendix B.1), and shows with numbers why
# a model that only knows the *bag of concepts* of a scene cannot pass the object test.

# %% tags=["hide-input"]
import subprocess
import sys

if "google.colab" in sys.modules:  # install bindcore on Colab only, keeping Colab's own torch
    from importlib.metadata import version

    spec = "bindcore @ git+https://github.com/bindcore-book/binding-concepts@main"
    keep = [f"{p}=={version(p)}" for p in ("torch", "torchvision")]  # as installed
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec, *keep], check=True)

# %% tags=["parameters"]
profile = "quick"
n_concepts = 2  # C
n_values = 10  # V
max_objects = 2  # O_max
coverage = 0.8  # fraction of objects available for training (§5.2)
n_sample_scenes = 20000  # scenes sampled for the bag-of-concepts estimate
values_for_baseline = [2, 3, 4, 6, 8, 10, 15, 20, 30, 50]  # V of the bag-of-concepts baseline curve
seed = 0

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import pandas as pd
import torch

import bindcore
from bindcore.analysis import (
    bag_ceiling,
    bag_of_concepts_accuracy,
    bag_of_concepts_scores,
    expected_bag_of_concepts_two_objects,
)
from bindcore.book import glue, start_chapter
from bindcore.controlled import EMPTY, SceneSpace, coverage_split, object_labels, sample_scenes
from bindcore.figures import draw_token_rows, object_grid

P = start_chapter("formalisation", globals())
space = SceneSpace(n_concepts, n_values, max_objects)
print(f"bindcore {bindcore.__version__}, profile {profile!r}")
print(f"C = {space.n_concepts} concepts x V = {space.n_values} values -> |O| = {space.n_objects} objects; "
      f"scenes of 1..{space.max_objects} objects")

# %% [markdown]
# ## Objects as tuples and as integers
#
# `bindcore` numbers objects $0 \dots V^C-1$ by writing the value tuple in base $V$ with
# the first concept as the least-significant digit. A batch of scenes is an integer
# tensor `[B, O_max]` of object ids, padded with `EMPTY` (an id no object has) after the
# last object.

# %%
ids = torch.tensor([0, 7, 42, space.n_objects - 1])
pd.DataFrame({"object id": ids.tolist(), "values (c1, ..., cC)": [tuple(v) for v in space.object_values(ids).tolist()]})

# %% [markdown]
# ## Tokenization (appendix B.1)
#
# The value $v$ of concept $c$ becomes the token $t(c, v) = c \cdot V + v$ (0-based).
# After the $C \cdot V$ value tokens come four special tokens: start of object (SOO), end
# of object (EOO), end of sequence (EOS) and padding (PAD). An object is the block
# `[SOO, t(1, v1), ..., t(C, vC), EOO]`; a scene concatenates its blocks, appends EOS and
# pads to $L_{max} = (C+2)\,O_{max} + 1$. Queries are short sequences of their own: a
# concept query is `[t(c, v), EOS]`, an object query `[SOO, values, EOO, EOS]`.

# %% tags=["hide-input"]
gen = torch.Generator().manual_seed(seed)
one = sample_scenes(torch.arange(space.n_objects), 1, max_objects, gen, n_objects=1)
full = sample_scenes(torch.arange(space.n_objects), 1, max_objects, gen, n_objects=max_objects)
scene_tokens = space.tokenize_scenes(torch.cat([one, full]))
obj_query = space.object_query_tokens(full[0, :1])
con_query = space.concept_query_tokens(space.value_tokens(space.object_values(full[0, :1]))[0, :1])
names = ["colour", "shape", "size", "material", "texture"][: space.n_concepts] if space.n_concepts <= 5 else None
rows = [scene_tokens[0].tolist(), scene_tokens[1].tolist(), obj_query[0].tolist(), con_query[0].tolist()]
labels = ["scene, 1 object", f"scene, {max_objects} objects", "object query", "concept query"]
ax = draw_token_rows(space, rows, labels, concept_names=names)
ax.set_title(f"Token sequences (C={space.n_concepts}, V={space.n_values}; L_max={space.max_len}); "
             "numbers in brackets are token ids")
plt.show()

# %% [markdown]
# The round trip from object ids to tokens and back is exact for every scene; the test
# suite checks it on random scene spaces (`tests/test_scenes.py`).

# %%
many = sample_scenes(torch.arange(space.n_objects), 10_000, max_objects, gen)
assert torch.equal(space.detokenize_scenes(space.tokenize_scenes(many)), many)
print(f"10,000 random scenes tokenized and decoded back exactly; vocabulary size {space.vocab_size}")

# %% [markdown]
# ## Held-out objects
#
# Binding *generalization* (§5.2) is measured on objects the model never saw. A seeded
# permutation of all $V^C$ objects puts the first fraction (the **coverage**) into
# training; training scenes are made only of training objects and test scenes only of
# held-out ones. A second seeded permutation divides the held-out objects into
# validation objects, which any choice of recipe or training length may read, and test
# objects, read once for the record. The split draws objects, not values: at the
# coverages where binding is read nearly every value of every concept still appears in
# some training object and what is new is the *combination*, but at low coverage a value
# may occur in no training object at all (§5.2 counts them per run, column `values seen
# in training`), and then no model can recognise it.

# %% tags=["hide-input"]
split = coverage_split(space, coverage, seed)
if space.n_concepts == 2:
    fig, ax = plt.subplots(figsize=(4.2, 3.8))
    ax.imshow(object_grid(space, split.train.numpy()), cmap="Blues", vmin=-0.3, vmax=1.2, origin="lower")
    ax.set_xlabel("value of concept 1")
    ax.set_ylabel("value of concept 2")
    ax.set_title(f"coverage {coverage:g}: {len(split.train)} training objects (dark),\n"
                 f"{len(split.heldout)} held out (pale: {len(split.val)} validation, "
                 f"{len(split.test)} test)", fontsize=9)
    ax.grid(False)
    plt.show()
seen_values = torch.unique(space.value_tokens(space.object_values(split.train)))
print(f"values that occur in some training object: {len(seen_values)} of {space.n_value_tokens}")

# %% [markdown]
# ## Concept recognition versus object recognition
#
# Both tasks use the same strict rule: a scene is recognised only if **every** positive
# query (a value, or an object, that is in the scene) scores strictly higher than
# **every** negative one. Ties fail. This cell is the rule every score of this book
# applies: `bindcore sync` exports it, with the cell that defines the ceiling and the twins
# below, into the library
# (`bindcore/analysis/binding.py`).

# %% tags=["export"]
# export: bindcore/analysis/binding.py
# The strict rule, the bag-of-concepts ceiling and swap pairs, as §3 defines them.
import torch

from bindcore.controlled.scenes import SceneSpace, isin


def strict_correct(scores: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """bool ``[S]``: min positive > max negative score per row of ``scores`` ``[S, K]``
    (``positives`` bool ``[S, K]``). No negative: True; no positive: False."""
    if scores.shape != positives.shape:
        raise ValueError(f"scores {tuple(scores.shape)} and positives {tuple(positives.shape)} differ")
    s = scores.float()
    inf = torch.tensor(float("inf"), device=s.device)
    min_pos = torch.where(positives, s, inf).amin(1)
    max_neg = torch.where(positives, -inf, s).amax(1)
    return positives.any(1) & (min_pos > max_neg)

# %% [markdown]
# A small example with four candidate queries:

# %%
scores = torch.tensor([[0.9, 0.7, 0.2, 0.1], [0.9, 0.3, 0.5, 0.1], [0.8, 0.6, 0.6, 0.1]])
positives = torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]], dtype=torch.bool)
pd.DataFrame({"scores": [r.tolist() for r in scores], "positives": [r.int().tolist() for r in positives],
              "recognised": strict_correct(scores, positives).tolist()},
             index=["separated", "a negative beats a positive", "tie"])

# %% [markdown]
# ### Why a bag of concepts fails the object test
#
# Take the two scenes {(a, x), (b, y)} and {(a, y), (b, x)}: they contain exactly the same
# values, grouped differently. Any model that sees only *which values are present* gives
# them the same representation, so at least one of them must fail object recognition.
# `bindcore.analysis.metrics.bag_of_concepts_scores` is the strongest such model, an oracle that
# scores a candidate object by how many of its values occur in the scene:

# %%
a, b = 0, 1
x, y = 2, 3
swap_pair = torch.tensor([[space.object_ids(torch.tensor([a, x] + [0] * (space.n_concepts - 2))),
                           space.object_ids(torch.tensor([b, y] + [0] * (space.n_concepts - 2)))],
                          [space.object_ids(torch.tensor([a, y] + [0] * (space.n_concepts - 2))),
                           space.object_ids(torch.tensor([b, x] + [0] * (space.n_concepts - 2)))]])
if max_objects >= 2:
    swap_pair = torch.nn.functional.pad(swap_pair, (0, max_objects - 2), value=EMPTY)
    cands = swap_pair[:, :2].reshape(-1)
    oracle = bag_of_concepts_scores(space, swap_pair, cands)
    table = pd.DataFrame(oracle.numpy(), columns=[str(tuple(space.object_values(c).tolist())) for c in cands],
                         index=["scene {(a,x),(b,y)}", "scene {(a,y),(b,x)}"])
    display(table)
    print("recognised by the oracle:", strict_correct(oracle, object_labels(swap_pair, cands)).tolist())

# %% [markdown]
# With the full object vocabulary as candidates, the oracle recognises a two-object scene
# exactly when no cross-combination of its objects reaches the top score, i.e. when the two
# objects differ in at most one concept. For two independent uniform objects that
# happens with probability $(1/V)^C + C\,(1-1/V)\,(1/V)^{C-1}$; for $C=2$ that is the
# chance that they share a value, $1-(1-1/V)^2$. Single objects are always recognised.
# The sampled estimate on held-out scenes, next to the formula:

# %% tags=["hide-input"]
rows = []
for v in P["values_for_baseline"]:
    sp = SceneSpace(n_concepts, v, max(2, max_objects))
    gen = torch.Generator().manual_seed(seed)
    sc2 = sample_scenes(torch.arange(sp.n_objects), P["n_sample_scenes"], sp.max_objects, gen, n_objects=2)
    sc1 = sample_scenes(torch.arange(sp.n_objects), P["n_sample_scenes"], sp.max_objects, gen, n_objects=1)
    vocab = torch.arange(sp.n_objects)
    rows.append({"V": v, "|O|": sp.n_objects,
                 "1 object (sampled)": bag_of_concepts_accuracy(sp, sc1, vocab),
                 "2 objects (sampled)": bag_of_concepts_accuracy(sp, sc2, vocab),
                 "2 objects (formula)": expected_bag_of_concepts_two_objects(v, n_concepts),
                 "2 objects, bag ceiling": bag_ceiling(sp, sc2).mean().item()})
boc = pd.DataFrame(rows)
fig, ax = plt.subplots(figsize=(5.5, 3.5))
ax.plot(boc["V"], boc["2 objects (sampled)"], "o", label="two-object scenes, oracle (floor), sampled")
ax.plot(boc["V"], boc["2 objects (formula)"], "-", label="two-object scenes, oracle (floor), formula")
ax.plot(boc["V"], boc["2 objects, bag ceiling"], "^:", label="two-object scenes, bag ceiling")
ax.plot(boc["V"], boc["1 object (sampled)"], "s--", label="one-object scenes, sampled")
ax.set_xlabel("values per concept V")
ax.set_ylabel("object recognition of the oracle")
ax.set_title(f"Bag-of-concepts oracle, C={n_concepts}, full object vocabulary as candidates")
ax.set_ylim(0, 1.05)
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=9)
plt.show()
boc.round(3)

# %% [markdown]
# The oracle breaks ties against itself: when a wrong binding reaches the top score it
# counts the scene as failed. It is therefore a *floor*, not the best a bag of concepts
# can do. A scorer of the bag alone can still be right on one scene of each swap pair,
# by breaking the tie in favour of one of the bindings the bag admits. The *bag
# ceiling* (`bag_ceiling`, triangles above; its code is below) is the best
# any bag scorer can reach on the same scenes: a scene whose objects differ in $m \ge 1$
# concepts admits $2^{m-1}$ bindings, all ranked alike, so at most one of them is
# recognised. At {glue:text}`ceiling_v`, the ceiling is {glue:text}`ceiling_at_v`
# against the floor's {glue:text}`floor_at_v`: a model between the two need not bind
# anything.
#
# The test that no bag can pass is the swap pair itself. For each held-out two-object
# scene whose objects differ in at least two concepts, take its *twin* with one
# concept's values swapped between the objects (same bag, other binding) and ask that
# both be recognised; any bag scorer gets zero. §5.2 reports this swap-pair recognition
# beside strict accuracy and reads every binding claim from it, with the floor and the
# ceiling drawn for reference. Concept recognition, in contrast, is solved perfectly by
# the oracle, which is why concept accuracy alone can never show binding.

# %% [markdown]
# The ceiling, the twins and the swap-pair rate, as §5.2 runs them: a scene's pair of
# objects is read as concept values, and the bindings of its bag are the ways of
# swapping concepts between the two objects.

# %% tags=["export"]
# export: bindcore/analysis/binding.py
def _pair_values(space: SceneSpace, scenes: torch.Tensor) -> torch.Tensor:
    if scenes.dim() != 2 or scenes.shape[1] != 2 or bool((scenes < 0).any()):
        raise ValueError(f"expected two-object scenes [S, 2] of object ids, got {tuple(scenes.shape)}")
    return space.object_values(scenes)  # [S, 2, C]


def _canonical_pairs(space: SceneSpace, values: torch.Tensor) -> torch.Tensor:
    """Concept values of object pairs ``[..., 2, C]`` -> sorted object ids ``[..., 2]``."""
    return space.object_ids(values).sort(dim=-1).values


def swap_twins(space: SceneSpace, scenes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attribute-swapped twins {(a, y), (b, x)} of two-object scenes {(a, x), (b, y)}: same
    bag, other binding. Returns ``(source [T], twins [T, 2])``: each distinct twin's scene
    index and its sorted object ids."""
    v = _pair_values(space, scenes)
    differ = v[:, 0] != v[:, 1]  # [S, C]
    eligible = differ.sum(1) >= 2
    rows = []
    for c in range(space.n_concepts):
        ok = (eligible & differ[:, c]).nonzero().squeeze(1)
        w = v[ok].clone()
        w[:, 0, c], w[:, 1, c] = v[ok, 1, c], v[ok, 0, c]
        rows.append(torch.cat([ok[:, None], _canonical_pairs(space, w)], dim=1))
    uniq = torch.cat(rows).unique(dim=0)  # swapping c or its complement gives the same twin
    return uniq[:, 0], uniq[:, 1:]


def bag_ceiling(space: SceneSpace, scenes: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """Per two-object scene ``[S]``: the best strict recognition any bag-of-concepts scorer
    can reach, 1/k for the k bindings of its bag made of ``allowed`` objects (default
    all). The mean is the ceiling; :func:`bindcore.analysis.metrics.bag_of_concepts_scores` gives the floor."""
    v = _pair_values(space, scenes)
    c = space.n_concepts
    masks = torch.arange(2**c, device=scenes.device)
    swap = ((masks[:, None] >> torch.arange(c, device=scenes.device)) & 1).bool()  # [M, C]
    first = torch.where(swap[None, :, None, :], v[:, None, [1, 0], :], v[:, None, :, :])  # [S, M, 2, C]
    pairs = _canonical_pairs(space, first)  # [S, M, 2]
    ok = torch.ones_like(pairs[..., 0], dtype=torch.bool) if allowed is None else isin(pairs, allowed).all(-1)
    keys = torch.where(ok, pairs[..., 0] * space.n_objects + pairs[..., 1], torch.full_like(pairs[..., 0], -1))
    keys = keys.sort(dim=1).values
    distinct = (keys[:, :1] >= 0).sum(1) + ((keys[:, 1:] != keys[:, :-1]) & (keys[:, 1:] >= 0)).sum(1)
    return 1.0 / distinct.clamp(min=1).float()


def swap_pair_recognition(
    scene_correct: torch.Tensor, source: torch.Tensor, twin_correct: torch.Tensor,
    twin_heldout: torch.Tensor | None = None,
) -> dict[str, float]:
    """Fraction of (scene, twin) pairs both strictly recognised (0 for any bag scorer), and
    over held-out twins (``twin_heldout``) too; a rate without pairs is left out."""
    both = scene_correct[source] & twin_correct
    parts = {"swap_pair": both}
    if twin_heldout is not None:
        parts["swap_pair_heldout"] = both[twin_heldout]
    return {k: float(m.float().mean()) for k, m in parts.items() if len(m)}


# %% tags=["remove-cell"]
_row = boc.iloc[(boc["V"] - 10).abs().argmin()]
glue("ceiling_v", f"V = {int(_row['V'])}")
glue("ceiling_at_v", _row["2 objects, bag ceiling"], ".3f")
glue("floor_at_v", _row["2 objects (sampled)"], ".3f")
