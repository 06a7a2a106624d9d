"""CLEVR-like 3-D scenes (bindcore.data.clevr3d): determinism, labels read back from
the pixels, occlusion, singles, materials.

Pixel rules used to check labels (validated on all 576 two-object scenes and 600
three-object scenes at 160 x 120, without a single error):

* colour: inside the object's id mask (eroded by one pixel, to drop edge pixels that
  blend with the ground), take the pixels between the 30th and 90th percentile of
  brightness (well lit, no highlight), their median linear RGB, and the CLEVR colour
  whose chromaticity (r, g, b) / (r + g + b) is nearest. All lights are white, so
  shading scales the albedo and keeps its chromaticity.
* shape: flatness of the shading. Lit by parallel white light, a planar face has one
  brightness; so does a vertical line on a cylinder's side. Count, inside the eroded
  mask, the adjacent pixel pairs whose brightness (R + G + B, 8 bit) differs by at most
  1, separately for horizontal and vertical pairs. Sphere: curved every way, few flat
  vertical pairs (< 0.35); cube: flat both ways (horizontal >= 0.66); cylinder: flat
  along its axis, curved across (the rest). Measured at 160 x 120 on 2,650 fully
  visible rubber objects: vertical share of spheres <= 0.13, of the others >= 0.59;
  horizontal share of cubes >= 0.74, of cylinders <= 0.57.
  The silhouette alone does not separate cubes from cylinders at every turn (a cube
  seen face on is a rectangle with a thin top, close to a cylinder's outline at these
  sizes); it does single out spheres, whose mask is the ellipse of its bounding box
  (``test_sphere_silhouettes``, at the default size).
"""

import numpy as np
import pytest

from bindcore.data import clevr3d as c3
from bindcore.data.vocab import CLEVR_COLORS, CLEVR_SHAPES, clevr_release_order

SMALL = (160, 120)


# -- pixel rules -------------------------------------------------------------------------
def _erode(mask: np.ndarray) -> np.ndarray:
    e = mask.copy()
    e[1:] &= mask[:-1]
    e[:-1] &= mask[1:]
    e[:, 1:] &= mask[:, :-1]
    e[:, :-1] &= mask[:, 1:]
    return e


def _chroma(rgb: np.ndarray) -> np.ndarray:
    return rgb / np.maximum(rgb.sum(-1, keepdims=True), 1e-9)


_ALBEDO_CHROMA = _chroma(c3.ALBEDO.astype(np.float64))


def colour_from_pixels(image: np.ndarray, mask: np.ndarray) -> int:
    e = _erode(mask)
    px = c3._srgb_to_linear(image[e if e.sum() >= 10 else mask] / 255.0)
    lum = px.sum(-1)
    lo, hi = np.percentile(lum, [30, 90])
    sel = (lum >= lo) & (lum <= hi)
    med = np.median(px[sel], axis=0)
    return int(np.argmin(np.linalg.norm(_ALBEDO_CHROMA - _chroma(med), axis=-1)))


def flatness(image: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """Shares of horizontally and of vertically adjacent pixel pairs inside the eroded
    mask whose brightness (R + G + B, 8 bit) differs by at most 1."""
    lum = image.astype(np.int32).sum(-1)
    e = _erode(mask)
    horizontal = (np.abs(lum[:, 1:] - lum[:, :-1]) <= 1)[e[:, 1:] & e[:, :-1]].mean()
    vertical = (np.abs(lum[1:] - lum[:-1]) <= 1)[e[1:] & e[:-1]].mean()
    return float(horizontal), float(vertical)


def shape_from_pixels(image: np.ndarray, mask: np.ndarray) -> int:
    horizontal, vertical = flatness(image, mask)
    if vertical < 0.35:
        return c3.SPHERE  # curved in every direction
    return c3.CUBE if horizontal >= 0.66 else c3.CYLINDER  # flat both ways / curved across only


def ellipse_residual(mask: np.ndarray) -> float:
    """Mean gap between the mask's row widths and those of the ellipse inscribed in
    its bounding box, as a share of the box width."""
    rows = np.nonzero(mask.any(1))[0]
    w = mask[rows[0]:rows[-1] + 1].sum(1).astype(float)
    y = (np.arange(len(w)) + 0.5) / len(w) * 2 - 1
    return float(np.abs(w - w.max() * np.sqrt(np.clip(1 - y * y, 0, 1))).mean() / w.max())


def labels_from_pixels(image: np.ndarray, ids: np.ndarray, n: int) -> list[tuple[int, int]]:
    return [(colour_from_pixels(image, ids == k), shape_from_pixels(image, ids == k)) for k in range(n)]


# -- fixtures ----------------------------------------------------------------------------
SAMPLE = np.random.default_rng(7).choice(576, size=48, replace=False)


@pytest.fixture(scope="module")
def pairs():
    return c3.make_clevr3d(size=SMALL, subset=SAMPLE, progress=False)


@pytest.fixture(scope="module")
def three():
    return c3.make_clevr3d_three(12, occlusion=False, seed=3, size=SMALL, progress=False)


@pytest.fixture(scope="module")
def three_occluded():
    return c3.make_clevr3d_three(12, occlusion=True, seed=3, size=SMALL, progress=False)


# -- tests -------------------------------------------------------------------------------
def test_dataset_format(pairs):
    assert len(pairs) == 48 and pairs.concept_names == ["color", "shape"]
    assert pairs.value_names == [CLEVR_COLORS, CLEVR_SHAPES]
    assert pairs.filenames == [f"{i:07d}.png" for i in SAMPLE]
    assert all(img.shape == (120, 160, 3) and img.dtype == np.uint8 for img in pairs.images)
    np.testing.assert_array_equal(pairs.objects, clevr_release_order()[SAMPLE])
    (c1, s1), (c2, s2) = pairs.objects[0]
    assert pairs.captions[0] == (f"a {CLEVR_COLORS[c1]} {CLEVR_SHAPES[s1]} "
                                 f"and a {CLEVR_COLORS[c2]} {CLEVR_SHAPES[s2]}")
    # fixed positions, no occlusion
    assert (np.array(pairs.info["visible_fraction"]) == 1.0).all()
    assert len({(o["x"], o["y"]) for scene in pairs.info["layout"] for o in scene}) == 2


def test_two_object_labels_from_pixels(pairs):
    for i in range(len(pairs)):
        objs = c3.scene_objects(pairs, i)
        img, ids = c3.render_scene(objs, size=SMALL)
        np.testing.assert_array_equal(img, pairs.images[i])
        # object 1 on the left, object 2 on the right
        cols = [np.nonzero(ids == k)[1].mean() for k in range(2)]
        assert cols[0] < cols[1]
        got = labels_from_pixels(img, ids, 2)
        assert got == [tuple(o) for o in pairs.objects[i].tolist()], (i, pairs.captions[i])


def test_three_object_labels_from_pixels(three):
    assert three.objects.shape == (12, 3, 2)
    for i in range(len(three)):
        img, ids = c3.render_scene(c3.scene_objects(three, i), size=SMALL)
        np.testing.assert_array_equal(img, three.images[i])
        got = labels_from_pixels(img, ids, 3)
        assert got == [tuple(o) for o in three.objects[i].tolist()], (i, three.captions[i])
        # listed left to right
        cols = [np.nonzero(ids == k)[1].mean() for k in range(3)]
        assert cols == sorted(cols)


def test_occlusion(three, three_occluded):
    vis = np.array(three.info["visible_fraction"])
    assert vis.shape == (12, 3) and (vis == 1.0).all()
    vis_o = np.array(three_occluded.info["visible_fraction"])
    assert vis_o.shape == (12, 3)
    # every occluded scene: exactly one object partly hidden (30-80% visible), the rest whole
    assert ((vis_o < 1).sum(1) == 1).all()
    assert ((vis_o.min(1) >= 0.3) & (vis_o.min(1) <= 0.8)).all()
    # the visible fraction matches the object-id map: a hidden object's mask is smaller
    # than when it is rendered alone
    for i in range(3):
        objs = c3.scene_objects(three_occluded, i)
        _, ids = c3.render_scene(objs, size=SMALL)
        k = int(np.argmin(vis_o[i]))
        _, alone = c3.render_scene([objs[k]], size=SMALL)
        ratio = (ids == k).sum() / (alone == 0).sum()
        assert abs(ratio - vis_o[i, k]) < 0.05
        # fully visible objects keep their labels under the pixel rules
        img = three_occluded.images[i]
        for j in range(3):
            if j != k:
                assert colour_from_pixels(img, ids == j) == three_occluded.objects[i, j, 0]


def test_determinism():
    a = c3.make_clevr3d_three(3, occlusion=True, seed=11, size=(80, 60), progress=False)
    b = c3.make_clevr3d_three(3, occlusion=True, seed=11, size=(80, 60), progress=False)
    c = c3.make_clevr3d_three(3, occlusion=True, seed=12, size=(80, 60), progress=False)
    assert a.content_hash() == b.content_hash() and a.info == b.info
    assert a.content_hash() != c.content_hash()
    p = c3.make_clevr3d(size=(80, 60), subset=[0, 5, 300], progress=False)
    q = c3.make_clevr3d(size=(80, 60), subset=[0, 5, 300], progress=False)
    assert p.content_hash() == q.content_hash()
    # the same pair gets the same image in either order
    prod = c3.make_clevr3d(size=(80, 60), order="product", progress=False, subset=range(0, 576, 25))
    release = {tuple(o.ravel()): i for i, o in enumerate(clevr_release_order())}
    same = [release[tuple(o.ravel())] for o in prod.objects]
    rel = c3.make_clevr3d(size=(80, 60), progress=False, subset=same)
    np.testing.assert_array_equal(rel.objects, prod.objects)
    for a_img, b_img in zip(prod.images, rel.images):
        np.testing.assert_array_equal(a_img, b_img)


def test_singles():
    ds = c3.make_clevr3d_singles(size=SMALL)
    assert len(ds) == 24 and ds.objects.shape == (24, 1, 2)
    assert sorted(map(tuple, ds.objects[:, 0].tolist())) == [(c, s) for c in range(8) for s in range(3)]
    assert len(set(ds.captions)) == 24
    for i in range(24):
        img, ids = c3.render_scene(c3.scene_objects(ds, i), size=SMALL)
        np.testing.assert_array_equal(img, ds.images[i])
        assert set(np.unique(ids).tolist()) == {-1, 0}
        assert labels_from_pixels(img, ids, 1) == [tuple(ds.objects[i, 0].tolist())]


def test_sphere_silhouettes():
    """At the default size a sphere's mask is the ellipse of its bounding box (residual
    < 0.045 of its width); cubes and cylinders at any turn are not (> 0.05)."""
    rng = np.random.default_rng(5)
    r = c3.Renderer()
    for i in range(30):
        shape = i % 3
        o = c3.SceneObject(0, shape, *rng.uniform(-2.5, 2.5, 2), yaw=float(rng.uniform(0, 360)))
        ids = r.render([o]).object_ids
        res = ellipse_residual(ids == 0)
        assert (res < 0.045) == (shape == c3.SPHERE), (o, res)


def test_materials_differ():
    objs = [c3.SceneObject(6, c3.SPHERE, 0.0, 0.0)]
    rubber, ids = c3.render_scene(objs, size=SMALL)
    metal, ids_m = c3.render_scene([c3.SceneObject(6, c3.SPHERE, 0.0, 0.0, material="metal")], size=SMALL)
    np.testing.assert_array_equal(ids, ids_m)
    m = ids == 0
    assert np.abs(rubber[m].astype(int) - metal[m]).mean() > 10
    near = m.copy()  # the object and the pixels next to it (anti-aliased edge)
    near[1:] |= m[:-1]
    near[:-1] |= m[1:]
    near[:, 1:] |= m[:, :-1]
    near[:, :-1] |= m[:, 1:]
    assert (rubber[~near] == metal[~near]).all()
    # metal: a sharper, brighter highlight
    assert metal[m].max() > rubber[m].max()
    # the colour rule still reads red from the metal sphere
    assert colour_from_pixels(metal, m) == 6
    ds = c3.make_clevr3d(size=(80, 60), material="random", subset=range(24), progress=False)
    mats = {o["material"] for scene in ds.info["layout"] for o in scene}
    assert mats == {"rubber", "metal"}


def test_shading_and_shadows():
    """Objects are shaded (not flat colour) and cast shadows on the ground."""
    o = c3.SceneObject(4, c3.SPHERE, 0.0, 0.0)
    img, ids = c3.render_scene([o], size=SMALL)
    bare, _ = c3.render_scene([], size=SMALL)
    lum = img.astype(int).sum(-1)
    assert np.ptp(lum[ids == 0]) > 150
    darker = (bare.astype(int).sum(-1) - lum > 30) & (ids < 0)
    assert darker.sum() > 50  # the shadow on the ground
    # the shadow lies away from the key light (which is to the front right)
    r = c3.Renderer(SMALL)
    away = r.project(np.array([[0.0, 0.0, 0.0], -r.key_dir * np.array([1, 1, 0])]))
    rows, cols = np.nonzero(darker)
    assert np.sign(cols.mean() - away[0, 0]) == np.sign(away[1, 0] - away[0, 0])


def test_bad_arguments():
    with pytest.raises(ValueError, match="order"):
        c3.make_clevr3d(order="random")
    with pytest.raises(ValueError, match="material"):
        c3.make_clevr3d_singles(material="glass")
    with pytest.raises(ValueError, match="size"):
        c3.make_clevr3d_singles(size=(8, 8))
    with pytest.raises(ValueError, match="subset"):
        c3.make_clevr3d(subset=[576])
    with pytest.raises(ValueError, match="n_scenes"):
        c3.make_clevr3d_three(-1)
    with pytest.raises(ValueError, match="material"):
        c3.make_clevr3d_three(0, material="wood")
    with pytest.raises(ValueError, match="yaw"):
        c3.make_clevr3d_singles(yaw="north")
    with pytest.raises(ValueError, match="supersample"):
        c3.Renderer(supersample=0)
    with pytest.raises(ValueError, match="shape"):
        c3.SceneObject(0, 3, 0.0, 0.0)


def test_patterned_objects_d4_substitute():
    from bindcore.data.clevr3d import CONE, EGG, _intersect
    from bindcore.data.patterned import OBJECT_TYPES, PATTERNS, PatternedObject, make_patterned, pattern_mask

    ds = make_patterned(3, 2, size=(48, 36), seed=1)
    assert len(ds) == 36 and ds.values_per_concept == [2, 3]
    assert ds.concept_names == ["pattern", "object"] and ds.value_names == [PATTERNS[:2], OBJECT_TYPES[:3]]
    assert ds.images[0].shape == (36, 48, 3) and ds.captions[1] == "a plain cube and a plain cylinder"
    again = make_patterned(3, 2, size=(48, 36), seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(ds.images, again.images))
    # a ray straight down hits a cone's apex region and an egg's top, with unit normals
    for shape, top in ((CONE, 1.4), (EGG, 1.96)):
        obj = PatternedObject(3 if shape == CONE else 4, 1, 0, 0.0, 0.0, size=0.7)
        t, n = _intersect(obj, np.array([[0.01, 0.0, 5.0]]), np.array([[0.0, 0.0, -1.0]]))
        assert np.isfinite(t).all() and abs(5.0 - t[0] - top) < 0.05
        assert np.allclose(np.linalg.norm(n, axis=-1), 1.0, atol=1e-5)
    pts = np.random.default_rng(0).normal(size=(200, 3))
    plain = PatternedObject(0, 0, 0, 0.0, 0.0)
    assert not pattern_mask(plain, pts).any()
    for p in range(1, len(PATTERNS)):
        m = pattern_mask(PatternedObject(0, p, 0, 0.0, 0.0), pts)
        assert 0 < m.mean() < 1  # paint covers part of the surface
    with pytest.raises(ValueError, match="n_types"):
        make_patterned(6, 2)
