# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Reproduction report
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bindcore-book/binding-concepts/blob/main/notebooks/reproduction_report.ipynb)
#
# This page sets the paper's numbers and claims beside ours, chapter by chapter, and
# lists every way in which this book deviates from the paper
# {cite:p}`uselis2026binding` and from the authors' released code. The tables of
# numbers are computed when the page is built, from the stored results of the chapters'
# runs on the same profile (nothing is typed in by hand); the profile is named in every
# table. `quick` numbers come from small CPU runs and are to be compared with the paper
# qualitatively: direction and ordering of effects, not digits. Numbers the paper reports
# only through secondary reading notes are marked as such.

# %% tags=["hide-input"]
import subprocess
import sys

if "google.colab" in sys.modules:  # install bindcore on Colab only
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "bindcore @ git+https://github.com/bindcore-book/binding-concepts"], check=True)

# %% tags=["parameters"]
profile = "quick"
workers = None  # parallel CPU runs if a stored result is missing
device = None

# %% tags=["hide-input"]
import numpy as np
import pandas as pd
import torch

from bindcore.analysis.metrics import bag_of_concepts_accuracy, expected_bag_of_concepts_two_objects
from bindcore.book.chapter import note_stored, ran_with, start_chapter
from bindcore.book.claims import claims_table
from bindcore.controlled.recipes import recipe, recipe_table
from bindcore.controlled.scenes import SceneSpace, sample_scenes
from bindcore.sweep import (
    ablation_configs,
    generalization_configs,
    generalization_summary,
    results_table,
    run_sweep,
)

start_chapter(None, globals())
print(f"numbers on this page: profile {profile!r}")

# %% [markdown]
# ## §3 Formalisation
#
# The paper defines binding through concept and object recognition; it reports no number
# for the bag-of-concepts baseline. Ours, for the setting of §5.2 ($C = 2$), with the full
# object vocabulary as candidates:

# %% tags=["hide-input", "full-width"]
rows = []
for v in (10, 20, 50):
    sp = SceneSpace(2, v, 2)
    sc = sample_scenes(torch.arange(sp.n_objects), 20_000, 2, torch.Generator().manual_seed(0), n_objects=2)
    rows.append({"quantity": f"bag-of-concepts oracle, two-object scenes, V={v}",
                 "paper": "not reported",
                 "ours (sampled)": round(bag_of_concepts_accuracy(sp, sc, torch.arange(sp.n_objects)), 3),
                 "ours (formula)": round(expected_bag_of_concepts_two_objects(v, 2), 3)})
pd.DataFrame(rows)

# %% [markdown]
# ## §4.1, §4.2 and D.2 Geometry of scene embeddings
#
# From the chapters' stored analyses. Each row names its dataset and encoder; the
# paper's numbers stand only beside rows of the same kind of weights (pretrained beside
# CLIP, random init beside the paper's random-init row); without the Hugging Face Hub
# the pretrained text encoder is MiniLM and every image row is a random-weights
# control.

# %% tags=["hide-input", "full-width"]
from bindcore.analysis.geometry_sets import attribution, decomposition, editing
from bindcore.book.chapter import geometry_sets
from bindcore.book.tables import attribution_table, decomposition_table, editing_table

P4, source4 = ran_with("04_1_geometry", "geometry", profile)
P42, source42 = ran_with("04_2_component_attribution", "geometry", profile)
print("parameters:", source4, "|", source42)
sets4, note4 = geometry_sets(profile, P4, workers=workers, device=device)
print(note4)
dec4, edi4 = ([fn(s, P4) for s in sets4] for fn in (decomposition, editing))
att4 = [attribution(s, P42) for s in sets4]
display(decomposition_table(sets4, dec4).assign(profile=profile))
display(attribution_table(sets4, att4).round(3).assign(profile=profile))
display(editing_table(sets4, edi4, k=1.0).round(3).assign(profile=profile))

# %% [markdown]
# Every number the paper gives for §4.1, §4.2 and D.2, one row each, with ours beside
# it where this build has an embedding set of the same data and kind of weights:

# %% tags=["hide-input", "full-width"]
from bindcore.book.tables import paper_section4_table

with pd.option_context("display.max_rows", 200):
    display(paper_section4_table(sets4, dec4, att4, edi4).round(3).assign(profile=profile))

# %% [markdown]
# ## §5.1 Binding complexity of pretrained encoders
#
# From the chapter's stored approximator sweeps (the chapter names the encoders it could
# load; without the Hugging Face Hub that is MiniLM and a random-init CLIP text tower,
# not CLIP):

# %% tags=["hide-input", "full-width"]
from bindcore.analysis.approximators import FAMILIES
from bindcore.analysis.embedding_sets import pretrained_binding
from bindcore.book.chapter import controlled_datasets, pretrained_encoders
from bindcore.book.claims import form_claims, pretrained_claims, width_claims
from bindcore.book.tables import controlled_sweeps, pretrained_sweeps

P51, source51 = ran_with("05_1_pretrained_binding_complexity", "pretrained_complexity", profile)
print("parameters:", source51)
encoders, encoder_note = pretrained_encoders()
binding, probe_table = pretrained_binding(P51, encoders)
pretrained_claims(pretrained_sweeps(P51, binding, device=device), profile).round(3)

# %% [markdown]
# ## §5.2 Binding generalization
#
# The claims of §5.2 and what the chapter's sweep shows (from the stored runs):

# %% tags=["hide-input", "full-width"]
P, source = ran_with("05_2_binding_generalization", "binding_generalization", profile)
print("parameters:", source)
base = recipe(profile) if P["steps"] is None else recipe(profile, steps=P["steps"])
records = run_sweep(generalization_configs(base, P), workers=workers, device=device, progress=False)
note_stored(records)
table = results_table(records)
summary = generalization_summary(table)
claims_table(summary, profile)

# %% tags=["hide-input", "full-width"]
top = table[table["coverage"] == max(P["coverages"])]
top[["objects", "coverage", "test_object_2", "boc_test_object_2", "test_concept_2", "train_object_2",
     "minutes", "device", "source"]].round(3).assign(profile=profile)

# %% [markdown]
# The two ablations of the chapter (largest coverage, first object space):

# %% tags=["hide-input", "full-width"]
if P["ablations"]:
    variants = ablation_configs(base, P)
    ab_runs = run_sweep(list(variants.values()), workers=workers, device=device, progress=False)
    note_stored(ab_runs, what="ablation runs")
    ab = results_table(ab_runs)
    ab.insert(0, "variant", list(variants))
    display(ab[["variant", "objects", "coverage", "test_object_2", "boc_test_object_2", "test_concept_2"]]
            .round(3).assign(profile=profile))

# %% [markdown]
# ## §5.3 and §5.4 Binding functions of the controlled models
#
# The generalizing controlled models of §5.2 (largest coverage of each object space):
# how wide an MLP must be (§5.3), and additive vs multiplicative families (§5.4).

# %% tags=["hide-input", "full-width"]
P53, source53 = ran_with("05_3_binding_function_complexity", "controlled_complexity", profile)
P54, source54 = ran_with("05_4_functional_form", "controlled_complexity", profile)
print("parameters:", source53, "|", source54)
runs53, datasets53 = controlled_datasets(profile, P53, workers=workers, device=device)
datasets54 = datasets53 if P54["max_objects"] == P53["max_objects"] else controlled_datasets(
    profile, P54, workers=workers, device=device)[1]
display(width_claims(controlled_sweeps(datasets53, P53, ["mlp"], widths=P53["widths"], device=device),
                     profile).round(3))
form_claims(controlled_sweeps(datasets54, P54, list(FAMILIES), widths={"mlp": [max(P54["widths"])]}, device=device),
            profile).round(3)

# %% [markdown]
# ## Appendix C.1 Datasets
#
# Scene and object counts of the datasets this book makes, beside the paper's (the
# images of CLEVR and PUG:SPARE are the authors'; see the chapter for loading them):

# %% tags=["hide-input", "full-width"]
from bindcore.data import make_clevr2d, make_text_space
from bindcore.paper import PAPER_DATASETS


def dataset_row(name, ds, paper):
    ids = ds.object_ids()
    return {"dataset": name, "paper": paper, "ours: scenes": len(ds),
            "ours: distinct objects": len(np.unique(ids[ids >= 0])),
            "ours: values per concept": " x ".join(map(str, ds.values_per_concept))}


pd.DataFrame([
    dataset_row("CLEVR-2D", make_clevr2d(size=32), PAPER_DATASETS["CLEVR-2D"]),
    dataset_row("captions (C.3)", make_text_space(10, 10), PAPER_DATASETS["captions (C.3)"]),
    dataset_row("captions (released code)", make_text_space(), PAPER_DATASETS["captions (released code)"]),
])

# %% [markdown]
# ## Appendix D.3 and D.5: three objects and MDS
#
# From the appendix chapter's stored analyses (three-object CLEVR-like scenes with and
# without occlusion; MDS of the §4 embedding sets' object components):

# %% tags=["hide-input", "full-width"]
from bindcore.analysis.embedding_sets import three_object_sets
from bindcore.analysis.geometry_sets import mds_analysis
from bindcore.book.chapter import geometry_encoders
from bindcore.book.claims import additional_claims
from bindcore.book.tables import mds_table, three_object_table

PD, sourceD = ran_with("d_additional", "additional", profile)
print("parameters:", sourceD)
three_sets = three_object_sets(PD, geometry_encoders()[0]["image"])
grid = mds_table(sets4, [mds_analysis(s, PD) for s in sets4])
with pd.option_context("display.max_colwidth", None):
    display(additional_claims(three_object_table(three_sets, PD), grid, profile))

# %% [markdown]
# ## Deviations from the paper
#
# | where | the paper | this book | why |
# |---|---|---|---|
# | §4, §5.1 encoders | CLIP ViT-B/32 (and DINOv2, ViT-L/14) | pretrained CLIP where its weights are reachable; otherwise the pretrained all-MiniLM-L6-v2 sentence encoder for captions and CLIP's architecture with random weights (both towers) as the control; every table row names its encoder | the package index is this build's only network; MiniLM installs with its weights |
# | §4 images | the authors' CLEVR (Blender), CLEVR-2D and PUG:SPARE images | CLEVR-2D drawn and CLEVR-like 3-D scenes ray-traced by `bindcore.data`; PUG:SPARE only when its folder is given | the images are not public; the substitutes keep the labels, colours and layout |
# | §4 / §5.1 caption space | 20 x 20 adjective-noun objects | `quick`: 10 x 10 (9,900 two-object captions); `paper` profile: 20 x 20 | CPU budget |
# | §5.1 approximators (`quick`) | Adam, lr in {1e-2, 1e-3, 1e-4}, batch 4,096, 10,000 steps, widths to 4,096 | lr 1e-2, batch 512, 1,000 steps, widths 64 and 512 (§5.3 / §5.4: lr in {1e-2, 1e-3}, 1,500 steps, widths 4-1,024); the `paper` profile has the paper's protocol | CPU budget; learning rates are chosen on validation scenes of training objects |
# | §5.2 training recipe (`quick`) | Table 9 hyperparameters (not available to us; the released code's README recipe is our `paper` profile) | a small, fast recipe (table below): small encoders, higher learning rate, short warmup, logit-scale cap 100, and the concept loss joining only once training objects are recognised in two-object scenes | binding appears within CPU-minutes, while the released recipe needs hours per run on a CPU. Tokens, encoders, pooling, similarity, loss form and metric are unchanged |
# | §5.2 object spaces | coverages 0.1–0.9, \|O\| up to 125,000 | `quick`: two small object spaces and four coverages (the chapter's parameters); `paper` profile: coverages 0.1–0.9 and \|O\| up to 2,500 | CPU budget |
# | §5.2 metric | candidates as in the released code (batch positives and swaps) | the full object vocabulary (all $V^C$ objects) and all $C \cdot V$ concept values | stricter: a scene must beat every other object, held-out and training ones |
# | §5.2 evaluation scenes | fresh test batches every evaluation | a fixed, seeded set of held-out scenes per object count | comparable numbers across steps and runs |
# | §5.2 seeds | not stated | one seed per point on `quick` | CPU budget; `seeds` is a chapter parameter |
#
# The recipe of this build's profile, where it differs from the `paper` recipe:

# %% tags=["hide-input", "full-width"]
recipe_table(profile)

# %% [markdown]
# ## Deviations from, and bugs in, the released code
#
# | component | released code | this book | effect |
# |---|---|---|---|
# | held-out objects during training | attribute-swap negatives that are held-out objects are kept as training queries (`train_probe_all_objects=True`) | never used; `heldout_as_negatives=True` reproduces the release | the release's setting drives held-out object accuracy to (near) zero: the query encoder learns to push every held-out object away; see the ablation above |
# | model selection | a "best" checkpoint chosen on the test (held-out) stream | final-step numbers only | no selection on the test objects |
# | seeding | only the object split is seeded | model init and every minibatch seeded; runs are reproducible on a CPU and resume exactly | – |
# | logit-scale cap | 10 in training, 100 at test | one cap per recipe (10 on `paper`, 100 on `quick`); the metric is scale-free | ranking unaffected |
# | data pipeline | per-scene Python loops | vectorised torch on the training device | the Python pipeline's cost per batch disappears (measured in `benchmarks/bench_training.py`) |
# | encoder forward | `nn.TransformerEncoderLayer` on every position padded to L_max | the same function: queries trimmed to their length, feed-forward only on non-PAD tokens, last layer only at EOS, identical scenes of a batch encoded once (tested equal to the PyTorch layer) | a faster step at the same sizes; the speedup is measured, not asserted, in `benchmarks/bench_training.py` |
# | CLIP-like encoder variant | pools at index (#PAD − 1), not at EOS | not offered; the default (bidirectional, EOS-pooled) encoder is used, as in the paper's description | – |
# | defaults | CLI defaults differ from the README command (d_out 3 vs 64, O_max 1 vs 2, V 10 vs 20, ...) | the README command's values are the `paper` profile | – |
# | CLEVR images | Blender renders, shared outside the repository | CLEVR-like scenes ray-traced by `bindcore.data.clevr3d` (same labels, colours and layout; simpler lights and materials); the authors' folder loads with `load_folder` | a substitute, named as such wherever it is used |
# | CLEVR `labels.csv` | shape names of indices 1 and 2 swapped (1 "sphere", 2 "cylinder"; the images show cylinder and sphere) | indices are read, names are ours | captions describe what the image shows |
# | random-init control | `initialize_parameters()` re-initialises only the text tower of a ViT CLIP: its "random" image embeddings are pretrained ones | both towers built without weights under a fixed seed | a true random-weights control |
# | OpenAI CLIP weights | OpenAI's `clip` package | open_clip with the QuickGELU variant for OpenAI-style tags, chosen automatically | loading them into the GELU model would silently change the embeddings |
# | image loader | missing or corrupt images skipped silently, misaligning rows and labels | an error naming the file, checked before any embedding | – |
# | linear probes (C.2) | full-batch Adam, lr 1e-2, 10,000 epochs, cosine annealing | the `paper` profile: lr 1e-2, 10,000 epochs (constant lr); `quick`: lr 0.1 for 500-1,000 epochs | CPU budget; at lr 1e-2 a probe of a few thousand epochs is far from converged on the caption embeddings, so `quick` trades epochs for a larger step (`probe_lr`, `probe_epochs` are chapter parameters) |
# | §4 retrieval hit | exact ordered tuple of the intended scene (edits) | any order of the intended objects (paper C.2); the exact-order number is kept as `retrieval_exact` | position-independent components cannot tell the two orders apart |
# | §4 component fits | AdamW on centred embeddings, 99 % / 1 % split; the averaging estimators of the paper's table never computed as R² | averages, per-slot averages and closed-form least squares (normal equations); R² on all scenes and on a 20 % held-out split | exact and seconds instead of 10,000 optimiser steps |
# | D.2 edits | scenes whose objects share a shape skipped; one target colour per (scene, slot) | every valid colour replacement, a seeded sample of `max_edits`; shared-concept scenes reported separately | – |
# | approximator model selection | the best evaluation step chosen on the *test* (held-out objects) split | the learning rate (and tree settings) chosen on validation scenes carved from the training objects; numbers are final-step or validation-selected | held-out numbers are not optimistically biased |
# | approximator product init | product-factor tables drawn from N(0, 1) | 1 + 0.1 N(0, 1) (`product_init="normal"` reproduces the release) | on synthetic product data the release's init fits training scenes but reaches held-out R² < 0; ours ~0.97 (see `bindcore.analysis.approximators`) |
# | approximator schedule | a cosine scheduler created but never stepped (constant lr) | the `release` protocol keeps the constant lr; the `paper` protocol follows Appendix D | – |
# | XGBoost / random forest (D.6) | not in the released code | one multi-output regressor on the one-hot slot codes predicts the scores of the fewest principal components of the embeddings that explain 95 % of their variance (at most 32), mapped back through the PCA basis | a tree ensemble per embedding dimension would be up to d-fold slower; `variance` and `max_components` are parameters |
