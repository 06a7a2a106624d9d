"""Stored embeddings, a kind of the result store (:mod:`bindcore.store`): a dataset's image
or caption embeddings, keyed by the encoder's identity (backend, weights, precision,
library versions), the dataset's content (a rendered dataset's recipe, else its pixels) and the
modality; ``published/embeddings/`` is read after the local folder. Unreadable or non-finite
embeddings are computed again. The image embeddings of a rendered dataset keep the channel means of
the images they were computed from (``dataset.pixel_means``); read back, they are checked against
the images rendered here (:meth:`bindcore.data.core.SceneDataset.check_pixels`)."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bindcore.io import atomic_savez, config_hash
from bindcore.store import PUBLISHED_ROOT, CorruptRecord, Kind, ResultStore, default_root, read_record

from .availability import package_version
from .base import MODALITIES, Encoder

log = logging.getLogger(__name__)

EMBEDDINGS = Kind("embeddings", data=("embeddings.npz",))  # version 1 (see the module docstring)


def embedding_config(identity: dict[str, Any], dataset_hash: str, modality: str) -> dict[str, Any]:
    """The key of stored embeddings: encoder identity, dataset content hash, modality."""
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    return {"encoder": identity, "dataset": dataset_hash, "modality": modality}


def cache_key(identity: dict[str, Any], dataset_hash: str, modality: str) -> str:
    """The store key (folder name) of the embeddings of a dataset by an encoder."""
    return config_hash(embedding_config(identity, dataset_hash, modality))


class EmbeddingCache:
    """Stored embeddings in ``root`` (default ``<results root>/embeddings``), then in
    ``published`` (default the repository's ``published/``; None: none)."""

    def __init__(self, root: str | Path | None = None, published: str | Path | None = PUBLISHED_ROOT) -> None:
        self.root = Path(root) if root is not None else default_root() / EMBEDDINGS.name
        self._store = ResultStore(self.root.parent, published=published)
        self._kind = replace(EMBEDDINGS, name=self.root.name)

    def paths(self, key: str) -> tuple[Path, Path]:
        """(``embeddings.npz``, ``result.json``) of the entry ``key``."""
        return self.root / key / "embeddings.npz", self.root / key / "result.json"

    def load(self, config: dict[str, Any], rendered: Any = None) -> np.ndarray | None:
        """The stored embeddings of ``config``, or None (also when the file is missing, unreadable or
        holds NaN or infinite entries: reported, a local one moved aside). ``rendered``: the rendered
        dataset they embed, whose images are checked against those they were computed from
        (:class:`~bindcore.data.core.RenderMismatch`; a record without their channel means is unreadable)."""
        def check(folder: Path) -> None:
            _read(folder)
            if rendered is not None:
                _pixel_means(folder, len(rendered))

        entry = self._store.find(self._kind, config, check=check)
        if entry is None:
            return None
        if rendered is not None:
            where = "published" if entry.source == "published" else "stored"
            rendered.check_pixels(_pixel_means(entry.path, len(rendered)), f"the {where} embeddings {entry.path}")
        return _read(entry.path)

    def stored(self, config: dict[str, Any], n: int, what: str = "", rendered: Any = None) -> np.ndarray | None:
        """The stored ``[n, d]`` embeddings of ``config`` (``what``: encoder, dataset and modality, for the log),
        or None (a stored array of another shape is logged); ``rendered``: see :meth:`load`."""
        hit = self.load(config, rendered)
        if hit is not None and hit.ndim == 2 and hit.shape[0] == n:
            log.info("stored embeddings %s (%s)", config_hash(config), what)
            return hit
        if hit is not None:
            log.warning("stored embeddings %s have shape %s, not [%d, d]; recomputing", config_hash(config),
                        hit.shape, n)
        return None

    def claim(self, config: dict[str, Any]):
        """The store's claim on ``config`` (:meth:`~bindcore.store.ResultStore.claim`)."""
        return self._store.claim(self._kind, config)

    def save(self, config: dict[str, Any], array: np.ndarray, meta: dict[str, Any]) -> Path:
        entry = self._store.prepare(self._kind, config)
        npz = atomic_savez(entry.path / "embeddings.npz", embeddings=np.ascontiguousarray(array, dtype=np.float32))
        self._store.finish(entry, {**meta, "key": entry.path.name, "shape": list(array.shape), "dtype": "float32"})
        return npz


def _pixel_means(folder: Path, n: int) -> np.ndarray:
    """The ``[n, 3]`` channel means of the images the embeddings in ``folder`` were computed from
    (:class:`~bindcore.store.CorruptRecord` when the record has none of that shape)."""
    try:
        means = np.asarray(read_record(folder / "result.json")["dataset"]["pixel_means"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        means = None
    if means is None or means.shape != (n, 3) or not np.isfinite(means).all():
        raise CorruptRecord(folder / "result.json", f"no channel means of the {n} rendered images it embeds "
                            "(dataset.pixel_means), so its images cannot be checked")
    return means


def _read(folder: Path) -> np.ndarray:
    """The array of ``folder``'s ``embeddings.npz`` (:class:`~bindcore.store.CorruptRecord` without it)."""
    with np.load(folder / "embeddings.npz", allow_pickle=False) as z:
        if "embeddings" not in z.files:
            raise CorruptRecord(folder / "embeddings.npz", f"no 'embeddings' array (it holds {z.files})")
        return np.asarray(z["embeddings"], dtype=np.float32)


def embed_dataset(encoder: Encoder, dataset, modality: str, cache: EmbeddingCache | None | bool = None,
                  batch_size: int | None = None, progress: bool = True) -> np.ndarray:
    """float32 ``[N, d]`` embeddings of ``dataset``'s images (``modality="image"``) or captions
    (``"text"``), from ``cache`` when stored (one file read; the model is not built), else
    computed, stored atomically and returned. ``cache=None``: the default store; ``False``: none."""
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    encoder._require(modality)
    if modality == "image" and dataset.images is None:
        raise ValueError(f"dataset {dataset.name!r} has no images (a text-only dataset); use modality='text'")
    items = dataset.images if modality == "image" else dataset.captions
    if cache is None or cache is True:
        cache = EmbeddingCache()
    if not cache:
        return _embed(encoder, items, modality, progress, batch_size)
    dhash = dataset.content_hash()
    config = embedding_config(encoder.identity, dhash, modality)
    what = f"{encoder.name}, {dataset.name}, {modality}"
    rendered = dataset if modality == "image" and getattr(dataset, "recipe", None) is not None else None
    hit = cache.stored(config, len(dataset), what, rendered)
    if hit is not None:
        return hit
    with cache.claim(config):
        hit = cache.stored(config, len(dataset), what, rendered)  # computed by the process this one waited for
        if hit is not None:
            return hit
        t0 = time.perf_counter()
        emb = _embed(encoder, items, modality, progress, batch_size)
        seconds = time.perf_counter() - t0
        if not np.isfinite(emb).all():
            log.warning("%s gave %d NaN or infinite entries for %s (%s): not stored", encoder.name,
                        int((~np.isfinite(emb)).sum()), dataset.name, modality)
            return emb
        import torch

        described = {"name": dataset.name, "content_hash": dhash, "n": len(dataset)}
        if rendered is not None:
            described["pixel_means"] = pixel_means_record(rendered)
        cache.save(config, emb, {
            "identity": encoder.identity, "encoder_name": encoder.name, "modality": modality,
            "dataset": described,
            "device": str(encoder.device), "torch": package_version("torch"), "seconds": round(seconds, 3),
            "gpu": torch.cuda.get_device_name(0) if encoder.device.type == "cuda" else None,
        })
    return emb


def pixel_means_record(dataset: Any) -> list[list[float]]:
    """A rendered dataset's channel means per image, as stored beside its image embeddings (3 decimals)."""
    return np.round(dataset.pixel_means(), 3).tolist()


def _embed(encoder: Encoder, items: list, modality: str, progress: bool, batch_size: int | None) -> np.ndarray:
    kw = {} if batch_size is None else {"batch_size": batch_size}
    return encoder.embed(list(items), modality, progress=progress, **kw)
