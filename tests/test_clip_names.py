"""Every CLIP number names its exact model: the paper's ViT-B/32 is open_clip's ViT-B-32-quickgelu
with the pretrained tag openai (the release's clip.load("ViT-B/32"): OpenAI's weights, QuickGELU),
and ViT-B-32, its GELU twin, gives other numbers from the same checkpoint. The chapters' tables and
prose name it beside each of the paper's CLIP numbers; an encoder's own name says its model and tag
(tests/test_encoders.py: the choice refuses an ambiguous name)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from bindcore.analysis import geometry_sets as G
from bindcore.book import tables as T
from bindcore.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
PAPER_CLIP = "CLIP ViT-B/32 (open_clip ViT-B-32-quickgelu / openai)"
VPC = [4, 3]
PARAMS = {"probe_epochs": 100, "probe_lr": 0.05, "ks": [1.0], "max_edits": 20, "permutations": 1}


def planted(source: str, pretrained: bool, dataset: str = "planted", seed: int = 0) -> G.EmbeddingSet:
    rng = np.random.default_rng(seed)
    objs = np.array(list(itertools.product(range(VPC[0]), range(VPC[1]))))
    u = rng.normal(size=(len(objs), 16))
    pairs = np.array([(i, j) for i in range(len(objs)) for j in range(len(objs)) if i != j])
    z = u[pairs[:, 0]] + u[pairs[:, 1]] + 0.01 * rng.normal(size=(len(pairs), 16))
    objects = np.stack([objs[pairs[:, 0]], objs[pairs[:, 1]]], 1)
    encoder = ("CLIP ViT-B/32 (open_clip ViT-B-32-quickgelu / openai)" if pretrained
               else "ViT-B/32 (random init)")
    return G.EmbeddingSet(dataset, encoder, source, pretrained, z, objects, VPC, ["colour", "shape"],
                          [list("abcd"), list("xyz")], u, objs[:, None, :])


def test_the_paper_clip_is_the_model_the_release_loads():
    from bindcore.paper import CLIP as named

    assert named == PAPER_CLIP


def test_every_table_row_with_a_paper_clip_number_names_the_model(tmp_path):
    store = ResultStore(tmp_path, published=None)
    sets = [planted("text", True), planted("image", True, "CLEVR-like 3-D", 1), planted("image", False, "CLEVR-2D", 2)]
    decomposition = T.decomposition_table(sets, [G.decomposition(s, PARAMS, store=store) for s in sets])
    attribution = T.attribution_table(sets, [G.attribution(s, PARAMS, store=store) for s in sets])
    editing = T.editing_table(sets, [G.editing(s, PARAMS, store=store) for s in sets])
    for name, table in (("decomposition", decomposition), ("attribution", attribution), ("editing", editing)):
        paper = [c for c in table.columns if c.startswith("paper") and c != "paper: model"]
        shown = table[paper].ne("–").any(axis=1)
        assert shown.any(), name
        assert table.loc[shown, "paper: model"].str.contains(PAPER_CLIP, regex=False).all(), name  # was "CLIP ViT-B/32"
        assert table.loc[~shown, "paper: model"].isin(["–", "random init"]).all(), name


@pytest.mark.parametrize("chapter", ["04_1_geometry", "04_2_component_attribution", "d_additional",
                                     "05_1_pretrained_binding_complexity"])
def test_a_chapter_names_the_model_of_the_paper_clip_numbers_it_quotes(chapter):
    """A paragraph that quotes the paper's numbers (glued ``paper_*`` values) about CLIP names its open_clip
    model and tag."""
    source = (ROOT / "notebooks" / f"{chapter}.py").read_text()
    quoting = [p for p in re.split(r"\n#\s*\n", source) if "CLIP" in p  # the random-init control's are not CLIP's
               and any("random" not in g for g in re.findall(r"\{glue:text\}`(paper_\w+)`", p))]
    assert quoting, f"{chapter}: no paragraph quotes the paper's CLIP numbers"
    for paragraph in quoting:
        assert "`ViT-B-32-quickgelu` / `openai`" in paragraph, paragraph[:300]
