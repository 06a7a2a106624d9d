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
# # §5.4 The functional form of binding
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bindcore-book/binding-concepts/blob/main/notebooks/05_4_functional_form.ipynb)
#
# **The paper's claim.** The binding function of generalizing models is
# *multiplicative*: an additive approximator recovers the concepts of
# held-out scenes but not their objects, while approximators that multiply concept
# representations recover binding on held-out objects; the global product
# $\prod_i \prod_k v_{i,k,c_{ik}}$ works best, especially in larger object spaces.
#
# Over many controlled models (the paper's figure 9), the global product's held-out
# object recognition tracks the model's own; the correlation weakens slightly at the
# largest object space the paper trains ({glue:text}`paper_largest_space` objects).
#
# **What this chapter does.** On the same controlled models and binding data as §5.3,
# it fits each approximator family of reference-spec §8.3 — additive, global product,
# additive + global product, within-object product (with and without the additive
# terms) and the MLP — and reads their predicted embeddings of held-out scenes with the
# models' own query-encoder probes. Then, for figure 9, it fits the global product to
# every controlled model stored in this build (every size and coverage of §5.2, its
# ablations, and published records), on the scenes of the model's own training objects,
# and sets its held-out recognition beside the model's.

# %% tags=["hide-input"]
import subprocess
import sys

if "google.colab" in sys.modules:  # install bindcore on Colab only, keeping Colab's own torch
    from importlib.metadata import version

    spec = "bindcore[ml] @ git+https://github.com/bindcore-book/binding-concepts@main"
    keep = [f"{p}=={version(p)}" for p in ("torch", "torchvision")]  # as installed
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec, *keep], check=True)

# %% tags=["parameters"]
profile = "quick"
fractions = [0.3, 0.5, 0.8]
widths = [4, 8, 16, 32, 64, 256, 1024]  # MLP widths; the product families use the embedding dimension as their width
steps = 1500
batch_size = 512
lrs = [0.01, 0.001]
patience = None  # evaluations without a validation gain before an approximator stops (None: all `steps`)
max_objects = 400
models = "scale-chosen"  # §5.2 models: "chapter" (its own runs), "scale" (every binding point) or "scale-chosen"
controlled_steps = 8000  # training steps of the §5.2 models used here (the quick recipe's)
controlled_eval_scenes = 1024  # held-out scenes per evaluation of those models (the recipe's)
workers = None
device = None
executor = None  # where training runs and approximator sweeps run: "local" (default), "ray" or "ray:<address>"

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown

from bindcore.analysis import (
    FAMILIES,
    FAMILY_LABELS,
    PRODUCT_FAMILIES,
    StackedApproximator,
    global_codes,
    protocol_for,
)
from bindcore.book import (
    chapter_parameters,
    figure9_correlations,
    figure9_level,
    glue,
    show_claims,
    start_chapter,
)
from bindcore.experiments import controlled_datasets, controlled_sweeps, figure9_runs, figure9_table
from bindcore.figures import legend_below, model_panels, plot_by_fraction, plot_figure9
from bindcore.paper import PAPER_OBJECT_SPACES
from bindcore.verdicts import figure9_claims, form_claims, form_sentences

P = start_chapter("controlled_complexity", globals())
sweep_parameters = chapter_parameters("binding_generalization", profile)  # the §5.2 sweep whose models are reused here
runs, datasets = controlled_datasets(profile, P, sweep_parameters, workers=workers, device=device, executor=executor)
print(f"profile {profile!r}: models {[d.name for d in datasets]}; approximators: {protocol_for(P)}")

# %% tags=["remove-cell"]
glue("paper_largest_space", PAPER_OBJECT_SPACES[-1], ",")

# %%
table = controlled_sweeps(datasets, P, list(FAMILIES), widths={"mlp": [max(P["widths"])]}, device=device,
                         executor=executor)

# %% [markdown]
# ## All families side by side
#
# Held-out scenes only (both objects unseen by the approximator), at the largest data
# fraction; learning rates chosen on validation scenes of training objects.
#
# The families as one approximator computes them, defined here (`bindcore sync` exports
# the cell to `bindcore/analysis/approximators/reference.py`). A scene is its 2C slot
# codes, each a row of its slot's table; the MLP sums its rows' hidden pre-activations,
# the global product multiplies every slot's factors, the within-object product
# multiplies inside each object and adds the two objects, and the `sum_` families and
# the additive family add one output vector per slot.

# %% tags=["export"]
# export: bindcore/analysis/approximators/reference.py
# The approximator families of §5.1 and §5.4 as one model computes them: the definition the stacked path is tested against.
import torch

from bindcore.analysis.approximators.families import FAMILIES


def approximator_output(family: str, params: dict[str, torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
    """``[B, d]``: one approximator of ``family`` on scenes given as table rows ``[B, 2C]``
    (slot offsets added), with its parameters ``params`` (``bias [d]``; ``table [R, W]``
    and ``head [W, d]`` for a hidden layer, ``hidden_bias [W]`` for the MLP's;
    ``slot_out [R, d]`` for the additive terms)."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    out = params["bias"].expand(len(rows), -1)
    if family == "mlp":
        hidden = torch.relu(params["hidden_bias"] + params["table"][rows].sum(1))
    elif family.endswith("global_product"):
        hidden = params["table"][rows].prod(1)
    elif family.endswith("within_object_product"):
        factors = params["table"][rows]  # [B, 2C, W], object-major slots
        c = factors.shape[1] // 2
        hidden = factors[:, :c].prod(1) + factors[:, c:].prod(1)
    else:  # additive: no hidden layer
        hidden = None
    if hidden is not None:
        out = out + hidden @ params["head"]
    if family == "additive" or family.startswith("sum_"):
        out = out + params["slot_out"][rows].sum(1)
    return out

# %% [markdown]
# The sweeps train many approximators at once (`StackedApproximator`: one family, a model
# per width and seed, padded to the widest, table lookups as embedding bags). On a batch
# of random scenes, each model of a padded stack gives what the definition above gives
# with that model's parameters:

# %%
rows = torch.as_tensor(global_codes(np.random.default_rng(0).integers(0, 4, (64, 4)), [4, 5]))
for family in FAMILIES:
    stack = StackedApproximator(family, [4, 5], 8, widths=[3, 16], seeds=[0, 1])
    fast = stack(rows[None].expand(2, -1, -1)).detach()
    for m in range(2):
        torch.testing.assert_close(fast[m], approximator_output(family, stack.model_state(m), rows),
                                   rtol=1e-5, atol=1e-5)
print(f"the stacked path equals the definition for every family: {', '.join(FAMILIES)}")

# %% tags=["hide-input"]
top = table[table["fraction"] == max(P["fractions"])]
wide = top.pivot_table(index="family", columns="model", values=["heldout_concept", "heldout_object", "heldout_r2"])
wide.reindex([FAMILY_LABELS[f] for f in FAMILIES]).round(3)

# %%
fig, panels = model_panels([d.name for d in datasets], height=2.6)
for (ax,), data in zip(panels, datasets):
    plot_by_fraction(ax, table[table["model"] == data.name], "heldout_object", "held-out object recognition")
fig.suptitle(f"Which functional form recovers binding on held-out objects? (profile '{profile}')", y=1.02)
fig.tight_layout()
legend_below(fig, panels[0][0], ncol=2)
plt.show()

# %% [markdown]
# ## The product families' initialisation
#
# The product families start from factors near one, `1 + 0.1 N(0, 1)` (`one_plus`),
# with the output bias taking off the head's response to the units' expected value, so
# that every approximator starts from the mean prediction; the release draws the factors
# from `N(0, 1)` (`normal`). This book uses `one_plus` throughout. Both, on the same
# models at the largest data fraction (R² and object recognition on the training scenes
# and on the held-out scenes):

# %% tags=["full-width"]
top_only = {**P, "fractions": [max(P["fractions"])]}
inits = pd.concat([controlled_sweeps(datasets, top_only, list(PRODUCT_FAMILIES), widths=None, device=device,
                                     executor=executor, product_init=init).assign(init=init)
                   for init in ("one_plus", "normal")])
inits.pivot_table(index=["model", "family"], columns="init",
                  values=["train_r2", "heldout_r2", "train_object", "heldout_object"]).round(3)

# %% [markdown]
# ## Figure 9: the global product over the models of one recipe
#
# Every stored controlled model of one recipe (local runs with their weights, and
# published records with a stored fit): with `models` set to a scale choice, the scale
# plan's runs (the recipe §5.2's verdict across sizes reads, a run at an earlier budget
# standing in where the plan's is not computed yet, marked in the column `earlier
# budget`); else the runs of this profile's own recipe. Models of other recipes
# (ablations, the earlier two-layer scale recipe) are left out: models set side by side
# here come from one recipe. For each, the global product is fitted on scenes of the
# model's own training objects (at most the chapter's `max_objects` objects, all their
# ordered pairs), read on scenes of its own held-out objects, against the model's
# held-out object recognition in §5.2. Each dot is a model. The legend gives each
# object-space size's rank correlation (Spearman), the one figure 9's claim reads; the
# table under the figure gives the linear one (Pearson) beside it.

# %% tags=["full-width"]
fig9_runs, fig9_recipe = figure9_runs(profile, P["models"])
fig9 = figure9_table(protocol_for(P), P["max_objects"], fig9_runs, device=device)
corr = figure9_correlations(fig9)
fig, ax = plt.subplots(figsize=(6.2, 5))
plot_figure9(ax, fig9, corr)
drawn = int(fig9[["model: held-out objects", "global product: held-out objects"]].notna().all(axis=1).sum())
ax.set_title(f"Figure 9: global product vs the model ({fig9_recipe}; {drawn} of {len(fig9)} stored models "
             "fitted)", fontsize=10)
plt.show()
display(corr.round(3))
display(Markdown(figure9_level(corr)))
fig9.round(3)

# %% [markdown]
# Where a record holds them, swap-pair recognition (a scene and its attribute-swapped
# twin both recognised; a bag of concepts scores zero) is the stricter reading of
# binding, and the bag-of-concepts ceiling (the best any scorer of the bag alone can do
# on the same scenes) is what held-out object recognition must beat to show binding:

# %% tags=["full-width"]
fig9[["objects", "coverage", "negatives", "model: held-out objects", "bag-of-concepts ceiling",
      "model: swap pairs", "global product: held-out objects"]].round(3)

# %% [markdown]
# ## The paper's claims next to ours
#
# Under the table, per model: whether the paper's ordering of the families on held-out
# objects (global product above the MLP above the additive probe, at the largest data
# fraction) shows in our numbers, whatever the thresholds say. An ordering is a direction,
# not a verdict: each sentence names the verdict of "the global product is best" beside
# it, and says so where the two part (the claim allows the global product a small
# tolerance below the best family; the ordering does not).

# %% tags=["full-width"]
form = form_claims(table, profile)
show_claims(pd.concat([form, figure9_claims(fig9, profile)], ignore_index=True), "05_4_functional_form")
display(Markdown("\n".join(f"* {s}" for s in form_sentences(table, form))))

# %% [markdown]
# Read the table against the paper's three statements: the additive probe should keep
# concepts high and objects low; a product family should recover objects on held-out
# scenes; the global product should lead. The additive family here is a sum of one
# table per slot (object position and concept), not a bag of concepts: it can tell the
# ordered scene {(a, x), (b, y)} from its swapped twin {(a, y), (b, x)}, because each
# value enters through its own slot's table; what it cannot do is give an unseen
# combination of values anything but the sum of its parts. A binding claim is therefore
# read against the bag-of-concepts ceiling of the same held-out scenes (column `null`),
# which a product must clear by the stated margin, not only against the additive probe.
# Every family is bounded by the models' own held-out object recognition (§5.2, and the
# ceiling table of §5.3). The models are those of §5.3 (with `models = "scale-chosen"`,
# per object space the binding point of the scale sweep chosen on validation objects),
# and a claim on a model whose own held-out swap pairs stay below one half is "not
# testable here", as is figure 9 at
# a size where no model binds. The `paper` profile reruns this on models trained with
# the released recipe, and figure 9 grows with every model a build stores.
