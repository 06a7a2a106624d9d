"""Images of coloured squares rendered on the fly from scene tensors ``[B, O_max]`` (appendix E),
vectorised on the generator's device. Concepts: 0 fill colour, 1 border colour, 2 (C = 3) side;
the background is black."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from bindcore.controlled.scenes import SceneSpace

LEVELS = ("clean", "speckle", "overlap")
# the levels in words (figures, tables)
LEVEL_LABELS = {"clean": "clean", "speckle": "speckle noise", "overlap": "speckle noise + overlap"}


@functools.lru_cache(maxsize=32)
def _palette_cpu(n_values: int) -> torch.Tensor:
    k = 1
    while k**3 < n_values:
        k += 1
    levels = (torch.arange(k, dtype=torch.float64) + 1) / k
    lattice = torch.cartesian_prod(levels, levels, levels)  # [k^3, 3], index order r, g, b
    chosen = [len(lattice) - 1]  # white
    dist = (lattice - lattice[-1]).norm(dim=1)
    for _ in range(n_values - 1):
        nxt = int(torch.argmax(dist))  # first maximum: the lowest index among ties
        chosen.append(nxt)
        dist = torch.minimum(dist, (lattice - lattice[nxt]).norm(dim=1))
    return lattice[chosen].float()


def palette(n_values: int, device: torch.device | str | None = None) -> torch.Tensor:
    """``[V, 3]`` colours in [0, 1]: farthest-point sampling from white over the RGB lattice of
    levels ``(i + 1) / k``, ``k**3 >= V``, so colours (and black) differ by >= ``1 / k``."""
    if n_values < 1:
        raise ValueError(f"n_values must be >= 1, got {n_values}")
    return _palette_cpu(int(n_values)).to(device)


def palette_separation(n_values: int) -> float:
    """The smallest Chebyshev distance between two palette colours or a colour and black."""
    p = torch.cat([palette(n_values), torch.zeros(1, 3)])
    d = (p[:, None, :] - p[None, :, :]).abs().amax(-1)
    d.fill_diagonal_(float("inf"))
    return float(d.min())


@dataclass(frozen=True)
class PixelSpec:
    """How scenes become images, sizes in pixels; ``speckle`` and ``overlap`` replace pixels by
    random colours (then add ``noise``), ``clean`` images are exact."""

    image_size: int = 32
    side: int = 10  # side of a square (the largest side when C = 3)
    border: int = 2  # border width
    min_side: int = 6  # smallest side (C = 3 only: concept 2 is the side)
    level: str = "clean"
    speckle: float = 0.2  # probability that a pixel becomes a random colour (speckle, overlap)
    noise: float = 0.0  # std of extra Gaussian pixel noise (speckle, overlap)
    gap: int = 1  # smallest gap between squares (clean, speckle)
    rounds: int = 16  # rejection rounds before the grid fallback

    def check(self, space: SceneSpace) -> None:
        """Raise a ``ValueError`` naming the field if ``space`` cannot be drawn."""

        def need(ok: bool, name: str, rule: str) -> None:
            if not ok:
                raise ValueError(f"PixelSpec.{name} = {getattr(self, name)!r}: {rule}")

        need(self.level in LEVELS, "level", f"must be one of {LEVELS}")
        need(self.image_size >= 4, "image_size", "must be >= 4")
        need(1 <= self.border, "border", "must be >= 1")
        need(self.side >= 2 * self.border + 1, "side", f"must be >= 2 * border + 1 = {2 * self.border + 1}")
        need(self.side <= self.image_size, "side", f"must fit the image (image_size={self.image_size})")
        need(0.0 <= self.speckle <= 1.0, "speckle", "must lie in [0, 1]")
        need(self.noise >= 0.0, "noise", "must be >= 0")
        need(self.gap >= 0, "gap", "must be >= 0")
        need(self.rounds >= 0, "rounds", "must be >= 0")
        if space.n_concepts not in (2, 3):
            raise ValueError(f"n_concepts = {space.n_concepts}: pixel scenes have 2 concepts (fill, border colour) "
                             "or 3 (and side)")
        if space.n_concepts == 3:
            need(self.min_side >= 2 * self.border + 1, "min_side", f"must be >= 2 * border + 1 = {2 * self.border + 1}")
            need(self.side - self.min_side + 1 >= space.n_values, "min_side",
                 f"sides {self.min_side}..{self.side} must give V = {space.n_values} distinct integer sides")
        g = grid_cells(space.max_objects)
        need(g * (self.side + self.gap) <= self.image_size + self.gap, "image_size",
             f"too small for the fallback grid of {g} x {g} cells of side + gap = {self.side + self.gap} px "
             f"(O_max = {space.max_objects})")

    def sides(self, space: SceneSpace, device: torch.device | str | None = None) -> torch.Tensor:
        """Side of each value of the size concept ``[V]`` (C = 3), else ``[1]``."""
        if space.n_concepts < 3:
            return torch.tensor([self.side], device=device)
        return torch.linspace(self.min_side, self.side, space.n_values, device=device).round().long()


def grid_cells(max_objects: int) -> int:
    """Cells per side of the fallback grid: the smallest g with g*g >= max(O_max, 2)."""
    return max(2, math.ceil(math.sqrt(max_objects) - 1e-9))


@dataclass
class Layout:
    """Where each slot's square lies: ``top_left`` ``[B, O, 2]`` (row, column), ``side``
    ``[B, O]`` (0 for absent slots), and how many scenes used the grid fallback."""

    top_left: torch.Tensor
    side: torch.Tensor
    fallback: int = 0


def _violations(top_left: torch.Tensor, side: torch.Tensor, present: torch.Tensor, spec: PixelSpec) -> torch.Tensor:
    """bool ``[B]``: the layout of a scene breaks the level's rule."""
    if spec.level == "overlap":
        side = torch.where(present, side, torch.zeros_like(side))
        fill_vis, border_vis = visible_masks(Layout(top_left, side), spec.image_size, spec.border)
        fill_area = (side - 2 * spec.border).clamp(min=0) ** 2
        border_area = side**2 - fill_area
        short = (2 * fill_vis.sum((-1, -2)) < fill_area) | (2 * border_vis.sum((-1, -2)) < border_area)
        return (present & short).any(-1)
    centre2 = 2 * top_left + side[..., None]  # twice the centre, integer
    d2 = (centre2[:, :, None, :] - centre2[:, None, :, :]).abs().amax(-1)  # 2 x Chebyshev distance [B, O, O]
    need2 = side[:, :, None] + side[:, None, :] + 2 * spec.gap  # 2 x ((s_i + s_j) / 2 + gap)
    pair = present[:, :, None] & present[:, None, :]
    pair &= ~torch.eye(present.shape[1], dtype=torch.bool, device=present.device)
    return (pair & (d2 < need2)).any(-1).any(-1)


def _uniform_corners(side: torch.Tensor, image_size: int, gen: torch.Generator) -> torch.Tensor:
    room = (image_size - side + 1).clamp(min=1).to(torch.float32)  # corners 0..image_size - side
    u = torch.rand(*side.shape, 2, generator=gen, device=side.device)
    return (u * room[..., None]).floor().long()


def sample_layout(side: torch.Tensor, present: torch.Tensor, spec: PixelSpec, gen: torch.Generator) -> Layout:
    """Uniform top-left corners, redrawn for ``rounds`` rounds until squares keep ``gap`` apart
    (``overlap``: each keeps half its fill and border visible); then a jittered grid."""
    b, o = side.shape
    corners = _uniform_corners(side, spec.image_size, gen)
    bad = _violations(corners, side, present, spec)
    for _ in range(spec.rounds):
        if not bool(bad.any()):
            break
        fresh = _uniform_corners(side, spec.image_size, gen)
        corners = torch.where(bad[:, None, None], fresh, corners)
        bad = _violations(corners, side, present, spec)
    n_fallback = int(bad.sum())
    if n_fallback:
        g = grid_cells(o)
        cell = (spec.image_size + spec.gap) // g
        slot = torch.arange(o, device=side.device)
        origin = torch.stack([slot // g, slot % g], dim=-1) * cell  # [O, 2]
        room = (cell - spec.gap - side + 1).clamp(min=1).to(torch.float32)
        jitter = (torch.rand(b, o, 2, generator=gen, device=side.device) * room[..., None]).floor().long()
        corners = torch.where(bad[:, None, None], origin[None] + jitter, corners)
    return Layout(corners, torch.where(present, side, torch.zeros_like(side)), n_fallback)


def render_scenes(
    space: SceneSpace,
    scenes: torch.Tensor,
    spec: PixelSpec,
    gen: torch.Generator,
    return_layout: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, Layout]:
    """Scenes ``[B, O_max]`` (-1 padded) -> float32 images ``[B, 3, H, W]`` in [0, 1] on the
    generator's device, deterministic given its state."""
    spec.check(space)
    device = gen.device
    scenes = scenes.to(device)
    if scenes.dim() != 2 or scenes.shape[1] != space.max_objects:
        raise ValueError(f"scenes must be [B, {space.max_objects}], got {tuple(scenes.shape)}")
    b, o = scenes.shape
    present = scenes >= 0
    vals = space.object_values(scenes.clamp(min=0))  # [B, O, C]
    colours = palette(space.n_values, device)
    fill, border = colours[vals[..., 0]], colours[vals[..., 1]]  # [B, O, 3]
    if space.n_concepts == 3:
        side = spec.sides(space, device)[vals[..., 2]]
    else:
        side = torch.full((b, o), spec.side, dtype=torch.long, device=device)
    layout = sample_layout(side, present, spec, gen)
    h = spec.image_size
    pix = torch.arange(h, device=device)
    top, left, s = layout.top_left[..., 0, None], layout.top_left[..., 1, None], layout.side[..., None]
    bw = spec.border
    in_r = (pix >= top) & (pix < top + s)  # [B, O, H]
    in_c = (pix >= left) & (pix < left + s)
    core_r = (pix >= top + bw) & (pix < top + s - bw)
    core_c = (pix >= left + bw) & (pix < left + s - bw)
    which = torch.zeros(b, h, h, dtype=torch.long, device=device)  # 0: background, 1 + 2 slot (+1): fill (border)
    for slot in range(o):  # painter's order: a later slot lies on top
        inside = in_r[:, slot, :, None] & in_c[:, slot, None, :]  # [B, H, W]
        edge = ~(core_r[:, slot, :, None] & core_c[:, slot, None, :])
        which = torch.where(inside, 1 + 2 * slot + edge.long(), which)
    table = torch.cat([torch.zeros(b, 1, 3, device=device), torch.stack([fill, border], 2).reshape(b, 2 * o, 3)], 1)
    img = torch.gather(table.transpose(1, 2), 2, which.view(b, 1, h * h).expand(b, 3, h * h))  # [B, 3, H*W]
    if spec.level != "clean" and spec.speckle > 0:
        hit = torch.rand(b, h * h, generator=gen, device=device) < spec.speckle
        img.transpose(1, 2)[hit] = torch.rand(int(hit.sum()), 3, generator=gen, device=device)
    img = img.view(b, 3, h, h)
    if spec.level != "clean" and spec.noise > 0:
        img = (img + spec.noise * torch.randn(b, 3, h, h, generator=gen, device=device)).clamp(0.0, 1.0)
    return (img, layout) if return_layout else img


def visible_masks(layout: Layout, image_size: int, border: int) -> tuple[torch.Tensor, torch.Tensor]:
    """bool ``[B, O, H, W]`` masks of each slot's fill and border not covered by a later slot."""
    pix = torch.arange(image_size, device=layout.top_left.device)
    top, left, s = layout.top_left[..., 0, None], layout.top_left[..., 1, None], layout.side[..., None]
    in_r, in_c = (pix >= top) & (pix < top + s), (pix >= left) & (pix < left + s)
    core_r = (pix >= top + border) & (pix < top + s - border)
    core_c = (pix >= left + border) & (pix < left + s - border)
    inside = in_r[..., :, None] & in_c[..., None, :]
    core = core_r[..., :, None] & core_c[..., None, :]
    covered = torch.zeros_like(inside)
    for slot in range(inside.shape[1] - 2, -1, -1):
        covered[:, slot] = covered[:, slot + 1] | inside[:, slot + 1]
    return core & ~covered, inside & ~core & ~covered
