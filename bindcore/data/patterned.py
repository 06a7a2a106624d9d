"""Patterned objects (pattern x object type), our substitute for appendix D.4's generated
natural images (not public), rendered by the CLEVR-like ray caster; colour, size, turn and
pattern scale and phase vary per scene as in the paper's images."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bindcore.runtime import progress_bar

from .clevr3d import ALBEDO, CONE, CUBE, CYLINDER, EGG, LARGE, SPHERE, Renderer, pair_positions, recipe
from .core import SceneDataset, caption
from .vocab import CLEVR_COLORS

OBJECT_TYPES = ["cube", "cylinder", "sphere", "cone", "egg"]
PATTERNS = ["plain", "striped", "checked", "dotted", "rayed"]
_SHAPES = [CUBE, CYLINDER, SPHERE, CONE, EGG]
_PAINT = np.array([0.8, 0.8, 0.8], dtype=np.float32)  # linear RGB of the pattern's paint
SIZE_RANGE = (0.55, 0.8)  # object radius (CLEVR's large objects: 0.7)
SCALE_RANGE = (0.8, 1.25)  # pattern scale


@dataclass(frozen=True)
class PatternedObject:
    """One object: indices ``kind``, ``pattern``, ``color``, its place, turn, size and the
    pattern's ``scale`` and ``phase``."""

    kind: int
    pattern: int
    color: int
    x: float
    y: float
    yaw: float = 0.0
    size: float = LARGE
    scale: float = 1.0
    phase: float = 0.0
    material: str = "rubber"

    def __post_init__(self) -> None:
        if not 0 <= self.kind < len(OBJECT_TYPES):
            raise ValueError(f"kind must be in [0, {len(OBJECT_TYPES) - 1}], got {self.kind!r}")
        if not 0 <= self.pattern < len(PATTERNS):
            raise ValueError(f"pattern must be in [0, {len(PATTERNS) - 1}], got {self.pattern!r}")
        if not 0 <= self.color < len(CLEVR_COLORS):
            raise ValueError(f"color must be in [0, {len(CLEVR_COLORS) - 1}], got {self.color!r}")
        if not (self.size > 0 and self.scale > 0):
            raise ValueError(f"size and scale must be > 0, got {self.size!r}, {self.scale!r}")

    @property
    def shape(self) -> int:
        return _SHAPES[self.kind]


def pattern_mask(obj: PatternedObject, p: np.ndarray) -> np.ndarray:
    """``[n]`` bool: where the pattern covers surface points ``p`` ``[n, 3]`` (in the object's frame)."""
    c, s = math.cos(math.radians(obj.yaw)), math.sin(math.radians(obj.yaw))
    dx, dy = p[:, 0] - obj.x, p[:, 1] - obj.y
    u = (dx * c + dy * s) / obj.size
    v = (-dx * s + dy * c) / obj.size
    w = p[:, 2] / obj.size
    q = 0.45 * obj.scale  # pattern period in units of the size
    if obj.pattern == 0:  # plain
        return np.zeros(len(p), dtype=bool)
    if obj.pattern == 1:  # horizontal stripes
        return np.sin(2 * np.pi * w / q + obj.phase) > 0.3
    if obj.pattern == 2:  # checks
        a = np.floor(u / q + obj.phase) + np.floor(v / q) + np.floor(w / q)
        return a.astype(np.int64) % 2 == 0
    if obj.pattern == 3:  # dots on a lattice
        g = np.stack([u, v, w], -1) / q + obj.phase
        return np.linalg.norm(g - np.round(g), axis=-1) < 0.3
    # rays: bands around the vertical axis
    return np.sin(6 * np.arctan2(v, u) + obj.phase) > 0.3


class PatternedRenderer(Renderer):
    """The CLEVR-like ray caster with patterned (rubber) surfaces."""

    def _albedo(self, obj: Any, p: np.ndarray) -> np.ndarray:
        return np.where(pattern_mask(obj, p)[:, None], _PAINT, ALBEDO[obj.color])


def make_patterned(n_types: int = 5, n_patterns: int = 5, size: tuple[int, int] = (320, 240), seed: int = 0,
                   supersample: int = 2, progress: bool = False) -> SceneDataset:
    """All ordered pairs of the ``n_types x n_patterns`` objects (625 for 5 x 5), the rest
    drawn per scene from ``seed``. Concepts: 0 "pattern", 1 "object"."""
    for name, v, top in (("n_types", n_types, len(OBJECT_TYPES)), ("n_patterns", n_patterns, len(PATTERNS))):
        if not isinstance(v, (int, np.integer)) or not 1 <= v <= top:
            raise ValueError(f"{name} must be an integer in 1..{top}, got {v!r}")
    renderer = PatternedRenderer(size, supersample)
    rng = np.random.default_rng(seed)
    objs = [(p, k) for p in range(n_patterns) for k in range(n_types)]  # (pattern, object type)
    pos = pair_positions(renderer.camera)
    scenes, labels = [], []
    for a in objs:
        for b in objs:
            scene = []
            for j, (p, k) in enumerate((a, b)):
                scene.append(PatternedObject(
                    k, p, int(rng.integers(len(CLEVR_COLORS))), float(pos[j, 0]), float(pos[j, 1]),
                    float(rng.uniform(0, 360)), float(rng.uniform(*SIZE_RANGE)), float(rng.uniform(*SCALE_RANGE)),
                    float(rng.uniform(0, 2 * np.pi))))
            scenes.append(scene)
            labels.append([a, b])
    images, visible = [], []
    for scene in progress_bar(scenes, enabled=progress, desc="render patterned", leave=False):
        r = renderer.render(scene)
        images.append(r.image)
        visible.append([round(float(v), 4) for v in r.visible_fraction])
    value_names = [PATTERNS[:n_patterns], OBJECT_TYPES[:n_types]]
    objects = np.asarray(labels, dtype=np.int64)
    return SceneDataset(
        name="patterned", concept_names=["pattern", "object"], value_names=value_names, objects=objects,
        captions=[caption(value_names, o) for o in objects], filenames=[f"{i:07d}.png" for i in range(len(scenes))],
        images=images,
        info={"generator": "bindcore.data.patterned.make_patterned", "size": list(renderer.size),
              "supersample": renderer.ss, "seed": int(seed), "visible_fraction": visible,
              "layout": [[asdict(o) for o in sc] for sc in scenes]},
        recipe=recipe(renderer, "bindcore.data.patterned.make_patterned",
                      {"n_types": int(n_types), "n_patterns": int(n_patterns), "seed": int(seed)}, range(len(scenes))))
