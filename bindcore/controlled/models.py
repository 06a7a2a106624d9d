"""The controlled dual encoder (appendix B.2): pre-LN transformer scene and query encoders pooled at EOS.
Equal to :mod:`bindcore.controlled.reference` up to float rounding; packed without PAD on a CPU
(:func:`packed_encode`), padded with fused attention on a GPU."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
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
        check_tower(self)


def check_tower(cfg, *more: str) -> None:
    """``ValueError`` unless a tower config's sizes (and its fields ``more``) are >= 1 and d_model
    is divisible by n_heads (an :class:`EncoderConfig`, or one with the same size fields)."""
    for name in (*more, "d_model", "n_heads", "n_layers", "d_ff", "d_out"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(cfg, name)}")
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model={cfg.d_model} must be divisible by n_heads={cfg.n_heads}")


def sinusoidal_positions(max_len: int, d_model: int) -> torch.Tensor:
    """Standard fixed positional encoding: sin on even, cos on odd dimensions, base 10000."""
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: d_model // 2])
    return pe


@functools.cache
def _onednn_linear_works() -> bool:
    """Whether to use oneDNN's fp32 inner product (``torch.ops.mkldnn._linear_pointwise``): on an
    AVX-512 CPU (about twice F.linear's throughput there), where this torch build has it and it
    agrees with F.linear on a small case."""
    if torch.backends.cpu.get_cpu_capability() != "AVX512":
        return False
    try:
        op = torch.ops.mkldnn._linear_pointwise
        gen = torch.Generator().manual_seed(0)
        x, w, b, v = (torch.randn(*shape, generator=gen) for shape in ((7, 5), (3, 5), (3,), (5, 3)))
        with torch.autocast("cpu", enabled=False), torch.no_grad():
            return bool(torch.allclose(op(x, w, b, "none", [], ""), F.linear(x, w, b), rtol=1e-5, atol=1e-6)
                        and torch.allclose(op(x, v.t(), None, "none", [], ""), x @ v, rtol=1e-5, atol=1e-6))
    except (AttributeError, RuntimeError):
        return False


def _onednn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """x @ w.T (+ b) by oneDNN; x contiguous ``[N, in]``, w ``[out, in]`` of any strides."""
    return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")


class _OneDNNLinear(torch.autograd.Function):
    """F.linear on 2-D fp32 CPU rows by oneDNN, forward and backward (the weight gradient makes the
    narrower operand contiguous)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return _onednn(x, w, b)

    @staticmethod
    def backward(ctx, g: torch.Tensor):  # type: ignore[override]
        x, w = ctx.saved_tensors
        g = g.contiguous()
        dx = _onednn(g, w.t(), None) if ctx.needs_input_grad[0] else None
        dw = None
        if ctx.needs_input_grad[1]:
            if x.shape[1] <= g.shape[1]:
                dw = _onednn(x.t().contiguous(), g.t(), None).t().contiguous()
            else:
                dw = _onednn(g.t().contiguous(), x.t(), None)
        db = g.sum(0) if ctx.needs_input_grad[2] else None
        return dx, dw, db


# below this many multiply-adds oneDNN's per-shape kernel and weight reordering do not pay; F.linear serves
ONEDNN_MIN_MACS = 2**20


def use_onednn(x: torch.Tensor) -> bool:
    """Whether :func:`linear` takes oneDNN for ``x``: fp32 on a CPU, outside autocast, where it works."""
    return (x.device.type == "cpu" and x.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")
            and _onednn_linear_works())


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """F.linear of rows ``[N, in]``, by oneDNN where :func:`use_onednn`. oneDNN builds a kernel per
    shape (a few ms), so callers keep N to few values (:func:`padded_rows`)."""
    if x.dim() == 2 and x.shape[0] * w.shape[0] * w.shape[1] >= ONEDNN_MIN_MACS and w.dtype == torch.float32 \
            and use_onednn(x):
        return _OneDNNLinear.apply(x.contiguous(), w, b)
    return F.linear(x, w, b)


def padded_rows(n: int) -> int:
    """``n`` rounded up to a multiple of 2**(bits(n) - 5): at most 1/16 more rows, 16 distinct counts
    per doubling, so oneDNN's cached kernels are reused."""
    step = 1 << max(0, n.bit_length() - 5)
    return -(-n // step) * step


def _bmm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.bmm``, as a broadcast product where the inner size is 1 (much faster than bmm there)."""
    if a.shape[2] == 1:
        return torch.mul(a, b, out=out) if out is not None else a * b
    return torch.bmm(a, b, out=out) if out is not None else torch.bmm(a, b)


class PackedAttention(torch.autograd.Function):
    """Self-attention of packed sequences, each within itself: ``apply(qkv, groups, heads)``.

    qkv ``[T, 3D]``: sequences' tokens one after another, equal lengths together (``groups``:
    (count, length) in order) -> ``[T, D]``; padding rows past the groups get output and gradient 0.
    Scores are held key axis first (``[keys, n H, queries]``) so the softmax over a few keys is a
    vectorised reduction, faster than the usual kernels on such short rows. Computed in fp32,
    returned in qkv's dtype."""

    @staticmethod
    def forward(ctx, qkv: torch.Tensor, groups: list[tuple[int, int]], heads: int) -> torch.Tensor:
        ctx.dtype = qkv.dtype
        with torch.autocast(qkv.device.type, enabled=False):
            return PackedAttention._forward(ctx, qkv.float(), groups, heads).to(qkv.dtype)

    @staticmethod
    def _forward(ctx, qkv: torch.Tensor, groups: list[tuple[int, int]], heads: int) -> torch.Tensor:
        d = qkv.shape[1] // 3
        h = d // heads
        out = qkv.new_empty(len(qkv), d)
        saved, start = [], 0
        for n, length in groups:
            rows = slice(start, start + n * length)
            t = qkv[rows].view(n, length, 3, heads, h).permute(2, 0, 3, 1, 4).reshape(3, n * heads, length, h)
            s = torch.bmm(t[1], t[0].transpose(1, 2)).transpose(0, 1).contiguous().mul_(1.0 / math.sqrt(h))
            p = torch.softmax(s, dim=0)  # [keys, n heads, queries]
            o = torch.bmm(p.permute(1, 2, 0), t[2])  # [n heads, queries, h]
            out[rows].view(n, length, heads, h).copy_(o.view(n, heads, length, h).transpose(1, 2))
            saved += [t, p]
            start += n * length
        out[start:].zero_()
        ctx.save_for_backward(*saved)
        ctx.groups, ctx.heads = groups, heads
        return out

    @staticmethod
    def backward(ctx, dout: torch.Tensor):  # type: ignore[override]
        with torch.autocast(dout.device.type, enabled=False):
            dqkv = PackedAttention._backward(ctx, dout.float())
        return dqkv.to(ctx.dtype), None, None

    @staticmethod
    def _backward(ctx, dout: torch.Tensor) -> torch.Tensor:
        groups, heads, saved = ctx.groups, ctx.heads, ctx.saved_tensors
        d = dout.shape[1]
        h = d // heads
        dqkv = dout.new_empty(len(dout), 3 * d)
        start = 0
        for i, (n, length) in enumerate(groups):
            t, p = saved[2 * i], saved[2 * i + 1]
            rows = slice(start, start + n * length)
            do = dout[rows].reshape(n, length, heads, h).transpose(1, 2).reshape(n * heads, length, h)
            dt = torch.empty_like(t)
            _bmm(p.transpose(0, 1), do, out=dt[2])  # values
            dp = torch.bmm(t[2], do.transpose(1, 2)).transpose(0, 1).contiguous()
            ds = dp.sub_((dp * p).sum(0, keepdim=True)).mul_(p).mul_(1.0 / math.sqrt(h))
            _bmm(ds.transpose(0, 1), t[0], out=dt[1])  # keys
            torch.bmm(ds.permute(1, 2, 0), t[1], out=dt[0])  # queries
            dqkv[rows].view(n, length, 3, heads, h).copy_(dt.view(3, n, heads, length, h).permute(1, 3, 0, 2, 4))
            start += n * length
        dqkv[start:].zero_()
        return dqkv


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

    def forward(self, x: torch.Tensor, attend: torch.Tensor | None, tokens_idx: torch.Tensor | None) -> torch.Tensor:
        """x ``[B, L, D]``; attend bool ``[B, 1, 1, L]`` (True: key may be attended; None: all);
        tokens_idx: flat indices of non-PAD positions (None: all)."""
        b, l, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        a = F.scaled_dot_product_attention(self._heads(q), self._heads(k), self._heads(v), attn_mask=attend)
        x = x + self.proj(a.transpose(1, 2).reshape(b, l, d))
        if tokens_idx is None:
            return x + self._ffn(x)
        flat = x.reshape(b * l, d)
        upd = self._ffn(flat.index_select(0, tokens_idx))
        return flat.index_add(0, tokens_idx, upd.to(flat.dtype)).view(b, l, d)

    def forward_at(self, x: torch.Tensor, attend: torch.Tensor | None, at: torch.Tensor) -> torch.Tensor:
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


# ---------------------------------------------------------------------------------
# the packed path (CPU): parameters by name, so a stack of runs can call it per run
# ---------------------------------------------------------------------------------
def _layer_norm(p: Mapping[str, torch.Tensor], name: str, x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], p[name + ".weight"], p[name + ".bias"])


def _ffn(p: Mapping[str, torch.Tensor], pre: str, x: torch.Tensor) -> torch.Tensor:
    h = F.gelu(linear(_layer_norm(p, pre + "ln2", x), p[pre + "ff1.weight"], p[pre + "ff1.bias"]))
    return linear(h, p[pre + "ff2.weight"], p[pre + "ff2.bias"])


def packed_layer(p: Mapping[str, torch.Tensor], pre: str, x: torch.Tensor, groups: list[tuple[int, int]],
                 n_heads: int) -> torch.Tensor:
    """One pre-LN layer (parameters ``p[pre + "qkv.weight"]`` ...) on packed rows x ``[T, D]``
    (layout as :class:`PackedAttention`)."""
    qkv = linear(_layer_norm(p, pre + "ln1", x), p[pre + "qkv.weight"], p[pre + "qkv.bias"])
    a = PackedAttention.apply(qkv, groups, n_heads)
    x = x + linear(a, p[pre + "proj.weight"], p[pre + "proj.bias"])
    return x + _ffn(p, pre, x)


def packed_layer_at(p: Mapping[str, torch.Tensor], pre: str, x: torch.Tensor, groups: list[tuple[int, int]],
                    last: torch.Tensor, n_heads: int) -> torch.Tensor:
    """The layer's output at each packed sequence's last token (rows ``last`` ``[B]``) -> ``[B, D]``.

    With one query per sequence, only B queries and B mixtures of h are projected: head j's score
    is (W_kj^T q_j) . h_t plus a constant the softmax ignores, and its output W_vj (sum_t p_jt h_t) + b_vj."""
    b, d = len(last), x.shape[1]
    hd = d // n_heads
    h = _layer_norm(p, pre + "ln1", x)
    w_q, w_k, w_v = p[pre + "qkv.weight"].split(d)
    b_q, _, b_v = p[pre + "qkv.bias"].split(d)
    q = linear(h.index_select(0, last), w_q, b_q)  # [B, D]
    # per head, the query seen through the key projection, scaled: [B, H, D]
    qk = torch.bmm(q.view(b, n_heads, hd).transpose(0, 1), w_k.view(n_heads, hd, d)).transpose(0, 1)
    qk = qk * (1.0 / math.sqrt(hd))
    mixed, start, row = [], 0, 0
    for n, length in groups:
        hg = h[start:start + n * length].view(n, length, d)
        weights = torch.bmm(hg, qk[row:row + n].transpose(1, 2)).softmax(dim=1)  # [n, tokens, H]
        mixed.append(torch.bmm(weights.transpose(1, 2), hg))  # [n, H, D]
        start, row = start + n * length, row + n
    mixed = torch.cat(mixed) if len(mixed) > 1 else mixed[0]
    if len(mixed) < b:  # padding rows (padded_rows): no sequence
        mixed = F.pad(mixed, (0, 0, 0, 0, 0, b - len(mixed)))
    # per head, W_vj (mixture) + b_vj: [H, B, D] x [H, D, D/H]
    a = torch.bmm(mixed.transpose(0, 1), w_v.view(n_heads, hd, d).transpose(1, 2)).transpose(0, 1).reshape(b, d)
    y = x.index_select(0, last) + linear(a + b_v, p[pre + "proj.weight"], p[pre + "proj.bias"])
    return y + _ffn(p, pre, y)


def packed_encode(p: Mapping[str, torch.Tensor], pre: str, cfg: EncoderConfig, positions: torch.Tensor,
                  tokens: torch.Tensor) -> torch.Tensor:
    """:meth:`Encoder.forward`, packed: tokens ``[B, L]`` (right-padded, none all PAD) -> ``[B, d_out]``
    through the encoder with parameters ``p[pre + "embed.weight"]``, ..."""
    keep = tokens != cfg.pad_id
    if bool((keep[:, 1:] & ~keep[:, :-1]).any()):
        raise ValueError("a sequence has a PAD token before a real one (sequences must be right-padded)")
    lengths = keep.sum(1)
    # sequences ordered by length, their real tokens one after the other
    order = torch.argsort(lengths, stable=True)
    sorted_lengths = lengths[order]
    counts, group_lengths = torch.unique_consecutive(sorted_lengths, return_counts=True)[::-1]
    groups = list(zip(counts.tolist(), group_lengths.tolist()))
    width = groups[-1][1]
    keep_sorted = keep[order, :width]
    ids = tokens[order, :width][keep_sorted]
    at = torch.arange(width, device=tokens.device).expand_as(keep_sorted)[keep_sorted]
    last = torch.cumsum(sorted_lengths, 0) - 1
    # padding rows (PAD at position 0, never attended to nor read): few distinct shapes for oneDNN
    extra, extra_b = padded_rows(len(ids)) - len(ids), padded_rows(len(last)) - len(last)
    ids, at, last = F.pad(ids, (0, extra), value=cfg.pad_id), F.pad(at, (0, extra)), F.pad(last, (0, extra_b))
    x = F.embedding(ids, p[pre + "embed.weight"]) + positions[at]
    for i in range(cfg.n_layers - 1):
        x = packed_layer(p, f"{pre}blocks.{i}.", x, groups, cfg.n_heads)
    pooled = packed_layer_at(p, f"{pre}blocks.{cfg.n_layers - 1}.", x, groups, last, cfg.n_heads)
    out = linear(pooled, p[pre + "head.weight"], p[pre + "head.bias"])
    return out.index_select(0, torch.argsort(order))


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

    def forward(self, tokens: torch.Tensor, mapped: bool = False) -> torch.Tensor:
        """``mapped``: a run of a stack under ``torch.func.vmap`` (:mod:`bindcore.controlled.stacked`):
        the padded path with no check and no branch on values, every position through every layer."""
        if mapped:
            keep = tokens != self.cfg.pad_id
            return self._layers(tokens, keep, keep.sum(1), None)
        if tokens.dim() != 2:
            raise ValueError(f"tokens must be [B, L], got {tuple(tokens.shape)}")
        keep = tokens != self.cfg.pad_id
        lengths = keep.sum(1)
        if bool((lengths == 0).any()):
            raise ValueError("a sequence consists only of PAD tokens")
        width = int(lengths.max())
        if width > self.cfg.max_len:
            raise ValueError(f"sequence length {width} exceeds max_len={self.cfg.max_len}")
        if tokens.device.type != "cpu":
            return self._forward_padded(tokens, keep, lengths, width)
        return packed_encode(dict(self.named_parameters()), "", self.cfg, self.positions, tokens)

    def _forward_padded(self, tokens: torch.Tensor, keep: torch.Tensor, lengths: torch.Tensor,
                        width: int) -> torch.Tensor:
        """The padded path (GPU): trailing PAD columns dropped, feed-forward on non-PAD tokens only,
        last layer at EOS only."""
        tokens, keep = tokens[:, :width], keep[:, :width]
        flat_keep = keep.reshape(-1)
        return self._layers(tokens, keep, lengths, None if bool(flat_keep.all()) else flat_keep.nonzero().squeeze(1))

    def _layers(self, tokens: torch.Tensor, keep: torch.Tensor, lengths: torch.Tensor,
                idx: torch.Tensor | None) -> torch.Tensor:
        x = self.embed(tokens) + self.positions[:tokens.shape[1]]
        attend = keep[:, None, None, :]
        for block in self.blocks[:-1]:
            x = block(x, attend, idx)
        return self.head(self.blocks[-1].forward_at(x, attend, lengths - 1))


class DualEncoder(nn.Module):
    """Scene encoder f, query encoder g, and the learnable log-scale tau."""

    def __init__(self, cfg: EncoderConfig, tau_init: float = 1.15) -> None:
        super().__init__()
        self.scene = Encoder(cfg)
        self.query = Encoder(cfg)
        self.tau = nn.Parameter(torch.tensor(float(tau_init)))

    def forward(self, scenes: torch.Tensor, queries: torch.Tensor, mapped: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Scene and query tokens through their towers (``mapped``: :meth:`Encoder.forward`'s)."""
        return self.scene(scenes, mapped), self.query(queries, mapped)

    def logit_scale(self, cap: float) -> torch.Tensor:
        return self.tau.exp().clamp(max=cap)


def cosine_logits(z: torch.Tensor, e: torch.Tensor, scale: torch.Tensor | float) -> torch.Tensor:
    """scale * cos(z_s, e_q) for every pair -> ``[S, Q]``."""
    zn = z / (z.norm(dim=-1, keepdim=True) + 1e-6)
    en = e / (e.norm(dim=-1, keepdim=True) + 1e-6)
    return scale * zn @ en.T


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
