"""CUDA correctness, where a GPU exists: skipped without CUDA (`pytest -m gpu`).

* A few hundred training steps on CUDA in fp32 and in bf16 autocast reach what the same
  config reaches on the CPU in fp32, within TOLERANCE on the training-object metrics and
  on the final loss. The runs cannot agree step for step: a CUDA generator draws other
  minibatches than a CPU one from the same seed, and bf16 rounds.
* A stack of runs on CUDA (the one model mapped over stacked parameters by torch.func)
  reaches what each run reaches alone there, within TOLERANCE.
* The encoders run on CUDA and give the CPU's embeddings (cosine > COSINE).
* A paper-recipe step is timed against the release-style step on the GPU (printed,
  never asserted: speed belongs to benchmarks/).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from bindcore.controlled.recipes import recipe
from bindcore.controlled.training import run_training, train_runs

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here")]

ROOT = Path(__file__).resolve().parents[1]
STEPS = 300
TOLERANCE = 0.1  # absolute, on recognition rates in [0, 1]
LOSS_TOLERANCE = 0.25  # relative, on the final training loss
COSINE = 0.999


def _train(device: str, precision: str):
    cfg = recipe("quick", n_values=6, steps=STEPS, eval_every=100, precision=precision)
    out = run_training(cfg, device=device, progress=False)
    return out.metrics, out.history


@pytest.fixture(scope="module")
def cpu_fp32():
    return _train("cpu", "fp32")


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cuda_training_matches_cpu_fp32(cpu_fp32, precision):
    ref, ref_history = cpu_fp32
    got, history = _train("cuda", precision)
    for key in ("train_object_2", "train_concept_2", "test_concept_2"):
        if key in ref:
            assert abs(got[key] - ref[key]) <= TOLERANCE, f"{precision} {key}: cuda {got[key]:.3f} cpu {ref[key]:.3f}"
    loss = [h["object_loss"] for h in history if "object_loss" in h][-1]
    ref_loss = [h["object_loss"] for h in ref_history if "object_loss" in h][-1]
    assert abs(loss - ref_loss) <= LOSS_TOLERANCE * abs(ref_loss), f"{precision}: loss {loss:.3f} cpu {ref_loss:.3f}"


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_stack_on_cuda_matches_its_lone_runs(precision):
    cfgs = [recipe("quick", n_values=6, steps=STEPS, eval_every=100, precision=precision, seed=s) for s in (0, 1)]
    for cfg, out in zip(cfgs, train_runs(cfgs, device="cuda", progress=False)):
        ref = run_training(cfg, device="cuda", progress=False).metrics
        for key in ("train_object_2", "train_concept_2", "val_object_2"):
            assert abs(out.metrics[key] - ref[key]) <= TOLERANCE, f"seed {cfg.seed} {precision} {key}"


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_encoders_on_cuda_match_cpu():
    from bindcore import encoders as E

    texts = ["a red cube and a blue sphere", "a green cylinder"]
    images = [np.full((224, 224, 3), v, dtype=np.uint8) for v in (0, 128, 255)]
    for make in (lambda d: E.RandomInitClipEncoder("ViT-B-32-quickgelu", seed=0, device=d),
                 lambda d: E.SentenceTransformerEncoder(device=d)):
        cpu, cuda = make("cpu"), make("cuda")
        assert cuda.device.type == "cuda"
        assert _cosines(cpu.embed_texts(texts, progress=False), cuda.embed_texts(texts, progress=False)).min() > COSINE
        if "image" in cuda.modalities:
            got = _cosines(cpu.embed_images(images, progress=False), cuda.embed_images(images, progress=False))
            assert got.min() > COSINE
    pretrained = E.default_encoders(device="cuda")
    print("pretrained CLIP reachable:", pretrained.pretrained_clip, "-", pretrained.note)


def test_time_paper_step_against_release_style_step():
    """Prints the benchmark's table on the GPU (bf16 and fp32); asserts only that it ran."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_training.py"), "--device", "cuda",
                          "--steps", "20"], capture_output=True, text=True, check=True)
    print(out.stdout)
    assert "faster than the release-style step" in out.stdout
