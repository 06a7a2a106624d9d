"""The synthetic caption space of appendix C.3: adjective-noun objects, two per scene.

Objects are (adjective, noun) pairs; a scene is an ordered pair of objects, captioned
"a <adj> <noun> and a <adj> <noun>", or one object, "a <adj> <noun>". With the full
20 x 20 vocabulary there are 400 objects, 160,000 ordered two-object scenes (identical
pairs included) and 400 single-object scenes, the size of the authors' 20 x 20 file.
The paper's smaller set (10,000 scenes + 100 single objects) is the full space of the
first 10 adjectives and 10 nouns: ``make_text_space(10, 10)``. ``n_scenes`` instead
draws a seeded sample of distinct two-object scenes from the chosen space.

The word lists are ours (the authors' lists mix in rarer words such as "bumpy" and
"matte"): everyday colour, size and texture adjectives and concrete nouns, each a
single token of CLIP's BPE vocabulary (checked by the tests with open_clip's
tokenizer), so that each concept value is one token of the caption. Colours come
first, so the first 10 adjectives are all colours.
"""

from __future__ import annotations

import numpy as np

from .core import SceneDataset, caption

ADJECTIVES: list[str] = [
    "red", "blue", "green", "yellow", "purple", "orange", "pink", "brown", "black", "white",
    "gray", "golden", "small", "large", "tiny", "huge", "shiny", "wooden", "striped", "fuzzy",
]
NOUNS: list[str] = [
    "cat", "dog", "car", "tree", "house", "ball", "chair", "table", "bird", "fish",
    "horse", "cup", "book", "hat", "shoe", "box", "boat", "apple", "flower", "clock",
]


def make_text_space(n_adjectives: int = 20, n_nouns: int = 20, n_scenes: int | None = None,
                    singles: bool = True, seed: int = 0) -> SceneDataset:
    """Captions of the adjective x noun object space (no images).

    Two-object scenes come first: all ``(n_adjectives * n_nouns) ** 2`` ordered pairs in
    lexicographic (adj 1, noun 1, adj 2, noun 2) order, or, with ``n_scenes``, that many
    distinct pairs drawn without replacement from ``seed`` (kept in the same order).
    Then, when ``singles``, the ``n_adjectives * n_nouns`` single-object scenes (their
    second object is -1). Concepts: 0 adjective, 1 noun."""
    for name, v, top in (("n_adjectives", n_adjectives, len(ADJECTIVES)), ("n_nouns", n_nouns, len(NOUNS))):
        if not isinstance(v, (int, np.integer)) or not 1 <= v <= top:
            raise ValueError(f"{name} must be an integer in 1..{top}, got {v!r}")
    n_obj = n_adjectives * n_nouns
    total = n_obj * n_obj
    if n_scenes is None:
        pair_ids = np.arange(total, dtype=np.int64)
    else:
        if not isinstance(n_scenes, (int, np.integer)) or not 0 <= n_scenes <= total:
            raise ValueError(f"n_scenes must be an integer in 0..{total} (all ordered pairs of "
                             f"{n_obj} objects), got {n_scenes!r}")
        pair_ids = np.sort(np.random.default_rng(seed).choice(total, size=int(n_scenes), replace=False))
    # object o <-> (adjective o // n_nouns, noun o % n_nouns): lexicographic (adj, noun)
    first, second = pair_ids // n_obj, pair_ids % n_obj
    objects = np.empty((len(pair_ids), 2, 2), dtype=np.int64)
    objects[:, 0, 0], objects[:, 0, 1] = first // n_nouns, first % n_nouns
    objects[:, 1, 0], objects[:, 1, 1] = second // n_nouns, second % n_nouns
    if singles:
        o = np.arange(n_obj)
        single = np.full((n_obj, 2, 2), -1, dtype=np.int64)
        single[:, 0, 0], single[:, 0, 1] = o // n_nouns, o % n_nouns
        objects = np.concatenate([objects, single])
    value_names = [ADJECTIVES[:n_adjectives], NOUNS[:n_nouns]]
    return SceneDataset(
        name="text", concept_names=["adjective", "noun"], value_names=[list(v) for v in value_names],
        objects=objects, captions=[caption(value_names, o) for o in objects],
        filenames=[f"{i:07d}" for i in range(len(objects))], images=None,
        info={"generator": "bindcore.data.text.make_text_space", "n_adjectives": int(n_adjectives),
              "n_nouns": int(n_nouns), "n_scenes": None if n_scenes is None else int(n_scenes),
              "singles": bool(singles), "seed": int(seed)},
    )
