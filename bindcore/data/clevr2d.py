"""CLEVR-2D (appendix C.1): two flat shapes side by side, drawn with PIL.

Layout measured on the release's sample grid (``paper_grid_2x4.png``); we supersample and
box-filter, so edges are anti-aliased where the release's are not."""

from __future__ import annotations

import itertools
import logging

import numpy as np
from PIL import Image, ImageDraw

from .core import SceneDataset, caption
from .vocab import CLEVR2D_SHAPES, CLEVR_COLORS, CLEVR_RGB, clevr_release_order

log = logging.getLogger(__name__)

BACKGROUND: tuple[int, int, int] = (245, 245, 245)
OUTLINE: tuple[int, int, int] = (0, 0, 0)

# Geometry at the reference size 224, in continuous pixel coordinates (pixel j covers
# [j, j + 1)); everything scales with size / 224.
_REF = 224.0
_CENTRES_X = (70.5, 154.5)  # object 1, object 2
_CENTRE_Y = 112.5
_HALF = 32.5  # half side of the square, radius of the circle, half height of the triangle
# The triangle (apex up), fitted to the release's sample images: apex 33.5 px above
# the centre, base 33 px below, base half-width 37.5 px, centred 0.5 px left of the square.
_TRI_UP, _TRI_DOWN, _TRI_HALF_BASE, _TRI_DX = 33.5, 33.0, 37.5, -0.5
_OUTLINE_W = 2.0
_SUPERSAMPLE = 4
# Jitter at jitter = 1: scale in [0.75, 1.25], centre shift up to 32 px (at 224).
_MAX_SCALE_DEV = 0.25
_MAX_SHIFT = 32.0
_MARGIN = 2.0  # keep objects this far from the image edge and the middle line

ORDERS = ("release", "product")


def _draw_object(draw: ImageDraw.ImageDraw, shape: int, color: int, cx: float, cy: float,
                 half: float, outline_w: float, k: int) -> None:
    """Draw one object at supersampling ``k``; ``cx, cy, half`` in output pixels."""
    fill = CLEVR_RGB[CLEVR_COLORS[color]]
    width = max(1, round(outline_w * k))
    if shape == 0 or shape == 2:  # square / circle: the box covering [c - half, c + half)
        box = [round((cx - half) * k), round((cy - half) * k),
               round((cx + half) * k) - 1, round((cy + half) * k) - 1]
        if shape == 0:
            draw.rectangle(box, fill=fill, outline=OUTLINE, width=width)
        else:
            draw.ellipse(box, fill=fill, outline=OUTLINE, width=width)
    elif shape == 1:  # triangle, apex up
        r = half / _HALF
        x, up, down, hb = cx + _TRI_DX * r, _TRI_UP * r, _TRI_DOWN * r, _TRI_HALF_BASE * r
        pts = [(x * k, (cy - up) * k), ((x + hb) * k, (cy + down) * k), ((x - hb) * k, (cy + down) * k)]
        draw.polygon(pts, fill=fill, outline=OUTLINE, width=width)
    else:
        raise ValueError(f"shape index {shape} out of range 0..{len(CLEVR2D_SHAPES) - 1}")


def render_scene(objects: np.ndarray, size: int = 224, placements: np.ndarray | None = None) -> np.ndarray:
    """uint8 ``[size, size, 3]`` of ``objects`` ``[O, 2]`` (colour, shape; -1 absent) at
    ``placements`` ``[O, 3]`` (x, y, scale in output pixels; default the release layout)."""
    objects = np.asarray(objects)
    if placements is None:
        placements = default_placements(int((objects[:, 0] >= 0).sum()), size)
    k = _SUPERSAMPLE
    img = Image.new("RGB", (size * k, size * k), BACKGROUND)
    draw = ImageDraw.Draw(img)
    f = size / _REF
    present = [o for o in objects if o[0] >= 0]
    for (color, shape), (cx, cy, scale) in zip(present, placements):
        _draw_object(draw, int(shape), int(color), float(cx), float(cy), _HALF * f * scale, _OUTLINE_W * f, k)
    return np.asarray(img.reduce(k), dtype=np.uint8)


def default_placements(n_objects: int, size: int = 224) -> np.ndarray:
    """``[n, 3]`` (x, y, scale): two objects left and right, or one centred."""
    f = size / _REF
    if n_objects == 2:
        return np.array([[_CENTRES_X[0] * f, _CENTRE_Y * f, 1.0], [_CENTRES_X[1] * f, _CENTRE_Y * f, 1.0]])
    if n_objects == 1:
        return np.array([[size / 2 + 0.5 * f, _CENTRE_Y * f, 1.0]])
    raise ValueError(f"CLEVR-2D scenes have 1 or 2 objects, got {n_objects}")


def jittered_placements(n_scenes: int, size: int, jitter: float, rng: np.random.Generator) -> np.ndarray:
    """``[n_scenes, 2, 3]`` random placements, scale 1 +- 0.25 * jitter, centre within +- 32 *
    jitter px (at 224) of the release's, each object inside its own half."""
    f = size / _REF
    u = rng.random((n_scenes, 2, 3))
    scale = 1.0 + jitter * _MAX_SCALE_DEV * (2 * u[..., 0] - 1)
    ext = (_TRI_HALF_BASE + 0.5) * scale + _MARGIN  # the widest shape's half width, in 224-pixels
    shift = _MAX_SHIFT * jitter
    out = np.empty((n_scenes, 2, 3))
    for slot in range(2):
        lo_half, hi_half = (0.0, _REF / 2) if slot == 0 else (_REF / 2, _REF)
        c0 = _CENTRES_X[slot]
        lo = np.maximum(c0 - shift, lo_half + ext[:, slot])
        hi = np.minimum(c0 + shift, hi_half - ext[:, slot])
        out[:, slot, 0] = lo + (hi - lo) * u[:, slot, 1]
        ext_y = _TRI_UP * scale[:, slot] + _MARGIN
        lo = np.maximum(_CENTRE_Y - shift, ext_y)
        hi = np.minimum(_CENTRE_Y + shift, _REF - ext_y)
        out[:, slot, 1] = lo + (hi - lo) * u[:, slot, 2]
        out[:, slot, 2] = scale[:, slot]
    out[..., :2] *= f
    return out


def product_order() -> np.ndarray:
    """``[576, 2, 2]`` all ordered pairs, lexicographic in (colour 1, shape 1, colour 2, shape 2)."""
    objs = list(itertools.product(range(len(CLEVR_COLORS)), range(len(CLEVR2D_SHAPES))))
    return np.array([[a, b] for a in objs for b in objs], dtype=np.int64)


MAX_SIZE = 4096  # pixels, as the 3-D renderer's bound: 576 images of 4096**2 pixels are ~29 GB of PNG input


def _check_size(size: int) -> None:
    if not isinstance(size, (int, np.integer)) or not 16 <= size <= MAX_SIZE:
        raise ValueError(f"size must be an integer in [16, {MAX_SIZE}] (pixels), got {size!r}")


def make_clevr2d(size: int = 224, order: str = "release", jitter: float = 0.0, seed: int = 0) -> SceneDataset:
    """The 576 two-object CLEVR-2D scenes in ``order`` "release" or "product" (lexicographic);
    ``jitter`` > 0 moves and rescales objects at random from ``seed``."""
    _check_size(size)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if not (0.0 <= float(jitter) <= 1.0):
        raise ValueError(f"jitter must be in [0, 1], got {jitter!r}")
    objects = clevr_release_order() if order == "release" else product_order()
    n = len(objects)
    if jitter > 0:
        placements = jittered_placements(n, size, float(jitter), np.random.default_rng(seed))
    else:
        placements = np.broadcast_to(default_placements(2, size), (n, 2, 3))
    images = [render_scene(objects[i], size, placements[i]) for i in range(n)]
    value_names = [list(CLEVR_COLORS), list(CLEVR2D_SHAPES)]
    return SceneDataset(
        name="clevr2d", concept_names=["color", "shape"], value_names=value_names, objects=objects,
        captions=[caption(value_names, o) for o in objects], filenames=[f"{i:07d}.png" for i in range(n)],
        images=images,
        info={"generator": "bindcore.data.clevr2d.make_clevr2d", "size": int(size), "order": order,
              "jitter": float(jitter), "seed": int(seed)},
    )


def make_clevr2d_singles(size: int = 224) -> SceneDataset:
    """The 24 single-object images, (colour, shape) lexicographic; objects ``[24, 1, 2]``."""
    _check_size(size)
    objects = np.array(list(itertools.product(range(len(CLEVR_COLORS)), range(len(CLEVR2D_SHAPES)))),
                       dtype=np.int64)[:, None, :]
    value_names = [list(CLEVR_COLORS), list(CLEVR2D_SHAPES)]
    return SceneDataset(
        name="clevr2d_singles", concept_names=["color", "shape"], value_names=value_names, objects=objects,
        captions=[caption(value_names, o) for o in objects],
        filenames=[f"{i:07d}.png" for i in range(len(objects))],
        images=[render_scene(o, size) for o in objects],
        info={"generator": "bindcore.data.clevr2d.make_clevr2d_singles", "size": int(size)},
    )
