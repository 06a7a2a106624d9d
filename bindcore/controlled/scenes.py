"""Scene space, object-coverage split and tokenization (paper §3, appendix B.1), vectorised in torch."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bindcore import ids as _ids

EMPTY = -1  # object-id padding inside a scene tensor


@dataclass(frozen=True)
class SceneSpace:
    """C concepts x V values, scenes of 1..max_objects objects.

    An object id in ``[0, V**C)`` is its values in base V, concept 0 least significant. A batch of
    scenes is ``LongTensor[B, O_max]`` of ids, ``-1`` padded. Token t(c, v) = c*V + v, then SOO, EOO,
    EOS, PAD; a scene is blocks ``[SOO, t(0,v_0), ..., EOO]``, one EOS, PAD to L_max = (C+2)*O_max + 1.
    """

    n_concepts: int
    n_values: int
    max_objects: int

    def __post_init__(self) -> None:
        if self.n_concepts < 1:
            raise ValueError(f"n_concepts must be >= 1, got {self.n_concepts}")
        if self.n_values < 2:
            raise ValueError(f"n_values (V) must be >= 2, got {self.n_values}")
        if self.max_objects < 1:
            raise ValueError(f"max_objects (O_max) must be >= 1, got {self.max_objects}")

    # -- sizes and special tokens -------------------------------------------------
    @property
    def n_objects(self) -> int:
        """|O| = V**C."""
        return self.n_values**self.n_concepts

    @property
    def n_value_tokens(self) -> int:
        return self.n_concepts * self.n_values

    @property
    def soo(self) -> int:
        return self.n_value_tokens

    @property
    def eoo(self) -> int:
        return self.n_value_tokens + 1

    @property
    def eos(self) -> int:
        return self.n_value_tokens + 2

    @property
    def pad(self) -> int:
        return self.n_value_tokens + 3

    @property
    def vocab_size(self) -> int:
        return self.n_value_tokens + 4

    @property
    def block_len(self) -> int:
        return self.n_concepts + 2

    @property
    def max_len(self) -> int:
        """L_max = (C+2)*O_max + 1."""
        return self.block_len * self.max_objects + 1

    # -- objects ------------------------------------------------------------------
    @property
    def values_per_concept(self) -> list[int]:
        return [self.n_values] * self.n_concepts

    def object_values(self, ids: torch.Tensor) -> torch.Tensor:
        """Object ids ``[...]`` -> concept values ``[..., C]`` (v_c = id // V**c mod V;
        :func:`bindcore.ids.object_values`)."""
        return _ids.object_values(ids, self.values_per_concept)

    def object_ids(self, values: torch.Tensor) -> torch.Tensor:
        """Concept values ``[..., C]`` -> object ids ``[...]`` (:func:`bindcore.ids.object_ids`)."""
        if values.shape[-1] != self.n_concepts:
            raise ValueError(f"last dimension must be C={self.n_concepts}, got {values.shape[-1]}")
        return _ids.object_ids(values, self.values_per_concept)

    def value_tokens(self, values: torch.Tensor) -> torch.Tensor:
        """Concept values ``[..., C]`` -> value tokens t(c, v) = c*V + v."""
        offsets = torch.arange(self.n_concepts, device=values.device) * self.n_values
        return values + offsets

    # -- tokenization -------------------------------------------------------------
    def tokenize_scenes(self, scenes: torch.Tensor) -> torch.Tensor:
        """Scenes ``[B, O_max]`` (ids, -1 padded) -> tokens ``[B, L_max]``."""
        if scenes.dim() != 2 or scenes.shape[1] != self.max_objects:
            raise ValueError(f"scenes must be [B, {self.max_objects}], got {tuple(scenes.shape)}")
        b, o = scenes.shape
        present = scenes >= 0
        counts = present.sum(1)
        if bool((counts == 0).any()):
            raise ValueError("every scene needs at least one object")
        vals = self.object_values(scenes.clamp(min=0))  # [B, O, C]
        blocks = torch.empty(b, o, self.block_len, dtype=torch.long, device=scenes.device)
        blocks[..., 0] = self.soo
        blocks[..., 1:-1] = self.value_tokens(vals)
        blocks[..., -1] = self.eoo
        tokens = torch.full((b, self.max_len), self.pad, dtype=torch.long, device=scenes.device)
        tokens[:, :-1] = blocks.reshape(b, -1)
        pos = torch.arange(self.max_len, device=scenes.device)
        end = counts * self.block_len  # index of EOS
        tokens = torch.where(pos < end[:, None], tokens, torch.full_like(tokens, self.pad))
        tokens.scatter_(1, end[:, None], self.eos)
        return tokens

    def detokenize_scenes(self, tokens: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`tokenize_scenes` for well-formed sequences."""
        b = tokens.shape[0]
        body = tokens[:, :-1].reshape(b, self.max_objects, self.block_len)
        present = body[..., 0] == self.soo
        offsets = torch.arange(self.n_concepts, device=tokens.device) * self.n_values
        vals = (body[..., 1:-1] - offsets).clamp(min=0)
        ids = self.object_ids(vals)
        return torch.where(present, ids, torch.full_like(ids, EMPTY))

    def object_query_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """Object queries ``[SOO, values, EOO, EOS]`` -> ``[K, C+3]`` (no padding needed)."""
        k = ids.shape[0]
        out = torch.empty(k, self.block_len + 1, dtype=torch.long, device=ids.device)
        out[:, 0] = self.soo
        out[:, 1:-2] = self.value_tokens(self.object_values(ids))
        out[:, -2] = self.eoo
        out[:, -1] = self.eos
        return out

    def concept_query_tokens(self, value_tokens: torch.Tensor) -> torch.Tensor:
        """Concept queries ``[t(c,v), EOS]`` -> ``[K, 2]``."""
        eos = torch.full_like(value_tokens, self.eos)
        return torch.stack([value_tokens, eos], dim=1)

    def pad_to_max_len(self, tokens: torch.Tensor) -> torch.Tensor:
        """Right-pad query tokens with PAD to L_max, the released code's layout."""
        extra = self.max_len - tokens.shape[1]
        if extra < 0:
            raise ValueError(f"sequence longer than L_max={self.max_len}")
        return torch.nn.functional.pad(tokens, (0, extra), value=self.pad)

    # -- labels -------------------------------------------------------------------
    def concept_multi_hot(self, scenes: torch.Tensor) -> torch.Tensor:
        """Scenes ``[B, O]`` -> bool ``[B, C*V]``: which value tokens occur in each scene."""
        b = scenes.shape[0]
        present = scenes >= 0
        toks = self.value_tokens(self.object_values(scenes.clamp(min=0)))  # [B, O, C]
        hot = torch.zeros(b, self.n_value_tokens + 1, dtype=torch.bool, device=scenes.device)
        dump = torch.full_like(toks, self.n_value_tokens)  # absent objects write to a spare column
        hot.scatter_(1, torch.where(present[..., None], toks, dump).reshape(b, -1), True)
        return hot[:, :-1]


def object_labels(scenes: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """bool ``[B, K]``: candidate object k is one of scene b's objects (exact match)."""
    return (scenes[:, :, None] == candidates[None, None, :]).any(1)


def n_objects_in(scenes: torch.Tensor) -> torch.Tensor:
    return (scenes >= 0).sum(1)


# -- coverage split ----------------------------------------------------------------
@dataclass(frozen=True)
class ObjectSplit:
    """Training and held-out objects; held-out ones are ``val`` (for any choice a search makes) and
    ``test`` (read once, for the record)."""

    train: torch.Tensor
    val: torch.Tensor
    test: torch.Tensor

    @property
    def heldout(self) -> torch.Tensor:
        """Every held-out object (validation and test), sorted."""
        return torch.cat([self.val, self.test]).sort().values

    @property
    def coverage(self) -> float:
        return len(self.train) / (len(self.train) + len(self.val) + len(self.test))


def coverage_split(space: SceneSpace, coverage: float, seed: int = 0) -> ObjectSplit:
    """Seeded split: the first floor(coverage*|O|) of a permutation train; a second permutation gives
    half the rest (rounded down) to ``val``, the others to ``test``. ``ValueError`` if coverage is
    outside (0, 1) or leaves a side empty."""
    if not 0.0 < coverage < 1.0:
        raise ValueError(f"coverage must lie in (0, 1), got {coverage}")
    n = space.n_objects
    n_train = int(n * coverage)
    if n_train < 1:
        raise ValueError(f"coverage={coverage} of {n} objects leaves no training object")
    if n_train >= n:
        raise ValueError(f"coverage={coverage} of {n} objects leaves no held-out object")
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(n, generator=gen)
    heldout = perm[n_train:]
    heldout = heldout[torch.randperm(len(heldout), generator=gen)]
    n_val = len(heldout) // 2
    return ObjectSplit(train=perm[:n_train].sort().values, val=heldout[:n_val].sort().values,
                       test=heldout[n_val:].sort().values)


# -- sampling ------------------------------------------------------------------------
def sample_scenes(
    allowed: torch.Tensor,
    n_scenes: int,
    max_objects: int,
    generator: torch.Generator,
    n_objects: int | None = None,
) -> torch.Tensor:
    """Scenes ``[n, max_objects]`` of objects drawn i.i.d. from ``allowed``, on the generator's device;
    the object count is uniform on 1..max_objects unless ``n_objects`` fixes it."""
    device = generator.device
    allowed = allowed.to(device)
    if n_objects is None:
        counts = torch.randint(1, max_objects + 1, (n_scenes,), generator=generator, device=device)
    else:
        if not 1 <= n_objects <= max_objects:
            raise ValueError(f"n_objects must lie in 1..{max_objects}, got {n_objects}")
        counts = torch.full((n_scenes,), n_objects, device=device)
    picks = torch.randint(0, len(allowed), (n_scenes, max_objects), generator=generator, device=device)
    objs = allowed[picks]
    slot = torch.arange(max_objects, device=device)
    return torch.where(slot[None, :] < counts[:, None], objs, torch.full_like(objs, EMPTY))


def attribute_swaps(
    space: SceneSpace, scenes: torch.Tensor, generator: torch.Generator, per_scene: int = 1
) -> torch.Tensor:
    """Attribute-swap hard negatives (B.3): ids of one object per scene with >= 2 objects (per
    repetition), one random concept overwritten with another object's value."""
    device = scenes.device
    counts = n_objects_in(scenes)
    multi = counts >= 2
    if per_scene < 1 or not bool(multi.any()):
        return torch.empty(0, dtype=torch.long, device=device)
    sc = scenes[multi].repeat(per_scene, 1)
    cnt = counts[multi].repeat(per_scene)
    m = sc.shape[0]
    i1 = (torch.rand(m, generator=generator, device=device) * cnt).long()
    # a second, distinct slot: shift by 1..cnt-1
    shift = 1 + (torch.rand(m, generator=generator, device=device) * (cnt - 1)).long()
    i2 = (i1 + shift) % cnt
    c = torch.randint(0, space.n_concepts, (m,), generator=generator, device=device)
    rows = torch.arange(m, device=device)
    v1 = space.object_values(sc[rows, i1])
    v2 = space.object_values(sc[rows, i2])
    v1[rows, c] = v2[rows, c]
    return space.object_ids(v1)


def isin(values: torch.Tensor, pool: torch.Tensor) -> torch.Tensor:
    return torch.isin(values, pool.to(values.device))
