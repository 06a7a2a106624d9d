"""CLEVR-like 3-D scenes (appendix C.1, D.3), ray cast in numpy in place of CLEVR's Blender.

CLEVR's camera, colours and "large" sizes; one shadow-casting key light, no indirect light or
real reflections. ``info["layout"]`` re-renders a scene; same seed, same pixels on one machine,
and within a few levels of a few pixels on another CPU kind (the shading's small dot products go
through the BLAS, whose kernels differ between an Intel Xeon and an AMD EPYC): a dataset is
identified by its ``recipe`` (renderer version, generator, parameters, seed), not its pixels."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bindcore.runtime import progress_bar

from .core import SceneDataset, caption
from .vocab import CLEVR_COLORS, CLEVR_RGB, CLEVR_SHAPES, clevr_release_order

CUBE, CYLINDER, SPHERE = 0, 1, 2
CONE, EGG = 3, 4  # two more solids for the patterned objects of bindcore.data.patterned
EGG_STRETCH = 1.4  # an egg is a sphere stretched upwards by this factor
MATERIALS = ("rubber", "metal")
ORDERS = ("release", "product")
LARGE = 0.7  # CLEVR's "large" object radius
OCCLUDED_VISIBLE = (0.3, 0.8)  # visible share of the hidden object in make_clevr3d_three(occlusion=True)
_EPS = 1e-4
# The version of the ray caster's pixels (Renderer and its subclasses): part of every rendered
# dataset's recipe, so of its embeddings' keys. Give it a new value when a change moves the pixels by
# more than bindcore.data.core.PIXEL_TOLERANCE (tests/test_golden.py pins them).
RENDERER_VERSION = 1


# -- scene description ----------------------------------------------------------------
@dataclass(frozen=True)
class SceneObject:
    """One object: ``color`` and ``shape`` indices, ground position, ``yaw`` in degrees,
    ``size`` (radius) and ``material``."""

    color: int
    shape: int
    x: float
    y: float
    yaw: float = 0.0
    size: float = LARGE
    material: str = "rubber"

    def __post_init__(self) -> None:
        if not 0 <= int(self.color) < len(CLEVR_COLORS):
            raise ValueError(f"color must be in [0, {len(CLEVR_COLORS) - 1}], got {self.color!r}")
        if not 0 <= int(self.shape) < len(CLEVR_SHAPES):
            raise ValueError(f"shape must be in [0, {len(CLEVR_SHAPES) - 1}], got {self.shape!r}")
        if not self.size > 0:
            raise ValueError(f"size must be > 0, got {self.size!r}")
        if self.material not in MATERIALS:
            raise ValueError(f"material must be one of {MATERIALS}, got {self.material!r}")


@dataclass(frozen=True)
class Camera:
    """Pinhole camera (z up); ``hfov_deg`` is the horizontal field of view."""

    position: tuple[float, float, float] = (7.3589, -6.9258, 4.9583)
    look_at: tuple[float, float, float] = (0.0, 0.0, 0.0)
    hfov_deg: float = 49.13


def _direction(azimuth_deg: float, elevation_deg: float) -> tuple[float, float, float]:
    a, e = math.radians(azimuth_deg), math.radians(elevation_deg)
    return (math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e))


@dataclass(frozen=True)
class Lighting:
    """Directions point towards the lights (azimuth 0 = +x); intensities in linear RGB."""

    key_direction: tuple[float, float, float] = _direction(-18.0, 45.0)
    key: float = 0.95
    key_falloff: float = 0.3  # key light is (1 - key_falloff) weaker far from the centre
    key_falloff_radius: float = 6.0
    fill_direction: tuple[float, float, float] = _direction(-110.0, 30.0)
    fill: float = 0.22
    back_direction: tuple[float, float, float] = _direction(140.0, 40.0)
    back: float = 0.2
    ambient: float = 0.2
    ground_rgb: tuple[int, int, int] = (150, 150, 150)  # sRGB albedo of the ground
    sky_rgb: tuple[int, int, int] = (200, 200, 205)  # background where a ray misses the ground


@dataclass(frozen=True)
class Render:
    """``image`` uint8 ``[H, W, 3]``, ``object_ids`` int8 ``[H, W]`` (-1 ground) and each object's
    ``visible_fraction`` of its in-frame image area."""

    image: np.ndarray
    object_ids: np.ndarray
    visible_fraction: np.ndarray


def _srgb_to_linear(c: np.ndarray) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _linear_to_srgb(c: np.ndarray) -> np.ndarray:
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


_LUT_N = 4096
_SRGB_LUT = np.round(_linear_to_srgb(np.arange(_LUT_N) / (_LUT_N - 1)) * 255).astype(np.uint8)
ALBEDO = np.array([_srgb_to_linear(np.array(CLEVR_RGB[c]) / 255.0) for c in CLEVR_COLORS], dtype=np.float32)


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


# -- ray-object intersection ------------------------------------------------------------
def _cube_half(obj: SceneObject) -> float:
    return obj.size / math.sqrt(2.0)


def _height(obj: SceneObject) -> float:
    if obj.shape == CUBE:
        return 2 * _cube_half(obj)
    return 2 * obj.size * (EGG_STRETCH if obj.shape == EGG else 1.0)


def _corners(obj: SceneObject) -> np.ndarray:
    """``[8, 3]`` corners of a box that holds the object."""
    if obj.shape == CUBE:
        h = _cube_half(obj)
        c, s = math.cos(math.radians(obj.yaw)), math.sin(math.radians(obj.yaw))
        xy = [(obj.x + c * a - s * b, obj.y + s * a + c * b) for a in (-h, h) for b in (-h, h)]
    else:
        r = obj.size
        xy = [(obj.x + a, obj.y + b) for a in (-r, r) for b in (-r, r)]
    top = _height(obj)
    return np.array([(x, y, z) for x, y in xy for z in (0.0, top)])


def _intersect(obj: SceneObject, o: np.ndarray, d: np.ndarray, normals: bool = True):
    """``(t, normal [..., 3] or None)`` of the nearest hit ``t > eps`` of rays ``o + t d``; inf on a miss."""
    inf = np.float32(np.inf)
    ox, oy, oz = o[..., 0] - obj.x, o[..., 1] - obj.y, o[..., 2]
    dx, dy, dz = d[..., 0], d[..., 1], d[..., 2]
    if obj.shape == SPHERE:
        r = obj.size
        cz = oz - r
        b = ox * dx + oy * dy + cz * dz
        disc = b * b - (ox * ox + oy * oy + cz * cz - r * r)
        t = -b - np.sqrt(np.maximum(disc, 0.0))
        t = np.where((disc > 0) & (t > _EPS), t, inf)
        if not normals:
            return t, None
        tt = np.where(np.isfinite(t), t, 0.0)
        n = np.stack([ox + tt * dx, oy + tt * dy, cz + tt * dz], -1) / r
        return t, n
    if obj.shape == EGG:  # a sphere of radius r in coordinates whose z is divided by the stretch
        r, k = obj.size, EGG_STRETCH
        cz, ez = (oz - k * r) / k, dz / k
        a = dx * dx + dy * dy + ez * ez
        b = ox * dx + oy * dy + cz * ez
        disc = b * b - a * (ox * ox + oy * oy + cz * cz - r * r)
        t = (-b - np.sqrt(np.maximum(disc, 0.0))) / a
        t = np.where((disc > 0) & (t > _EPS), t, inf)
        if not normals:
            return t, None
        tt = np.where(np.isfinite(t), t, 0.0)
        n = np.stack([ox + tt * dx, oy + tt * dy, (cz + tt * ez) / k], -1)
        return t, n / np.maximum(np.linalg.norm(n, axis=-1, keepdims=True), 1e-12)
    if obj.shape == CONE:  # apex up: x² + y² = (r/h)² (h - z)², 0 <= z <= h
        r, h = obj.size, 2 * obj.size
        k2, w = (r / h) ** 2, h - oz
        a = dx * dx + dy * dy - k2 * dz * dz
        b = 2 * (ox * dx + oy * dy + k2 * w * dz)
        c = ox * ox + oy * oy - k2 * w * w
        a = np.where(np.abs(a) < 1e-9, 1e-9, a)
        disc = b * b - 4 * a * c
        sq = np.sqrt(np.maximum(disc, 0.0))
        best = np.full(np.broadcast(ox, dx).shape, inf, dtype=np.float32)
        for root in ((-b - sq) / (2 * a), (-b + sq) / (2 * a)):
            z = oz + root * dz
            ok = (disc > 0) & (root > _EPS) & (z >= 0) & (z <= h)
            best = np.where(ok & (root < best), root, best)
        t = best
        if not normals:
            return t, None
        tt = np.where(np.isfinite(t), t, 0.0)
        n = np.stack([ox + tt * dx, oy + tt * dy, k2 * (w - tt * dz)], -1)
        return t, n / np.maximum(np.linalg.norm(n, axis=-1, keepdims=True), 1e-12)
    if obj.shape == CYLINDER:
        r, h = obj.size, 2 * obj.size
        a = np.maximum(dx * dx + dy * dy, 1e-12)
        b = ox * dx + oy * dy
        disc = b * b - a * (ox * ox + oy * oy - r * r)
        ts = (-b - np.sqrt(np.maximum(disc, 0.0))) / a
        zs = oz + ts * dz
        ts = np.where((disc > 0) & (ts > _EPS) & (zs >= 0) & (zs <= h), ts, inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            tc = (h - oz) / dz
        px, py = ox + tc * dx, oy + tc * dy
        tc = np.where((tc > _EPS) & (px * px + py * py <= r * r), tc, inf)
        t = np.minimum(ts, tc)
        if not normals:
            return t, None
        side = ts <= tc
        tt = np.where(np.isfinite(t), t, 0.0)
        n = np.stack([np.where(side, (ox + tt * dx) / r, 0.0), np.where(side, (oy + tt * dy) / r, 0.0),
                      np.where(side, 0.0, 1.0)], -1)
        return t, n
    # cube: slabs in the cube's own frame
    hs = _cube_half(obj)
    c, s = math.cos(math.radians(obj.yaw)), math.sin(math.radians(obj.yaw))
    lo = (ox * c + oy * s, -ox * s + oy * c, oz - hs)
    ld = (dx * c + dy * s, -dx * s + dy * c, dz)
    tmins, tmaxs = [], []
    for oo, dd in zip(lo, ld):
        dd = np.where(np.abs(dd) < 1e-9, 1e-9, dd)
        t1, t2 = (-hs - oo) / dd, (hs - oo) / dd
        tmins.append(np.minimum(t1, t2))
        tmaxs.append(np.maximum(t1, t2))
    tnear = np.maximum(np.maximum(tmins[0], tmins[1]), tmins[2])
    tfar = np.minimum(np.minimum(tmaxs[0], tmaxs[1]), tmaxs[2])
    t = np.where((tnear <= tfar) & (tnear > _EPS), tnear, inf)
    if not normals:
        return t, None
    axis = np.argmax(np.stack(tmins, -1), -1)
    sign = [-np.sign(dd) for dd in ld]
    nx = np.where(axis == 0, sign[0], 0.0)
    ny = np.where(axis == 1, sign[1], 0.0)
    nz = np.where(axis == 2, sign[2], 0.0)
    n = np.stack([nx * c - ny * s, nx * s + ny * c, nz], -1)
    return t, n


# -- renderer ---------------------------------------------------------------------------
class Renderer:
    """Renders scenes at one image size, rays and ground shading computed once."""

    def __init__(self, size: tuple[int, int] = (320, 240), supersample: int = 2,
                 camera: Camera | None = None, lighting: Lighting | None = None) -> None:
        size = _check_size(size)
        if not isinstance(supersample, (int, np.integer)) or not 1 <= supersample <= 4:
            raise ValueError(f"supersample must be an integer in [1, 4], got {supersample!r}")
        self.size, self.ss = size, int(supersample)
        self.camera, self.lighting = camera or Camera(), lighting or Lighting()
        if not self.camera.position[2] > 0:
            raise ValueError(f"camera.position must be above the ground (z > 0), got {self.camera.position}")
        if not 0 < self.camera.hfov_deg < 170:
            raise ValueError(f"camera.hfov_deg must be in (0, 170), got {self.camera.hfov_deg}")
        w, h = size
        ws, hs = w * self.ss, h * self.ss
        self.shape_ss = (hs, ws)
        pos = np.asarray(self.camera.position, dtype=np.float64)
        fwd = _unit(np.asarray(self.camera.look_at) - pos)
        right = _unit(np.cross(fwd, (0.0, 0.0, 1.0)))
        up = np.cross(right, fwd)
        self._pos, self._fwd, self._right, self._up = pos, fwd, right, up
        self._tx = math.tan(math.radians(self.camera.hfov_deg) / 2)
        self._ty = self._tx * h / w
        u = ((np.arange(ws) + 0.5) / ws * 2 - 1) * self._tx
        v = (1 - (np.arange(hs) + 0.5) / hs * 2) * self._ty
        dirs = fwd + u[None, :, None] * right + v[:, None, None] * up
        dirs /= np.linalg.norm(dirs, axis=-1, keepdims=True)
        self.dirs = dirs.astype(np.float32)
        self.origin = pos.astype(np.float32)

        lt = self.lighting
        self.key_dir = _unit(lt.key_direction).astype(np.float32)
        self.fill_dir = _unit(lt.fill_direction).astype(np.float32)
        self.back_dir = _unit(lt.back_direction).astype(np.float32)
        if self.key_dir[2] <= 0.05:
            raise ValueError("lighting.key_direction must point upwards (z > 0.05)")
        # ground: hit points, key-light part and the rest of its shading
        dz = dirs[..., 2]
        self.sky = dz > -1e-6
        tg = np.where(self.sky, 0.0, -pos[2] / np.where(self.sky, -1.0, dz))
        self.ground = (pos + tg[..., None] * dirs).astype(np.float32)
        alb = _srgb_to_linear(np.array(lt.ground_rgb) / 255.0).astype(np.float32)
        rest = lt.ambient + lt.fill * max(self.fill_dir[2], 0) + lt.back * max(self.back_dir[2], 0)
        key = self._key_strength(self.ground) * self.key_dir[2]
        self.ground_key = (key[..., None] * alb).astype(np.float32)
        base = (rest * alb + self.ground_key).astype(np.float32)
        base[self.sky] = _srgb_to_linear(np.array(lt.sky_rgb) / 255.0)
        self.ground_key[self.sky] = 0
        self.ground_base = base
        self._ground_image = self._encode(self._downsample(base))

    def recipe(self) -> dict[str, Any] | None:
        """What this renderer makes of a scene description, as JSON (its class, version, size and
        supersampling), or None with a camera or lighting other than the default (not described)."""
        if self.camera != Camera() or self.lighting != Lighting():
            return None
        return {"name": type(self).__name__, "version": RENDERER_VERSION, "size": list(self.size),
                "supersample": self.ss}

    # geometry helpers
    def project(self, points: np.ndarray) -> np.ndarray:
        """``[..., 3]`` world points -> ``[..., 2]`` (column, row) in output pixels."""
        rel = np.asarray(points, dtype=np.float64) - self._pos
        zc = rel @ self._fwd
        col = (rel @ self._right / (zc * self._tx) + 1) / 2 * self.size[0]
        row = (1 - rel @ self._up / (zc * self._ty)) / 2 * self.size[1]
        return np.stack([col, row], -1)

    def in_frame(self, obj: SceneObject, margin: float = 1.0) -> bool:
        """Whether the object's bounding box projects inside the image by ``margin`` pixels."""
        p = self.project(_corners(obj))
        w, h = self.size
        return bool(p[:, 0].min() >= margin and p[:, 0].max() <= w - margin
                    and p[:, 1].min() >= margin and p[:, 1].max() <= h - margin)

    def _rect(self, points: np.ndarray) -> tuple[slice, slice] | None:
        """Sub-sample rectangle holding the projections of ``points`` (all if one is behind)."""
        hs, ws = self.shape_ss
        if ((np.asarray(points) - self._pos) @ self._fwd <= 1e-3).any():
            return slice(0, hs), slice(0, ws)
        p = self.project(points) * self.ss
        c0, c1 = int(max(math.floor(p[:, 0].min()) - 1, 0)), int(min(math.ceil(p[:, 0].max()) + 2, ws))
        r0, r1 = int(max(math.floor(p[:, 1].min()) - 1, 0)), int(min(math.ceil(p[:, 1].max()) + 2, hs))
        if c0 >= c1 or r0 >= r1:
            return None
        return slice(r0, r1), slice(c0, c1)

    def _key_strength(self, p: np.ndarray) -> np.ndarray:
        lt = self.lighting
        r2 = p[..., 0] ** 2 + p[..., 1] ** 2
        return lt.key * (1 - lt.key_falloff + lt.key_falloff * np.exp(-r2 / (2 * lt.key_falloff_radius ** 2)))

    # rendering
    def _crop(self, rects: list[tuple[slice, slice] | None]) -> tuple[slice, slice] | None:
        """The smallest block, aligned to whole output pixels, holding all ``rects``."""
        rects = [r for r in rects if r is not None]
        if not rects:
            return None
        s = self.ss
        r0 = min(r[0].start for r in rects) // s * s
        c0 = min(r[1].start for r in rects) // s * s
        r1 = -(-max(r[0].stop for r in rects) // s) * s
        c1 = -(-max(r[1].stop for r in rects) // s) * s
        return slice(r0, r1), slice(c0, c1)

    @staticmethod
    def _local(rect: tuple[slice, slice] | None, crop: tuple[slice, slice]) -> tuple[slice, slice] | None:
        if rect is None:
            return None
        return (slice(rect[0].start - crop[0].start, rect[0].stop - crop[0].start),
                slice(rect[1].start - crop[1].start, rect[1].stop - crop[1].start))

    def _hits(self, objects: Sequence[SceneObject], crop: tuple[slice, slice], rects: list):
        """Per sub-sample in ``crop``: depth, object index (-1 ground), normal; and each
        object's own image area."""
        dirs = self.dirs[crop]
        tbest = np.full(dirs.shape[:2], np.inf, dtype=np.float32)
        ids = np.full(dirs.shape[:2], -1, dtype=np.int8)
        normals = np.zeros(dirs.shape, dtype=np.float32)
        hit_area = []
        for k, obj in enumerate(objects):
            rect = self._local(rects[k], crop)
            if rect is None:
                hit_area.append(0)
                continue
            t, n = _intersect(obj, self.origin, dirs[rect])
            hit_area.append(int(np.isfinite(t).sum()))
            closer = t < tbest[rect]
            tbest[rect] = np.where(closer, t, tbest[rect])
            ids[rect] = np.where(closer, k, ids[rect])
            normals[rect] = np.where(closer[..., None], n, normals[rect])
        return tbest, ids, normals, hit_area

    @staticmethod
    def _visible_fraction(ids: np.ndarray, hit_area: list[int]) -> np.ndarray:
        counts = np.bincount(ids.ravel().astype(np.int64) + 1, minlength=len(hit_area) + 1)[1:]
        return np.array([c / a if a else 0.0 for c, a in zip(counts, hit_area)])

    def visibility(self, objects: Sequence[SceneObject]) -> np.ndarray:
        """Visible fraction of each object (no shading: cheap, for layout checks)."""
        rects = [self._rect(_corners(o)) for o in objects]
        crop = self._crop(rects)
        if crop is None:
            return np.zeros(len(objects))
        _, ids, _, hit_area = self._hits(objects, crop, rects)
        return self._visible_fraction(ids, hit_area)

    def _downsample(self, a: np.ndarray) -> np.ndarray:
        s = self.ss
        if s == 1:
            return a
        out = a[0::s, 0::s].astype(np.float32)
        for i, j in itertools.product(range(s), range(s)):
            if i or j:
                out += a[i::s, j::s]
        return out / (s * s)

    @staticmethod
    def _encode(lin: np.ndarray) -> np.ndarray:
        return _SRGB_LUT[np.clip(lin * (_LUT_N - 1) + 0.5, 0, _LUT_N - 1).astype(np.int32)]

    def render(self, objects: Sequence[SceneObject]) -> Render:
        objects = list(objects)
        if len(objects) > 127:
            raise ValueError(f"at most 127 objects per scene, got {len(objects)}")
        w, h = self.size
        image = self._ground_image.copy()
        object_ids = np.full((h, w), -1, dtype=np.int8)
        lk = self.key_dir
        rects = [self._rect(_corners(o)) for o in objects]
        shadow_rects = []
        for obj in objects:
            c = _corners(obj)
            shadow_rects.append(self._rect(np.concatenate([c, c - (c[:, 2:3] / lk[2]) * lk])))
        crop = self._crop(rects + shadow_rects)
        if crop is None:
            return Render(image, object_ids, np.zeros(len(objects)))
        tbest, ids, normals, hit_area = self._hits(objects, crop, rects)
        dirs, ground, sky = self.dirs[crop], self.ground[crop], self.sky[crop]
        img = self.ground_base[crop].copy()

        # shadows: a ray towards the key light from every visible point in reach
        shadow = np.zeros(ids.shape, dtype=bool)
        up = np.array([0, 0, 1], dtype=np.float32)
        for k, obj in enumerate(objects):
            rect = self._local(shadow_rects[k], crop)
            if rect is None:
                continue
            sub_ids = ids[rect]
            on_obj = sub_ids >= 0
            pts = np.where(on_obj[..., None], self.origin + tbest[rect][..., None] * dirs[rect], ground[rect])
            nrm = np.where(on_obj[..., None], normals[rect], up)
            t, _ = _intersect(obj, pts + 1e-3 * nrm, lk, normals=False)
            shadow[rect] |= np.isfinite(t) & (sub_ids != k) & ~sky[rect]
        ground_shadow = shadow & (ids < 0)
        img[ground_shadow] -= self.ground_key[crop][ground_shadow]

        for k, obj in enumerate(objects):
            rect = self._local(rects[k], crop)
            if rect is None:
                continue
            sel = ids[rect] == k
            if not sel.any():
                continue
            d = dirs[rect][sel]
            p = self.origin + tbest[rect][sel][:, None] * d
            img[rect][sel] = self._shade(obj, p, normals[rect][sel], d, ~shadow[rect][sel])
        s = self.ss
        out = (slice(crop[0].start // s, crop[0].stop // s), slice(crop[1].start // s, crop[1].stop // s))
        image[out] = self._encode(self._downsample(img))
        object_ids[out] = self._downsample_ids(ids, len(objects))
        return Render(image=image, object_ids=object_ids,
                      visible_fraction=self._visible_fraction(ids, hit_area))

    def _downsample_ids(self, ids: np.ndarray, n: int) -> np.ndarray:
        """Per output pixel, the object covering most (and at least half) of it, else -1."""
        s = self.ss
        if s == 1:
            return ids.copy()
        out = np.full((ids.shape[0] // s, ids.shape[1] // s), -1, dtype=np.int8)
        best = np.zeros(out.shape, dtype=np.int32)
        for k in range(n):
            cov = np.rint(self._downsample((ids == k).astype(np.float32)) * (s * s)).astype(np.int32)
            better = (cov > best) & (2 * cov >= s * s)
            out[better] = k
            best = np.where(better, cov, best)
        return out

    def _albedo(self, obj: SceneObject, p: np.ndarray) -> np.ndarray:
        """Linear-RGB albedo at surface points ``p``: ``[3]`` (a subclass may return ``[n, 3]``)."""
        return ALBEDO[obj.color]

    def _shade(self, obj: SceneObject, p: np.ndarray, n: np.ndarray, d: np.ndarray,
               lit: np.ndarray) -> np.ndarray:
        """Linear RGB at points ``p``, normals ``n``, seen along ``d``; ``lit``: not in shadow."""
        lt = self.lighting
        alb = self._albedo(obj, p)
        key = self._key_strength(p) * lit
        ndl = np.maximum(n @ self.key_dir, 0.0)
        light = (lt.ambient + key * ndl + lt.fill * np.maximum(n @ self.fill_dir, 0.0)
                 + lt.back * np.maximum(n @ self.back_dir, 0.0))
        hvec = self.key_dir - d
        hvec /= np.linalg.norm(hvec, axis=-1, keepdims=True)
        ndh = np.maximum((n * hvec).sum(-1), 0.0) * (ndl > 0)
        if obj.material == "rubber":
            spec = 0.08 * key * ndh ** 12
            return light[:, None] * alb + spec[:, None]
        # metal: dim diffuse, a tinted reflection of a fixed environment, a glossy lobe and a highlight
        refl = d - 2 * (d * n).sum(-1, keepdims=True) * n
        rz = refl[:, 2]
        env = np.where(rz > 0, 0.7 + 0.3 * np.sqrt(np.maximum(rz, 0.0)),
                       0.2 + 0.2 * np.exp(5 * np.minimum(rz, 0.0)))
        kh = self.key_dir[:2] / np.linalg.norm(self.key_dir[:2])
        rh = refl[:, :2] / np.maximum(np.linalg.norm(refl[:, :2], axis=-1, keepdims=True), 1e-6)
        env = env * (0.7 + 0.6 * np.maximum(rh @ kh, 0.0) ** 3)
        glossy = key * np.maximum(refl @ self.key_dir, 0.0) ** 24
        spec = key * 2.0 * ndh ** 300
        tint = 0.7 * alb + 0.3
        return (0.15 * light[:, None] * alb + (0.9 * env + 1.2 * glossy)[:, None] * alb
                + spec[:, None] * tint)


def _check_size(size) -> tuple[int, int]:
    try:
        w, h = (int(s) for s in size)
        ok = len(tuple(size)) == 2 and w == size[0] and h == size[1]
    except (TypeError, ValueError):
        ok = False
    if not ok or not (16 <= w <= 4096 and 16 <= h <= 4096):
        raise ValueError(f"size must be (width, height), integers in [16, 4096], got {size!r}")
    return w, h


def render_scene(objects: Sequence[SceneObject], size: tuple[int, int] = (320, 240), supersample: int = 2,
                 camera: Camera | None = None,
                 lighting: Lighting | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(image uint8 [H, W, 3], object_ids int8 [H, W])`` of one scene (-1: ground); for many
    scenes reuse one :class:`Renderer`."""
    r = Renderer(size, supersample, camera, lighting).render(objects)
    return r.image, r.object_ids


# -- layouts ----------------------------------------------------------------------------
def _camera_axes(camera: Camera) -> tuple[np.ndarray, np.ndarray]:
    """Unit ground vectors: to the camera's right, and towards the camera."""
    fwd = np.asarray(camera.look_at, dtype=np.float64) - np.asarray(camera.position)
    back = _unit([-fwd[0], -fwd[1]])
    return np.array([-back[1], back[0]]), back


# the release's fixed positions ("posfix"), as (units to the right, units towards the camera)
_PAIR_LAYOUT = ((-1.6, 0.5), (1.6, 1.5))
_SINGLE_FRONT = 1.0  # a single object stands this far in front of the centre


def pair_positions(camera: Camera | None = None) -> np.ndarray:
    """``[2, 2]`` ground positions of object 1 (left, back) and object 2 (right, front)."""
    right, front = _camera_axes(camera or Camera())
    return np.array([a * right + b * front for a, b in _PAIR_LAYOUT])


def product_order() -> np.ndarray:
    """``[576, 2, 2]`` all ordered pairs, lexicographic in (colour 1, shape 1, colour 2, shape 2)."""
    objs = list(itertools.product(range(len(CLEVR_COLORS)), range(len(CLEVR_SHAPES))))
    return np.array([[a, b] for a in objs for b in objs], dtype=np.int64)


def _check_options(material: str, yaw: float | None) -> None:
    if material not in MATERIALS + ("random",):
        raise ValueError(f"material must be one of {MATERIALS + ('random',)}, got {material!r}")
    number = isinstance(yaw, (int, float, np.integer, np.floating)) and not isinstance(yaw, bool)
    if yaw is not None and not (number and math.isfinite(yaw)):
        raise ValueError(f"yaw must be None (random turns) or a number of degrees, got {yaw!r}")


def _materials(material: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if material == "random":
        return np.asarray(MATERIALS)[rng.integers(0, 2, size=shape)]
    return np.full(shape, material)


def _yaws(yaw: float | None, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(0.0, 360.0, size=shape) if yaw is None else np.full(shape, float(yaw))


def _layout_record(objs: Sequence[SceneObject]) -> list[dict[str, Any]]:
    return [asdict(o) for o in objs]  # full floats: re-rendering gives the same pixels


def scene_objects(dataset: SceneDataset, index: int) -> list[SceneObject]:
    """The objects of scene ``index`` of a clevr3d dataset, from ``info["layout"]``."""
    if "layout" not in dataset.info:
        raise ValueError(f"dataset {dataset.name!r} has no info['layout'] "
                         "(it was not made by bindcore.data.clevr3d)")
    return [SceneObject(**o) for o in dataset.info["layout"][index]]


def recipe(renderer: Renderer, generator: str, params: dict[str, Any], scenes: Sequence[int]) -> dict[str, Any] | None:
    """A rendered dataset's :attr:`~bindcore.data.core.SceneDataset.recipe`: ``renderer``'s, the
    ``generator`` (its import path), its ``params`` (seed included) and the indices of the rendered
    ``scenes`` among all the generator makes with them."""
    made_by = renderer.recipe()
    if made_by is None:
        return None
    return {"renderer": made_by, "generator": generator, "params": params, "scenes": [int(i) for i in scenes]}


def _build(name: str, generator: str, scenes: list[list[SceneObject]], renderer: Renderer,
           info: dict[str, Any], progress: bool, filenames: list[str] | None = None,
           n_objects: int | None = None, index: Sequence[int] | None = None) -> SceneDataset:
    n_max = n_objects or max((len(s) for s in scenes), default=1)
    objects = np.full((len(scenes), n_max, 2), -1, dtype=np.int64)
    images, visible = [], []
    for i, scene in enumerate(progress_bar(scenes, enabled=progress, desc=f"render {name}", leave=False)):
        for j, o in enumerate(scene):
            objects[i, j] = (o.color, o.shape)
        r = renderer.render(scene)
        images.append(r.image)
        visible.append([round(float(v), 4) for v in r.visible_fraction])
    value_names = [list(CLEVR_COLORS), list(CLEVR_SHAPES)]
    if filenames is None:
        filenames = [f"{i:07d}.png" for i in range(len(scenes))]
    params = {k: v for k, v in info.items() if k != "subset"}  # the scenes rendered are the recipe's "scenes"
    made = recipe(renderer, f"bindcore.data.clevr3d.{generator}", params,
                  range(len(scenes)) if index is None else index)
    info = {"generator": f"bindcore.data.clevr3d.{generator}", "size": list(renderer.size),
            "supersample": renderer.ss, **info, "visible_fraction": visible,
            "layout": [_layout_record(s) for s in scenes]}
    return SceneDataset(name=name, concept_names=["color", "shape"], value_names=value_names, objects=objects,
                        captions=[caption(value_names, o) for o in objects],
                        filenames=filenames, images=images, info=info, recipe=made)


def make_clevr3d(size: tuple[int, int] = (320, 240), order: str = "release", material: str = "rubber",
                 seed: int = 0, yaw: float | None = None, supersample: int = 2,
                 subset: Sequence[int] | None = None, progress: bool = True) -> SceneDataset:
    """The 576 ordered two-object scenes at fixed positions, in ``order`` "release" or "product".
    ``material`` "random" and ``yaw=None`` draw per object from ``seed``; ``subset``: render only
    these scenes (as ``make_clevr3d(...).subset(subset)``)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    _check_options(material, yaw)
    renderer = Renderer(size, supersample)
    rng = np.random.default_rng(seed)
    yaws = _yaws(yaw, (24, 24, 2), rng)
    mats = _materials(material, (24, 24, 2), rng)
    pairs = clevr_release_order() if order == "release" else product_order()
    index = np.arange(len(pairs)) if subset is None else np.asarray(subset, dtype=np.int64).reshape(-1)
    if index.size and (index.min() < 0 or index.max() >= len(pairs)):
        raise ValueError(f"subset indices must be in [0, {len(pairs) - 1}], got {index.min()}..{index.max()}")
    pos = pair_positions(renderer.camera)
    scenes = []
    for pair in pairs[index]:
        a, b = (int(o[0] + len(CLEVR_COLORS) * o[1]) for o in pair)  # object ids
        scenes.append([SceneObject(int(o[0]), int(o[1]), float(pos[j, 0]), float(pos[j, 1]),
                                   float(yaws[a, b, j]), LARGE, str(mats[a, b, j]))
                       for j, o in enumerate(pair)])
    return _build("clevr3d", "make_clevr3d", scenes, renderer,
                  {"order": order, "material": material, "seed": int(seed), "yaw": yaw,
                   "subset": None if subset is None else index.tolist()},
                  progress, filenames=[f"{i:07d}.png" for i in index], index=index.tolist())


def make_clevr3d_singles(size: tuple[int, int] = (320, 240), material: str = "rubber", seed: int = 0,
                         yaw: float | None = None, supersample: int = 2,
                         progress: bool = False) -> SceneDataset:
    """The 24 single-object images, (colour, shape) lexicographic; objects ``[24, 1, 2]``."""
    _check_options(material, yaw)
    renderer = Renderer(size, supersample)
    rng = np.random.default_rng(seed)
    objs = list(itertools.product(range(len(CLEVR_COLORS)), range(len(CLEVR_SHAPES))))
    yaws = _yaws(yaw, (len(objs),), rng)
    mats = _materials(material, (len(objs),), rng)
    x, y = _SINGLE_FRONT * _camera_axes(renderer.camera)[1]
    scenes = [[SceneObject(c, s, float(x), float(y), float(yaws[i]), LARGE, str(mats[i]))]
              for i, (c, s) in enumerate(objs)]
    return _build("clevr3d_singles", "make_clevr3d_singles", scenes, renderer,
                  {"material": material, "seed": int(seed), "yaw": yaw}, progress)


@dataclass
class _Sampler:
    renderer: Renderer
    rng: np.random.Generator
    extent: float = 3.0  # CLEVR places objects in [-3, 3]^2
    min_gap: float = 0.2  # between the objects' bounding circles
    max_tries: int = 2000
    occluded_range: tuple[float, float] = OCCLUDED_VISIBLE
    def _apart(self, xy: np.ndarray, r: float) -> bool:
        d = np.linalg.norm(xy[:, None] - xy[None], axis=-1) + np.eye(len(xy)) * 1e9
        return bool(d.min() >= 2 * r + self.min_gap)

    def place(self, kinds: list[tuple[int, int, float, str]],
              occlusion: bool) -> tuple[list[SceneObject], np.ndarray]:
        """Objects ``kinds`` (colour, shape, yaw, material) placed fully visible, or (``occlusion``)
        with object 1 partly behind object 0; left to right, with their visible fractions."""
        cam = np.asarray(self.renderer.camera.position[:2])
        for _ in range(self.max_tries):
            xy = self.rng.uniform(-self.extent, self.extent, size=(len(kinds), 2))
            if occlusion:
                to_far = _unit(xy[0] - cam)
                side = np.array([-to_far[1], to_far[0]])
                xy[1] = xy[0] + self.rng.uniform(1.6, 2.6) * to_far + self.rng.uniform(-0.7, 0.7) * side
            if not self._apart(xy, LARGE):
                continue
            objs = [SceneObject(c, s, float(x), float(y), yw, LARGE, m)
                    for (c, s, yw, m), (x, y) in zip(kinds, xy)]
            if not all(self.renderer.in_frame(o) for o in objs):
                continue
            vis = self.renderer.visibility(objs)
            if occlusion:
                lo, hi = self.occluded_range
                ok = lo <= vis[1] <= hi and all(v >= 1.0 for i, v in enumerate(vis) if i != 1)
            else:
                ok = bool((vis >= 1.0).all())
            if ok:
                x_img = self.renderer.project(np.array([[o.x, o.y, 0.0] for o in objs]))[:, 0]
                order = np.argsort(x_img, kind="stable")
                return [objs[i] for i in order], vis[order]
        raise RuntimeError(f"no layout found in {self.max_tries} tries (occlusion={occlusion})")


def make_clevr3d_three(n_scenes: int, occlusion: bool = False, seed: int = 0,
                       size: tuple[int, int] = (320, 240), material: str = "rubber", yaw: float | None = None,
                       supersample: int = 2, progress: bool = True) -> SceneDataset:
    """``n_scenes`` scenes of three objects drawn independently, placed at random, listed left to
    right; ``occlusion``: one object shows only :data:`OCCLUDED_VISIBLE` of its area."""
    if not isinstance(n_scenes, (int, np.integer)) or n_scenes < 0:
        raise ValueError(f"n_scenes must be an integer >= 0, got {n_scenes!r}")
    _check_options(material, yaw)
    renderer = Renderer(size, supersample)
    rng = np.random.default_rng(seed)
    sampler = _Sampler(renderer, rng)
    scenes = []
    for _ in range(int(n_scenes)):
        colors = rng.integers(0, len(CLEVR_COLORS), 3)
        shapes = rng.integers(0, len(CLEVR_SHAPES), 3)
        yaws = _yaws(yaw, (3,), rng)
        mats = _materials(material, (3,), rng)
        kinds = [(int(colors[i]), int(shapes[i]), float(yaws[i]), str(mats[i])) for i in range(3)]
        objs, _ = sampler.place(kinds, occlusion)
        scenes.append(objs)
    name = "clevr3d_three_occluded" if occlusion else "clevr3d_three"
    return _build(name, "make_clevr3d_three", scenes, renderer,
                  {"occlusion": bool(occlusion), "material": material, "seed": int(seed), "yaw": yaw},
                  progress, n_objects=3)
