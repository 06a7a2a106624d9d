"""The dataset format of the book (:class:`SceneDataset`, the release's ``labels.csv``) and
its install: written whole into a temporary folder on the target's filesystem, then swapped in
by one ``os.replace`` of the folder or, into an existing folder, of each file (``labels.csv``
out first and in last); after a kill the next install puts the old dataset back."""

from __future__ import annotations

import json
import logging
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
from bindcore.io import check_writable_folder, digest, file_mode, flock, signals_deferred

log = logging.getLogger(__name__)

# the hidden list of what SceneDataset.write wrote: files an overwrite may delete without asking
MANIFEST = ".bindcore-dataset.json"
DATASET_FILES = ("labels.csv", "metadata.json", "captions.csv", MANIFEST)
IMAGE_NAME = re.compile(r"^\d+\.png$")
# staging folders of installs: <out>/.bindcore-install-*, or <parent>/.<out name>.bindcore-install-*
STAGING = ".bindcore-install-"
OWNER = ".owner"  # in a staging folder: locked (flock) by the process whose install it is, while it runs


def caption(value_names: Sequence[Sequence[str]], objects: np.ndarray) -> str:
    """The paper's caption of ``objects`` ``[O_max, C]`` (-1 rows absent): "a red cube and a blue sphere"."""
    parts = []
    for obj in objects:
        if obj[0] < 0:
            continue
        parts.append("a " + " ".join(value_names[c][v] for c, v in enumerate(obj)))
    return " and ".join(parts)


# a rendered dataset's pixels may differ from those its recipe gave on another machine by this much: the
# mean of one colour channel of one image, in levels of 0-255 (between an Intel Xeon and an AMD EPYC,
# whose BLAS kernels round the shading's dot products differently, a few pixels differ by one level)
PIXEL_TOLERANCE = 0.05


class RenderMismatch(ValueError):
    """Rendered pixels that differ from those a stored record was computed from by more than
    :data:`PIXEL_TOLERANCE`: the renderer changed without a new version, or renders otherwise here."""


@dataclass
class SceneDataset:
    """N scenes: ``objects`` ``[N, O_max, C]`` (-1 absent; left to right), ``images`` (uint8
    ``[H, W, 3]``, or None for text), captions, file names, concept and value names, ``info``.

    ``recipe``: what rendered the images, as JSON (the renderer's name, version, size and
    supersampling; the generator, its parameters and seed; ``scenes``, each image's index among the
    generator's scenes), or None: then the pixels themselves identify the dataset."""

    name: str
    concept_names: list[str]
    value_names: list[list[str]]
    objects: np.ndarray
    captions: list[str]
    filenames: list[str]
    images: Sequence[np.ndarray] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    recipe: dict[str, Any] | None = None

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
        if self.recipe is not None and (self.images is None or len(self.recipe.get("scenes", ())) != n):
            raise ValueError(f"a recipe names the rendered image of each scene: {n} scenes, images "
                             f"{'none' if self.images is None else len(self.images)}, recipe scenes "
                             f"{len(self.recipe.get('scenes', ()))}")
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
        """``[N, O_max]`` object ids, -1 absent."""
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
            recipe=None if self.recipe is None else {**self.recipe,
                                                     "scenes": [self.recipe["scenes"][i] for i in np.arange(len(self))[idx].tolist()]},
        )

    # -- identity ----------------------------------------------------------------
    def content_hash(self) -> str:
        """The key of its embeddings: a hash of labels, captions and, for a rendered dataset, its
        ``recipe`` (the pixels differ in a few levels between CPU kinds: :meth:`check_pixels`), else
        the image pixels."""
        labels = [self.name, self.concept_names, self.value_names, self.captions]
        if self.recipe is not None:
            return digest(labels, self.objects, "rendered by", self.recipe)
        images = [] if self.images is None else [np.asarray(img, dtype=np.uint8) for img in self.images]
        return digest(labels, self.objects, *images)

    def pixel_means(self) -> np.ndarray | None:
        """``[N, 3]`` mean of each colour channel of each image (levels 0-255), or None without images."""
        if self.images is None:
            return None
        return np.array([np.asarray(img, dtype=np.float64).reshape(-1, 3).mean(0) for img in self.images])

    def check_pixels(self, means: Any, source: str = "a stored record") -> None:
        """:class:`RenderMismatch` unless each image's channel means are within :data:`PIXEL_TOLERANCE`
        of ``means`` ``[N, 3]``, those of the images ``source`` was computed from."""
        here, there = self.pixel_means(), np.asarray(means, dtype=np.float64)
        if here is None or there.shape != here.shape:
            raise RenderMismatch(f"{self.name}: {source} was computed from {there.shape[0]} images with channel "
                                 f"means of shape {there.shape}; here they are {None if here is None else here.shape}")
        diff = np.abs(here - there).max(1)
        worst = int(diff.argmax())
        if diff[worst] > PIXEL_TOLERANCE:
            version = (self.recipe or {}).get("renderer", {})
            raise RenderMismatch(
                f"{self.name}: the images rendered here differ from those {source} was computed from (image {worst}, "
                f"{self.filenames[worst]}: channel means {np.round(here[worst], 3).tolist()} here, "
                f"{np.round(there[worst], 3).tolist()} there; {int((diff > PIXEL_TOLERANCE).sum())} of {len(diff)} "
                f"images differ by more than {PIXEL_TOLERANCE} levels). Either the renderer changed: give it a new "
                f"version ({version.get('name', 'the renderer')} version {version.get('version')}, "
                "bindcore.data.clevr3d.RENDERER_VERSION) so that its datasets get new keys; or it renders otherwise on "
                "this machine: build without that record (bindcore book --recompute, which reads no published one)")

    # -- labels.csv ----------------------------------------------------------------
    def labels_frame(self):
        """The release's labels.csv: filename, ``object<i>_<concept>`` names, then ``..._idx``
        indices (empty for absent objects)."""
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

    def write(self, out: str | Path, images: bool = True, overwrite: bool = False, force: bool = False) -> Path:
        """Write labels, metadata, captions and PNGs into ``out``; a non-empty folder needs
        ``overwrite`` (other files stay), files bindcore did not write need ``force``. A
        failure or interrupt leaves the old dataset whole."""
        import pandas as pd
        from PIL import Image

        out = check_output_folder(out, overwrite, force)
        staging = _staging_folder(out)
        owner = flock(staging / OWNER, block=False)  # a second install into out is refused, and removes none of it
        new = staging / "new"
        try:
            try:
                new.mkdir()
                if images and self.images is not None:
                    for fname, img in zip(self.filenames, self.images):
                        Image.fromarray(np.asarray(img, dtype=np.uint8)).save(new / fname)
                self.labels_frame().to_csv(new / "labels.csv", index=False)
                (new / "metadata.json").write_text(json.dumps(self.metadata()) + "\n")
                pd.DataFrame({"filename": self.filenames, "caption": self.captions}).to_csv(new / "captions.csv",
                                                                                           index=False)
                written = sorted(p.name for p in new.iterdir())
                (new / MANIFEST).write_text(json.dumps({"written_by": "bindcore", "files": written + [MANIFEST]})
                                            + "\n")
            except (KeyboardInterrupt, SystemExit):
                log.warning("interrupted: %s is as it was; the partial new dataset is in %s (removed by the next "
                            "write into %s)", out, new, out)
                raise
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            _install(staging, out)
        finally:
            os.close(owner)
        return out


def owned_files(folder: str | Path) -> list[Path]:
    """The files an overwrite of ``folder`` replaces: :data:`DATASET_FILES`, those its
    ``labels.csv`` names, and PNGs named like ``0000000.png``."""
    folder = Path(folder)
    names = set(DATASET_FILES)
    try:
        import pandas as pd

        names |= set(pd.read_csv(folder / "labels.csv", dtype=str, usecols=["filename"])["filename"].dropna())
    except (OSError, ValueError, KeyError):
        pass  # no (readable) labels.csv: the writer's names alone
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and (p.name in names or IMAGE_NAME.match(p.name)))


def ours(folder: str | Path) -> set[str]:
    """The names in ``folder``'s :data:`MANIFEST`; empty if it has none or it is unreadable."""
    try:
        listed = json.loads((Path(folder) / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    return {str(n) for n in listed} if isinstance(listed, list) else set()


def foreign_files(folder: str | Path) -> list[Path]:
    """The files an overwrite of ``folder`` would delete that bindcore did not write there."""
    mine = ours(folder)
    return [p for p in owned_files(folder) if p.name not in mine]


def check_output_folder(out: str | Path, overwrite: bool = False, force: bool = False) -> Path:
    """``out`` once it is writable and empty (or ``overwrite``; foreign files need ``force``),
    after recovering a killed install; else ``FileExistsError`` (also while another install
    runs), ``NotADirectoryError`` or ``PermissionError``."""
    out = Path(out)
    check_writable_folder(out)  # out, or the folder that will hold it, can be written to
    running = [p for p in _staging_folders(out) if _running(p)]
    if running:
        raise FileExistsError(f"{out}: another install into it is running (its staging folder {running[0]}); "
                              "wait for it to finish, or stop it first")
    recover_install(out)
    if out.is_dir():
        entries = sorted(p.name for p in out.iterdir())
        if entries and not overwrite:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise FileExistsError(f"{out} is not empty ({len(entries)} entries: {shown}); overwrite (bindcore "
                                  f"data make --overwrite) replaces the dataset files in it")
        foreign = foreign_files(out) if overwrite else []
        if foreign:
            names = [p.name for p in foreign]
            shown = ", ".join(names[:5]) + (f", ... ({len(names) - 5} more)" if len(names) > 5 else "")
            if not force:
                raise FileExistsError(f"{out}: an overwrite would delete {len(names)} files that bindcore did not write "
                                      f"there ({shown}); add --force (force=True) to delete them")
            log.warning("%s: deleting %d files that bindcore did not write there: %s", out, len(names),
                        ", ".join(names))
    return out


def _staging_folders(out: Path) -> list[Path]:
    """Staging folders of installs into ``out`` (inside and beside it), by literal name prefix."""
    found = [p for p in out.iterdir() if p.name.startswith(STAGING)] if out.is_dir() else []
    if out.parent.is_dir():
        found += [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}{STAGING}")]
    return sorted(p for p in found if p.is_dir())


def _running(staging: Path) -> bool:
    """Whether the install that owns ``staging`` is still running (holds its lock)."""
    fd = flock(staging / OWNER, block=False)
    if fd is not None:
        os.close(fd)
    return fd is None


def _staging_folder(out: Path) -> Path:
    """A new staging folder inside ``out`` if it exists (a mount point cannot be renamed
    into), else beside it."""
    if out.is_dir():
        path = Path(tempfile.mkdtemp(dir=out, prefix=STAGING))
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}{STAGING}"))
    os.chmod(path, file_mode(directory=True))  # mkdtemp makes it private
    return path


def _labels_first(names: Sequence[str]) -> list[str]:
    return sorted(names, key=lambda n: (n != "labels.csv", n))


def _install(staging: Path, out: Path) -> None:
    """Swap the complete ``staging/new`` in for ``out``'s dataset files, signals deferred: the
    folder in one rename when ``out`` does not exist, else the old files out to ``staging/old``
    (labels.csv first) and the new ones in (labels.csv last). An error puts the old files back.
    The staging folder is removed (unless putting them back failed: then the next install does)."""
    new, old = staging / "new", staging / "old"
    with signals_deferred():  # a Ctrl-C or SIGTERM takes effect after the swap
        if not out.exists():
            os.rename(new, out)  # staging is beside out
        else:
            old.mkdir()  # the swap begins: a kill from here on is undone by recover_install
            try:
                for name in _labels_first([p.name for p in owned_files(out)]):
                    os.replace(out / name, old / name)
                for name in reversed(_labels_first(os.listdir(new))):
                    os.replace(new / name, out / name)
            except BaseException:
                _roll_back(staging, out)
                shutil.rmtree(staging, ignore_errors=True)
                raise
        shutil.rmtree(staging, ignore_errors=True)  # with the old dataset, once the new one is complete


def _roll_back(staging: Path, out: Path) -> None:
    """Undo an unfinished swap (new files back to ``staging/new``, old ones from ``staging/old`` to
    ``out``); safe to repeat. The new files are those its manifest lists, in ``new`` or already in ``out``."""
    new, old = staging / "new", staging / "old"
    for name in _labels_first(sorted(ours(new) or ours(out))):
        if not (new / name).exists() and (out / name).exists():
            os.replace(out / name, new / name)
    for name in reversed(_labels_first(os.listdir(old))):  # labels.csv last
        os.replace(old / name, out / name)


def interrupted_install(folder: str | Path) -> str:
    """An error message's "; an install into it was interrupted ..." if a staging folder is there, else ""."""
    folder = Path(folder)
    found = _staging_folders(folder)
    if not found:
        return ""
    return (f"; an install into {folder} was interrupted (its files are in {found[0].name}): "
            f"bindcore.data.core.recover_install({str(folder)!r}), or the next bindcore data make into it, puts the "
            "old dataset back")


def recover_install(out: str | Path) -> list[Path]:
    """Clean up after killed installs into ``out``: a swap cut short (``old/`` made, the new
    ``labels.csv`` not yet in) is undone; the staging folders removed, each logged."""
    out = Path(out)
    removed = []
    for staging in _staging_folders(out):
        if _running(staging):  # another process's install, not a killed one
            continue
        if (staging / "old").is_dir() and (staging / "new" / "labels.csv").exists():
            _roll_back(staging, out)
            log.warning("%s: an install into it was interrupted; its old dataset is put back", out)
        else:
            log.warning("%s: removed %s, left by an interrupted install", out, staging.name)
        shutil.rmtree(staging)
        removed.append(staging)
    return removed


def read_labels_table(path: str | Path, **read_csv: Any):
    """A labels file as a DataFrame; ``FileNotFoundError`` if missing, ``ValueError`` if empty,
    without rows or not CSV."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        hint = interrupted_install(path.parent) if path.name == "labels.csv" else ""
        raise FileNotFoundError(f"no labels file at {path}{hint}")
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
    """``(objects [N, O_max, C], filenames, concept names)`` of a release labels.csv, from the
    ``*_idx`` columns (its CLEVR names swap sphere and cylinder)."""
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
