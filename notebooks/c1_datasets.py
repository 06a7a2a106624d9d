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
# # Appendix C.1 Datasets
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/bindcore-book/binding-concepts/blob/main/notebooks/c1_datasets.ipynb)
#
# The paper studies frozen encoders on two-object scenes whose concepts are fully
# crossed: **CLEVR** (3-D renders, {glue:text}`paper_clevr_colours` colours x
# {glue:text}`paper_clevr_shapes` shapes, {glue:text}`paper_clevr_scenes` scenes),
# **CLEVR-2D** (the paper's flat version of it: cube -> square, cylinder -> triangle,
# sphere -> circle), **PUG:SPARE** (photorealistic animals, {glue:text}`paper_pug_species`
# species x {glue:text}`paper_pug_colours` colours, {glue:text}`paper_pug_scenes` scenes)
# and a synthetic **caption space** of adjective-noun pairs (appendix C.3). The images of the
# authors' release are not public, and this book downloads no dataset (only encoder
# weights, where the Hugging Face Hub is reachable), so `bindcore.data`
# makes CLEVR-2D and CLEVR-like 3-D scenes on the spot, builds the caption space, and
# loads the authors' folders (CLEVR, CLEVR-2D, PUG:SPARE) when you point it to them. All
# datasets share one format (`SceneDataset`) and write and read the release's
# `labels.csv`.

# %% tags=["hide-input"]
import subprocess
import sys

if "google.colab" in sys.modules:  # install bindcore on Colab only, keeping Colab's own torch
    from importlib.metadata import version

    spec = "bindcore[encoders] @ git+https://github.com/bindcore-book/binding-concepts@main"
    keep = [f"{p}=={version(p)}" for p in ("torch", "torchvision")]  # as installed
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec, *keep], check=True)

# %% tags=["parameters"]
profile = "quick"
clevr3d_width = 320  # width of the 3-D renders in pixels (height is 3/4 of it)
three_object_scenes = 16  # number of three-object 3-D scenes to make
retrieval_scenes = None  # CLEVR-2D scenes in the caption-retrieval check (None: all 576)
release_folder = None  # folder with the release's label files (clevr/, clevr2d/, pug_spare/), if any
pug_folder = None  # the authors' PUG:SPARE image folder with its labels.csv, if you have it
clevr_folder = None  # the authors' CLEVR image folder with its labels.csv, if you have it

# %% tags=["hide-input"]
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from bindcore.analysis import caption_retrieval
from bindcore.book import glue, show_source, start_chapter
from bindcore.data import (
    ADJECTIVES,
    CLEVR2D_SHAPES,
    CLEVR_SHAPES,
    NOUNS,
    load_folder,
    make_clevr2d,
    make_clevr2d_singles,
    make_clevr3d,
    make_clevr3d_singles,
    make_clevr3d_three,
    make_text_space,
    read_labels_csv,
)
from bindcore.encoders import default_encoders, embed_dataset
from bindcore.figures import sample_grid
from bindcore.paper import PAPER_DATASET_SIZES, PAPER_DATASETS

P = start_chapter("datasets", globals())
encoders = default_encoders()
print("ENCODER USED IN THIS CHAPTER:", encoders.note)

# %% tags=["remove-cell"]
clevr, pug, c3 = (PAPER_DATASET_SIZES[k] for k in ("CLEVR", "PUG:SPARE", "captions (C.3)"))
for name, value in {"paper_clevr_colours": clevr["colours"], "paper_clevr_shapes": clevr["shapes"],
                    "paper_clevr_scenes": clevr["scenes"], "paper_pug_species": pug["species"],
                    "paper_pug_colours": pug["colours"], "paper_pug_scenes": pug["scenes"],
                    "paper_c3_adjectives": c3["adjectives"], "paper_c3_nouns": c3["nouns"],
                    "paper_c3_two": c3["two-object scenes"], "paper_c3_single": c3["single-object scenes"]}.items():
    glue(name, value, ",")

# %% [markdown]
# ## CLEVR-2D
#
# All {glue:text}`clevr2d_scenes` ordered pairs of the {glue:text}`clevr2d_objects`
# objects (identical pairs included), in the release's scene order, at the release's
# size: flat shapes with a dark outline, the first object on the left and the second on
# the right. Captions follow the paper's template.
#
# One scene drawn (`bindcore.data.clevr2d`):

# %% tags=["remove-input"]
from bindcore.data.clevr2d import render_scene

show_source(render_scene)

# %%
t0 = time.perf_counter()
clevr2d = make_clevr2d()
clevr2d_singles = make_clevr2d_singles()
print(f"CLEVR-2D: {len(clevr2d)} scenes + {len(clevr2d_singles)} single objects, "
      f"{clevr2d.images[0].shape[1]}x{clevr2d.images[0].shape[0]} px, made in {time.perf_counter() - t0:.1f} s")
fig = sample_grid(clevr2d, range(8), title="CLEVR-2D, the first eight scenes of the release's order")
plt.show()

# %% tags=["remove-cell"]
glue("clevr2d_scenes", len(clevr2d), ",")
glue("clevr2d_objects", len(np.unique(clevr2d.object_ids())), ",")

# %% [markdown]
# ## CLEVR-like 3-D scenes
#
# The same scene labels rendered in 3-D by a small ray caster (`bindcore.data.clevr3d`):
# cubes, cylinders and spheres on a grey ground plane, a perspective camera, diffuse and
# specular shading and cast shadows. These are *CLEVR-like*, not the CLEVR images (which
# Blender renders with area lights, soft shadows and its own materials); they share the
# concept structure, the colours and the fixed left/right layout of the release.

# %%
t0 = time.perf_counter()
w = P["clevr3d_width"]
clevr3d = make_clevr3d(size=(w, w * 3 // 4))
clevr3d_singles = make_clevr3d_singles(size=(w, w * 3 // 4))
print(f"CLEVR-like 3-D: {len(clevr3d)} scenes + {len(clevr3d_singles)} single objects at {w}x{w * 3 // 4} px, "
      f"made in {time.perf_counter() - t0:.1f} s")
fig = sample_grid(clevr3d, range(8), title="CLEVR-like 3-D scenes (same labels as above)")
plt.show()

# %% [markdown]
# Appendix D.3 extends the analysis to three-object scenes, with and without occlusion:

# %%
three = make_clevr3d_three(P["three_object_scenes"], occlusion=False, size=(w, w * 3 // 4))
three_occ = make_clevr3d_three(P["three_object_scenes"], occlusion=True, size=(w, w * 3 // 4))
fig = sample_grid(three, range(min(4, len(three))), title="three objects")
plt.show()
fig = sample_grid(three_occ, range(min(4, len(three_occ))), title="three objects, one partly hidden")
plt.show()

# %% [markdown]
# ## The caption space (appendix C.3)
#
# Our adjectives and nouns (the release's word lists differ), each a single token of
# CLIP's tokenizer, give {glue:text}`text_objects` objects, {glue:text}`text_two` ordered
# two-object captions and {glue:text}`text_single` single-object ones (the size of the
# released code's space); the paper describes a {glue:text}`paper_c3_adjectives` x
# {glue:text}`paper_c3_nouns` space of {glue:text}`paper_c3_two` two-object and
# {glue:text}`paper_c3_single` single-object captions, which is the size of
# `make_text_space(10, 10)`.

# %%
text_full = make_text_space()
text_small = make_text_space(10, 10)
n_full = text_full.n_objects_per_scene
print("adjectives:", ", ".join(ADJECTIVES))
print("nouns:     ", ", ".join(NOUNS))
print("examples:  ", " | ".join(text_full.captions[i] for i in (0, 12345, len(text_full) - 1)))

# %% tags=["remove-cell"]
glue("text_objects", len(ADJECTIVES) * len(NOUNS), ",")
glue("text_two", int((n_full == 2).sum()), ",")
glue("text_single", int((n_full == 1).sum()), ",")

# %% [markdown]
# ## Counts against the paper's

# %% tags=["hide-input"]
def counts(ds):
    n = ds.n_objects_per_scene
    ids = ds.object_ids()
    return {"scenes": len(ds), "two-object scenes": int((n == 2).sum()), "single-object scenes": int((n == 1).sum()),
            "distinct objects": len(np.unique(ids[ids >= 0])),
            "values per concept": " x ".join(map(str, ds.values_per_concept))}


rows = {
    "CLEVR-2D (made here)": {**counts(clevr2d), "paper": PAPER_DATASETS["CLEVR-2D"]},
    "CLEVR-like 3-D (made here)": {**counts(clevr3d), "paper": "CLEVR: " + PAPER_DATASETS["CLEVR-2D"]},
    "captions, 20 x 20 (released code)": {**counts(text_full), "paper": PAPER_DATASETS["captions (released code)"]},
    "captions, 10 x 10 (paper, C.3)": {**counts(text_small), "paper": PAPER_DATASETS["captions (C.3)"]},
}
for name, folder, kind in (("CLEVR (authors' folder)", clevr_folder, "clevr"),
                           ("PUG:SPARE (authors' folder)", pug_folder, "pug_spare")):
    if folder:
        loaded = load_folder(folder, kind)
        pug = PAPER_DATASET_SIZES["PUG:SPARE"]
        rows[name] = {**counts(loaded), "paper": PAPER_DATASETS["CLEVR-2D"] if kind == "clevr" else
                      f"{pug['scenes']:,} scenes, {pug['species']} species x {pug['colours']} colours"}
        sample_grid(loaded, range(min(8, len(loaded))), title=name)
        plt.show()
    else:
        rows[name] = {"paper": "needs the authors' folder (parameter " + kind.split("_")[0] + "_folder)"}
pd.DataFrame(rows).T.fillna("")

# %% [markdown]
# ## The release's shape names
#
# In the released CLEVR `labels.csv` the *names* of two shapes are swapped: rows with the
# cylinder's index say "sphere" and rows with the sphere's index say "cylinder", while the
# images (and the released code) use the indices as cylinder and sphere. `bindcore`
# reads the indices and names them itself, so a caption always describes what the image
# shows. Where the release's
# label files are at hand, the mismatch can be counted:

# %% tags=["hide-input"]
candidates = [Path(release_folder)] if release_folder else [Path("../../shared/data/reference-release")]
found = next((p for p in candidates if (p / "clevr" / "labels.csv").is_file()), None)
if found is None:
    print("The release's label files are not available here; set `release_folder` to compare.")
else:
    released = pd.read_csv(found / "clevr" / "labels.csv")
    objects, _, _ = read_labels_csv(found / "clevr" / "labels.csv")
    mismatch = {}
    for i in (1, 2):
        names = released[f"object{i}_shape"].to_numpy()
        ours = np.array(CLEVR_SHAPES)[objects[:, i - 1, 1]]
        mismatch[f"object {i}"] = int((names != ours).sum())
    same_order = bool((objects == clevr2d.objects).all())
    table = (released.groupby(["object1_shape_idx", "object1_shape"]).size().rename("rows").reset_index()
             .assign(**{"shape as drawn (CLEVR)": lambda d: [CLEVR_SHAPES[i] for i in d["object1_shape_idx"]],
                        "CLEVR-2D": lambda d: [CLEVR2D_SHAPES[i] for i in d["object1_shape_idx"]]}))
    display(table)
    print(f"rows whose released shape name differs from the drawn shape: {mismatch}; "
          f"our CLEVR-2D scene order equals the release's: {same_order}")

# %% [markdown]
# ## A first embedding check: which caption does an image retrieve?
#
# Each CLEVR-2D image is compared with the captions of all scenes by cosine similarity, and we ask
# whether the most similar caption describes the same scene, the same two objects in the
# other order, or only the same bag of colours and shapes. Pretrained CLIP typically gets
# the bag right more often than the binding; a model with random weights is near chance
# on all three. The encoder is the one named at the top of this page; embeddings are
# stored by encoder, dataset content and code (`results/embeddings/`).

# %%
n = P["retrieval_scenes"] or len(clevr2d)
subset = clevr2d.subset(np.arange(n))
clip_like = encoders.image  # pretrained CLIP where reachable, else its random-init control (both towers)
img = embed_dataset(clip_like, subset, "image")
txt = embed_dataset(clip_like, subset, "text")
result = caption_retrieval(img, txt, subset.objects)
print(f"encoder: {clip_like.name}; {n} images vs {n} captions")
pd.Series(result, name="top-1 caption retrieval").round(3).to_frame()
