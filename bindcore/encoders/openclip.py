"""open_clip backends: pretrained CLIP (a tag or a weights file) and the random-init control.
Features are the projected CLS / EOT features, not L2-normalised (as the release saves them)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from bindcore.io import sha256_file
from bindcore.paper import PAPER_CLIP_MODEL

from . import availability
from .availability import (
    EncoderUnavailable,
    hf_offline,
    hub_endpoint,
    major_minor,
    package_version,
    unavailable_message,
)
from .base import MODALITIES, Encoder

# The paper's CLIP (bindcore.paper.PAPER_CLIP_MODEL: the release's clip.load("ViT-B/32"))
DEFAULT_CLIP_ARCH, DEFAULT_CLIP_TAG = PAPER_CLIP_MODEL


def clip_model(architecture: str, pretrained: str | None) -> str:
    """The exact open_clip model and pretrained tag of a CLIP number, in words:
    ``open_clip ViT-B-32-quickgelu / openai``."""
    return f"open_clip {architecture} / {pretrained}"




def display_arch(arch: str) -> str:
    """open_clip name -> the usual display name: 'ViT-B-32-quickgelu' -> 'ViT-B/32'."""
    a = arch.removesuffix("-quickgelu")
    head, sep, tail = a.rpartition("-")
    if a.startswith("ViT-") and sep and tail.isdigit() and head.count("-") == 1:
        return f"{head}/{tail}"
    return a


def resolve_open_clip_arch(architecture: str, pretrained: str | None = None,
                           quick_gelu: bool | None = None) -> tuple[str, bool, bool]:
    """``(architecture, force_quick_gelu, quick_gelu)`` open_clip must build. A name with a
    ``-quickgelu`` twin (``ViT-B-32``) is ambiguous (the two run one checkpoint with other
    activations, so give other numbers) and refused unless ``quick_gelu`` says which; so is a
    variant whose activation differs from the one ``pretrained``'s weights were trained with.
    ``quick_gelu`` also sets the activation of a model without a twin (for a weights file)."""
    import open_clip
    from open_clip.factory import get_model_config

    arch = architecture.replace("/", "-")
    models = open_clip.list_models()
    if arch not in models:
        close = [m for m in models if m.lower().startswith(arch.lower()[:5])][:12]
        raise ValueError(f"architecture {architecture!r} is not an open_clip model config; "
                         f"similar: {close or models[:12]}")
    variant = f"{arch}-quickgelu"
    tag = pretrained if pretrained and not os.path.isfile(pretrained) else None
    tag_qg = open_clip.get_pretrained_cfg(arch, tag).get("quick_gelu") if tag else None
    if variant in models:
        if quick_gelu is None:
            said = f" (pretrained {tag!r} was trained with {'QuickGELU' if tag_qg else 'GELU'})" if tag else ""
            raise ValueError(
                f"architecture {architecture!r} is ambiguous: open_clip has {arch} (GELU) and {variant} (QuickGELU, "
                f"the activation of OpenAI's weights), which give other embeddings from one "
                f"checkpoint{said}; name {variant!r}, or pass quick_gelu=True or False")
        if quick_gelu:
            arch = variant
    cfg_qg = bool((get_model_config(arch) or {}).get("quick_gelu", False)) or arch.endswith("-quickgelu")
    if quick_gelu is False and cfg_qg:
        raise ValueError(f"architecture {arch!r} is the QuickGELU variant; quick_gelu=False contradicts it")
    want = quick_gelu if quick_gelu is not None else (bool(tag_qg) if tag else None)
    if tag and tag_qg is not None and bool(want or cfg_qg) != bool(tag_qg):
        raise ValueError(f"pretrained {tag!r} was trained with {'QuickGELU' if tag_qg else 'GELU'}; open_clip "
                         f"{arch} runs {'QuickGELU' if cfg_qg or want else 'GELU'}, which gives other embeddings: "
                         f"name {arch.removesuffix('-quickgelu') + ('-quickgelu' if tag_qg else '')!r}")
    if not want or cfg_qg:
        return arch, False, cfg_qg
    return arch, True, True


def _encode_text_trimmed(model: Any, tokens: Any) -> Any:
    """CLIP's text tower on tokens cut to the batch's longest caption, or None unless exact
    (a causal tower pooled at the end-of-text token never sees the padding)."""
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
    """An open_clip model; ``pretrained``: a tag (``"openai"``, ...) or a weights file (keyed by
    its sha256). ``normalize``: L2-normalise outputs; ``image_size``: override the input size."""

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
        src = self.pretrained or f"weights {Path(self.weights_file).name}"
        self.name = f"CLIP {display_arch(self.architecture)} ({clip_model(self.architecture, src)})"

    # identity
    def _identity_fields(self) -> dict[str, Any]:
        ident: dict[str, Any] = {
            "backend": self.backend,
            "architecture": self.architecture,
            "quick_gelu": self.quick_gelu,
            "image_size": self.image_size,
            "normalize": self.normalize,
            "versions": {"open_clip": package_version("open_clip_torch")},
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
                p = availability.hf_cached_file(repo, n, self.cache_dir)
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
        elif (probe or availability.hub_reachable)(self._download_url()):
            return
        else:
            reason = f"{urlparse(self._download_url()).hostname} is not reachable from here"
        raise EncoderUnavailable(unavailable_message(
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
                raise EncoderUnavailable(unavailable_message(
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
    """The random-init control with BOTH towers initialised from ``seed`` in a forked RNG (the
    release's left a ViT image tower pretrained: spec §11 item 5); build it with
    :func:`random_init_like` to match the pretrained model's architecture."""

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
            "versions": {"open_clip": package_version("open_clip_torch"), "torch": major_minor(package_version("torch"))},
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
    """The random-init control of ``encoder``: same resolved architecture, image size, normalisation."""
    return RandomInitClipEncoder(encoder.architecture, seed=seed, normalize=encoder.normalize,
                                 image_size=encoder.image_size, quick_gelu=encoder.quick_gelu,
                                 device=encoder._device_arg, precision=encoder.precision)
