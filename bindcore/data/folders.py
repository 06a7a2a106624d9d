"""Load the authors' image datasets (appendix C.1) from a folder of images and ``labels.csv``.

Images are read only when indexed, but every listed file is checked up front (exists, PIL
verifies it as PNG or JPEG) and errors name the labels file's line."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .core import SceneDataset, caption, interrupted_install, read_labels_csv, read_labels_table
from .vocab import CLEVR2D_SHAPES, CLEVR_COLORS, CLEVR_SHAPES, PUG_SPECIES, PUG_TEXTURES

log = logging.getLogger(__name__)

KINDS = ("clevr", "clevr2d", "pug_spare")
PUG_COLUMNS = ["filename", "world_name", "character_name", "character2_name", "character_texture",
               "character2_texture", "character_pos", "character2_pos"]
_INDEX = re.compile(r"^\d+(\.0*)?$")  # "3", or "3.0" as a float column writes it
_SIGNATURES = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG"}


class LazyImages(Sequence):
    """A sequence of image files, each opened on access as a uint8 RGB array ``[H, W, 3]``."""

    def __init__(self, paths: Sequence[str | Path]):
        self.paths = [Path(p) for p in paths]

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return LazyImages(self.paths[i])
        from PIL import Image

        with Image.open(self.paths[i]) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8)

    def take(self, index: Sequence[int]) -> LazyImages:
        """The images at ``index``, still lazy."""
        return LazyImages([self.paths[i] for i in index])

    def __repr__(self) -> str:
        return f"LazyImages({len(self)} files)"


def _image_kind(path: Path) -> str | None:
    with open(path, "rb") as fh:
        head = fh.read(8)
    for sig, name in _SIGNATURES.items():
        if head.startswith(sig):
            return name
    return None


def _image_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable PNG or JPEG image, or None."""
    kind = _image_kind(path)
    if kind is None:
        return "not a PNG or JPEG image (its first bytes are not an image signature)"
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.verify()
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError ... for broken files
        return f"a broken {kind} file ({type(exc).__name__}: {exc})"
    if kind == "JPEG":
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - 64))
            if b"\xff\xd9" not in fh.read():
                return "a truncated JPEG file (no end-of-image marker)"
    return None


def _check_images(folder: Path, labels: Path, df, rows: Sequence[int]) -> list[Path]:
    """The image files of the labels' ``rows``, each checked."""
    paths = []
    for r in rows:
        fname = df["filename"].iloc[r]
        p = folder / fname
        where = f"{labels}, line {r + 2}"
        if not p.resolve().is_relative_to(folder.resolve()):  # an absolute path, or ../ out of the dataset
            raise ValueError(f"image {fname!r} listed in {where} lies outside the dataset folder {folder}")
        if not p.is_file():
            raise FileNotFoundError(f"image {fname!r} listed in {where} not found: {p}")
        problem = _image_problem(p)
        if problem is not None:
            raise ValueError(f"{p} is {problem}; listed in {where}")
        paths.append(p)
    return paths


def _read_raw(labels: Path):
    # all columns as text, empty cells as "", so values are checked as written
    return read_labels_table(labels, dtype=str, keep_default_na=False)


def _where(labels: Path, df, row: int, col: str) -> str:
    return f"{labels}, line {row + 2} (file {df['filename'].iloc[row]!r}), column {col!r}"


def _load_clevr(folder: Path, labels: Path, kind: str) -> SceneDataset:
    concepts = ["color", "shape"]
    shapes = CLEVR2D_SHAPES if kind == "clevr2d" else CLEVR_SHAPES
    value_names = [list(CLEVR_COLORS), list(shapes)]
    df = _read_raw(labels)
    idx_cols = [m for m in (re.match(r"^object(\d+)_(.+)_idx$", c) for c in df.columns) if m]
    n_obj = max((int(m.group(1)) for m in idx_cols), default=2)
    expected = (["filename"] + [f"object{i}_{c}" for i in range(1, n_obj + 1) for c in concepts]
                + [f"object{i}_{c}_idx" for i in range(1, n_obj + 1) for c in concepts])
    _require_columns(labels, df, expected, kind)
    for i in range(1, n_obj + 1):
        present = None
        for c, cname in enumerate(concepts):
            col = f"object{i}_{cname}_idx"
            raw = df[col].str.strip()
            n_values = len(value_names[c])
            for r, v in enumerate(raw):
                if v == "" and i > 1:
                    continue
                if not (_INDEX.match(v) and int(float(v)) < n_values):
                    raise ValueError(f"{_where(labels, df, r, col)}: unknown label value {v!r} "
                                     f"(expected an index 0..{n_values - 1})")
            empty = (raw == "").to_numpy()
            if present is not None and not np.array_equal(empty, ~present):
                r = int(np.flatnonzero(empty == present)[0])
                raise ValueError(f"{_where(labels, df, r, col)}: object {i} has some concepts empty and "
                                 f"others set")
            present = ~empty
            name_col = f"object{i}_{cname}"
            # shape names: the 3-D or the 2-D word for each index (the release's CLEVR-2D
            # labels.csv carries the 3-D names); the index decides
            allowed = set(CLEVR_COLORS) if cname == "color" else set(CLEVR_SHAPES) | set(CLEVR2D_SHAPES)
            for r, v in enumerate(df[name_col].str.strip()):
                if (v == "" and not present[r]) or (v in allowed and present[r]):
                    continue
                raise ValueError(f"{_where(labels, df, r, name_col)}: unknown label value {v!r} "
                                 f"(expected one of {sorted(allowed)}"
                                 + (" or empty for an absent object)" if i > 1 else ")"))
    objects, filenames, _ = read_labels_csv(labels, concept_names=concepts)
    paths = _check_images(folder, labels, df, range(len(df)))
    return SceneDataset(
        name=kind, concept_names=concepts, value_names=value_names, objects=objects,
        captions=[caption(value_names, o) for o in objects], filenames=filenames, images=LazyImages(paths),
        info={"source": str(folder), "kind": kind},
    )


def _require_columns(labels: Path, df, expected: list[str], kind: str) -> None:
    """A ValueError naming the first missing column, the unexpected ones and the layout."""
    missing = [c for c in expected if c not in df.columns]
    if missing:
        extra = [c for c in df.columns if c not in expected]
        raise ValueError(f"{labels}: missing column {missing[0]!r}"
                         + (f" (unexpected columns: {extra})" if extra else "")
                         + f"; a {kind} labels.csv has the columns {expected}")


def _load_pug(folder: Path, labels: Path, world: str) -> SceneDataset:
    df = _read_raw(labels)
    _require_columns(labels, df, PUG_COLUMNS, "PUG:SPARE")
    keep = ((df["world_name"] == world) & (df["character_pos"].str.strip() == "")
            & (df["character2_pos"].str.strip() == ""))
    if not keep.any():
        worlds = sorted(set(df["world_name"]))
        raise ValueError(f"{labels}: no rows of world {world!r} with default positions "
                         f"(worlds found: {worlds})")
    rows = np.flatnonzero(keep.to_numpy())
    objects = np.empty((len(rows), 2, 2), dtype=np.int64)
    for slot, (species_col, texture_col) in enumerate((("character_name", "character_texture"),
                                                       ("character2_name", "character2_texture"))):
        for c, (col, names) in enumerate(((species_col, PUG_SPECIES), (texture_col, PUG_TEXTURES))):
            index = {n: j for j, n in enumerate(names)}
            for k, r in enumerate(rows):
                v = df[col].iloc[r].strip()
                if v not in index:
                    raise ValueError(f"{_where(labels, df, r, col)}: unknown label value {v!r} "
                                     f"(expected one of {names})")
                objects[k, slot, c] = index[v]
    filenames = df["filename"].iloc[rows].tolist()
    paths = _check_images(folder, labels, df, rows)
    caps = [" and ".join(f"a {PUG_TEXTURES[t]} {PUG_SPECIES[s]}" for s, t in o) for o in objects]
    return SceneDataset(
        name="pug_spare", concept_names=["species", "texture"],
        value_names=[list(PUG_SPECIES), list(PUG_TEXTURES)],
        objects=objects, captions=caps, filenames=filenames, images=LazyImages(paths),
        info={"source": str(folder), "kind": "pug_spare", "world": world},
    )


def load_folder(path: str | Path, kind: str, world: str = "Desert") -> SceneDataset:
    """A dataset from an image folder with its ``labels.csv``: ``kind`` "clevr", "clevr2d"
    (release layout; indices decide, names only checked) or "pug_spare" (rows of ``world``
    at default positions). ``FileNotFoundError`` or ``ValueError`` naming file and line."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"dataset folder not found: {folder}")
    labels = folder / "labels.csv"
    if not labels.is_file():
        raise FileNotFoundError(f"no labels.csv in {folder} (expected {labels}){interrupted_install(folder)}")
    if kind == "pug_spare":
        ds = _load_pug(folder, labels, world)
    else:
        ds = _load_clevr(folder, labels, kind)
    log.info("loaded %s: %d scenes from %s", kind, len(ds), folder)
    return ds
