"""The controlled dual encoder (appendix B.2).

Two independent encoders with the same architecture, one for scenes and one for
queries: token embedding + fixed sinusoidal positions, a stack of pre-LayerNorm
transformer layers (multi-head self-attention with PAD keys masked, GELU feed-forward),
the output at the EOS position (the last non-PAD token), and a linear head to d_out.

The forward pass computes exactly what a stack of ``torch.nn.TransformerEncoderLayer``
(``norm_first=True``) followed by EOS pooling computes, with three shortcuts that do
not change the result:

* trailing PAD columns that no sequence in the batch uses are dropped (queries are
  short: a concept query has two tokens, an object query C+3, the scene L_max);
* the feed-forward block runs only on non-PAD tokens (a PAD position is never a key
  and never pooled, so its value is irrelevant);
* the last layer runs attention and feed-forward only for the EOS query position,
  the only position the pooling reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class EncoderConfig:
    vocab_size: int
    max_len: int
    pad_id: int
    d_model: int = 256
    n_heads: int = 4
    n_layers: int = 6
    d_ff: int = 2048
    d_out: int = 64

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "n_layers", "d_ff", "d_out"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")


def sinusoidal_positions(max_len: int, d_model: int) -> torch.Tensor:
    """Standard fixed positional encoding: sin on even, cos on odd dimensions, base 10000."""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: d_model // 2])
    return pe


class Block(nn.Module):
    """Pre-LN transformer layer: x + MHA(LN(x)); x + FFN(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, d_ff)
        self.ff2 = nn.Linear(d_ff, d_model)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, l, d = t.shape
        return t.view(b, l, self.n_heads, d // self.n_heads).transpose(1, 2)

    def _ffn(self, x: torch.Tensor) -> torch.Tensor:
        return self.ff2(F.gelu(self.ff1(self.ln2(x))))

    def forward(self, x: torch.Tensor, attend: torch.Tensor, tokens_idx: torch.Tensor | None) -> torch.Tensor:
        """x ``[B, L, D]``; attend bool ``[B, 1, 1, L]`` (True = key may be attended);
        tokens_idx: flat indices of non-PAD positions (None = all)."""
        b, l, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        a = F.scaled_dot_product_attention(self._heads(q), self._heads(k), self._heads(v), attn_mask=attend)
        x = x + self.proj(a.transpose(1, 2).reshape(b, l, d))
        if tokens_idx is None:
            return x + self._ffn(x)
        flat = x.reshape(b * l, d)
        upd = self._ffn(flat.index_select(0, tokens_idx))
        return flat.index_add(0, tokens_idx, upd.to(flat.dtype)).view(b, l, d)

    def forward_at(self, x: torch.Tensor, attend: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        """The layer's output at one position per sequence (``at`` ``[B]``) -> ``[B, D]``."""
        b, l, d = x.shape
        h = self.ln1(x)
        rows = torch.arange(b, device=x.device)
        w_q, w_kv = self.qkv.weight.split([d, 2 * d])
        b_q, b_kv = self.qkv.bias.split([d, 2 * d])
        q = F.linear(h[rows, at], w_q, b_q)[:, None, :]  # [B, 1, D]
        k, v = F.linear(h, w_kv, b_kv).split(d, dim=-1)
        a = F.scaled_dot_product_attention(self._heads(q), self._heads(k), self._heads(v), attn_mask=attend)
        y = x[rows, at] + self.proj(a.transpose(1, 2).reshape(b, d))
        return y + self._ffn(y)


class Encoder(nn.Module):
    """Token sequence ``[B, L]`` -> embedding ``[B, d_out]`` (pooled at EOS)."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.register_buffer("positions", sinusoidal_positions(cfg.max_len, cfg.d_model), persistent=False)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, cfg.d_ff) for _ in range(cfg.n_layers))
        self.head = nn.Linear(cfg.d_model, cfg.d_out)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 2:
            raise ValueError(f"tokens must be [B, L], got {tuple(tokens.shape)}")
        keep = tokens != self.cfg.pad_id
        lengths = keep.sum(1)
        if bool((lengths == 0).any()):
            raise ValueError("a sequence consists only of PAD tokens")
        width = int(lengths.max())
        if width > self.cfg.max_len:
            raise ValueError(f"sequence length {width} exceeds max_len={self.cfg.max_len}")
        tokens, keep = tokens[:, :width], keep[:, :width]
        x = self.embed(tokens) + self.positions[:width]
        attend = keep[:, None, None, :]
        flat_keep = keep.reshape(-1)
        idx = None if bool(flat_keep.all()) else flat_keep.nonzero().squeeze(1)
        for block in self.blocks[:-1]:
            x = block(x, attend, idx)
        pooled = self.blocks[-1].forward_at(x, attend, lengths - 1)
        return self.head(pooled)


class DualEncoder(nn.Module):
    """Scene encoder f, query encoder g, and the learnable log-scale tau."""

    def __init__(self, cfg: EncoderConfig, tau_init: float = 1.15) -> None:
        super().__init__()
        self.scene = Encoder(cfg)
        self.query = Encoder(cfg)
        self.tau = nn.Parameter(torch.tensor(float(tau_init)))

    def logit_scale(self, cap: float) -> torch.Tensor:
        return self.tau.exp().clamp(max=cap)


def cosine_logits(z: torch.Tensor, e: torch.Tensor, scale: torch.Tensor | float) -> torch.Tensor:
    """scale * cos(z_s, e_q) for every pair -> ``[S, Q]``."""
    zn = z / (z.norm(dim=-1, keepdim=True) + 1e-6)
    en = e / (e.norm(dim=-1, keepdim=True) + 1e-6)
    return scale * zn @ en.T


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
