"""Which encoders run here: encoders from spec strings, what is available without building a
model, and a chapter's default pair."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from . import availability
from .availability import EncoderUnavailable
from .base import Encoder
from .dinov2 import DinoV2Encoder
from .minilm import SentenceTransformerEncoder
from .openclip import (
    DEFAULT_CLIP_ARCH,
    DEFAULT_CLIP_TAG,
    OpenClipEncoder,
    RandomInitClipEncoder,
    random_init_like,
)


def make_encoder(spec: str, **kw: Any) -> Encoder:
    """An encoder from ``clip:ViT-B-32-quickgelu:openai`` (or ``:/path/weights``), ``random-init:ARCH[:seed]``,
    ``minilm``, ``sentence-transformers:/path`` or ``dinov2[:facebook/dinov2-base]``. An open_clip name
    with a ``-quickgelu`` twin (``ViT-B-32``) is refused as ambiguous unless ``quick_gelu`` is passed."""
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
    """Which backends can run here, without building a model and with at most one probe per host."""
    specs = list(specs or [f"clip:{DEFAULT_CLIP_ARCH}:{DEFAULT_CLIP_TAG}", f"random-init:{DEFAULT_CLIP_ARCH}",
                           "minilm", "dinov2:facebook/dinov2-base"])
    answers: dict[str, bool] = {}

    def probe(url: str) -> bool:  # one probe per host
        host = urlparse(url).hostname or ""
        if host not in answers:
            answers[host] = availability.hub_reachable(url)
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
    """Pretrained CLIP for both modalities where its weights are cached or reachable, else the
    random-init control for images and all-MiniLM-L6-v2 for texts; decided in under a second."""
    clip = OpenClipEncoder(architecture, pretrained, **kw)
    try:
        clip.check_available()
    except EncoderUnavailable as e:
        rnd = random_init_like(clip, seed=seed)
        text = SentenceTransformerEncoder(device=kw.get("device"))
        note = (f"Pretrained {clip.name} weights are not available here, so image embeddings come from "
                f"{rnd.name}: the same architecture with both towers freshly initialised (seed {seed}), a "
                f"random-weights control, not CLIP. Text embeddings come from the pretrained {text.name} "
                f"sentence encoder. CLIP's own figures come from a run where the Hugging Face Hub is "
                f"reachable (e.g. Colab).")
        return DefaultEncoders(image=rnd, text=text, pretrained_clip=False, note=note, extra={"reason": str(e)})
    return DefaultEncoders(image=clip, text=clip, pretrained_clip=True,
                           note=f"Image and text embeddings from pretrained {clip.name}.")
