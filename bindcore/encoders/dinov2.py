"""DINOv2 backend (transformers): image only; the feature is ``pooler_output``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from bindcore.io import sha256_file

from . import availability
from .availability import EncoderUnavailable, hf_offline, hub_endpoint, package_version, unavailable_message
from .base import Encoder

DINOV2_ALIASES = {
    "vits14": "facebook/dinov2-small",
    "vitb14": "facebook/dinov2-base",
    "vitl14": "facebook/dinov2-large",
    "vitg14": "facebook/dinov2-giant",
}


class DinoV2Encoder(Encoder):
    """DINOv2 image encoder: ``facebook/dinov2-*``, an alias ``vits14`` ... ``vitg14`` or a local
    folder; the feature is ``pooler_output`` (final-LayerNorm CLS token)."""

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
        ident["versions"] = {"transformers": package_version("transformers")}
        return ident

    def _cached(self) -> bool:
        if self.local_dir:
            return True

        def have(f: str) -> bool:
            return availability.hf_cached_file(self.repo, f, self.cache_dir) is not None

        return have("config.json") and have("preprocessor_config.json") and (
            have("model.safetensors") or have("pytorch_model.bin"))

    def _check(self, probe: Callable[[str], bool] | None) -> None:
        if self._cached():
            return
        if hf_offline():
            reason = "HF_HUB_OFFLINE=1 forbids downloading them"
        elif (probe or availability.hub_reachable)(hub_endpoint()):
            return
        else:
            reason = f"{urlparse(hub_endpoint()).hostname} is not reachable from here"
        raise EncoderUnavailable(unavailable_message(
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
            raise EncoderUnavailable(unavailable_message(
                f"DINOv2 weights {src!r}", "could not be loaded", f"loading failed ({e})",
                "DinoV2Encoder('/path/to/model-folder')")) from e
        self.model = model.eval().requires_grad_(False).to(self.device, dtype=self._torch_dtype())

    def _embed_image_batch(self, images: list) -> Any:
        x = self.processor(images=images, return_tensors="pt")["pixel_values"]
        return self.model(pixel_values=x.to(self.device, dtype=self._torch_dtype())).pooler_output

    def _output_dim(self) -> int:
        return int(self.model.config.hidden_size)
