"""Appendix E: rendered scenes, the pixel dual encoder, its training runs and chapter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import torch

from bindcore.analysis.probes import controlled_binding_data
from bindcore.controlled.pixel_models import PixelEncoder, PixelEncoderConfig
from bindcore.controlled.pixels import PIXEL_STORE_KIND, PixelTrainConfig
from bindcore.controlled.recipes import pixel_recipe, recipe, recipe_differences
from bindcore.controlled.runs import load_model, train
from bindcore.controlled.scenes import SceneSpace, sample_scenes
from bindcore.controlled.training import TrainConfig, run_training
from bindcore.data.pixels import (
    LEVELS,
    Layout,
    PixelSpec,
    palette,
    palette_separation,
    render_scenes,
    visible_masks,
)
from bindcore.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]

TINY = dict(n_values=4, coverage=0.75, image_size=16, side=6, border=1, patch_size=4, stem_channels=8,
            stem_layers=1, scene_layers=1, d_model=16, n_heads=2, n_layers=1, d_ff=32, d_out=8, steps=12,
            batch_size=16, lr=3e-3, eval_every=6, eval_scenes=16, checkpoint_every=4)



def read_objects(space: SceneSpace, images: torch.Tensor, layout: Layout, spec: PixelSpec) -> torch.Tensor:
    """``[B, O, C]`` concept values read back from the pixels and the layout (nearest palette
    colour to the visible medians); -1 for absent slots."""
    fill_m, border_m = visible_masks(layout, spec.image_size, spec.border)
    colours = palette(space.n_values, images.device)
    b, o = layout.side.shape
    out = torch.full((b, o, space.n_concepts), -1, dtype=torch.long, device=images.device)
    for slot in range(o):
        for c, mask in ((0, fill_m[:, slot]), (1, border_m[:, slot])):
            for i in range(b):  # per-image medians: clearer than fast
                if layout.side[i, slot] == 0 or not bool(mask[i].any()):
                    continue
                med = images[i][:, mask[i]].median(dim=1).values  # [3]
                out[i, slot, c] = int((colours - med).norm(dim=1).argmin())
        if space.n_concepts == 3:
            sides = spec.sides(space, images.device)
            present = layout.side[:, slot] > 0
            nearest = (layout.side[:, slot, None] - sides[None]).abs().argmin(1)
            out[:, slot, 2] = torch.where(present, nearest, out[:, slot, 2])
    return out

def tiny(**kw) -> PixelTrainConfig:
    return PixelTrainConfig(**{**TINY, **kw})


def labels(space: SceneSpace, scenes: torch.Tensor) -> torch.Tensor:
    vals = space.object_values(scenes.clamp(min=0))
    return torch.where((scenes >= 0)[..., None], vals, torch.full_like(vals, -1))


# --------------------------------------------------------------------------- renderer


@pytest.mark.parametrize("n_values", [4, 8, 10, 27, 50, 64])
def test_palette_rule_keeps_values_apart(n_values):
    p = palette(n_values)
    assert p.shape == (n_values, 3) and len(torch.unique(p, dim=0)) == n_values
    k = next(k for k in range(1, 10) if k**3 >= n_values)
    assert palette_separation(n_values) >= 1 / k - 1e-6  # between colours and from the black background
    assert (p > 0).all() and (p <= 1).all()


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n_values,n_concepts", [(8, 2), (50, 2), (5, 3)])
def test_rendered_pixels_decode_back_to_the_labels(level, n_values, n_concepts):
    space = SceneSpace(n_concepts, n_values, 3 if level == "overlap" else 2)
    # fills of at least 5 x 5 pixels: under 20 % speckle a median of the visible pixels reads them
    spec = PixelSpec(image_size=40, side=13 if n_concepts == 3 else 11, border=2, min_side=9, level=level)
    gen = torch.Generator().manual_seed(3)
    scenes = sample_scenes(torch.arange(space.n_objects), 200, space.max_objects, gen)
    images, layout = render_scenes(space, scenes, spec, gen, return_layout=True)
    assert images.shape == (200, 3, 40, 40) and images.min() >= 0 and images.max() <= 1
    assert torch.equal(read_objects(space, images, layout, spec), labels(space, scenes))
    if level == "clean":  # exact palette colours on a black background
        colours = torch.cat([palette(n_values), torch.zeros(1, 3)])
        px = images.permute(0, 2, 3, 1).reshape(-1, 3)
        assert (px[:, None, :] == colours[None]).all(-1).any(1).all()


def test_layout_rules():
    space = SceneSpace(2, 8, 3)
    gen = torch.Generator().manual_seed(0)
    scenes = sample_scenes(torch.arange(64), 500, 3, gen, n_objects=3)
    for level in LEVELS:
        spec = PixelSpec(image_size=40, side=10, border=2, level=level)
        _, lay = render_scenes(space, scenes, spec, gen, return_layout=True)
        c2 = 2 * lay.top_left + lay.side[..., None]
        d = (c2[:, :, None] - c2[:, None]).abs().amax(-1) / 2  # Chebyshev distance of centres
        off = ~torch.eye(3, dtype=torch.bool)
        assert (lay.top_left >= 0).all() and (lay.top_left + lay.side[..., None] <= 40).all()
        if level == "overlap":
            fill, border = visible_masks(lay, 40, 2)
            assert (fill.sum((-1, -2)) >= 18).all() and (border.sum((-1, -2)) >= 32).all()  # half of 36 and 64
            assert (d[:, off] < 10).float().mean() > 0.1  # and overlaps do happen
        else:
            assert (d[:, off] >= 11).all()  # side + gap: no overlap, no contact


def test_rendering_is_deterministic_per_seed():
    space = SceneSpace(2, 8, 2)
    scenes = sample_scenes(torch.arange(64), 64, 2, torch.Generator().manual_seed(0))
    spec = PixelSpec(level="overlap")
    a = render_scenes(space, scenes, spec, torch.Generator().manual_seed(5))
    b = render_scenes(space, scenes, spec, torch.Generator().manual_seed(5))
    c = render_scenes(space, scenes, spec, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_bad_specs_and_configs_name_the_field():
    space = SceneSpace(2, 8, 2)
    gen = torch.Generator()
    with pytest.raises(ValueError, match="level"):
        render_scenes(space, torch.zeros(1, 2, dtype=torch.long), PixelSpec(level="fog"), gen)
    with pytest.raises(ValueError, match="image_size"):
        render_scenes(space, torch.zeros(1, 2, dtype=torch.long), PixelSpec(image_size=16, side=10), gen)
    for field, value in [("level", "fog"), ("patch_size", 5), ("image_size", 12), ("border", 0), ("side", 2),
                         ("scene_layers", 0), ("speckle", 1.5), ("pixel_noise", -1.0)]:
        with pytest.raises(ValueError, match=f"PixelTrainConfig.{field}"):
            tiny(**{field: value})
    with pytest.raises(ValueError, match="min_side"):
        tiny(n_concepts=3, n_values=4, min_side=5)  # sides 5..6 cannot give 4 distinct sizes
    with pytest.raises(ValueError, match="n_concepts"):
        tiny(n_concepts=1)


# --------------------------------------------------------------------------- model and config


def test_pixel_tower_shapes_and_patch_order():
    cfg = PixelEncoderConfig(image_size=16, patch_size=4, stem_channels=8, d_model=16, n_heads=2, n_layers=2,
                             d_ff=32, d_out=8)
    enc = PixelEncoder(cfg)
    x = torch.rand(5, 3, 16, 16)
    assert enc(x).shape == (5, 8) and enc.tokens(x).shape == (5, 17, 16)
    # patch tokens equal a patchifying convolution's (kernel = stride = patch) outputs, row-major
    conv = torch.nn.Conv2d(3, 8, 4, stride=4)
    with torch.no_grad():
        conv.weight.copy_(enc.stem[0].weight.view(8, 3, 4, 4))
        conv.bias.copy_(enc.stem[0].bias)
        ref = conv(2 * x - 1).flatten(2).transpose(1, 2)
        got = enc.stem[0](
            (2 * x - 1).reshape(5, 3, 4, 4, 4, 4).permute(0, 2, 4, 1, 3, 5).reshape(5, 16, 48))
    assert torch.allclose(got, ref, atol=1e-5)
    with pytest.raises(ValueError, match="images"):
        enc(torch.rand(2, 3, 8, 8))


def test_config_round_trips_and_cli_style_recipes():
    cfg = tiny(level="speckle")
    d = json.loads(json.dumps(cfg.to_dict()))
    assert d["scene_input"] == "pixels"
    assert TrainConfig.from_dict(d) == cfg and isinstance(TrainConfig.from_dict(d), PixelTrainConfig)
    assert recipe("smoke", scene_input="pixels", level="overlap") == pixel_recipe("smoke", level="overlap")
    # the token config is untouched: no pixel field, scene_input=tokens accepted and dropped
    assert "scene_input" not in recipe("quick").to_dict()
    assert TrainConfig.from_dict({**recipe("quick").to_dict(), "scene_input": "tokens"}) == recipe("quick")
    with pytest.raises(ValueError, match="scene_input"):
        recipe("quick", scene_input="voxels")
    for profile in ("smoke", "quick", "colab", "paper"):
        pixel_recipe(profile)  # valid
    # colab: the quick pixel recipe with more steps and evaluation scenes (no scale-recipe near misses)
    assert set(recipe_differences("colab", "quick", scene_input="pixels")) == {"steps", "eval_scenes"}


def test_pixel_fields_are_typed_like_the_token_fields():
    from bindcore.sweep import grid

    cfg = tiny(image_size="1.6e1", speckle="0.1", level=" speckle ", scene_layers=1.0)
    assert (cfg.image_size, cfg.speckle, cfg.level, cfg.scene_layers) == (16, 0.1, "speckle", 1)
    assert cfg == tiny(level="speckle", speckle=0.1)  # the same config, the same hash
    with pytest.raises(ValueError, match="PixelTrainConfig.image_size"):
        tiny(image_size="16.5")
    with pytest.raises(ValueError, match="PixelTrainConfig field"):
        tiny().with_(colour="red")
    assert [c.level for c in grid(tiny(), level=["clean", "overlap"])] == ["clean", "overlap"]
    assert recipe("smoke", scene_input="pixels", image_size="16") == pixel_recipe("smoke")


# --------------------------------------------------------------------------- training


def test_no_held_out_object_is_ever_rendered_in_a_training_batch(monkeypatch):
    cfg = tiny(n_values=6, coverage=0.5, steps=20, swaps_per_scene=2, candidates="batch")
    held = set(cfg.split.test.tolist())
    seen: list[torch.Tensor] = []
    original = PixelTrainConfig.embed_training_scenes

    def spy(self, model, scenes, gen):
        seen.append(scenes.clone())
        return original(self, model, scenes, gen)

    monkeypatch.setattr(PixelTrainConfig, "embed_training_scenes", spy)
    run_training(cfg, device="cpu", progress=False)
    assert len(seen) == cfg.steps
    rendered = set(torch.cat(seen)[torch.cat(seen) >= 0].tolist())
    assert rendered and not held & rendered
    assert rendered <= set(cfg.split.train.tolist())


def test_pixel_training_is_deterministic_per_seed():
    cfg = tiny()
    a = run_training(cfg, device="cpu", progress=False)
    b = run_training(cfg, device="cpu", progress=False)
    c = run_training(cfg.with_(seed=1), device="cpu", progress=False)
    assert a.metrics == b.metrics
    for (k, x), y in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(x, y), k
    assert any(not torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), c.model.state_dict().values()))
    for key in ("test_object_2", "test_swap_pair", "task_object_2", "test_concept_1"):
        assert key in a.metrics
    assert {"test_object_1", "test_object_2", "ceiling_test_object_2", "val_object_2", "ceiling_val_object_2",
            "release_test_pooled", "ceiling_release_test_object_2"} <= set(a.baseline)
    assert not any(k.startswith(("train_", "task_")) for k in a.baseline)  # the bag is read on held-out scenes


def test_a_killed_pixel_run_resumes_exactly(tmp_path):
    """Kill a `bindcore train` process once its first checkpoint exists, train again
    (resuming from the store), and compare with an uninterrupted run."""
    cfg = tiny(steps=150, eval_every=50, checkpoint_every=5)
    cfg_path = tmp_path / "config.json"
    cfg_path.write_text(json.dumps(cfg.to_dict()))
    killed_store = tmp_path / "killed"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "bindcore", "train", "--config", str(cfg_path), "--threads", "1",
                             "--results", str(killed_store), "--quiet"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ckpt = killed_store / PIXEL_STORE_KIND / ResultStore(killed_store).local_dir(PIXEL_STORE_KIND, cfg.to_dict()).name
    deadline = time.time() + 120
    while not (ckpt / "checkpoint.pt").exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (ckpt / "checkpoint.pt").exists() and not (ckpt / "result.json").exists(), "the run was not killed mid-way"
    step = torch.load(ckpt / "checkpoint.pt", weights_only=True)["step"]
    assert 0 < step < cfg.steps
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the killed process: the same reductions, bit for bit
    try:
        resumed = train(cfg, store=ResultStore(killed_store, published=None), device="cpu", progress=False)
        whole = train(cfg, store=ResultStore(tmp_path / "whole", published=None), device="cpu", progress=False)
    finally:
        torch.set_num_threads(threads)
    assert resumed["steps_run"] == cfg.steps - step and whole["steps_run"] == cfg.steps
    assert resumed["metrics"] == whole["metrics"] and resumed["history"] == whole["history"]
    a, b = load_model(resumed).state_dict(), load_model(whole).state_dict()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_stored_pixel_run_gives_binding_data(tmp_path):
    rec = train(tiny(), store=ResultStore(tmp_path, published=None), device="cpu", progress=False)
    assert Path(rec["path"]).parent.name == PIXEL_STORE_KIND.name
    one = controlled_binding_data(rec, max_objects=16)
    two = controlled_binding_data(rec, max_objects=16, renders=2)
    assert one.objects.shape == (256, 2, 2) and one.embeddings.shape == (256, 8)
    assert one.object_probe.shape == (16, 8) and one.name.startswith("pixels, clean")
    assert not (one.embeddings == two.embeddings).all()  # averaged over two renderings
    again = controlled_binding_data(rec, max_objects=16, renders=2)
    assert (again.embeddings == two.embeddings).all()  # seeded renderings


def test_token_binding_data_refuses_renders(tmp_path):
    cfg = recipe("smoke", steps=4, eval_every=2, checkpoint_every=2)
    rec = train(cfg, store=ResultStore(tmp_path, published=None), device="cpu", progress=False)
    with pytest.raises(ValueError, match="seed"):
        controlled_binding_data(rec, max_objects=4, renders=2)


def test_cli_trains_a_pixel_run(tmp_path, capsys):
    from bindcore.cli import main

    assert main(["train", "--profile", "smoke", "--set", "scene_input=pixels", "--set", "steps=6",
                 "--set", "eval_every=3", "--set", "level=speckle", "--results", str(tmp_path), "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (tmp_path / PIXEL_STORE_KIND / out["hash"] / "result.json").exists()
    assert main(["train", "--profile", "smoke", "--set", "scene_input=pixels", "--set", "level=fog",
                 "--results", str(tmp_path)]) == 2


# --------------------------------------------------------------------------- chapter


@pytest.mark.slow
def test_pixel_chapter_executes_on_smoke(tmp_path, monkeypatch):
    from bindcore.book import build as book

    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "results"))
    out = book.execute_notebook("e_pixel_encoders", "smoke", tmp_path / "executed")
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert outputs and not [o for o in outputs if o.output_type == "error"]
    assert list((tmp_path / "results" / PIXEL_STORE_KIND).glob("*/result.json"))


def test_claims_follow_the_numbers():
    """Appendix E's rules read swap pairs and the bag ceiling of the same scenes, and say
    one of STATUSES (no swap-pair threshold of 0.1, no "partly shown")."""
    import pandas as pd

    from bindcore.analysis.approximators.labels import FAMILY_LABELS
    from bindcore.verdicts.core import CEILING, STATUSES
    from bindcore.verdicts.pixels import d7_contrast, pixel_claims

    summary = pd.DataFrame([
        {"level": "clean", "coverage": 0.8, "held-out objects, strict": 0.8, "swap pairs": 0.5,
         "swap pairs, twins of held-out objects": float("nan"), "bag floor": 0.3, "bag ceiling": 0.6,
         "held-out concepts": 0.9, "training task (training objects)": 1.0},
        {"level": "overlap", "coverage": 0.8, "held-out objects, strict": 0.9, "swap pairs": 0.0,
         "swap pairs, twins of held-out objects": float("nan"), "bag floor": 0.3, "bag ceiling": 0.95,
         "held-out concepts": 0.9, "training task (training objects)": 1.0}])
    rows = []
    for model, objs in (("pixels, clean, C=2 V=8 coverage=0.8", {4: 0.1, 16: 0.8, 256: 0.82}),
                        ("pixels, overlap, C=2 V=8 coverage=0.8", {4: 0.0, 16: 0.01, 256: 0.02})):
        rows += [{"model": model, "family": FAMILY_LABELS["mlp"], "width": w, "fraction": 0.8, "heldout_object": v,
                  "heldout_concept": 1.0} for w, v in objs.items()]
        rows += [{"model": model, "family": FAMILY_LABELS[f], "width": None, "fraction": 0.8, "heldout_object": v,
                  "heldout_concept": 1.0}
                 for f, v in (("additive", 0.2), ("global_product", 0.8 if "clean" in model else 0.1),
                              ("sum_global_product", 0.5))]
    approx = pd.DataFrame(rows).assign(**{CEILING: 0.6})
    claims = pixel_claims(summary, approx, "quick")
    assert set(claims["verdict"]) <= set(STATUSES) and {"null", "margin"} <= set(claims.columns)
    # the number beside strict recognition is the ceiling the rule reads, named (it showed the floor)
    assert claims["ours"].iloc[0] == "coverage 0.8: swap pairs 0.50, strict 0.80 vs bag ceiling 0.60"
    verdict = {(r["claim"].split()[0], r["level"]): r["verdict"] for r in claims.to_dict("records")}
    assert verdict[("held-out", "clean")] == "shown"
    assert verdict[("held-out", "overlap")] == "not shown"  # no swap pair: a bag could do this
    assert verdict[("shallow,", "clean")] == "shown"  # width 16 reaches 90 % of the best
    assert verdict[("shallow,", "overlap")] == "not shown"  # approximators fail
    assert verdict[("the", "clean")] == "shown" and verdict[("the", "overlap")] == "not shown"
    ceiling = pd.DataFrame([{"model": "pixels, clean, C=2 V=8 coverage=0.8", "fraction": 0.8, "heldout_object": 1.2},
                            {"model": "pixels, overlap, C=2 V=8 coverage=0.8", "fraction": 0.8,
                             "heldout_object": 0.65}])
    claims = pixel_claims(summary, approx, "quick", ceiling)
    verdict = {(r["claim"].split()[0], r["level"]): r["verdict"] for r in claims.to_dict("records")}
    assert verdict[("shallow,", "clean")] == "not shown"  # 0.82 < 0.75 x 1.2: small, but not close
    assert verdict[("the", "clean")] == "not shown"
    # the model's own 0.65 does not clear the bag ceiling 0.6 by 0.1: no binding to approximate
    assert verdict[("shallow,", "overlap")] == verdict[("the", "overlap")] == "cannot be tested at this profile"
    pre = pd.DataFrame([{"encoder": "MiniLM", "family": FAMILY_LABELS["global_product"], "fraction": 0.9,
                         "heldout_object": 0.05, "heldout_concept": 0.9}])
    d7 = d7_contrast(pre, approx, "quick")
    assert list(d7["global product: held-out objects"]) == [0.05, 0.8, 0.1]
    assert list(d7["additive: held-out objects"])[1:] == [0.2, 0.2]
    # "near zero for CLIP and DINOv2" is not set beside MiniLM
    assert d7["evidence"].iloc[0] == "substitute" and d7["paper"].iloc[0].startswith("–")


def test_pixel_claims_on_their_null():
    """A bag of concepts: strict at the bag ceiling (0.62), no swap pair, approximators at
    the ceiling: nothing is shown (the old rules passed swap pairs 0.1 and called an MLP
    at the ceiling 'partly shown')."""
    import pandas as pd

    from bindcore.analysis.approximators.labels import FAMILY_LABELS
    from bindcore.verdicts.core import CEILING
    from bindcore.verdicts.pixels import pixel_claims

    summary = pd.DataFrame([{"level": "clean", "coverage": 0.8, "held-out objects, strict": 0.62, "swap pairs": 0.1,
                             "bag floor": 0.23, "bag ceiling": 0.62}])
    model = "pixels, clean, C=2 V=8 coverage=0.8"
    approx = pd.DataFrame([{"model": model, "family": FAMILY_LABELS[f], "width": w, "fraction": 0.8,
                            "heldout_object": 0.62, "heldout_concept": 1.0}
                           for f, w in (("mlp", 4), ("mlp", 256), ("additive", None), ("global_product", None))]
                          ).assign(**{CEILING: 0.62})
    assert set(pixel_claims(summary, approx, "quick")["verdict"]) == {"not shown"}
