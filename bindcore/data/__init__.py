"""Datasets of the book, made on the spot or loaded from a folder, all :class:`SceneDataset`s.
(:mod:`bindcore.data.pixels`, imported by its name, renders appendix E's squares on the fly.)"""

from .clevr2d import make_clevr2d, make_clevr2d_singles
from .clevr3d import OCCLUDED_VISIBLE, make_clevr3d, make_clevr3d_singles, make_clevr3d_three
from .core import SceneDataset, caption, read_labels_csv
from .folders import load_folder
from .text import ADJECTIVES, NOUNS, make_text_space
from .vocab import CLEVR2D_SHAPES, CLEVR_COLORS, CLEVR_RGB, CLEVR_SHAPES, clevr_release_order

__all__ = [
    "ADJECTIVES", "NOUNS", "OCCLUDED_VISIBLE", "make_clevr2d", "make_clevr2d_singles", "make_clevr3d",
    "make_clevr3d_singles", "make_clevr3d_three", "load_folder", "make_text_space", "SceneDataset", "caption",
    "read_labels_csv", "CLEVR_COLORS", "CLEVR_RGB", "CLEVR_SHAPES", "CLEVR2D_SHAPES", "clevr_release_order",
]
