"""The caption space of appendix C.3: (adjective, noun) objects, one or two per caption.

Our word lists (not the authors') are each one token of CLIP's BPE vocabulary; the first
10 adjectives are colours. The paper's 10,000-scene set is ``make_text_space(10, 10)``."""

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
    """Captions (no images): all ordered object pairs in lexicographic order, or ``n_scenes``
    of them drawn from ``seed``, then (``singles``) the single-object scenes. Concepts:
    0 adjective, 1 noun."""
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
