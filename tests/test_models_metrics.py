"""Dual encoder equivalence with a plain PyTorch transformer; metric and baseline."""

import math

import pytest
import torch
from torch import nn

from bindcore.analysis.metrics import (
    bag_of_concepts_accuracy,
    bag_of_concepts_scores,
    expected_bag_of_concepts_two_objects,
    strict_accuracy,
    strict_correct,
    strict_correct_at,
)
from bindcore.controlled.models import (
    DualEncoder,
    Encoder,
    EncoderConfig,
    cosine_logits,
    sinusoidal_positions,
)
from bindcore.controlled.scenes import EMPTY, SceneSpace, object_labels, sample_scenes


def reference_encoder(enc: Encoder) -> nn.Module:
    """The same weights in torch.nn.TransformerEncoderLayer (norm_first, GELU, no dropout)."""
    c = enc.cfg
    layers = nn.ModuleList(
        nn.TransformerEncoderLayer(c.d_model, c.n_heads, c.d_ff, dropout=0.0, activation="gelu",
                                   batch_first=True, norm_first=True)
        for _ in range(c.n_layers)
    )
    for ref, blk in zip(layers, enc.blocks):
        ref.self_attn.in_proj_weight.data.copy_(blk.qkv.weight)
        ref.self_attn.in_proj_bias.data.copy_(blk.qkv.bias)
        ref.self_attn.out_proj.weight.data.copy_(blk.proj.weight)
        ref.self_attn.out_proj.bias.data.copy_(blk.proj.bias)
        ref.linear1.weight.data.copy_(blk.ff1.weight)
        ref.linear1.bias.data.copy_(blk.ff1.bias)
        ref.linear2.weight.data.copy_(blk.ff2.weight)
        ref.linear2.bias.data.copy_(blk.ff2.bias)
        for a, b in ((ref.norm1, blk.ln1), (ref.norm2, blk.ln2)):
            a.weight.data.copy_(b.weight)
            a.bias.data.copy_(b.bias)

    def forward(tokens):
        pad = tokens == c.pad_id
        x = enc.embed(tokens) + sinusoidal_positions(c.max_len, c.d_model)[: tokens.shape[1]]
        for layer in layers:
            x = layer(x, src_key_padding_mask=pad)
        last = (~pad).sum(1) - 1
        return enc.head(x[torch.arange(len(x)), last])

    return forward


@pytest.mark.parametrize("layers", [1, 3])
def test_encoder_equals_a_plain_transformer_with_eos_pooling(layers):
    torch.manual_seed(0)
    s = SceneSpace(2, 6, 3)
    enc = Encoder(EncoderConfig(s.vocab_size, s.max_len, s.pad, d_model=32, n_heads=4, n_layers=layers,
                                d_ff=48, d_out=8)).eval()
    scenes = sample_scenes(torch.arange(s.n_objects), 40, 3, torch.Generator().manual_seed(0))
    ref = reference_encoder(enc)
    with torch.no_grad():
        for toks in (s.tokenize_scenes(scenes), s.pad_to_max_len(s.object_query_tokens(torch.arange(10))),
                     s.pad_to_max_len(s.concept_query_tokens(torch.arange(12)))):
            assert torch.allclose(enc(toks), ref(toks), atol=1e-5)
            # trailing padding does not change the output
            short = toks[:, : int((toks != s.pad).sum(1).max())]
            assert torch.allclose(enc(short), enc(toks), atol=1e-6)


def test_encoder_gradients_match_reference():
    torch.manual_seed(1)
    s = SceneSpace(2, 4, 2)
    enc = Encoder(EncoderConfig(s.vocab_size, s.max_len, s.pad, d_model=16, n_heads=2, n_layers=2, d_ff=32, d_out=4))
    ref = reference_encoder(enc)
    toks = s.tokenize_scenes(sample_scenes(torch.arange(16), 30, 2, torch.Generator().manual_seed(2)))
    g1 = torch.autograd.grad(enc(toks).square().sum(), enc.embed.weight)[0]
    g2 = torch.autograd.grad(ref(toks).square().sum(), enc.embed.weight)[0]
    assert torch.allclose(g1, g2, atol=1e-5)


def test_xavier_init_and_independent_encoders():
    s = SceneSpace(2, 10, 2)
    m = DualEncoder(EncoderConfig(s.vocab_size, s.max_len, s.pad, d_model=64, n_heads=4, n_layers=2, d_ff=128, d_out=16))
    w = m.scene.blocks[0].ff1.weight
    bound = math.sqrt(6 / (w.shape[0] + w.shape[1]))
    assert w.abs().max() <= bound
    assert not torch.equal(m.scene.embed.weight, m.query.embed.weight)
    assert m.logit_scale(10.0).item() == pytest.approx(math.exp(1.15))
    m.tau.data.fill_(5.0)
    assert m.logit_scale(10.0).item() == 10.0


def test_encoder_config_errors_name_the_field():
    with pytest.raises(ValueError, match="n_heads"):
        EncoderConfig(10, 9, 9, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="d_out"):
        EncoderConfig(10, 9, 9, d_out=0)


def test_cosine_logits():
    z = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    e = torch.tensor([[3.0, 0.0], [1.0, 1.0]])
    lg = cosine_logits(z, e, 2.0)
    assert torch.allclose(lg, torch.tensor([[2.0, 2 / math.sqrt(2)], [0.0, 2 / math.sqrt(2)]]), atol=1e-5)


# --- strict criterion ------------------------------------------------------------
def test_strict_rule_on_hand_made_logits():
    scores = torch.tensor([
        [3.0, 2.0, 1.0, 0.0],   # positives {0,1} above negatives: correct
        [3.0, 1.0, 2.0, 0.0],   # positive 1 below negative 2: wrong
        [2.0, 2.0, 2.0, 0.0],   # tie between a positive and a negative: wrong
        [1.0, 1.0, 1.0, 1.0],   # all positive, no negative: correct
        [5.0, 0.0, 0.0, 0.0],   # no positive: not scored
    ])
    pos = torch.tensor([
        [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0],
    ], dtype=torch.bool)
    assert strict_correct(scores, pos).tolist() == [True, False, False, True, False]
    assert strict_accuracy(scores, pos) == pytest.approx(2 / 4)
    with pytest.raises(ValueError):
        strict_correct(scores, pos[:, :2])


def test_strict_rule_by_index_equals_the_mask_rule_with_ties_and_repeats():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 4, (500, 6), generator=gen).float()  # coarse: many ties
    scores[0, 1] = float("nan")
    idx = torch.randint(0, 6, (500, 2), generator=gen)  # a row may name one column twice
    pos = torch.zeros_like(scores, dtype=torch.bool).scatter_(1, idx, True)
    expected = strict_correct(scores, pos)
    assert expected.any() and not expected.all()
    assert torch.equal(strict_correct_at(scores.clone(), idx), expected)


def test_bag_of_concepts_oracle_on_hand_made_scenes():
    s = SceneSpace(2, 3, 2)
    obj = lambda a, b: a + 3 * b  # noqa: E731
    scenes = torch.tensor([
        [obj(0, 0), EMPTY],        # single object: always recognised
        [obj(0, 0), obj(1, 1)],    # differ in both concepts: (0,1) and (1,0) tie -> fails
        [obj(0, 0), obj(0, 1)],    # share colour: only the two present objects score 2 -> passes
        [obj(2, 2), obj(2, 2)],    # the same object twice: passes
    ])
    cands = torch.arange(9)
    scores = bag_of_concepts_scores(s, scenes, cands)
    assert scores[1, obj(0, 1)] == scores[1, obj(0, 0)] == 2
    ok = strict_correct(scores, object_labels(scenes, cands))
    assert ok.tolist() == [True, False, True, True]


@pytest.mark.parametrize("v,c", [(3, 2), (10, 2), (4, 3)])
def test_bag_of_concepts_matches_its_analytic_rate(v, c):
    s = SceneSpace(c, v, 2)
    gen = torch.Generator().manual_seed(0)
    scenes = sample_scenes(torch.arange(s.n_objects), 20000, 2, gen, n_objects=2)
    acc = bag_of_concepts_accuracy(s, scenes, torch.arange(s.n_objects))
    assert acc == pytest.approx(expected_bag_of_concepts_two_objects(v, c), abs=0.015)


def test_additive_r2_separates_sums_from_products():
    from bindcore.analysis.metrics import additive_r2

    s = SceneSpace(2, 6, 1)
    vals = s.object_values(torch.arange(s.n_objects))
    gen = torch.Generator().manual_seed(0)
    u, w = torch.randn(6, 32, generator=gen), torch.randn(6, 32, generator=gen)
    additive = u[vals[:, 0]] + w[vals[:, 1]]
    product = u[vals[:, 0]] * w[vals[:, 1]]
    assert additive_r2(additive, vals, 6) == pytest.approx(1.0, abs=1e-9)
    assert additive_r2(product, vals, 6) < 0.35  # only the fitted means survive
    mixed = additive + 0.5 * product
    assert additive_r2(product, vals, 6) < additive_r2(mixed, vals, 6) < 1.0


def test_caption_retrieval_levels():
    from bindcore.analysis.metrics import caption_retrieval

    objects = torch.tensor([[[0, 0], [1, 1]], [[1, 1], [0, 0]], [[0, 1], [1, 0]], [[2, 2], [-1, -1]]])
    eye = torch.eye(4)
    r = caption_retrieval(eye, eye, objects)
    assert r["exact scene"] == 1.0 and r["same objects, any order"] == 1.0 and r["same bag of concepts"] == 1.0
    # every image retrieves caption 1 ({(1,1),(0,0)}): scene 0 has the same objects, scene 2 only the same bag
    text = torch.zeros(4, 4)
    text[1, 0] = 1.0
    img = torch.ones(4, 4)
    r = caption_retrieval(img, text, objects)
    assert r["exact scene"] == 0.25 and r["same objects, any order"] == 0.5 and r["same bag of concepts"] == 0.75
    assert r["chance (exact scene)"] == 0.25



@pytest.mark.parametrize("n_layers,n_heads,max_objects", [(1, 1, 1), (2, 4, 2), (3, 2, 3)])
def test_the_fast_encoder_equals_the_chapters_reference(n_layers, n_heads, max_objects):
    """The encoder every run trains (PAD columns dropped, feed-forward on real tokens only,
    the last layer at EOS only) gives the reference dual encoder's embeddings and
    gradients (§5.2's page defines the reference: bindcore/controlled/reference.py), on
    scenes of every object count and on concept and object queries."""
    from bindcore.controlled.models import DualEncoder
    from bindcore.controlled.recipes import recipe
    from bindcore.controlled.reference import ReferenceDualEncoder

    cfg = recipe("smoke", n_values=6, max_objects=max_objects, n_layers=n_layers, n_heads=n_heads, d_model=16)
    torch.manual_seed(0)
    fast = DualEncoder(cfg.encoder_config())
    reference = ReferenceDualEncoder(cfg.encoder_config())
    reference.load_state_dict(fast.state_dict())
    space = cfg.space
    scenes = sample_scenes(cfg.split.train, 64, max_objects, torch.Generator().manual_seed(1))
    queries = torch.cat([space.pad_to_max_len(space.object_query_tokens(scenes[:, 0])),
                         space.pad_to_max_len(space.concept_query_tokens(torch.arange(space.n_value_tokens)))])
    for tower, tokens in (("scene", space.tokenize_scenes(scenes)), ("query", queries)):
        a, b = getattr(fast, tower)(tokens), getattr(reference, tower)(tokens)
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
        (a * torch.linspace(-1, 1, a.shape[1])).sum().backward()
        (b * torch.linspace(-1, 1, b.shape[1])).sum().backward()
    grads = [(p.grad, q.grad) for p, q in zip(fast.parameters(), reference.parameters()) if p.grad is not None]
    scale = max(float(g.abs().max()) for g, _ in grads)
    assert max(float((g - h).abs().max()) for g, h in grads) < 1e-4 * scale
    # and the fast path is no copy of the reference: a changed weight moves only the reference's output
    with torch.no_grad():
        reference.scene.blocks[0].ff1.weight.mul_(1.5)
    tokens = space.tokenize_scenes(scenes)
    assert not torch.allclose(fast.scene(tokens), reference.scene(tokens), atol=1e-4)
