"""The interface of every frozen embedding backend; a model is built only on the first
``embed_*`` call or ``load()``, never for its ``identity`` or stored embeddings."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bindcore.io import digest
from bindcore.runtime import progress_bar, resolve_device

from .availability import EncoderUnavailable

log = logging.getLogger(__name__)

MODALITIES = ("image", "text")
PRECISIONS = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class ModalityNotSupported(ValueError):
    """The encoder has no tower for this modality (e.g. images into a text-only encoder)."""


def _check_images(images: Sequence[Any]) -> list:
    """``images`` as a list, each a uint8 RGB array ``[H, W, 3]`` or a PIL image, else ``ValueError``."""
    from PIL import Image

    if isinstance(images, (str, bytes)) or (isinstance(images, np.ndarray) and images.ndim == 3):
        raise ValueError("images must be a sequence of images (uint8 arrays [H, W, 3] or PIL images), "
                         "not a single image or a string")
    images = list(images)
    for i, img in enumerate(images):
        if isinstance(img, Image.Image):
            continue
        a = np.asarray(img)
        if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
            raise ValueError(f"images[{i}]: expected a uint8 RGB array [H, W, 3] or a PIL image, "
                             f"got dtype {a.dtype} shape {a.shape}")
    return images


def _to_pil(img: Any):
    from PIL import Image

    if isinstance(img, Image.Image):
        return img if img.mode == "RGB" else img.convert("RGB")
    return Image.fromarray(np.ascontiguousarray(img, dtype=np.uint8))


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single string")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}]: expected a string, got {type(t).__name__}")
    return texts


class Encoder:
    """A frozen embedding model. Subclasses set ``modalities`` and implement ``_identity_fields``,
    ``_build`` (may raise :class:`EncoderUnavailable`), ``_check`` (fast, nothing built) and
    ``_embed_image_batch`` / ``_embed_text_batch``."""

    modalities: frozenset[str] = frozenset()
    name: str = "encoder"

    def __init__(self, device: str | None = None, precision: str = "fp32") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
        self.precision = precision
        self._device_arg = device
        self._loaded = False
        self._identity: dict[str, Any] | None = None

    # -- identity ------------------------------------------------------------------------
    @property
    def identity(self) -> dict[str, Any]:
        """JSON-able dict naming the encoder exactly (backend, architecture, weights, seed,
        precision, library versions): its embeddings' key."""
        if self._identity is None:
            self._identity = {**self._identity_fields(), "precision": self.precision}
        return dict(self._identity)

    def _identity_fields(self) -> dict[str, Any]:
        raise NotImplementedError

    def key(self) -> str:
        """sha256 of the identity JSON."""
        return digest(self.identity, length=None)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    # -- loading -------------------------------------------------------------------------
    @property
    def device(self):
        return resolve_device(self._device_arg)

    @property
    def loaded(self) -> bool:
        return self._loaded

    def check_available(self, probe: Callable[[str], bool] | None = None) -> None:
        """Raise :class:`EncoderUnavailable` (fast, nothing built) if this encoder cannot load
        here; ``probe(url) -> bool`` (default ``hub_reachable``) is asked only if weights are not local."""
        self._check(probe)

    def available(self, probe: Callable[[str], bool] | None = None) -> bool:
        try:
            self.check_available(probe)
        except EncoderUnavailable:
            return False
        return True

    def _check(self, probe: Callable[[str], bool] | None) -> None:
        pass

    def load(self) -> Encoder:
        """Build the model now (it is otherwise built on the first ``embed_*`` call)."""
        if not self._loaded:
            t0 = time.perf_counter()
            self._build()
            self._loaded = True
            log.info("loaded %s on %s in %.1f s", self.name, self.device, time.perf_counter() - t0)
        return self

    def _build(self) -> None:
        raise NotImplementedError

    def _torch_dtype(self):
        import torch

        return getattr(torch, PRECISIONS[self.precision])

    # -- embedding -----------------------------------------------------------------------
    def embed_images(self, images: Sequence[Any], batch_size: int = 64, progress: bool = True) -> np.ndarray:
        """float32 ``[N, d]`` of ``images`` (uint8 ``[H, W, 3]`` or PIL), the model's preprocessing."""
        self._require("image")
        items = _check_images(images)
        return self._run(items, batch_size, progress,
                         lambda batch: self._embed_image_batch([_to_pil(im) for im in batch]), "images")

    def embed_texts(self, texts: Sequence[str], batch_size: int = 256, progress: bool = True) -> np.ndarray:
        """float32 ``[N, d]`` of ``texts``, the model's own tokenizer."""
        self._require("text")
        return self._run(_check_texts(texts), batch_size, progress, self._embed_text_batch, "texts")

    def embed(self, items: Sequence[Any], modality: str, **kw: Any) -> np.ndarray:
        if modality not in MODALITIES:
            raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
        return self.embed_images(items, **kw) if modality == "image" else self.embed_texts(items, **kw)

    def _require(self, modality: str) -> None:
        if modality not in self.modalities:
            raise ModalityNotSupported(
                f"{self.name} has no {modality} encoder (it embeds: {', '.join(sorted(self.modalities))}); "
                f"use an encoder with a {modality} tower, e.g. "
                + ("RandomInitClipEncoder / OpenClipEncoder / DinoV2Encoder" if modality == "image"
                   else "SentenceTransformerEncoder / OpenClipEncoder"))

    def _run(self, items: list, batch_size: int, progress: bool, fn: Callable[[list], Any], what: str) -> np.ndarray:
        import torch

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.load()
        outs = []
        with torch.inference_mode():
            starts = range(0, len(items), batch_size)
            for s in progress_bar(starts, enabled=progress, desc=f"{self.name}: {what}", unit="batch", leave=False):
                out = fn(items[s:s + batch_size])
                outs.append(out.detach().float().cpu().numpy())
            if not outs:
                return np.zeros((0, self._output_dim()), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(outs), dtype=np.float32)

    def _embed_image_batch(self, images: list) -> Any:
        raise NotImplementedError

    def _embed_text_batch(self, texts: list[str]) -> Any:
        raise NotImplementedError

    def _output_dim(self) -> int:
        raise NotImplementedError
