"""The one dataset format shared by every dataset of the book (appendix C.1, C.3).

A :class:`SceneDataset` holds, for N scenes of up to O_max objects with C concepts:

* ``objects``: int array ``[N, O_max, C]`` of concept-value indices, ``-1`` for an
  absent object (scenes list their objects left to right / back to front);
* ``images``: a sequence of N RGB images (``uint8`` arrays ``[H, W, 3]``), or None for
  a text-only dataset;
* ``captions``: N strings in the paper's template ("a <v1> <v2> and a <v1> <v2>");
* ``filenames``: N file names (``0000000.png`` ...), the release's naming;
* ``concept_names`` / ``value_names``: e.g. ``["color", "shape"]`` and the names of
  each concept's values, in index order;
* ``info``: free-form provenance (generator, seed, image size, source folder).

``labels_frame`` / :func:`read_labels_csv` write and read the release's ``labels.csv``
layout (``filename, object1_color, object1_shape, ..., object1_color_idx, ...``).

:meth:`SceneDataset.write` never mixes two datasets and never leaves half of one: it
refuses a folder that is not empty unless told to ``overwrite`` (then it replaces the
files a dataset owns, :func:`owned_files`, and keeps any other file), checks that it can
write there before it starts (:func:`check_output_folder`), and writes into a
temporary folder beside the target that takes the target's place at the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bindcore.ids import object_ids
from bindcore.io import check_writable_folder, digest, file_mode

# the files SceneDataset.write writes besides the images (named like IMAGE_NAME)
DATASET_FILES = ("labels.csv", "metadata.json", "captions.csv")
IMAGE_NAME = re.compile(r"^\d+\.png$")


def caption(value_names: Sequence[Sequence[str]], objects: np.ndarray) -> str:
    """The paper's template for one scene: "a <v_1> <v_2> ... and a <v_1> <v_2> ...".

    ``objects`` ``[O_max, C]`` with -1 rows for absent objects; concepts in order
    (for colour x shape: "a red cube and a blue sphere")."""
    parts = []
    for obj in objects:
        if obj[0] < 0:
            continue
        parts.append("a " + " ".join(value_names[c][v] for c, v in enumerate(obj)))
    return " and ".join(parts)


@dataclass
class SceneDataset:
    name: str
    concept_names: list[str]
    value_names: list[list[str]]
    objects: np.ndarray
    captions: list[str]
    filenames: list[str]
    images: Sequence[np.ndarray] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.objects = np.asarray(self.objects, dtype=np.int64)
        if self.objects.ndim != 3:
            raise ValueError(f"objects must be [N, O_max, C], got shape {self.objects.shape}")
        n, _, c = self.objects.shape
        if c != len(self.concept_names) or c != len(self.value_names):
            raise ValueError(f"objects have {c} concepts but {len(self.concept_names)} concept names "
                             f"and {len(self.value_names)} value-name lists")
        for name, seq in (("captions", self.captions), ("filenames", self.filenames)):
            if len(seq) != n:
                raise ValueError(f"{name} has {len(seq)} entries for {n} scenes")
        if self.images is not None and len(self.images) != n:
            raise ValueError(f"images has {len(self.images)} entries for {n} scenes")
        for ci, names in enumerate(self.value_names):
            bad = self.objects[..., ci][self.objects[..., ci] >= len(names)]
            if bad.size:
                raise ValueError(f"concept {self.concept_names[ci]!r} has {len(names)} values; index {bad[0]} found")

    # -- sizes -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.objects)

    @property
    def max_objects(self) -> int:
        return self.objects.shape[1]

    @property
    def n_concepts(self) -> int:
        return self.objects.shape[2]

    @property
    def values_per_concept(self) -> list[int]:
        return [len(v) for v in self.value_names]

    @property
    def n_objects_per_scene(self) -> np.ndarray:
        return (self.objects[..., 0] >= 0).sum(1)

    def metadata(self) -> dict[str, Any]:
        """The release's metadata.json fields."""
        return {"num_objects": self.max_objects, "num_concepts": self.n_concepts,
                "values_per_concept": self.values_per_concept}

    def object_ids(self) -> np.ndarray:
        """``[N, O_max]`` object ids (:func:`bindcore.ids.object_ids`), -1 absent."""
        return object_ids(self.objects, self.values_per_concept)

    def subset(self, index: Sequence[int] | np.ndarray) -> SceneDataset:
        idx = np.asarray(index)
        return SceneDataset(
            name=self.name, concept_names=list(self.concept_names), value_names=[list(v) for v in self.value_names],
            objects=self.objects[idx], captions=[self.captions[i] for i in idx],
            filenames=[self.filenames[i] for i in idx],
            images=None if self.images is None else (
                self.images.take(idx.tolist()) if hasattr(self.images, "take") else [self.images[i] for i in idx]),
            info=dict(self.info),
        )

    # -- identity ----------------------------------------------------------------
    def content_hash(self) -> str:
        """Hash of labels, captions and image pixels: the key of its embeddings."""
        images = [] if self.images is None else [np.asarray(img, dtype=np.uint8) for img in self.images]
        return digest([self.name, self.concept_names, self.value_names, self.captions], self.objects, *images)

    # -- labels.csv ----------------------------------------------------------------
    def labels_frame(self):
        """The release's labels.csv layout: filename, then per object and concept the value
        name, then per object and concept the value index (empty for absent objects)."""
        import pandas as pd

        cols: dict[str, list[Any]] = {"filename": list(self.filenames)}
        for i in range(self.max_objects):
            for c, cname in enumerate(self.concept_names):
                cols[f"object{i + 1}_{cname}"] = [
                    self.value_names[c][v] if v >= 0 else "" for v in self.objects[:, i, c]]
        for i in range(self.max_objects):
            for c, cname in enumerate(self.concept_names):
                cols[f"object{i + 1}_{cname}_idx"] = [int(v) if v >= 0 else pd.NA for v in self.objects[:, i, c]]
        return pd.DataFrame(cols)

    def write(self, out: str | Path, images: bool = True, overwrite: bool = False) -> Path:
        """Write ``labels.csv``, ``metadata.json``, ``captions.csv`` and (for image
        datasets) the PNG files into the folder ``out``, created if missing. A folder that
        is not empty is refused unless ``overwrite``, which replaces the dataset files
        in it (:func:`owned_files`; other files stay). Everything is written into a
        temporary folder beside ``out`` first: a failure leaves ``out`` as it was."""
        import pandas as pd
        from PIL import Image

        out = check_output_folder(out, overwrite)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
        try:
            os.chmod(tmp, file_mode(directory=True))  # mkdtemp makes it private
            if images and self.images is not None:
                for fname, img in zip(self.filenames, self.images):
                    Image.fromarray(np.asarray(img, dtype=np.uint8)).save(tmp / fname)
            self.labels_frame().to_csv(tmp / "labels.csv", index=False)
            (tmp / "metadata.json").write_text(json.dumps(self.metadata()) + "\n")
            pd.DataFrame({"filename": self.filenames, "caption": self.captions}).to_csv(tmp / "captions.csv",
                                                                                       index=False)
            _install(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return out


def owned_files(folder: str | Path) -> list[Path]:
    """The files of a dataset in ``folder`` that :meth:`SceneDataset.write` wrote and an
    overwrite replaces: :data:`DATASET_FILES`, every file its ``labels.csv`` names, and
    PNG files named like the writer names them (``0000000.png`` ...)."""
    folder = Path(folder)
    names = set(DATASET_FILES)
    try:
        import pandas as pd

        names |= set(pd.read_csv(folder / "labels.csv", dtype=str, usecols=["filename"])["filename"].dropna())
    except (OSError, ValueError, KeyError):
        pass  # no (readable) labels.csv: the writer's names alone
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and (p.name in names or IMAGE_NAME.match(p.name)))


def check_output_folder(out: str | Path, overwrite: bool = False) -> Path:
    """Check, before any work, that a dataset can be written to the folder ``out``: it is
    missing or empty, or (``overwrite``) holds files; it is not a file; ``out`` (when it
    exists) and the folder that holds it can be written to. Raises
    ``FileExistsError``, ``NotADirectoryError`` or ``PermissionError`` naming the path."""
    out = Path(out)
    if out.is_dir():
        entries = sorted(p.name for p in out.iterdir())
        if entries and not overwrite:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise FileExistsError(f"{out} is not empty ({len(entries)} entries: {shown}); overwrite (bindcore "
                                  f"data make --overwrite) replaces the dataset files in it")
    check_writable_folder(out)  # its files can be replaced ...
    check_writable_folder(out.parent)  # ... and a folder can take its place
    return out


def _install(tmp: Path, out: Path) -> None:
    """Put the finished dataset folder ``tmp`` in the place of ``out``: the dataset files
    ``out`` holds are removed first; an empty (or missing) ``out`` is replaced in one
    rename, one that keeps other files gets the new files moved into it."""
    if out.is_dir():
        for f in owned_files(out):
            f.unlink()
    if not out.exists() or not any(out.iterdir()):
        os.replace(tmp, out)
        return
    for f in sorted(tmp.iterdir()):
        os.replace(f, out / f.name)
    tmp.rmdir()


def read_labels_table(path: str | Path, **read_csv: Any):
    """A labels file as a pandas DataFrame (``read_csv`` options passed on), or an error
    naming the file: ``FileNotFoundError`` when it is missing, ``ValueError`` when it is
    empty, holds a header and no rows, or is not CSV text."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no labels file at {path}")
    try:
        df = pd.read_csv(path, **read_csv)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty: a labels file has a header line and one line per scene") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a readable CSV file: {exc}") from None
    if len(df) == 0:
        raise ValueError(f"{path} has a header line but no scenes: a labels file has one line per scene")
    return df


def read_labels_csv(path: str | Path, concept_names: Sequence[str] | None = None):
    """Read a labels.csv in the release's layout -> (objects ``[N, O_max, C]``, filenames,
    concept names). Indices are taken from the ``*_idx`` columns (the release's names can
    be wrong: its CLEVR file swaps sphere and cylinder)."""
    import pandas as pd

    path = Path(path)
    df = read_labels_table(path)
    if "filename" not in df.columns:
        raise ValueError(f"{path}: no 'filename' column (columns: {list(df.columns)})")
    pattern = re.compile(r"^object(\d+)_(.+)_idx$")
    found: dict[int, list[str]] = {}
    for col in df.columns:
        m = pattern.match(col)
        if m:
            found.setdefault(int(m.group(1)), []).append(m.group(2))
    if not found:
        raise ValueError(f"{path}: no object<i>_<concept>_idx columns (columns: {list(df.columns)})")
    names = list(concept_names) if concept_names is not None else found[min(found)]
    o_max = max(found)
    objects = np.full((len(df), o_max, len(names)), -1, dtype=np.int64)
    for i in range(1, o_max + 1):
        for c, cname in enumerate(names):
            col = f"object{i}_{cname}_idx"
            if col not in df.columns:
                raise ValueError(f"{path}: missing column {col!r}")
            vals = pd.to_numeric(df[col], errors="coerce")
            objects[:, i - 1, c] = vals.fillna(-1).astype(np.int64).to_numpy()
    return objects, df["filename"].astype(str).tolist(), names
