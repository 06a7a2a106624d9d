"""Per-chapter parameters of each profile (:data:`bindcore.runtime.PROFILES`).

A notebook's parameters cell starts with ``profile = "quick"`` and sets every other
parameter to ``None``; :func:`chapter_parameters` fills what was left ``None`` from the
profile, so that papermill can override parameters one by one
(``papermill ... -p profile paper -p steps 20000``). Chapters call it through
:func:`bindcore.book.chapter.start_chapter`, which collects the parameters from the
notebook itself.

Every parameter has a declared type and range (:data:`RULES`, a
:class:`bindcore.settings.Rule` per name; :data:`CHAPTER_RULES` where a chapter reads a
name differently): a value given is parsed as that type (``-p controlled false`` is
False, ``-p probe_epochs 1e3`` is 1000) or refused with a ``ValueError`` naming the
parameter and its rule, before the chapter does any work.
"""

from __future__ import annotations

from typing import Any

from bindcore.data.pixels import LEVELS
from bindcore.runtime import check_profile
from bindcore.settings import Rule, unknown_name

_FRACTION = Rule(float, low=0, high=1, open_low=True, open_high=True)
_POSITIVE = Rule(float, low=0, open_low=True)
RULES: dict[str, Rule] = {
    "n_sample_scenes": Rule(int, low=1),
    "values_for_baseline": Rule(list, item=Rule(int, low=2)),
    "clevr3d_width": Rule(int, low=8, note="pixels; the height is 3/4 of it"),
    "three_object_scenes": Rule(int, low=2),
    "retrieval_scenes": Rule(int, low=1, optional=True, note="None: all 576"),
    "text_space": Rule(list, item=Rule(int, low=1, high=20), min_items=2, max_items=2, note="[adjectives, nouns]"),
    "fractions": Rule(list, item=_FRACTION),
    "widths": Rule(list, item=Rule(int, low=1)),
    "probe_epochs": Rule(int, low=1),
    "probe_lr": _POSITIVE,
    "steps": Rule(int, low=1, optional=True),
    "batch_size": Rule(int, low=1, optional=True, note="None: full batch"),
    "lrs": Rule(list, item=_POSITIVE),
    "tree_grid": Rule(str, choices=("small", "full")),
    "max_objects": Rule(int, low=2),
    "clevr2d_size": Rule(int, low=16, note="pixels"),
    "image_scenes": Rule(int, low=1, optional=True, note="None: all 576"),
    "ks": Rule(list, item=Rule(float)),
    "max_edits": Rule(int, low=1),
    "controlled": Rule(bool),
    "controlled_objects": Rule(int, low=2),
    "mds_components": Rule(int, low=2, note="the pictures show the first two"),
    "sizes": Rule(list, item=Rule(list, item=Rule(int, low=1), min_items=2, max_items=2), note="[C, V] pairs"),
    "coverages": Rule(list, item=_FRACTION),
    "seeds": Rule(list, item=Rule(int, low=-(2**40) + 1, high=2**40 - 1)),
    "ablations": Rule(bool),
    "show_scale": Rule(bool, note="show the scale sweep's stored records (published/)"),
    "levels": Rule(list, item=Rule(str, choices=LEVELS)),
    "approx_steps": Rule(int, low=1),
    "renders": Rule(int, low=1, note="renderings averaged per scene"),
    "permutations": Rule(int, low=1, note="derangements per permuted-ID control"),
    "tree_components": Rule(list, item=Rule(int, low=1, optional=True), note="None: all components"),
    "clevr_dir": Rule(str, optional=True, note="the authors' CLEVR folder; None: not given"),
    "pug_dir": Rule(str, optional=True, note="the authors' PUG:SPARE folder; None: not given"),
    "dinov2": Rule(str, optional=True, note="a DINOv2 model, e.g. facebook/dinov2-base; None: not run"),
    "natural_types": Rule(int, low=1, high=5),
    "natural_patterns": Rule(int, low=1, high=5),
    "natural_width": Rule(int, low=16, note="pixels; the height is 3/4 of it"),
    "controlled_steps": Rule(int, low=1, optional=True,
                             note="training steps of the §5.2 models the chapter uses; None: the profile's recipe"),
    "eval_scenes": Rule(int, low=1, optional=True,
                        note="held-out scenes per evaluation of each training run; None: the profile's recipe"),
    "train_batch": Rule(int, low=1, optional=True, note="scenes per training batch of each run; None: the recipe's"),
    "controlled_eval_scenes": Rule(int, low=1, optional=True,
                                   note="eval_scenes of the §5.2 models the chapter uses; None: the profile's recipe"),
}
# where a chapter reads a parameter differently from RULES
CHAPTER_RULES: dict[tuple[str, str], Rule] = {
    ("geometry", "clevr3d_width"): Rule(int, low=0, note="pixels, >= 8; 0: no 3-D renders"),
}

_CHAPTERS: dict[str, dict[str, dict[str, Any]]] = {
    "formalisation": {
        "smoke": dict(n_sample_scenes=2000, values_for_baseline=[2, 4, 8]),
        "quick": dict(n_sample_scenes=20000, values_for_baseline=[2, 3, 4, 6, 8, 10, 15, 20, 30, 50]),
        "colab": dict(n_sample_scenes=100000, values_for_baseline=[2, 3, 4, 6, 8, 10, 15, 20, 30, 50]),
        "paper": dict(n_sample_scenes=100000, values_for_baseline=[2, 3, 4, 6, 8, 10, 15, 20, 30, 50]),
    },
    "datasets": {
        # clevr3d_width: width of the 3-D renders (height 3/4 of it); retrieval_scenes:
        # CLEVR-2D images embedded for the caption-retrieval check (None = all 576)
        "smoke": dict(clevr3d_width=96, three_object_scenes=4, retrieval_scenes=24),
        "quick": dict(clevr3d_width=320, three_object_scenes=16, retrieval_scenes=None),
        "colab": dict(clevr3d_width=320, three_object_scenes=16, retrieval_scenes=None),
        "paper": dict(clevr3d_width=320, three_object_scenes=16, retrieval_scenes=None),
    },
    "pretrained_complexity": {
        # text_space: [adjectives, nouns]; steps/batch_size/lrs: the approximators' protocol;
        # tree_components: principal components the trees regress (None: all), at the
        # largest fraction; clevr_dir, pug_dir: the authors' image folders; dinov2: a
        # DINOv2 model (None: not run)
        "smoke": dict(text_space=[4, 4], fractions=[0.4, 0.8], widths=[16], probe_epochs=100, probe_lr=0.1,
                      steps=30,
                      batch_size=None, lrs=[1e-2], tree_grid="small", tree_components=[2, None],
                      clevr_dir=None, pug_dir=None, dinov2=None),
        "quick": dict(text_space=[10, 10], fractions=[0.1, 0.3, 0.5, 0.7, 0.9], widths=[64, 512],
                      probe_epochs=1000, probe_lr=0.1, steps=1000, batch_size=512, lrs=[1e-2], tree_grid="small",
                      tree_components=[8, 32, None], clevr_dir=None, pug_dir=None, dinov2=None),
        "colab": dict(text_space=[10, 10], fractions=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
                      widths=[64, 256, 1024], probe_epochs=1000, probe_lr=0.1, steps=5000, batch_size=4096,
                      lrs=[1e-2, 1e-3], tree_grid="small", tree_components=[8, 32, None], clevr_dir=None,
                      pug_dir=None, dinov2="facebook/dinov2-base"),
        "paper": dict(text_space=[20, 20], fractions=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
                      widths=[64, 256, 1024, 4096], probe_epochs=10000, probe_lr=1e-2, steps=10000, batch_size=4096,
                      lrs=[1e-2, 1e-3, 1e-4], tree_grid="full", tree_components=[8, 32, None], clevr_dir=None,
                      pug_dir=None, dinov2="facebook/dinov2-base"),
    },
    "controlled_complexity": {
        # the controlled runs of §5.2 at its largest coverage; approximators on all ordered
        # pairs of (up to max_objects) objects
        "smoke": dict(fractions=[0.5], widths=[4, 16], steps=30, batch_size=None, lrs=[1e-2], max_objects=16,
                      controlled_steps=None, controlled_eval_scenes=None),
        "quick": dict(fractions=[0.3, 0.5, 0.8], widths=[4, 8, 16, 32, 64, 256, 1024], steps=1500, batch_size=512,
                      lrs=[1e-2, 1e-3], max_objects=400, controlled_steps=None, controlled_eval_scenes=None),
        "colab": dict(fractions=[0.1, 0.3, 0.5, 0.7, 0.9], widths=[4, 8, 16, 32, 64, 256, 1024], steps=5000,
                      batch_size=4096, lrs=[1e-2, 1e-3], max_objects=400, controlled_steps=None,
                      controlled_eval_scenes=None),
        "paper": dict(fractions=[0.1, 0.3, 0.5, 0.7, 0.9], widths=[4, 8, 16, 32, 64, 256, 1024, 4096],
                      steps=10000, batch_size=4096, lrs=[1e-2, 1e-3, 1e-4], max_objects=400, controlled_steps=None,
                      controlled_eval_scenes=None),
    },
    "geometry": {
        # text_space: [adjectives, nouns] of the captions; clevr3d_width: 3-D renders (0: none);
        # image_scenes: first N two-object images (None: all 576); controlled_objects: objects
        # per controlled model whose ordered pairs are embedded; ks: editing strengths;
        # permutations: derangements per permuted-ID control of §4.2; clevr_dir, pug_dir:
        # the authors' image folders (None: not given); dinov2: a DINOv2 model (None: not run)
        "smoke": dict(text_space=[4, 4], clevr2d_size=64, clevr3d_width=96, image_scenes=48, probe_epochs=100,
                      probe_lr=0.1,
                      ks=[0.0, 0.5, 1.0, 1.5], max_edits=100, controlled=True, controlled_objects=16, permutations=2,
                      clevr_dir=None, pug_dir=None, dinov2=None, controlled_steps=None, controlled_eval_scenes=None),
        "quick": dict(text_space=[10, 10], clevr2d_size=224, clevr3d_width=320, image_scenes=None, probe_epochs=500,
                      probe_lr=0.1,
                      ks=[0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0], max_edits=1000, controlled=True,
                      controlled_objects=100, permutations=5, clevr_dir=None, pug_dir=None, dinov2=None,
                      controlled_steps=None, controlled_eval_scenes=None),
        "colab": dict(text_space=[10, 10], clevr2d_size=224, clevr3d_width=320, image_scenes=None,
                      probe_epochs=1000, probe_lr=0.1, ks=[0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0],
                      max_edits=2000, controlled=True, controlled_objects=400, permutations=5, clevr_dir=None,
                      pug_dir=None, dinov2="facebook/dinov2-base", controlled_steps=None, controlled_eval_scenes=None),
        "paper": dict(text_space=[20, 20], clevr2d_size=224, clevr3d_width=320, image_scenes=None,
                      probe_epochs=10000, probe_lr=1e-2, ks=[0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0],
                      max_edits=2000,
                      controlled=True, controlled_objects=400, permutations=5, clevr_dir=None, pug_dir=None,
                      dinov2="facebook/dinov2-base", controlled_steps=None, controlled_eval_scenes=None),
    },
    "additional": {
        # D.3 three-object CLEVR-like scenes (each set: without and with occlusion), D.4's
        # substitute (natural_types x natural_patterns patterned objects, natural_width
        # pixels wide; edits at strengths ks) and D.5 MDS
        "smoke": dict(three_object_scenes=24, clevr3d_width=96, probe_epochs=100, probe_lr=0.1, mds_components=2,
                      clevr_dir=None, pug_dir=None, dinov2=None, natural_types=3, natural_patterns=3,
                      natural_width=64, ks=[1.0], max_edits=100),
        "quick": dict(three_object_scenes=300, clevr3d_width=320, probe_epochs=500, probe_lr=0.1, mds_components=2,
                      clevr_dir=None, pug_dir=None, dinov2=None, natural_types=5, natural_patterns=5,
                      natural_width=224, ks=[1.0], max_edits=1000),
        "colab": dict(three_object_scenes=300, clevr3d_width=320, probe_epochs=1000, probe_lr=0.1,
                      mds_components=3, clevr_dir=None, pug_dir=None, dinov2="facebook/dinov2-base", natural_types=5,
                      natural_patterns=5, natural_width=224, ks=[1.0], max_edits=2000),
        "paper": dict(three_object_scenes=1000, clevr3d_width=320, probe_epochs=10000, probe_lr=1e-2,
                      mds_components=3, clevr_dir=None, pug_dir=None, dinov2="facebook/dinov2-base", natural_types=5,
                      natural_patterns=5, natural_width=320, ks=[1.0], max_edits=2000),
    },
    "pixel_encoders": {
        # appendix E: levels x coverages of pixel dual encoders (steps None: the pixel recipe's);
        # approximators (§5.3 / §5.4 methods; approx_steps, batch_size, lrs) on the largest-coverage
        # model of each level: all ordered pairs of up to max_objects objects, each embedding the
        # mean of `renders` renderings
        "smoke": dict(levels=["clean", "speckle", "overlap"], coverages=[0.5, 0.75], steps=None, eval_scenes=None,
                      train_batch=None, seeds=[0],
                      fractions=[0.5], widths=[4, 16], approx_steps=30, batch_size=None, lrs=[1e-2],
                      max_objects=16, renders=1),
        "quick": dict(levels=["clean", "speckle", "overlap"], coverages=[0.3, 0.55, 0.8], steps=None,
                      eval_scenes=None, train_batch=None, seeds=[0],
                      fractions=[0.3, 0.5, 0.8], widths=[4, 8, 16, 32, 64, 256], approx_steps=1500, batch_size=512,
                      lrs=[1e-2], max_objects=64, renders=2),
        "colab": dict(levels=["clean", "speckle", "overlap"], coverages=[0.2, 0.4, 0.6, 0.8], steps=None,
                      eval_scenes=None, train_batch=None, seeds=[0], fractions=[0.3, 0.5, 0.8],
                      widths=[4, 8, 16, 32, 64, 256, 1024],
                      approx_steps=5000, batch_size=512, lrs=[1e-2, 1e-3], max_objects=64, renders=4),
        "paper": dict(levels=["clean", "speckle", "overlap"],
                      coverages=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], steps=None, eval_scenes=None,
                      train_batch=None, seeds=[0],
                      fractions=[0.1, 0.3, 0.5, 0.7, 0.9], widths=[4, 8, 16, 32, 64, 256, 1024, 4096],
                      approx_steps=10000, batch_size=4096, lrs=[1e-2, 1e-3, 1e-4], max_objects=400, renders=4),
    },
    "binding_generalization": {
        # sizes: [C, V] pairs; coverages: fractions of objects in training
        "smoke": dict(sizes=[[2, 4]], coverages=[0.5, 0.75], steps=None, eval_scenes=None, seeds=[0], ablations=True,
                      show_scale=True),
        "quick": dict(sizes=[[2, 8], [2, 10]], coverages=[0.2, 0.4, 0.6, 0.8], steps=None, eval_scenes=None, seeds=[0],
                      ablations=True, show_scale=True),
        "colab": dict(sizes=[[2, 10], [2, 20], [2, 50]], coverages=[0.1, 0.2, 0.3, 0.5, 0.7, 0.9],
                      steps=None, eval_scenes=None, seeds=[0], ablations=True, show_scale=True),
        "paper": dict(sizes=[[2, 10], [2, 20], [2, 50]],
                      coverages=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], steps=None, eval_scenes=None, seeds=[0],
                      ablations=True, show_scale=True),
    },
}

# each chapter notebook's profile table (the name its start_chapter passes)
NOTEBOOK_TABLES: dict[str, str] = {
    "03_formalisation": "formalisation", "c1_datasets": "datasets", "04_1_geometry": "geometry",
    "04_2_component_attribution": "geometry", "05_1_pretrained_binding_complexity": "pretrained_complexity",
    "05_2_binding_generalization": "binding_generalization",
    "05_3_binding_function_complexity": "controlled_complexity",
    "05_4_functional_form": "controlled_complexity", "d_additional": "additional", "e_pixel_encoders": "pixel_encoders",
}

# The paper-path dry run (tests/test_dry_run.py, `bindcore book --profile paper --dry-run`):
# every chapter on `profile=paper`, so that each branch the paper profile takes (its model
# sizes and recipes, protocols, sweeps, tables, figures, the report) runs, with every loop
# count, step count and data size cut to seconds on a CPU. Per notebook, the papermill
# parameters (`-p` / `-y`) that do it; the one place they are kept. Data sizes are about the
# smoke profile's (the controlled models: a 4 x 4 sub-grid of the paper's object spaces), and
# the paper's models train for 2 steps with small batches and evaluations. Not the numbers:
# the code.
# the §5.2 models the other chapters use: as the dry run of 05_2 trains them (shared in the store)
_DRY_CONTROLLED = dict(controlled_steps=2, controlled_eval_scenes=64)
DRY_RUN: dict[str, dict[str, Any]] = {
    "03_formalisation": dict(n_sample_scenes=2000),
    "c1_datasets": dict(clevr3d_width=96, three_object_scenes=4, retrieval_scenes=24),
    "04_1_geometry": dict(text_space=[4, 4], clevr2d_size=64, clevr3d_width=96, image_scenes=48, probe_epochs=50,
                          ks=[0.0, 1.0], max_edits=50, controlled_objects=16, permutations=2, **_DRY_CONTROLLED),
    "04_2_component_attribution": dict(text_space=[4, 4], clevr2d_size=64, clevr3d_width=96, image_scenes=48,
                                       probe_epochs=50, controlled_objects=16, permutations=2, **_DRY_CONTROLLED),
    "05_1_pretrained_binding_complexity": dict(text_space=[4, 4], fractions=[0.4, 0.8], widths=[16, 64],
                                               probe_epochs=50, steps=2, lrs=[1e-2, 1e-3], tree_components=[2, None]),
    "05_2_binding_generalization": dict(coverages=[0.5, 0.9], steps=2, eval_scenes=64),
    "05_3_binding_function_complexity": dict(fractions=[0.5, 0.9], widths=[4, 16], steps=2, max_objects=16,
                                             **_DRY_CONTROLLED),
    "05_4_functional_form": dict(fractions=[0.5, 0.9], widths=[4, 16], steps=2, max_objects=16, **_DRY_CONTROLLED),
    "d_additional": dict(three_object_scenes=24, clevr3d_width=96, probe_epochs=50, natural_types=3,
                         natural_patterns=3, natural_width=64, max_edits=50),
    "e_pixel_encoders": dict(coverages=[0.5, 0.9], steps=2, eval_scenes=32, train_batch=16, fractions=[0.5, 0.9],
                             widths=[4, 16],
                             approx_steps=2, max_objects=16, renders=1),
    "reproduction_report": {},
}


def parameter_names(chapter: str) -> list[str]:
    """The parameters of ``chapter`` (besides ``profile``), in the profile table's order."""
    if chapter not in _CHAPTERS:
        raise unknown_name(chapter, _CHAPTERS, "chapter")
    return list(_CHAPTERS[chapter]["quick"])


def paper_differences(chapter: str, params: dict[str, Any]) -> list[str]:
    """Each parameter of a run of ``chapter`` (``params``) that differs from the paper
    profile's, as "name: this run's (paper: the paper profile's)": what a cheaper
    profile or an override reduces or changes."""
    paper = _CHAPTERS[chapter]["paper"]
    return [f"{k}: {params[k]!r} (paper: {v!r})" for k, v in paper.items() if k in params and params[k] != v]


def parameter_rule(chapter: str, name: str) -> Rule:
    """The declared type and range of ``chapter``'s parameter ``name``."""
    return CHAPTER_RULES.get((chapter, name), RULES[name])


def check_parameter(chapter: str, name: str, value: Any) -> Any:
    """``value`` as ``chapter``'s parameter ``name`` (parsed as its declared type), or a
    ``ValueError`` naming the parameter and its rule."""
    try:
        return parameter_rule(chapter, name).check(value, name)
    except ValueError as exc:
        raise ValueError(f"chapter {chapter!r}, parameter {exc}") from None


def chapter_parameters(chapter: str, profile: str, **given: Any) -> dict[str, Any]:
    """The profile's defaults for ``chapter`` with every non-None ``given`` value on top,
    each checked against its rule (:data:`RULES`)."""
    check_profile(profile)
    params = dict(_CHAPTERS[chapter][profile]) if chapter in _CHAPTERS else None
    if params is None:
        raise unknown_name(chapter, _CHAPTERS, "chapter")
    for name in given:
        if name not in params:
            raise unknown_name(name, params, "parameter", f" of chapter {chapter!r}")
    params.update({k: check_parameter(chapter, k, v) for k, v in given.items() if v is not None})
    params["profile"] = profile
    return params
