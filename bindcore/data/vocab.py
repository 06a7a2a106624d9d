"""Concept vocabularies of the paper's datasets (appendix C.1, C.3)."""

from __future__ import annotations

from importlib import resources

import numpy as np

# CLEVR's eight colours, in the release's index order, with CLEVR's RGB values.
CLEVR_COLORS: list[str] = ["blue", "brown", "cyan", "gray", "green", "purple", "red", "yellow"]
CLEVR_RGB: dict[str, tuple[int, int, int]] = {
    "blue": (42, 75, 215), "brown": (129, 74, 25), "cyan": (41, 208, 208), "gray": (87, 87, 87),
    "green": (29, 105, 20), "purple": (129, 38, 192), "red": (173, 35, 35), "yellow": (255, 238, 51),
}
# Shape indices as the release's code and images use them (its labels.csv names swap 1 and 2)
CLEVR_SHAPES: list[str] = ["cube", "cylinder", "sphere"]
CLEVR2D_SHAPES: list[str] = ["square", "triangle", "circle"]

# PUG:SPARE (Desert world), in the release's index order
PUG_SPECIES: list[str] = ["Crow", "Fox", "DeerStag", "DeerDoe", "Wolf", "Crocodile", "Elephant", "Hippopotamus",
                          "Lion", "Lioness", "Rhinoceros", "Zebra"]
PUG_TEXTURES: list[str] = ["Red", "Blue", "Green", "Yellow", "Brown", "Purple", "Cyan", "Gray"]


def clevr_release_order() -> np.ndarray:
    """``[576, 2, 2]`` (object, concept) indices of the release's scene order."""
    text = resources.files("bindcore.data").joinpath("clevr_release_order.txt").read_text()
    rows = [list(map(int, line.split())) for line in text.splitlines() if line and not line.startswith("#")]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2, 2)
