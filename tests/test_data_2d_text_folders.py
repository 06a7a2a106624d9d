"""CLEVR-2D renderer, the synthetic text space and the folder loaders (appendix C.1, C.3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from bindcore.data.clevr2d import BACKGROUND, make_clevr2d, make_clevr2d_singles, product_order
from bindcore.data.core import SceneDataset, read_labels_csv
from bindcore.data.folders import PUG_COLUMNS, LazyImages, load_folder
from bindcore.data.text import ADJECTIVES, NOUNS, make_text_space
from bindcore.data.vocab import (
    CLEVR2D_SHAPES,
    CLEVR_COLORS,
    CLEVR_RGB,
    PUG_SPECIES,
    PUG_TEXTURES,
    clevr_release_order,
)

RELEASE = Path(__file__).resolve().parents[2] / "shared" / "data" / "reference-release"
PALETTE = np.array([CLEVR_RGB[c] for c in CLEVR_COLORS], dtype=float)


@pytest.fixture(scope="module")
def clevr2d() -> SceneDataset:
    return make_clevr2d()


# -- the pixel rule -----------------------------------------------------------------
def read_objects(images) -> tuple[np.ndarray, np.ndarray]:
    """(colour index, shape index) ``[N, 2]`` and colour margin ``[N]`` of the one object
    in each image of ``images`` ``[N, H, W, 3]`` (vectorised over images).

    Object pixels: those off the background. Colour: the mean RGB of the object pixels
    that are not the near-black outline, matched to the nearest CLEVR colour (margin =
    nearest distance / second-nearest distance). Shape: the fraction of its bounding
    box the object fills: square ~1, circle ~pi/4, triangle ~1/2."""
    a = np.asarray(images, dtype=np.uint8)
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    lo, hi = np.minimum(np.minimum(r, g), b), np.maximum(np.maximum(r, g), b)
    assert BACKGROUND == (245, 245, 245)
    mask = (lo < 245 - 8) | (hi > 245 + 8)  # some channel more than 8 off the background
    rows, cols = mask.any(2), mask.any(1)
    assert rows.any(1).all(), "an image without an object"
    height = rows.shape[1] - rows[:, ::-1].argmax(1) - rows.argmax(1)
    width = cols.shape[1] - cols[:, ::-1].argmax(1) - cols.argmax(1)
    fill = mask.sum((1, 2)) / (height * width)
    shape = np.where(fill > 0.9, 0, np.where(fill > 0.65, 2, 1))
    body = mask & (hi >= 30)
    n_body = body.sum((1, 2))
    mean = np.stack([np.where(body, ch, 0).sum((1, 2), dtype=np.int64) / n_body for ch in (r, g, b)], 1)
    dist = np.linalg.norm(mean[:, None, :] - PALETTE[None], axis=-1)
    d = np.sort(dist, axis=1)
    return np.stack([dist.argmin(1), shape], 1), d[:, 0] / d[:, 1]


def read_scenes(images) -> tuple[np.ndarray, np.ndarray]:
    """Objects ``[N, 2, 2]`` read from the left and right halves, and the worst colour margin per scene."""
    a = np.asarray(images)
    h = a.shape[2] // 2
    left, m_left = read_objects(a[:, :, :h])
    right, m_right = read_objects(a[:, :, h:])
    return np.stack([left, right], 1), np.maximum(m_left, m_right)


# -- CLEVR-2D -------------------------------------------------------------------------
def test_clevr2d_scenes_and_format(clevr2d):
    ds = clevr2d
    assert len(ds) == 576 and ds.objects.shape == (576, 2, 2)
    assert ds.concept_names == ["color", "shape"]
    assert ds.value_names == [CLEVR_COLORS, CLEVR2D_SHAPES]
    assert CLEVR2D_SHAPES == ["square", "triangle", "circle"]
    assert len({tuple(o.ravel()) for o in ds.objects}) == 576  # every ordered pair once
    assert int((ds.objects[:, 0] == ds.objects[:, 1]).all(1).sum()) == 24  # identical pairs
    assert ds.filenames[0] == "0000000.png" and ds.filenames[-1] == "0000575.png"
    assert all(img.shape == (224, 224, 3) and img.dtype == np.uint8 for img in ds.images)
    assert ds.info == {"generator": "bindcore.data.clevr2d.make_clevr2d", "size": 224, "order": "release",
                       "jitter": 0.0, "seed": 0}
    np.testing.assert_array_equal(ds.objects, clevr_release_order())
    prod = make_clevr2d(size=32, order="product")
    np.testing.assert_array_equal(prod.objects, product_order())
    assert [tuple(o.ravel()) for o in prod.objects] == sorted(tuple(o.ravel()) for o in prod.objects)


def test_clevr2d_labels_from_pixels_every_scene(clevr2d):
    read, margin = read_scenes(clevr2d.images)
    wrong = np.flatnonzero((read != clevr2d.objects).any((1, 2)))
    assert wrong.size == 0, f"scenes {wrong[:5]}: pixels say {read[wrong[:5]].tolist()}"
    assert margin.max() < 0.5  # the colour is never a near tie


def test_clevr2d_jitter_labels_from_pixels():
    ds = make_clevr2d(size=112, jitter=1.0, seed=5)
    read, _ = read_scenes(ds.images)
    wrong = np.flatnonzero((read != ds.objects).any((1, 2)))
    assert wrong.size == 0, f"jittered scenes {wrong[:5]}: pixels say {read[wrong[:5]].tolist()}"


def test_clevr2d_determinism_and_jitter_seeds(clevr2d):
    again = make_clevr2d()
    assert all(np.array_equal(a, b) for a, b in zip(clevr2d.images, again.images))
    assert make_clevr2d(seed=7).content_hash() == clevr2d.content_hash()  # seed unused without jitter
    j1, j1b, j2 = (make_clevr2d(size=64, jitter=0.5, seed=s) for s in (1, 1, 2))
    assert all(np.array_equal(a, b) for a, b in zip(j1.images, j1b.images))
    assert sum(not np.array_equal(a, b) for a, b in zip(j1.images, j2.images)) > 500
    small = make_clevr2d(size=64)
    assert sum(not np.array_equal(a, b) for a, b in zip(j1.images, small.images)) > 500
    with pytest.raises(ValueError, match="jitter"):
        make_clevr2d(jitter=1.5)
    with pytest.raises(ValueError, match="order"):
        make_clevr2d(order="random")


def test_clevr2d_layout_matches_release_grid(clevr2d):
    """The release's first scene (purple square, gray circle), from its sample grid:
    background and object boxes in the same pixels."""
    grid_path = RELEASE / "clevr2d" / "paper_grid_2x4.png"
    if not grid_path.exists():
        pytest.skip("release sample grid not available")
    grid = np.asarray(Image.open(grid_path).convert("RGB"))
    ref, ours = grid[72:296, 16:240], clevr2d.images[0]
    assert tuple(ref[5, 5]) == tuple(ours[5, 5]) == BACKGROUND
    close = (np.abs(ref.astype(int) - ours.astype(int)).max(-1) <= 30).mean()
    assert close > 0.99


def test_clevr2d_singles():
    ds = make_clevr2d_singles()
    assert ds.objects.shape == (24, 1, 2) and len(ds.images) == 24
    assert ds.captions[0] == "a blue square" and ds.captions[-1] == "a yellow circle"
    read, _ = read_objects(ds.images)
    np.testing.assert_array_equal(read, ds.objects[:, 0])
    for img in ds.images:
        ys, xs = np.nonzero(np.abs(img.astype(int) - np.array(BACKGROUND)).max(-1) > 8)
        assert abs((xs.min() + xs.max()) / 2 - 112) <= 1.5 and abs((ys.min() + ys.max()) / 2 - 112) <= 1.5


def test_clevr2d_captions(clevr2d):
    for cap, (o1, o2) in zip(clevr2d.captions, clevr2d.objects):
        assert cap == (f"a {CLEVR_COLORS[o1[0]]} {CLEVR2D_SHAPES[o1[1]]} and "
                       f"a {CLEVR_COLORS[o2[0]]} {CLEVR2D_SHAPES[o2[1]]}")
    samples = RELEASE / "clevr2d" / "paper_samples.csv"
    if samples.exists():  # the release's CLEVR-2D captions have the right shape names
        df = pd.read_csv(samples)
        assert [clevr2d.captions[int(i)] for i in df["sample_index"]] == df["caption"].tolist()


def test_release_labels_order():
    labels = RELEASE / "clevr2d" / "labels.csv"
    if not labels.exists():
        pytest.skip("release labels.csv not available")
    df = pd.read_csv(labels)
    ds = make_clevr2d(size=16)
    cols = ["object1_color_idx", "object1_shape_idx", "object2_color_idx", "object2_shape_idx"]
    np.testing.assert_array_equal(ds.objects[:20].reshape(20, 4), df[cols].to_numpy()[:20])
    assert ds.filenames == df["filename"].tolist()
    # the CLEVR file (same indices, 3-D names) read by indices gives our CLEVR-2D order
    objects, filenames, names = read_labels_csv(RELEASE / "clevr" / "labels.csv")
    np.testing.assert_array_equal(objects, ds.objects)
    assert names == ["color", "shape"] and filenames == ds.filenames


def test_labels_csv_round_trip(tmp_path, clevr2d):
    clevr2d.write(tmp_path / "labels_only", images=False)
    objects, filenames, names = read_labels_csv(tmp_path / "labels_only" / "labels.csv")
    np.testing.assert_array_equal(objects, clevr2d.objects)
    assert filenames == clevr2d.filenames and names == clevr2d.concept_names
    df = pd.read_csv(tmp_path / "labels_only" / "labels.csv")
    assert df["object1_shape"].tolist() == [CLEVR2D_SHAPES[s] for s in clevr2d.objects[:, 0, 1]]
    # with images: labels and pixels come back through load_folder
    sub = clevr2d.subset(range(0, 576, 48))
    sub.write(tmp_path / "imgs")
    back = load_folder(tmp_path / "imgs", "clevr2d")
    np.testing.assert_array_equal(back.objects, sub.objects)
    assert back.captions == sub.captions and back.filenames == sub.filenames
    assert isinstance(back.images, LazyImages)
    assert all(np.array_equal(a, b) for a, b in zip(back.images, sub.images))
    assert back.content_hash() == sub.content_hash()
    singles = make_clevr2d_singles(size=32)
    singles.write(tmp_path / "singles")
    back = load_folder(tmp_path / "singles", "clevr2d")
    np.testing.assert_array_equal(back.objects, singles.objects)
    assert all(np.array_equal(a, b) for a, b in zip(back.images, singles.images))


# -- text space -----------------------------------------------------------------------
def test_text_space_full():
    ds = make_text_space()
    assert len(ds) == 160_000 + 400 and ds.images is None
    assert ds.concept_names == ["adjective", "noun"] and ds.value_names == [ADJECTIVES, NOUNS]
    pairs, singles = ds.objects[:160_000], ds.objects[160_000:]
    assert (pairs >= 0).all() and (singles[:, 1] == -1).all() and (singles[:, 0] >= 0).all()
    ids = pairs[:, :, 0] * 20 + pairs[:, :, 1]
    assert len(np.unique(ids[:, 0] * 400 + ids[:, 1])) == 160_000
    assert len({tuple(o) for o in singles[:, 0]}) == 400
    assert ds.captions[1] == f"a {ADJECTIVES[0]} {NOUNS[0]} and a {ADJECTIVES[0]} {NOUNS[1]}"
    assert ds.captions[-1] == f"a {ADJECTIVES[-1]} {NOUNS[-1]}"
    assert (ds.n_objects_per_scene == np.r_[np.full(160_000, 2), np.full(400, 1)]).all()


def test_text_space_sample_and_small():
    a = make_text_space(n_scenes=10_000, seed=0)
    b = make_text_space(n_scenes=10_000, seed=0)
    c = make_text_space(n_scenes=10_000, seed=1)
    assert len(a) == 10_400

    def key(d):
        return [tuple(o.ravel()) for o in d.objects[:10_000]]

    assert len(set(key(a))) == 10_000 and key(a) == key(b) and key(a) != key(c)
    small = make_text_space(10, 10)
    assert len(small) == 10_100 and small.value_names == [ADJECTIVES[:10], NOUNS[:10]]
    assert len(make_text_space(10, 10, singles=False)) == 10_000
    with pytest.raises(ValueError, match="n_scenes"):
        make_text_space(2, 2, n_scenes=17)
    with pytest.raises(ValueError, match="n_adjectives"):
        make_text_space(21)


def test_text_words_single_clip_tokens():
    open_clip = pytest.importorskip("open_clip")
    tok = open_clip.get_tokenizer("ViT-B-32")
    assert len(ADJECTIVES) == len(NOUNS) == 20 and len(set(ADJECTIVES + NOUNS)) == 40
    ids = tok(ADJECTIVES + NOUNS).numpy()
    sot, eot = ids[0, 0], ids[0, 2]
    for word, row in zip(ADJECTIVES + NOUNS, ids):
        n = int((row != 0).sum())
        assert n == 3 and row[0] == sot and row[2] == eot, f"{word!r} is not one token: {row[:n]}"
    # in a caption each word is still its own single token
    cap = tok(["a red cat and a fuzzy clock"]).numpy()[0]
    assert int((cap != 0).sum()) == 2 + 7


# -- folder loaders -------------------------------------------------------------------
def _png(path: Path, color=(200, 10, 10), size=8) -> None:
    Image.fromarray(np.full((size, size, 3), color, dtype=np.uint8)).save(path)


@pytest.fixture
def clevr_folder(tmp_path) -> Path:
    ds = make_clevr2d(size=24).subset([0, 1, 2, 3])
    ds.write(tmp_path / "clevr")
    return tmp_path / "clevr"


def test_load_clevr_kinds(clevr_folder):
    ds = load_folder(clevr_folder, "clevr")
    assert ds.value_names[1] == ["cube", "cylinder", "sphere"] and ds.name == "clevr"
    np.testing.assert_array_equal(ds.objects, clevr_release_order()[:4])
    assert ds.captions[0] == "a purple cube and a gray sphere"  # names from the indices
    assert ds.images[1].shape == (24, 24, 3) and len(ds.images[1:3]) == 2
    ds2 = load_folder(clevr_folder, "clevr2d")
    assert ds2.captions[0] == "a purple square and a gray circle"


def test_load_release_labels_with_swapped_names(tmp_path):
    """The release's own labels.csv (3-D names, sphere/cylinder swapped) loads by index."""
    src = RELEASE / "clevr" / "labels.csv"
    if not src.exists():
        pytest.skip("release labels.csv not available")
    df = pd.read_csv(src).iloc[:5]
    df.to_csv(tmp_path / "labels.csv", index=False)
    for f in df["filename"]:
        _png(tmp_path / f)
    for kind in ("clevr", "clevr2d"):
        ds = load_folder(tmp_path, kind)
        np.testing.assert_array_equal(ds.objects, clevr_release_order()[:5])
    assert ds.captions[1] == "a brown triangle and a red square"


@pytest.mark.parametrize("kind", ["clevr", "clevr2d", "pug_spare"])
def test_missing_folder_and_labels(tmp_path, kind):
    with pytest.raises(FileNotFoundError, match="folder not found"):
        load_folder(tmp_path / "nope", kind)
    with pytest.raises(FileNotFoundError, match="labels.csv"):
        load_folder(tmp_path, kind)
    with pytest.raises(ValueError, match="kind"):
        load_folder(tmp_path, "imagenet")


def test_clevr_bad_inputs(clevr_folder):
    labels = clevr_folder / "labels.csv"
    good = pd.read_csv(labels, dtype=str, keep_default_na=False)

    (clevr_folder / "0000002.png").rename(clevr_folder / "moved.png")
    with pytest.raises(FileNotFoundError, match="0000002.png"):
        load_folder(clevr_folder, "clevr2d")
    (clevr_folder / "moved.png").rename(clevr_folder / "0000002.png")

    (clevr_folder / "0000003.png").write_bytes(b"not an image at all")
    with pytest.raises(ValueError, match="0000003.png is not a PNG or JPEG"):
        load_folder(clevr_folder, "clevr2d")
    _png(clevr_folder / "0000003.png")

    bad = good.copy()
    bad.loc[2, "object2_color_idx"] = "9"
    bad.to_csv(labels, index=False)
    with pytest.raises(ValueError, match=r"line 4 \(file '0000002.png'\), column 'object2_color_idx'.*'9'"):
        load_folder(clevr_folder, "clevr2d")
    bad = good.copy()
    bad.loc[1, "object1_shape_idx"] = "x"
    bad.to_csv(labels, index=False)
    with pytest.raises(ValueError, match=r"line 3 .*column 'object1_shape_idx'.*unknown label value 'x'"):
        load_folder(clevr_folder, "clevr2d")
    bad = good.copy()
    bad.loc[0, "object1_color"] = "magenta"
    bad.to_csv(labels, index=False)
    with pytest.raises(ValueError, match=r"line 2 .*column 'object1_color'.*'magenta'"):
        load_folder(clevr_folder, "clevr2d")

    good.rename(columns={"object1_color_idx": "object1_colour_idx"}).to_csv(labels, index=False)
    with pytest.raises(ValueError, match=r"missing column 'object1_color_idx'.*object1_colour_idx.*"
                                         r"columns \['filename', 'object1_color'"):
        load_folder(clevr_folder, "clevr2d")
    good.drop(columns=["object2_shape"]).to_csv(labels, index=False)
    with pytest.raises(ValueError, match="missing column 'object2_shape'"):
        load_folder(clevr_folder, "clevr")

    good.to_csv(labels, index=False)
    assert len(load_folder(clevr_folder, "clevr2d")) == 4


def _pug_folder(root: Path) -> tuple[Path, pd.DataFrame]:
    rows = [
        ("0000000.png", "Desert", "Crow", "Fox", "Red", "Blue", "", ""),
        ("0000001.png", "Desert", "Zebra", "Lion", "Gray", "Cyan", "", ""),
        ("0000002.png", "Arctic", "Wolf", "Fox", "Red", "Green", "", ""),
        ("0000003.png", "Desert", "Wolf", "Fox", "Red", "Green", "Left", "Right"),
        ("0000004.jpg", "Desert", "Elephant", "Crocodile", "Brown", "Purple", "", ""),
    ]
    df = pd.DataFrame(rows, columns=PUG_COLUMNS)
    root.mkdir()
    df.to_csv(root / "labels.csv", index=False)
    for i, f in enumerate(df["filename"]):
        if f.endswith(".jpg"):
            Image.fromarray(np.full((10, 12, 3), 90, dtype=np.uint8)).save(root / f, format="JPEG")
        else:
            _png(root / f, color=(i * 40, 0, 0))
    return root, df


def test_load_pug_world_filter(tmp_path):
    root, _ = _pug_folder(tmp_path / "pug")
    ds = load_folder(root, "pug_spare")
    assert ds.filenames == ["0000000.png", "0000001.png", "0000004.jpg"]
    assert ds.concept_names == ["species", "texture"] and ds.value_names == [PUG_SPECIES, PUG_TEXTURES]
    sp, tx = PUG_SPECIES.index, PUG_TEXTURES.index
    np.testing.assert_array_equal(ds.objects[1], [[sp("Zebra"), tx("Gray")], [sp("Lion"), tx("Cyan")]])
    assert ds.captions[0] == "a Red Crow and a Blue Fox"
    assert ds.images[0].shape == (8, 8, 3) and ds.images[2].shape == (10, 12, 3)
    assert tuple(ds.images[1][0, 0]) == (40, 0, 0)
    arctic = load_folder(root, "pug_spare", world="Arctic")
    assert arctic.filenames == ["0000002.png"] and arctic.info["world"] == "Arctic"
    with pytest.raises(ValueError, match="Moon.*worlds found: \\['Arctic', 'Desert'\\]"):
        load_folder(root, "pug_spare", world="Moon")


def test_pug_bad_inputs(tmp_path):
    root, df = _pug_folder(tmp_path / "pug")
    labels = root / "labels.csv"
    bad = df.copy()
    bad.loc[1, "character2_texture"] = "Orange"
    bad.to_csv(labels, index=False)
    where = r"line 3 \(file '0000001.png'\), column 'character2_texture'"
    with pytest.raises(ValueError, match=where + ".*unknown label value 'Orange'"):
        load_folder(root, "pug_spare")
    bad = df.copy()
    bad.loc[2, "character_name"] = "Penguin"  # another world's row is not read
    bad.to_csv(labels, index=False)
    assert len(load_folder(root, "pug_spare")) == 3
    df.rename(columns={"character_texture": "texture1"}).to_csv(labels, index=False)
    with pytest.raises(ValueError, match=r"missing column 'character_texture'.*texture1.*'character2_pos'\]"):
        load_folder(root, "pug_spare")
    df.to_csv(labels, index=False)
    (root / "0000001.png").unlink()
    with pytest.raises(FileNotFoundError, match="0000001.png"):
        load_folder(root, "pug_spare")
    (root / "0000001.png").write_text("filename,caption\n")
    with pytest.raises(ValueError, match="0000001.png is not a PNG or JPEG"):
        load_folder(root, "pug_spare")


def test_a_labels_file_naming_images_outside_its_folder_is_refused(clevr2d, tmp_path):
    """A labels.csv whose file names leave the dataset folder (``../x.png``, an absolute
    path) is refused naming the line, instead of reading files elsewhere."""
    sub = clevr2d.subset(np.arange(2))
    sub.write(tmp_path / "imgs")
    outside = tmp_path / "elsewhere.png"
    Image.new("RGB", (8, 8)).save(outside)
    labels = tmp_path / "imgs" / "labels.csv"
    for name in ("../elsewhere.png", str(outside)):
        df = pd.read_csv(labels, dtype=str, keep_default_na=False)
        df.loc[0, "filename"] = name
        df.to_csv(labels, index=False)
        with pytest.raises(ValueError, match="lies outside the dataset folder"):
            load_folder(tmp_path / "imgs", "clevr2d")
