"""Dual encoders that see scenes as pixels (appendix E): :class:`PixelTrainConfig`, a
:class:`~bindcore.controlled.training.TrainConfig` whose scene tower reads images
rendered on the fly from the very scene tensors the token model reads; sampling, split,
objective, metrics, checkpoints and store are the token runs'. Training images get a
fresh layout and noise every step (seeded per step, so a resumed run is exact);
evaluation images are fixed. Records go to ``train-pixels-1``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from bindcore.data.pixels import LEVELS, PixelSpec, render_scenes
from bindcore.store import Kind

from .pixel_models import PixelDualEncoder, PixelEncoderConfig
from .training import TrainConfig

# Pixel training runs in the result store: bump the version when their results change
PIXEL_STORE_KIND = Kind("train-pixels-1", required=("hash", "config", "metrics"), weights=("model.pt",))


@dataclass(frozen=True)
class PixelTrainConfig(TrainConfig):
    """A training run whose scene tower reads rendered images. Image sizes in pixels."""

    scene_input: str = "pixels"
    level: str = "clean"  # clean | speckle | overlap (speckle noise + overlapping squares)
    image_size: int = 32
    side: int = 10  # side of a square (largest side when C = 3)
    border: int = 2  # border width
    min_side: int = 6  # smallest side (C = 3: concept 2 is the side)
    speckle: float = 0.2  # probability that a pixel becomes a random colour (speckle, overlap)
    pixel_noise: float = 0.0  # std of extra Gaussian pixel noise (speckle, overlap)
    patch_size: int = 8
    stem_channels: int = 16
    stem_layers: int = 1
    scene_layers: int = 2  # transformer layers of the pixel tower (the query tower has n_layers)

    store_kind: ClassVar[Kind] = PIXEL_STORE_KIND

    def __post_init__(self) -> None:
        super().__post_init__()  # every field typed (pixel fields too), the token fields checked
        validate_pixels(self)

    # -- the pixel scene tower --------------------------------------------------------
    def pixel_spec(self) -> PixelSpec:
        return PixelSpec(image_size=self.image_size, side=self.side, border=self.border, min_side=self.min_side,
                         level=self.level, speckle=self.speckle, noise=self.pixel_noise)

    def scene_encoder_config(self) -> PixelEncoderConfig:
        return PixelEncoderConfig(image_size=self.image_size, patch_size=self.patch_size,
                                  stem_channels=self.stem_channels, stem_layers=self.stem_layers,
                                  d_model=self.d_model, n_heads=self.n_heads, n_layers=self.scene_layers,
                                  d_ff=self.d_ff, d_out=self.d_out)

    def make_model(self) -> torch.nn.Module:
        return PixelDualEncoder(self.scene_encoder_config(), self.encoder_config(), tau_init=self.tau_init)

    def render(self, scenes: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return render_scenes(self.space, scenes, self.pixel_spec(), gen)

    def embed_training_scenes(self, model: torch.nn.Module, scenes: torch.Tensor,
                              gen: torch.Generator) -> torch.Tensor:
        return model.scene(self.render(scenes, gen))

    def eval_generator(self, device: torch.device | str, seed: int = 0) -> torch.Generator:
        """The generator that renders evaluation scenes: fixed per (run seed, ``seed``)."""
        return torch.Generator(device=device).manual_seed(20_011 + 7_919 * self.seed + 1_000_003 * seed)

    @torch.no_grad()
    def embed_eval_scenes(self, model: torch.nn.Module, scenes: torch.Tensor, seed: int = 0,
                          chunk: int = 2048) -> torch.Tensor:
        """Embeddings of one seeded rendering (``seed``) of each scene; the same images at
        every call."""
        gen = self.eval_generator(scenes.device, seed)
        out = [model.scene(self.render(scenes[i:i + chunk], gen)).float() for i in range(0, len(scenes), chunk)]
        if not out:
            return torch.empty(0, self.d_out, device=scenes.device)
        return torch.cat(out)

    def short_name(self) -> str:
        return f"pixels, {self.level}, C={self.n_concepts} V={self.n_values} coverage={self.coverage:g}"


def validate_pixels(cfg: PixelTrainConfig) -> None:
    """Fail before any work with a message that names the field."""

    def need(ok: bool, name: str, rule: str) -> None:
        if not ok:
            raise ValueError(f"PixelTrainConfig.{name} = {getattr(cfg, name)!r}: {rule}")

    need(cfg.scene_input == "pixels", "scene_input", "must be 'pixels' (token scenes: TrainConfig)")
    need(cfg.level in LEVELS, "level", f"must be one of {LEVELS}")
    need(cfg.n_concepts in (2, 3), "n_concepts", "pixel scenes have 2 concepts (fill, border colour) or 3 (and side)")
    need(cfg.pixel_noise >= 0, "pixel_noise", "must be >= 0")
    need(cfg.patch_size >= 1, "patch_size", "must be >= 1")
    need(cfg.image_size % cfg.patch_size == 0, "patch_size", f"must divide image_size = {cfg.image_size}")
    need(cfg.stem_layers >= 0, "stem_layers", "must be >= 0")
    need(cfg.stem_layers == 0 or cfg.stem_channels >= 1, "stem_channels", "must be >= 1")
    need(cfg.scene_layers >= 1, "scene_layers", "must be >= 1")
    try:
        cfg.pixel_spec().check(cfg.space)
    except ValueError as exc:  # PixelSpec's fields carry the config's names
        raise ValueError(str(exc).replace("PixelSpec.", "PixelTrainConfig.")) from None


# ---------------------------------------------------------------------------------
# the appendix-E sweep
# ---------------------------------------------------------------------------------
def level_configs(base: PixelTrainConfig, params: dict[str, Any]) -> list[PixelTrainConfig]:
    """Every visual level x coverage x seed of a chapter's parameters."""
    return [base.with_(level=lv, coverage=cov, seed=s)
            for lv in params["levels"] for cov in params["coverages"] for s in params["seeds"]]


def generalizing_pixel_runs(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per visual level, the run at the largest coverage (first seed)."""
    best: dict[str, dict[str, Any]] = {}
    for r in records:
        c = r["config"]
        cur = best.get(c["level"])
        if cur is None or (c["coverage"], -c["seed"]) > (cur["config"]["coverage"], -cur["config"]["seed"]):
            best[c["level"]] = r
    return [best[lv] for lv in LEVELS if lv in best]
