"""A dual encoder whose scene tower reads pixels (appendix E): non-overlapping convolutions
(computed as products on unfolded patches) turn an image into patch tokens, a CLS token
and sinusoidal positions are added, the token encoders' transformer blocks run over
them, and the CLS output goes through a linear head. The query tower is the token
encoder of §5.2, unchanged."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .models import Block, Encoder, EncoderConfig, check_tower, sinusoidal_positions


@dataclass(frozen=True)
class PixelEncoderConfig:
    image_size: int = 32
    patch_size: int = 8
    stem_channels: int = 16
    stem_layers: int = 1
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    d_out: int = 64

    def __post_init__(self) -> None:
        check_tower(self, "image_size", "patch_size")
        if self.stem_layers < 0 or (self.stem_layers and self.stem_channels < 1):
            raise ValueError(f"stem_layers must be >= 0 and stem_channels >= 1, got {self.stem_layers}, "
                             f"{self.stem_channels}")
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size={self.image_size} must be divisible by patch_size={self.patch_size}")

    @property
    def n_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


class PixelEncoder(nn.Module):
    """Images ``[B, 3, H, W]`` in [0, 1] -> embeddings ``[B, d_out]`` (pooled at CLS)."""

    def __init__(self, cfg: PixelEncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        p = cfg.patch_size
        layers: list[nn.Module] = []
        width = 3 * p * p  # an unfolded RGB patch
        for _ in range(cfg.stem_layers):
            layers += [nn.Linear(width, cfg.stem_channels), nn.GELU()]
            width = cfg.stem_channels
        layers.append(nn.Linear(width, cfg.d_model))
        self.stem = nn.Sequential(*layers)
        self.cls = nn.Parameter(torch.zeros(1, 1, cfg.d_model))
        self.register_buffer("positions", sinusoidal_positions(cfg.n_patches + 1, cfg.d_model), persistent=False)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.head = nn.Linear(cfg.d_model, cfg.d_out)
        for name, param in self.named_parameters():
            if param.dim() > 1 and name != "cls":
                nn.init.xavier_uniform_(param)
        nn.init.normal_(self.cls, std=0.02)

    def tokens(self, images: torch.Tensor) -> torch.Tensor:
        """The CLS + patch token sequence ``[B, 1 + N, d_model]`` with positions."""
        if images.dim() != 4 or images.shape[1] != 3 or images.shape[2] != self.cfg.image_size \
                or images.shape[3] != self.cfg.image_size:
            raise ValueError(f"images must be [B, 3, {self.cfg.image_size}, {self.cfg.image_size}], "
                             f"got {tuple(images.shape)}")
        b, p, g = len(images), self.cfg.patch_size, self.cfg.image_size // self.cfg.patch_size
        patches = (2.0 * images - 1.0).reshape(b, 3, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(b, g * g, -1)
        x = self.stem(patches)  # [B, N, d]: row-major patches, each (channel, row, column) flattened
        x = torch.cat([self.cls.expand(len(x), -1, -1).to(x.dtype), x], dim=1)
        return x + self.positions.to(x.dtype)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.tokens(images)
        for block in self.blocks[:-1]:
            x = block(x, None, None)
        at = torch.zeros(len(x), dtype=torch.long, device=x.device)
        return self.head(self.blocks[-1].forward_at(x, None, at))


class PixelDualEncoder(nn.Module):
    """Pixel scene encoder f, token query encoder g, learnable log-scale tau: the same
    interface as :class:`bindcore.controlled.models.DualEncoder`."""

    def __init__(self, scene_cfg: PixelEncoderConfig, query_cfg: EncoderConfig, tau_init: float = 1.15) -> None:
        super().__init__()
        if scene_cfg.d_out != query_cfg.d_out:
            raise ValueError(f"scene and query towers need the same d_out, got {scene_cfg.d_out} and {query_cfg.d_out}")
        self.scene = PixelEncoder(scene_cfg)
        self.query = Encoder(query_cfg)
        self.tau = nn.Parameter(torch.tensor(float(tau_init)))

    def logit_scale(self, cap: float) -> torch.Tensor:
        return self.tau.exp().clamp(max=cap)

