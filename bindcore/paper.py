"""What the paper reports (Uselis, Koishigarina, Oh, arXiv 2605.31503), once: every number the book
sets beside its own and each claim's statement, from the summary and, where marked (:data:`NOTES`),
secondary notes; :data:`RELEASE` holds settings of the released code (never compared)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

NOTES = "as reported in secondary notes"
SUMMARY = "paper summary"
SUMMARY_AND_NOTES = "paper summary + notes"

# -- appendix C: the datasets --
# sizes of the paper's datasets (summary; checked against the release's label files)
PAPER_DATASET_SIZES = {
    "CLEVR": {"scenes": 576, "colours": 8, "shapes": 3, "objects": 24},
    "CLEVR-2D": {"scenes": 576, "colours": 8, "shapes": 3, "objects": 24},
    "PUG:SPARE": {"scenes": 7392, "species": 12, "colours": 8},
    "captions (C.3)": {"two-object scenes": 10_000, "single-object scenes": 100, "adjectives": 10, "nouns": 10},
    "captions (released code)": {"two-object scenes": 160_000, "single-object scenes": 400, "adjectives": 20,
                                 "nouns": 20},
}


def _sizes(name: str) -> str:
    s = PAPER_DATASET_SIZES[name]
    if "adjectives" in s:
        return (f"{s['two-object scenes']:,} + {s['single-object scenes']:,} scenes, "
                f"{s['adjectives']} x {s['nouns']}")
    return f"{s['scenes']} scenes, {s['objects']} objects ({s['colours']} x {s['shapes']})"


PAPER_DATASETS = {name: _sizes(name) for name in ("CLEVR-2D", "captions (C.3)", "captions (released code)")}

# -- §4.1 additive decomposition, §4.2 / D.1 component attribution, D.2 editing --
# §4.1 reconstruction from object components (notes): R² avg, R² avg+pos, retrieval, probing
PAPER_RECONSTRUCTION = {
    ("text", "CLIP ViT-B/32"): (0.90, 0.92, 0.97, 0.99),
    ("PUG:SPARE", "CLIP ViT-B/32"): (0.75, 0.84, 0.93, 0.98),
    ("PUG:SPARE", "DINOv2"): (0.78, 0.86, 0.86, 0.98),
    ("CLEVR", "CLIP ViT-B/32"): (0.78, 0.83, 0.94, 0.96),
    ("text", "random init"): (0.47, 0.69, 0.42, 0.82),
}
# the metrics of those columns, each with the (estimator, column) of our decomposition frame it is compared with
RECONSTRUCTION_METRICS = {"R² objects (avg)": ("avg", "r2_eval"), "R² objects (avg + pos)": ("pos-avg", "r2_eval"),
                          "retrieval": ("avg", "retrieval"), "probing": ("avg", "probe_object")}

# §4.1 (summary), CLIP ViT-B/32: the bag of concepts explains up to this R² ...
PAPER_CONCEPT_R2 = {"text": 0.84, "CLEVR": 0.71}
# ... and the bag of objects about this much more
PAPER_OBJECTS_OVER_CONCEPTS = 0.10
# §4.1 (summary), CLIP on CLEVR: editing retrieval with scene-averaged object embeddings
# and with single-object embeddings (CLEVR and CLEVR-2D); the same numbers are the D.2
# table's obj-avg and single columns
PAPER_EDIT_RETRIEVAL_SUMMARY = {"scene-averaged": 1.00, "single-object": 0.97}
EDIT_SUMMARY_BANKS = {"scene-averaged": "obj-avg", "single-object": "single"}  # our bank of each

# §4.2 / D.1 subtraction, CLIP ViT-B/32: (concept, object) decoding accuracy
PAPER_ATTRIBUTION = {
    "text": {"original": (1.00, 1.00), "minus concepts": (0.06, 0.99), "minus objects": (0.05, 0.04),
             "permuted concepts": (0.92, 0.99), "permuted objects": (0.96, 1.00)},
    "image": {"original": (0.94, 0.96), "minus concepts": (0.05, 0.85), "minus objects": (0.02, 0.01),
              "permuted concepts": (0.99, 0.97), "permuted objects": (0.86, 0.92)},
}
# the paper's image rows of §4.2 / D.1 are on CLEVR (the release's probe suite runs on it)
PAPER_ATTRIBUTION_DATA = {"text": "text", "image": "CLEVR"}

# D.2 editing at k = 1 (notes): probing and retrieval per bank (obj-avg, pos-avg, single;
# None where the paper has no single-object images). The release tabulates these per
# case, "Different" and "Shared" concepts (PUG:SPARE: Different only, its objects never
# share a value); the notes give one row per dataset, read here as the "Different" rows.
EDIT_BANKS = ("obj-avg", "pos-avg", "single")
PAPER_EDITING_CASE = "different"
PAPER_EDITING = {
    ("CLEVR", "CLIP ViT-B/32"): {"probing": (0.98, 0.98, 0.86), "retrieval": (1.00, 1.00, 0.97)},
    ("CLEVR-2D", "CLIP ViT-B/32"): {"probing": (0.98, 0.98, 0.92), "retrieval": (0.99, 0.99, 0.97)},
    ("PUG:SPARE", "CLIP ViT-B/32"): {"probing": (0.94, 0.95, None), "retrieval": (0.86, 0.94, None)},
    ("PUG:SPARE", "DINOv2"): {"probing": (0.97, 0.97, None), "retrieval": (0.48, 0.76, None)},
}

# -- appendix D.3 (three objects, occlusion), D.4 (natural images) and D.5 (MDS) --
# D.3, from the paper summary (not the secondary notes): pretrained CLIP on the authors'
# Blender three-object CLEVR scenes. The summary gives no probing number without
# occlusion; probing with occlusion is a range (low, high).
PAPER_THREE_OBJECTS = {
    False: {"probing": None, "retrieval": 0.76, "r2": "objects > concepts"},
    True: {"probing": (0.91, 0.93), "retrieval": 0.65, "r2": "objects > concepts"},
}


def fmt_objects(n: Any) -> str:
    """An object-space size as the book writes it ("|O| = 2,500")."""
    return f"|O| = {int(n):,}"


def fmt_range(value: Any) -> str:
    """A number or range as the book writes it, the paper's and ours alike: a fraction to two
    decimals, a count with thousands separators, a range "0.91–0.93"; "–" for None or NaN."""
    if isinstance(value, tuple):
        return "–".join(fmt_range(v) for v in value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return "–" if value is None else str(value)
    if not math.isfinite(value):
        return "–"
    return f"{value:,}" if isinstance(value, numbers.Integral) else f"{value:.2f}"


# D.4, from the paper summary: generated natural images
PAPER_NATURAL_IMAGES = {"images": 625, "object types": 5, "patterns": 5}
PAPER_NATURAL_CLAIM = "decomposition and editing retrieval above chance"

# D.5, from the paper summary: what the MDS pictures show
PAPER_MDS = ("partial grid-like structure (colour x shape), strongest for text embeddings, more distorted for "
             "CLIP image embeddings; DINOv2 separates shapes and keeps similar colours close")

# the claims of D.3 and D.5: (claim, the paper's statement)
PAPER_CLAIMS_APPENDIX_D = (
    ("D.3 probing stays high with occlusion",
     f"probing {fmt_range(PAPER_THREE_OBJECTS[True]['probing'])} with occlusions (CLIP, Blender CLEVR)"),
    ("D.3 object-based beats concept-based reconstruction", PAPER_THREE_OBJECTS[True]["r2"]),
    ("D.3 occlusion lowers retrieval",
     f"{PAPER_THREE_OBJECTS[False]['retrieval']:.2f} -> {PAPER_THREE_OBJECTS[True]['retrieval']:.2f}"),
    ("D.5 partial grid structure, strongest for text", PAPER_MDS),
)

# -- §5 binding functions and binding generalization --
# Appendix D: the approximators' training protocol (Adam)
PAPER_APPROXIMATOR_PROTOCOL = {"steps": 10_000, "lrs": (1e-2, 1e-3, 1e-4), "batch_size": 4096}
# C.4: the approximators' MLP widths
PAPER_APPROXIMATOR_WIDTHS = (64, 4096)

# §5.1, CLIP text: held-out concept recognition above this once the data fraction
# exceeds the second number (summary); held-out object recognition about this at the
# widest MLP and the largest fraction (secondary notes)
PAPER_PRETRAINED_CONCEPTS = {"level": 0.80, "above fraction": 0.3}
PAPER_PRETRAINED_OBJECTS = {"level": 0.20, "width": 4096, "fraction": 0.9}

# §5.2 (summary + notes): the coverages swept; the largest object spaces; the coverage
# from which held-out object recognition is near perfect
PAPER_COVERAGES = (0.1, 0.9)
PAPER_OBJECT_SPACES = (2_500, 125_000)
PAPER_COVERAGE_ONSET = {125_000: (0.3, 0.4), 2_500: 0.3}  # |O| = 125,000 jumps between; |O| >= 2,500 needs

# §5.2: (claim, the paper's statement), in the order of the chapter's claims table
PAPER_CLAIMS_5_2 = (
    ("held-out object recognition rises with coverage",
     f"sharp rise between coverage {PAPER_COVERAGES[0]} and {PAPER_COVERAGES[1]}"),
    ("at high coverage it is far above the bag-of-concepts baseline", "near 1.0"),
    ("concept recognition generalizes at lower coverage than binding", "yes"),
    ("larger object spaces need a smaller fraction of their objects",
     f"|O| >= {PAPER_OBJECT_SPACES[0]:,} needs about {PAPER_COVERAGE_ONSET[2_500]} coverage (secondary notes)"),
)

# §5.3 and §5.4
PAPER_WIDTH = "small MLPs suffice; the gap grows with |O|"
PAPER_FORM = "additive: concepts yes, objects no; products recover objects; global product best"
# §5.4 and appendix E: the families in the order of their held-out object recognition that
# the paper finds (global product best; the additive probe recovers no objects)
PAPER_FORM_ORDER = ("global_product", "mlp", "additive")

# -- appendix E: vision encoders trained from scratch on pixels (summary), and D.7 --
PAPER_PIXELS = {
    "objects": "squares with a fill colour and a border colour",
    "values per concept": 50,
    "combinations": "up to 6.5 million",
    "model": "a convolutional front-end feeding an eight-layer transformer",
    "layers": 8,
    "levels": ("clean", "speckle noise", "speckle noise + overlap"),
}

# (claim, the paper's statement), in the order of the chapter's claims table; the first
# words of each claim name it in tests
PAPER_CLAIMS_APPENDIX_E = (
    ("held-out objects are recognised from pixels (binding generalizes)", "yes, at all three levels (V = 50)"),
    ("shallow, small MLPs approximate the binding map", "yes, at all three levels"),
    ("the global-product probe recovers held-out objects (the additive one does not)",
     "yes, at all three levels; it fails on CLIP and DINOv2 (D.7)"),
)


# figure 9: the global-product probe over many controlled models
PAPER_FIGURE9 = (f"the global-product probe's held-out object recognition tracks the model's own held-out "
                 f"recognition; the correlation weakens slightly at |O| = {PAPER_OBJECT_SPACES[1]:,}")
# D.7: the global-product probe on CLIP and DINOv2
PAPER_PRODUCT_ON_PRETRAINED = "object recognition near zero for CLIP and DINOv2 (concepts recover with more data)"
# D.7 beside appendix E: the global-product probe on frozen pretrained encoders and on
# models trained from scratch on pixels
PAPER_D7 = {"frozen": PAPER_PRODUCT_ON_PRETRAINED, "pixels": "recovers objects"}
# appendix E: vision encoders trained from scratch on pixels (PAPER_PIXELS above holds its setting)
PAPER_PIXELS_CLAIM = ("shallow MLPs approximate the binding map; the global-product probe recovers held-out objects "
                      "at every level of visual complexity")

# -- the released code's settings the book quotes (reference-spec §2-§9; never compared) --
RELEASE = {
    "probe train fraction": 0.4,  # linear probes: 40 % of the scenes
    "probe epochs": 10_000,
    "probe lr": 1e-2,
    "component split": (0.99, 0.01),  # §4.2 fits: 99 % / 1 %
    "component steps": 10_000,
    "approximator steps": 4000,
    "training steps (README)": 50_000,
    "training lr": 3e-5,
    "d_model": 256,
    "layers": 6,
    "batch": 512,
    "logit-scale cap (train, test)": (10, 100),
    "CLI defaults (d_out, O_max, V)": ((3, 1, 10), (64, 2, 20)),  # CLI vs README
}


# -- every number and claim, once --
@dataclass(frozen=True)
class PaperItem:
    """One number the paper reports (``value``: float, int or (low, high)) or one claim (``value``
    None, ``statement``); ``kind``: "result", "dataset", "setting" or "claim"; ``measure``: what
    of ours it is compared with, ``(name, *arguments)``, a name of
    :data:`bindcore.verdicts.comparison.MEASURES`."""

    section: str
    data: str
    model: str
    metric: str
    value: Any
    source: str
    kind: str = "result"
    statement: str = ""
    measure: tuple[Any, ...] = ()

    @property
    def key(self) -> str:
        return " | ".join((self.section, self.data, self.model, self.metric))

    @property
    def shown(self) -> str:
        """The paper's value (or statement) as a table shows it."""
        if self.value is None:
            return self.statement
        if self.kind == "setting" and not isinstance(self.value, int):
            return "–".join(f"{v:g}" for v in self.value) if isinstance(self.value, tuple) else f"{self.value:g}"
        return fmt_range(self.value)


# the paper's CLIP: the release's clip.load("ViT-B/32"), OpenAI's ViT-B/32 trained with QuickGELU; in
# open_clip the model ViT-B-32-quickgelu with the tag openai (ViT-B-32 is its GELU twin, which gives
# other embeddings from the same weights). Every CLIP number of the book is named by it.
PAPER_CLIP_MODEL = ("ViT-B-32-quickgelu", "openai")
CLIP = f"CLIP ViT-B/32 (open_clip {PAPER_CLIP_MODEL[0]} / {PAPER_CLIP_MODEL[1]})"


def paper_items() -> list[PaperItem]:
    """Every number and every claim of this module's tables, once, in the paper's order, each
    with the ``measure`` of ours it is compared with."""
    out: list[PaperItem] = []
    add = out.append
    for name, sizes in PAPER_DATASET_SIZES.items():
        captions = "adjectives" in sizes
        measure = (("caption_space", sizes["adjectives"], sizes["nouns"]) if captions else
                   ("pug_images",) if name == "PUG:SPARE" else ("release_labels",))
        for what, v in sizes.items():
            add(PaperItem("C.3" if captions else "C.1", name, "–", what, v, SUMMARY, "dataset", measure=(*measure, what)))
    for (data, model), vals in PAPER_RECONSTRUCTION.items():
        for (metric, (estimator, column)), v in zip(RECONSTRUCTION_METRICS.items(), vals):
            add(PaperItem("§4.1 reconstruction", data, model, metric, v, NOTES,
                          measure=("decomposition", estimator, column)))
    for data, v in PAPER_CONCEPT_R2.items():
        add(PaperItem("§4.1 variance", data, CLIP, "R² bag of concepts (up to)", v, SUMMARY, measure=("concept_r2",)))
    add(PaperItem("§4.1 variance", "text and CLEVR", CLIP, "R² objects minus concepts (about)",
                  PAPER_OBJECTS_OVER_CONCEPTS, SUMMARY, measure=("objects_over_concepts", "text")))
    for bank, v in PAPER_EDIT_RETRIEVAL_SUMMARY.items():
        add(PaperItem("§4.1 editing", "CLEVR" if bank == "scene-averaged" else "CLEVR and CLEVR-2D", CLIP,
                      f"edit retrieval ({bank} object embeddings)", v, SUMMARY,
                      measure=("editing", "retrieval_exact", EDIT_SUMMARY_BANKS[bank], "CLEVR")))
    for modality, rows in PAPER_ATTRIBUTION.items():
        for variant, (c, o) in rows.items():
            for metric, column, v in (("concepts", "concept", c), ("objects", "object", o)):
                add(PaperItem("§4.2 / D.1 subtraction", PAPER_ATTRIBUTION_DATA[modality], CLIP,
                              f"{variant}: {metric}", v, SUMMARY_AND_NOTES, measure=("attribution", variant, column)))
    for (data, model), row in PAPER_EDITING.items():
        for metric, vals in row.items():
            for bank, v in zip(EDIT_BANKS, vals):
                if v is not None:
                    add(PaperItem("D.2 editing (k = 1)", data, model, f"{metric} ({bank})", v, NOTES,
                                  measure=("editing", "retrieval_exact" if metric == "retrieval" else "probe_concepts",
                                           bank)))
    for occ, row in PAPER_THREE_OBJECTS.items():
        where = "three-object CLEVR, occluded" if occ else "three-object CLEVR"
        if row["probing"] is not None:
            add(PaperItem("D.3", where, CLIP, "probing", row["probing"], SUMMARY,
                          measure=("three_objects", occ, "probing objects")))
        add(PaperItem("D.3", where, CLIP, "retrieval", row["retrieval"], SUMMARY,
                      measure=("three_objects", occ, "retrieval objects (all scenes)")))
        if occ:
            add(PaperItem("D.3", "three-object CLEVR", CLIP, "R² objects vs concepts", None, SUMMARY, "claim",
                          row["r2"], measure=("three_objects_r2",)))
    for what, v in PAPER_NATURAL_IMAGES.items():
        add(PaperItem("D.4", "generated natural images", "–", what, v, SUMMARY, "dataset", measure=("patterned", what)))
    add(PaperItem("D.4", "generated natural images", CLIP, "decomposition and editing retrieval", None, SUMMARY,
                  "claim", PAPER_NATURAL_CLAIM, measure=("natural",)))
    add(PaperItem("D.5", "CLEVR, CLEVR-2D, PUG:SPARE, text", "CLIP, DINOv2", "MDS picture", None, SUMMARY, "claim",
                  PAPER_MDS, measure=("mds",)))
    add(PaperItem("§5.1", "captions", CLIP, "held-out concept recognition above fraction "
                  f"{PAPER_PRETRAINED_CONCEPTS['above fraction']} (at least)", PAPER_PRETRAINED_CONCEPTS["level"],
                  SUMMARY, measure=("pretrained", "concepts")))
    add(PaperItem("§5.1", "captions", CLIP, f"held-out object recognition, width {PAPER_PRETRAINED_OBJECTS['width']}, "
                  f"fraction {PAPER_PRETRAINED_OBJECTS['fraction']} (about)", PAPER_PRETRAINED_OBJECTS["level"], NOTES,
                  measure=("pretrained", "objects")))
    add(PaperItem("§5.1 / D.6 / D.7", "captions", "CLIP, DINOv2", "XGBoost, random forest, global product", None,
                  SUMMARY, "claim", "fail on objects like the MLP; " + PAPER_PRODUCT_ON_PRETRAINED,
                  measure=("pretrained", "families")))
    lrs = PAPER_APPROXIMATOR_PROTOCOL["lrs"]
    for section, what, key, v in (
            ("§5.1 / App. D", "steps", "steps", PAPER_APPROXIMATOR_PROTOCOL["steps"]),
            ("§5.1 / App. D", "batch size", "batch_size", PAPER_APPROXIMATOR_PROTOCOL["batch_size"]),
            ("§5.1 / App. D", "learning rates", "lrs", (min(lrs), max(lrs))),
            ("§5.1 / C.4", "MLP widths", "widths", PAPER_APPROXIMATOR_WIDTHS)):
        add(PaperItem(section, "–", "approximators", what, v, SUMMARY, "setting", measure=("approximators", key)))
    controlled = "controlled dual encoders"
    add(PaperItem("§5.2", "controlled scenes", controlled, "coverages swept", PAPER_COVERAGES, SUMMARY, "setting",
                  measure=("coverages",)))
    add(PaperItem("§5.2", "controlled scenes", controlled, "held-out object recognition at high coverage (near)", 1.0,
                  SUMMARY, measure=("at_chosen_coverage",)))
    add(PaperItem("§5.2", f"|O| = {PAPER_OBJECT_SPACES[1]:,}", controlled,
                  "coverage of the jump to near-perfect recognition", PAPER_COVERAGE_ONSET[125_000], NOTES,
                  measure=("transition", PAPER_OBJECT_SPACES[1], False)))
    add(PaperItem("§5.2", f"|O| >= {PAPER_OBJECT_SPACES[0]:,}", controlled, "coverage needed (about)",
                  PAPER_COVERAGE_ONSET[2_500], NOTES, measure=("transition", PAPER_OBJECT_SPACES[0], True)))
    add(PaperItem("§5.2", "controlled scenes", controlled, "concepts vs binding", None, SUMMARY, "claim",
                  "concept recognition generalizes at lower coverage than binding", measure=("in_section_5_2",)))
    for section, metric, statement, frame in (("§5.3", "MLP width", PAPER_WIDTH, "§5.3"),
                                              ("§5.4", "functional form", PAPER_FORM, "§5.4"),
                                              ("§5.4 figure 9", "global product vs the model", PAPER_FIGURE9,
                                               "figure 9")):
        add(PaperItem(section, "controlled scenes", controlled, metric, None, SUMMARY, "claim", statement,
                      measure=("claim_counts", frame)))
    pixels = "vision encoders trained from scratch"
    for what in ("values per concept", "layers"):
        add(PaperItem("App. E", "pixel scenes", pixels, what, PAPER_PIXELS[what], SUMMARY, "setting",
                      measure=("pixel_chapter",)))
    add(PaperItem("App. E", "pixel scenes", pixels, "binding function", None, SUMMARY, "claim", PAPER_PIXELS_CLAIM,
                  measure=("pixel_chapter",)))
    return out
