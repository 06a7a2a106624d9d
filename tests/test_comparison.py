"""The report's three-way comparison (bindcore.book.comparison): every paper number and
claim in exactly one group, like for like only with the same data, weights and protocol."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from bindcore.analysis import geometry_sets as G
from bindcore.book import comparison as CMP
from bindcore.book.profiles import chapter_parameters
from bindcore.paper import PAPER_EDITING, paper_items
from bindcore.store import ResultStore

VPC = [4, 3]


def planted(dataset: str, encoder: str, source: str, pretrained: bool, seed: int = 0) -> G.EmbeddingSet:
    rng = np.random.default_rng(seed)
    objs = np.array(list(itertools.product(range(VPC[0]), range(VPC[1]))))
    u = rng.normal(size=(len(objs), 16))
    pairs = np.array([(i, j) for i in range(len(objs)) for j in range(len(objs)) if i != j])
    Z = u[pairs[:, 0]] + u[pairs[:, 1]] + 0.01 * rng.normal(size=(len(pairs), 16))
    return G.EmbeddingSet(dataset, encoder, source, pretrained, Z, np.stack([objs[pairs[:, 0]], objs[pairs[:, 1]]], 1),
                          VPC, ["colour", "shape"], [list("abcd"), list("xyz")], u, objs[:, None, :])


def build(sets, tmp_path, geometry=None) -> CMP.Build:
    store = ResultStore(tmp_path, published=None)
    geometry = geometry or {**chapter_parameters("geometry", "smoke"), "ks": [1.0], "max_edits": 60}
    t51 = pd.DataFrame([{"encoder": "all-MiniLM-L6-v2 (pretrained text encoder)", "family": f, "width": w,
                         "fraction": fr, "heldout_concept": 0.9, "heldout_object": 0.1}
                        for f, w in (("MLP", 16), ("global product", None)) for fr in (0.4, 0.8)])
    empty = pd.DataFrame(columns=["weights", "dataset", "encoder", "occlusion"])
    return CMP.Build("smoke", geometry, sets, [G.decomposition(s, geometry, store) for s in sets],
                     [G.attribution(s, geometry, store) for s in sets], [G.editing(s, geometry, store) for s in sets],
                     t51, chapter_parameters("pretrained_complexity", "smoke"), empty, empty, empty,
                     chapter_parameters("additional", "smoke"), chapter_parameters("binding_generalization", "smoke"))


def test_offline_build_every_item_once_and_no_image_number_beside_a_control(tmp_path):
    sets = [planted("captions 4x4", "all-MiniLM-L6-v2", "text", True),
            planted("captions 4x4", "ViT-B/32 (random init)", "text", False, 1),
            planted("CLEVR-2D", "ViT-B/32 (random init)", "image", False, 2)]
    t = CMP.comparison_table(build(sets, tmp_path))
    items = paper_items()
    assert len(t) == len(items) and set(t["group"]) <= set(CMP.GROUPS)
    assert list(zip(t["section"], t["metric"])) == [(i.section, i.metric) for i in items]
    counts = CMP.group_counts(t)
    assert sum(counts.values()) == len(items)
    line = CMP.summary_line(t, "smoke")
    assert all(f"**{n}**" in line for n in counts.values())
    # CLIP's image numbers are never set beside the random-init control
    image = t[t["data"].isin(["CLEVR", "CLEVR-2D", "PUG:SPARE"]) & (t["model"] != "–")]
    assert (image["group"] == CMP.NOT_RUN).all() and image["command"].str.len().gt(0).all()
    # text rows: MiniLM named as the substitute of CLIP's text tower
    text = t[(t["data"] == "text") & (t["model"] == "CLIP ViT-B/32")]
    assert (text["group"] == CMP.SUBSTITUTE).all() and text["what differs, or why not run"].str.contains("MiniLM").all()
    assert (t[t["group"] == CMP.NOT_RUN]["what differs, or why not run"].str.len() > 0).all()


def test_like_for_like_needs_the_authors_data_clip_and_the_release_probes(tmp_path, monkeypatch):
    clip = planted(CMP.AUTHORS_CLEVR, "CLIP ViT-B/32 (openai)", "image", True, 3)
    clip.Z_single = clip.objects_single = None  # the release's folders hold no single-object images
    # the release's probe settings, scaled down for the test (its 10,000 epochs take minutes)
    monkeypatch.setitem(CMP.RELEASE, "probe epochs", 100)
    monkeypatch.setitem(CMP.RELEASE, "probe lr", 0.1)
    release = {**chapter_parameters("geometry", "smoke"), "ks": [1.0], "max_edits": 60, "probe_epochs": 100,
               "probe_lr": 0.1}
    t = CMP.comparison_table(build([clip], tmp_path, release))
    clevr = t[(t["data"] == "CLEVR") & (t["section"] == "§4.1 reconstruction")].set_index("metric")
    assert (clevr["group"] == CMP.LIKE).all()
    d2 = t[(t["data"] == "CLEVR") & (t["section"] == "D.2 editing (k = 1)")].set_index("metric")
    # D.2 compares on the release's "different" edits with its exact-order hit
    df = G.editing(clip, release, ResultStore(tmp_path, published=None))
    want = df[(df["bank"] == "obj-avg") & (df["k"] == 1.0) & (df["case"] == "different")]["retrieval_exact"].iloc[0]
    assert d2.loc["retrieval (obj-avg)", "ours"] == f"{want:.2f}"
    assert d2.loc["retrieval (obj-avg)", "group"] == CMP.LIKE
    assert d2.loc["retrieval (single)", "group"] == CMP.NOT_RUN  # no single-object images in the folders
    # §4.2 is never like for like: the components are fitted in closed form
    assert (t[(t["section"] == "§4.2 / D.1 subtraction") & (t["data"] == "CLEVR")]["group"] == CMP.SUBSTITUTE).all()
    # the quick probes are a protocol substitute
    t2 = CMP.comparison_table(build([clip], tmp_path / "q", {**release, "probe_epochs": 50}))
    probing = t2[(t2["data"] == "CLEVR") & (t2["metric"] == "probing")]
    assert probing["group"].tolist() == [CMP.SUBSTITUTE] and "50 epochs" in probing.iloc[0]["what differs, or why not run"]


def test_paper_editing_numbers_are_all_listed():
    n = sum(v is not None for row in PAPER_EDITING.values() for vals in row.values() for v in vals)
    assert sum(i.section.startswith("D.2") for i in paper_items()) == n


def test_a_bad_group_is_refused():
    with pytest.raises(ValueError, match="group"):
        CMP._row(paper_items()[0], "maybe")
