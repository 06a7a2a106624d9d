"""The approximators' function classes (§5.1, §5.4, C.4), stacked on a leading model dimension.

Every family has a table per slot (position dependent, as the release); the inits and why they
differ from the release's: ``benchmarks/approximator_inits.py``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..probes import BindingData

# mlp: b + W2 relu(b1 + sum_s W1_s[x_s]) (the release's slot embedding and Linear(2C d, w), composed)
# additive: b + sum_s A_s[x_s]
# global_product: b + H prod_s E_s[x_s] (release "mult_linear"); sum_global_product adds the additive terms
# within_object_product: b + H (prod_k E_1k[x_1k] + prod_k E_2k[x_2k]) (release "mult_within_obj");
# sum_within_object_product adds the additive terms
FAMILIES = (
    "mlp",
    "additive",
    "global_product",
    "sum_global_product",
    "within_object_product",
    "sum_within_object_product",
)

_HIDDEN = {"mlp": "relu", "global_product": "global", "sum_global_product": "global",
           "within_object_product": "within", "sum_within_object_product": "within"}
_ADDITIVE = {"additive", "sum_global_product", "sum_within_object_product"}
# the families with a product hidden layer (whose factors' init ``product_init`` sets)
PRODUCT_FAMILIES = tuple(f for f in FAMILIES if _HIDDEN.get(f, "relu") != "relu")


# ---------------------------------------------------------------------------------
# slot layout
# ---------------------------------------------------------------------------------
def slot_sizes(values_per_concept: Sequence[int]) -> list[int]:
    """Table sizes of the 2C slots, object-major (o1c1, ..., o1cC, o2c1, ...)."""
    return list(values_per_concept) * 2


def global_codes(codes: np.ndarray, values_per_concept: Sequence[int]) -> np.ndarray:
    """Slot codes ``[N, 2C]`` -> rows of the concatenated slot tables (slot offset added)."""
    sizes = slot_sizes(values_per_concept)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.asarray(codes, dtype=np.int64) + offsets


def one_hot_codes(data: BindingData) -> np.ndarray:
    """``[N, 2 sum V_c]`` float32: one one-hot block per slot."""
    g = global_codes(data.slot_codes(), data.values_per_concept)
    out = np.zeros((len(g), sum(slot_sizes(data.values_per_concept))), dtype=np.float32)
    np.put_along_axis(out, g, 1.0, axis=1)
    return out


# ---------------------------------------------------------------------------------
# the stacked module
# ---------------------------------------------------------------------------------
_LOOP_MIN_WIDTH = 2048  # on CPU, a loop of mm beats bmm from this hidden width on


class _StackedMatmul(torch.autograd.Function):
    """``[M, B, W] @ [M, W, d]`` as one mm per model (on CPU torch's bmm is several times
    slower for wide hidden layers)."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(a, b)
        out = a.new_empty(a.shape[0], a.shape[1], b.shape[2])
        for m in range(a.shape[0]):
            torch.mm(a[m], b[m], out=out[m])
        return out

    @staticmethod
    def backward(ctx, g: torch.Tensor):  # type: ignore[override]
        a, b = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = torch.empty_like(a)
            for m in range(a.shape[0]):
                torch.mm(g[m], b[m].T, out=ga[m])
        if ctx.needs_input_grad[1]:
            gb = torch.empty_like(b)
            for m in range(a.shape[0]):
                torch.mm(a[m].T, g[m], out=gb[m])
        return ga, gb


def stacked_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.device.type == "cpu" and a.shape[0] > 1 and a.shape[2] >= _LOOP_MIN_WIDTH:
        return _StackedMatmul.apply(a, b)
    return torch.bmm(a, b)


PRODUCT_INITS = ("one_plus", "normal", "sign")
_FACTOR_MEAN = {"one_plus": 1.0, "normal": 0.0, "sign": 0.0}


def _unit_mean(hidden: str, init: str, n_slots: int) -> float:
    """The expected value of a hidden unit at initialisation."""
    if hidden == "relu":
        return 1.0 / math.sqrt(2 * math.pi)
    mu = _FACTOR_MEAN[init]
    return mu ** n_slots if hidden == "global" else 2 * mu ** (n_slots // 2)


def _product_init(kind: str, rows: int, width: int, gen: torch.Generator) -> torch.Tensor:
    """Product factors ``[rows, width]``: ``one_plus`` 1 + 0.1 N(0, 1), ``normal`` N(0, 1) (the
    release), ``sign`` random +-1. Near 1 a unit starts almost additive; a product of 2C
    normals is heavy-tailed and fits training scenes but not held-out objects."""
    if kind == "one_plus":
        return 1 + 0.1 * torch.randn(rows, width, generator=gen)
    if kind == "normal":
        return torch.randn(rows, width, generator=gen)
    if kind == "sign":
        return torch.randint(0, 2, (rows, width), generator=gen).float() * 2 - 1
    raise ValueError(f"product_init must be one of {PRODUCT_INITS}, got {kind!r}")


class StackedApproximator(torch.nn.Module):
    """``M`` approximators of one family, model ``m`` with ``widths[m]`` units (padded, masked)
    seeded by ``seeds[m]`` alone. ``forward``: table rows ``[M, B, 2C]`` -> ``[M, B, d]``."""

    def __init__(self, family: str, values_per_concept: Sequence[int], dim: int, widths: Sequence[int],
                 seeds: Sequence[int], output_bias: np.ndarray | torch.Tensor | None = None,
                 device: torch.device | str = "cpu", product_init: str | Sequence[str] = "one_plus"):
        super().__init__()
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
        if len(widths) != len(seeds) or not widths:
            raise ValueError("need one width and one seed per model (and at least one model)")
        self.family = family
        self.n_slots = 2 * len(values_per_concept)
        self.n_rows = sum(slot_sizes(values_per_concept))
        self.dim = dim
        hidden = _HIDDEN.get(family)
        self.hidden_kind = hidden
        self.additive = family in _ADDITIVE
        widths = [int(w) if hidden else 0 for w in widths]
        if hidden and min(widths) < 1:
            raise ValueError(f"width must be >= 1 for family {family!r}, got {min(widths)}")
        self.widths = widths
        M, W, R, C2 = len(widths), max(widths), self.n_rows, self.n_slots
        dev = torch.device(device)
        params: dict[str, torch.Tensor] = {"bias": torch.zeros(M, dim)}
        if hidden:
            params["table"] = torch.zeros(M, R, W) if hidden == "relu" else torch.ones(M, R, W)
            params["head"] = torch.zeros(M, W, dim)
            if hidden == "relu":
                params["hidden_bias"] = torch.zeros(M, W)
        if self.additive:
            params["slot_out"] = torch.zeros(M, R, dim)
        inits = [product_init] * M if isinstance(product_init, str) else list(product_init)
        for m, (w, seed) in enumerate(zip(widths, seeds)):
            gen = torch.Generator().manual_seed(int(seed))
            if hidden == "relu":
                params["table"][m, :, :w] = torch.randn(R, w, generator=gen) / math.sqrt(C2)
            elif hidden:
                params["table"][m, :, :w] = _product_init(inits[m], R, w, gen)
            if hidden:
                params["head"][m, :w] = torch.randn(w, dim, generator=gen) / math.sqrt(w)
            if self.additive:
                # small, not zero: with zero tables the bias's first gradient is zero, and Adam
                # turns its rounding noise into a full lr-sized step
                params["slot_out"][m] = 0.01 * torch.randn(R, dim, generator=gen)
        if output_bias is not None:
            params["bias"][:] = torch.as_tensor(np.asarray(output_bias), dtype=torch.float32).reshape(M, dim)
            if hidden:
                # the units' expected constant part would reach the output through the random
                # head as an offset (the product families then under-fit): the bias takes it off
                c = torch.tensor([_unit_mean(hidden, inits[m], C2) for m in range(M)])
                params["bias"] -= c[:, None] * params["head"].sum(1)
        for k, v in params.items():
            self.register_parameter(k, torch.nn.Parameter(v.to(dev)))
        mask = torch.zeros(M, max(W, 1))
        for m, w in enumerate(widths):
            mask[m, :w] = 1.0
        self.register_buffer("unit_mask", mask.to(dev))
        self.padded = min(widths) != max(widths)
        self.register_buffer("model_offsets", (torch.arange(M) * R).view(M, 1, 1).to(dev))

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        M, B, C2 = codes.shape
        flat = (codes + self.model_offsets).reshape(M * B, C2)
        out = self.bias.unsqueeze(1).expand(M, B, self.dim)
        if self.hidden_kind:
            W = self.table.shape[2]
            table = self.table.reshape(M * self.n_rows, W)
            if self.hidden_kind == "relu":
                pre = F.embedding_bag(flat, table, mode="sum").view(M, B, W) + self.hidden_bias.unsqueeze(1)
                h = torch.relu(pre)
            else:
                f = F.embedding(flat, table).view(M, B, C2, W)
                if self.hidden_kind == "global":
                    h = f.prod(2)
                else:
                    c = C2 // 2
                    h = f[:, :, :c].prod(2) + f[:, :, c:].prod(2)
            if self.hidden_kind != "relu" and self.padded:
                # a padded ReLU unit needs no mask: its table column, bias and head row are
                # zero, relu(0) = 0 and relu'(0) = 0, so it never gets a gradient; padded
                # product factors are 1 and are masked here
                h = h * self.unit_mask.unsqueeze(1)
            out = out + stacked_matmul(h, self.head)
        if self.additive:
            slot = self.slot_out.reshape(M * self.n_rows, self.dim)
            out = out + F.embedding_bag(flat, slot, mode="sum").view(M, B, self.dim)
        return out

    def model_state(self, m: int) -> dict[str, torch.Tensor]:
        """Model ``m``'s parameters without padding (copies)."""
        w = self.widths[m]
        out = {}
        for k, p in self.named_parameters():
            t = p.detach()[m]
            if k == "table":
                t = t[:, :w]
            elif k in ("head", "hidden_bias"):
                t = t[:w]
            out[k] = t.clone()
        return out


def make_approximator(family: str, values_per_concept: Sequence[int], dim: int, width: int = 0, seed: int = 0,
                      device: torch.device | str = "cpu", product_init: str = "one_plus") -> StackedApproximator:
    """One approximator (a stack of one): ``model(codes[None])[0]``."""
    return StackedApproximator(family, values_per_concept, dim, [width], [seed], device=device,
                               product_init=product_init)
