"""Frozen embedding backends (CLIP, its random-init control, MiniLM, DINOv2) and their stored
embeddings (§4, §5.1). Embeddings are the models' raw outputs (not L2-normalised); missing
weights raise :class:`EncoderUnavailable` after one 0.5 s probe instead of minutes of retries."""

from bindcore.io import sha256_file

from .availability import EncoderUnavailable, hf_offline, host_reachable, hub_endpoint, hub_reachable
from .base import MODALITIES, PRECISIONS, Encoder, ModalityNotSupported
from .cache import EMBEDDINGS, EmbeddingCache, cache_key, embed_dataset, embedding_config
from .choice import DefaultEncoders, EncoderStatus, available_encoders, default_encoders, make_encoder
from .dinov2 import DINOV2_ALIASES, DinoV2Encoder
from .minilm import MINILM_PACKAGE, SentenceTransformerEncoder
from .openclip import (
    DEFAULT_CLIP_ARCH,
    DEFAULT_CLIP_TAG,
    OpenClipEncoder,
    RandomInitClipEncoder,
    clip_model,
    display_arch,
    random_init_like,
    resolve_open_clip_arch,
)

__all__ = [
    "DEFAULT_CLIP_ARCH", "DEFAULT_CLIP_TAG", "DINOV2_ALIASES", "EMBEDDINGS", "MINILM_PACKAGE", "MODALITIES",
    "PRECISIONS", "DefaultEncoders", "DinoV2Encoder", "EmbeddingCache", "Encoder", "EncoderStatus",
    "EncoderUnavailable", "ModalityNotSupported", "OpenClipEncoder", "RandomInitClipEncoder",
    "SentenceTransformerEncoder", "available_encoders", "cache_key", "clip_model", "default_encoders", "display_arch",
    "embed_dataset", "embedding_config", "hf_offline", "host_reachable", "hub_endpoint", "hub_reachable",
    "make_encoder", "random_init_like", "resolve_open_clip_arch", "sha256_file",
]
