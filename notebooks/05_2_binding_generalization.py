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
# # §5.2 Binding generalization in controlled transformers
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bindcore-book/binding-concepts/blob/main/notebooks/05_2_binding_generalization.ipynb)
#
# **The paper's claim.** CLIP-like encoders fail to bind concepts to objects across
# modalities, but this is not a law of nature. Dual encoders trained from scratch on
# synthetic multi-object scenes learn to recognise objects they have *never seen*, once
# training covers a large enough share of the object space. Concept recognition
# generalizes at lower coverage than binding, held-out object recognition rises sharply
# with coverage and ends far above what a bag of concepts can do, and larger object
# spaces need a smaller *fraction* of their objects in training.
#
# **What this chapter does.** It trains the dual encoder of appendix B (two independent
# transformers, one for scenes and one for queries, compared by cosine similarity) on
# scenes of one or two objects built only from training objects, for several object
# coverages and two object-space sizes, and measures concept and object recognition on
# scenes made only of held-out objects, against the *full* object vocabulary. The
# bag-of-concepts oracle of §3 is computed on the same held-out scenes.

# %% tags=["hide-input"]
import subprocess
import sys

if "google.colab" in sys.modules:  # install bindcore on Colab only
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "bindcore @ git+https://github.com/bindcore-book/binding-concepts"], check=True)

# %% tags=["parameters"]
profile = "quick"
sizes = None  # list of [C, V] object spaces, e.g. [[2, 10], [2, 20]]
coverages = None  # fractions of the object space used for training
steps = None  # training steps per run (default: the profile's recipe)
seeds = None  # training seeds
ablations = None  # also run the one-phase and release-negatives variants
workers = None  # parallel CPU runs (default: number of cores; 1 on a GPU)
executor = None  # where the runs execute: "local" (default), "ray" or "ray:<address>" (a Ray cluster)
device = None  # "cuda" or "cpu" (default: cuda when present)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import pandas as pd
import torch

import bindcore
from bindcore.book.chapter import note_stored, start_chapter
from bindcore.book.claims import claims_table
from bindcore.book.figures import PALETTE, plot_metric_vs_coverage
from bindcore.controlled.recipes import recipe, recipe_table
from bindcore.controlled.training import TrainConfig, load_model, object_query_additivity
from bindcore.runtime import resolve_device
from bindcore.sweep import (
    ablation_configs,
    generalization_configs,
    generalization_summary,
    results_table,
    run_sweep,
)

P = start_chapter("binding_generalization", globals())
base = recipe(profile) if P["steps"] is None else recipe(profile, steps=P["steps"])
dev = resolve_device(device)
print(f"bindcore {bindcore.__version__}; profile {profile!r}; device {dev}; torch threads {torch.get_num_threads()}")
print(f"object spaces (C, V): {P['sizes']}; coverages: {P['coverages']}; seeds: {P['seeds']}; "
      f"{base.steps} steps per run")

# %% [markdown]
# ## The training recipe
#
# The `paper` profile uses the released code's recipe (a 6-layer, 256-wide encoder pair,
# learning rate 3e-5, batch 512, 50,000 steps). That needs hours per run on a CPU and a
# short CPU run of it stays at the bag-of-concepts level. The `quick` profile keeps the
# science — the same tokens, two independent transformer encoders pooled at EOS, cosine
# similarity, the multi-positive soft-target softmax loss over concept and object
# queries with attribute-swap hard negatives, the strict metric, and no held-out object
# anywhere in training — and changes the optimisation so that binding appears within
# minutes on a laptop CPU. The fields in which this run's recipe differs from the paper's:

# %% tags=["hide-input"]
recipe_table(profile)

# %% [markdown]
# The quick recipe also delays the concept loss. Object queries alone train until the
# model solves the training task well (training scenes recognised among the training
# objects at the rate `concept_loss_trigger`, checked at every evaluation, so no
# held-out object is involved); then the concept loss joins at full weight. The reason
# to try this is the argument of §3: a concept objective rewards scene and query
# embeddings that are sums of one vector per concept value, and a sum cannot tell
# {(a, x), (b, y)} from {(a, y), (b, x)}. Whether the delay matters is measured by the
# one-phase ablation at the end of this chapter.

# %% [markdown]
# ## The sweep
#
# One run per object-space size, coverage and seed. Runs are stored under a hash of
# their config (`results/train-2/<hash>/`) with the version of the code that trained them,
# so re-executing this chapter costs seconds once they exist (a run made by other code is
# shown with a note naming that code); on a CPU, runs go to parallel one-thread worker
# processes.

# %%
configs = generalization_configs(base, P)
records = run_sweep(configs, workers=workers, device=device, executor=executor)
note_stored(records)
table = results_table(records)
table["profile"] = profile
print(f"{len(records)} runs; sources: {table['source'].value_counts().to_dict()}; "
      f"training time per run: {table['minutes'].mean():.1f} min on average ({table['device'].iloc[0]})")

# %% [markdown]
# Accuracies on held-out objects (`test_*`) and on training objects (`train_*`), for
# one- and two-object scenes, and the bag-of-concepts oracle (`boc_*`) on the same
# held-out scenes; the candidate set is always the full vocabulary (all $V^C$ objects,
# all $C \cdot V$ concept values).

# %% tags=["hide-input", "full-width"]
cols = ["C", "V", "objects", "coverage", "seed", "values seen in training", "test_object_2", "boc_test_object_2",
        "test_object_1", "test_concept_2", "test_concept_1", "train_object_2", "minutes"]
table[cols].round(3)

# %% [markdown]
# At low coverage some concept values never occur in any training object (column
# `values seen in training`): no model can recognise those values, which caps concept
# recognition there.
#
# ## Held-out object recognition rises with coverage

# %% tags=["hide-input"]
mean = table.groupby(["objects", "coverage"], as_index=False).mean(numeric_only=True)
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), sharey=True)
plot_metric_vs_coverage(axes[0], mean, "test_object_2", baseline="boc_test_object_2",
                        ylabel="object recognition, held-out objects")
axes[0].set_title("objects, two-object scenes")
plot_metric_vs_coverage(axes[1], mean, "test_concept_2", ylabel="concept recognition, held-out objects")
axes[1].set_title("concepts, two-object scenes")
plot_metric_vs_coverage(axes[2], mean, "test_object_1", ylabel="object recognition, held-out objects")
axes[2].set_title("objects, one-object scenes")
fig.suptitle(f"Controlled dual encoders, profile '{profile}' ({base.steps} steps per run)", y=1.02)
plt.show()

# %% [markdown]
# ## Binding appears suddenly during training
#
# Accuracy on held-out two-object scenes over the course of training, for the largest
# coverage of each object space. Dotted vertical lines mark the step at which the
# concept loss joined each run.

# %% tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 4))
top = max(P["coverages"])
for i, rec in enumerate(r for r in records if r["config"]["coverage"] == top and r["config"]["seed"] == P["seeds"][0]):
    h = pd.DataFrame(rec["history"])
    objs = rec["config"]["n_values"] ** rec["config"]["n_concepts"]
    ax.plot(h["step"], h["test_object_2"], "-", color=PALETTE[i], label=f"|O| = {objs}, held-out objects")
    ax.plot(h["step"], h["train_object_2"], ":", color=PALETTE[i], label=f"|O| = {objs}, training objects")
    ax.axhline(rec["bag_of_concepts"]["test_object_2"], color=PALETTE[i], lw=0.8, ls="--", alpha=0.5)
    if rec.get("concept_loss_from") is not None:
        ax.axvline(rec["concept_loss_from"], color=PALETTE[i], ls=":", lw=1)
ax.set_xlabel("training step")
ax.set_ylabel("object recognition, two-object scenes")
ax.set_title(f"coverage {top:g}; dashed: bag-of-concepts oracle")
ax.set_ylim(-0.03, 1.03)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## The paper's claims next to ours

# %% tags=["hide-input"]
summary = generalization_summary(table)
summary.round(3)

# %%
claims_table(summary, profile)

# %% [markdown]
# ## Two ablations: the one-phase objective and the released code's negatives
#
# At the largest coverage of the largest object space we rerun two variants:
#
# * **one-phase**: the concept loss (weight 0.1) present from the first step;
# * **release negatives**: everything as in the main runs, except that attribute-swap
#   negatives that happen to be held-out objects are kept as training negatives, as the
#   released code does (`train_probe_all_objects=True`). The query encoder then sees
#   held-out objects during training, always as negatives, so training pushes their
#   embeddings away from every scene.
#
# The last column measures how additive the query encoder's object embeddings are: the
# R² of the best fit $e(o) \approx b + \sum_c u_c[v_c(o)]$ over all objects. At R² = 1
# the embeddings are a bag of concepts and swapped objects score alike.

# %% tags=["hide-input"]
if P["ablations"]:
    variants = ablation_configs(base, P)
    ab = run_sweep(list(variants.values()), workers=workers, device=device, executor=executor)
    note_stored(ab, what="ablation runs")
    ab_table = results_table(ab)
    ab_table.insert(0, "variant", list(variants))
    ab_table["additive R² of object queries"] = [
        object_query_additivity(TrainConfig.from_dict(r["config"]), load_model(r)) if r["source"] == "local"
        else float("nan") for r in ab]  # published records carry no weights
    display(ab_table[["variant", "objects", "coverage", "test_object_2", "boc_test_object_2", "test_object_1",
                      "test_concept_2", "train_object_2", "additive R² of object queries"]].round(3))
    acc = dict(zip(ab_table["variant"], ab_table["test_object_2"]))
    main_acc, one_phase, release = acc.values()
    print(f"held-out two-object recognition: main recipe {main_acc:.2f}, one-phase {one_phase:.2f} "
          f"({one_phase - main_acc:+.2f}), release negatives {release:.2f} ({release - main_acc:+.2f}); "
          f"bag-of-concepts oracle {ab_table['boc_test_object_2'].iloc[0]:.2f}; one seed each")

# %% [markdown]
# ## What the profiles show
#
# The `quick` profile trains small models for a few CPU-minutes each, so its curves are a
# small-scale version of the paper's figure: the qualitative pattern, not the paper's
# numbers. The `paper` profile reruns the sweep with the released recipe at the paper's
# coverages (0.1 to 0.9) and larger object spaces; run it on a GPU with
# `papermill notebooks/05_2_binding_generalization.ipynb out.ipynb -p profile paper`.
