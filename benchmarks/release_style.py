"""A training step written the way the authors' released trainer works, as the
baseline of ``bench_training.py``.

Written from the description in ``reference-spec.md`` §2-5 (no code of the release
is copied): scenes are sampled, tokenized and labelled with per-scene Python loops
over lists and sets; every sequence (scenes and queries) is padded to L_max; the
encoders are stacks of ``torch.nn.TransformerEncoderLayer`` (pre-LN, GELU, PAD keys
masked) pooled at the last non-PAD position; concept and object queries go through
the query encoder in two separate calls. The loss and optimiser are the same as
bindcore's, so the two steps do the same science and differ only in implementation.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn

from bindcore.controlled.models import sinusoidal_positions


class ReleaseStyleEncoder(nn.Module):
    def __init__(self, vocab: int, max_len: int, pad: int, d_model: int, heads: int, layers: int, d_ff: int,
                 d_out: int) -> None:
        super().__init__()
        self.pad = pad
        self.embed = nn.Embedding(vocab, d_model)
        self.register_buffer("pe", sinusoidal_positions(max_len, d_model), persistent=False)
        layer = nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.layers = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, d_out)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pad = tokens == self.pad
        x = self.embed(tokens) + self.pe[: tokens.shape[1]]
        x = self.layers(x, src_key_padding_mask=pad)
        last = (~pad).sum(1) - 1
        return self.head(x[torch.arange(len(x), device=x.device), last])


class ReleaseStyleStep:
    """One optimiser step on a fresh minibatch, release style."""

    def __init__(self, n_concepts: int, n_values: int, max_objects: int, allowed: list[int], d_model: int,
                 heads: int, layers: int, d_ff: int, d_out: int, lr: float, batch: int, device: str = "cpu",
                 seed: int = 0, cap: int = 64, logit_cap: float = 10.0) -> None:
        self.C, self.V, self.O = n_concepts, n_values, max_objects
        self.soo, self.eoo, self.eos, self.pad = (n_concepts * n_values + i for i in range(4))
        self.L = (n_concepts + 2) * max_objects + 1
        self.allowed = [self._tuple(i) for i in allowed]
        self.allowed_set = set(self.allowed)
        self.batch, self.cap, self.logit_cap, self.device = batch, cap, logit_cap, device
        self.rng = random.Random(seed)
        torch.manual_seed(seed)
        vocab = n_concepts * n_values + 4
        self.scene = ReleaseStyleEncoder(vocab, self.L, self.pad, d_model, heads, layers, d_ff, d_out).to(device)
        self.query = ReleaseStyleEncoder(vocab, self.L, self.pad, d_model, heads, layers, d_ff, d_out).to(device)
        self.tau = nn.Parameter(torch.tensor(1.15, device=device))
        params = list(self.scene.parameters()) + list(self.query.parameters()) + [self.tau]
        self.opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.1)

    def _tuple(self, obj_id: int) -> tuple[int, ...]:
        return tuple((obj_id // self.V**c) % self.V for c in range(self.C))

    # -- the Python data pipeline ------------------------------------------------------
    def sample(self) -> tuple[list[list[tuple]], list[list[int]]]:
        scenes, tokens = [], []
        for _ in range(self.batch):
            n = self.rng.randint(1, self.O)
            objs = [self.rng.choice(self.allowed) for _ in range(n)]
            seq = []
            for o in objs:
                seq += [self.soo] + [c * self.V + v for c, v in enumerate(o)] + [self.eoo]
            seq.append(self.eos)
            seq += [self.pad] * (self.L - len(seq))
            scenes.append(objs)
            tokens.append(seq)
        return scenes, tokens

    def concept_queries(self, scenes):
        present = sorted({c * self.V + v for objs in scenes for o in objs for c, v in enumerate(o)})
        if len(present) > self.cap:
            present = self.rng.sample(present, self.cap)
        seqs = [[t, self.eos] + [self.pad] * (self.L - 2) for t in present]
        labels = []
        for objs in scenes:
            toks = {c * self.V + v for o in objs for c, v in enumerate(o)}
            labels.append([1.0 if t in toks else 0.0 for t in present])
        return seqs, labels

    def object_queries(self, scenes):
        positives = sorted({o for objs in scenes for o in objs})
        if len(positives) > self.cap:
            positives = self.rng.sample(positives, self.cap)
        queries = set(positives)
        for objs in scenes:
            if len(objs) >= 2:
                i1, i2 = self.rng.sample(range(len(objs)), 2)
                c = self.rng.randrange(self.C)
                new = list(objs[i1])
                new[c] = objs[i2][c]
                if tuple(new) in self.allowed_set:
                    queries.add(tuple(new))
        queries = sorted(queries)
        seqs = [[self.soo] + [c * self.V + v for c, v in enumerate(q)] + [self.eoo, self.eos]
                + [self.pad] * (self.L - self.C - 3) for q in queries]
        labels = [[1.0 if q in objs else 0.0 for q in queries] for objs in scenes]
        return seqs, labels

    def data(self):
        scenes, tokens = self.sample()
        cq, cl = self.concept_queries(scenes)
        oq, ol = self.object_queries(scenes)
        t = lambda x, dt=torch.long: torch.tensor(x, dtype=dt, device=self.device)  # noqa: E731
        return t(tokens), t(cq), t(cl, torch.float32), t(oq), t(ol, torch.float32)

    # -- the model step -----------------------------------------------------------------
    @staticmethod
    def _loss(logits, y):
        n = y.sum(1)
        active = n > 0
        p = y / (n[:, None] + 1e-10)
        return -(p * F.log_softmax(logits, 1)).sum(1)[active].mean()

    def step(self, batch=None) -> float:
        tokens, cq, cl, oq, ol = batch if batch is not None else self.data()
        z = F.normalize(self.scene(tokens), dim=-1, eps=1e-6)
        scale = self.tau.exp().clamp(max=self.logit_cap)
        ec = F.normalize(self.query(cq), dim=-1, eps=1e-6)
        eo = F.normalize(self.query(oq), dim=-1, eps=1e-6)
        loss = self._loss(scale * z @ ec.T, cl) + self._loss(scale * z @ eo.T, ol)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return float(loss.detach())


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


__all__ = ["ReleaseStyleStep", "ReleaseStyleEncoder", "parameter_count"]
