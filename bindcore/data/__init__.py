"""Datasets of the book: made on the spot (CLEVR-2D, CLEVR-like 3-D, captions) or
loaded from a folder the user points to. All share :class:`SceneDataset`."""

from .core import SceneDataset, caption, read_labels_csv
from .vocab import CLEVR2D_SHAPES, CLEVR_COLORS, CLEVR_RGB, CLEVR_SHAPES, clevr_release_order

__all__ = ["SceneDataset", "caption", "read_labels_csv", "CLEVR_COLORS", "CLEVR_RGB", "CLEVR_SHAPES",
           "CLEVR2D_SHAPES", "clevr_release_order"]
