"""What the paper reports, once: every number this book sets beside its own, and the
paper's statement of each claim a chapter tests (Uselis, Koishigarina, Oh, "How can
embedding models bind concepts?", arXiv 2605.31503).

Sources: the paper's summary (``../shared/paper/paper-summary.txt``) and, where marked
(:data:`NOTES`), secondary reading notes of the paper (``numbers.md``). Only this module
and :mod:`bindcore.book` hold the paper's numbers and claims; the science modules hold
none (``tests/test_layout.py`` checks).
"""

from __future__ import annotations

NOTES = "as reported in secondary notes"
SUMMARY = "paper summary"
SUMMARY_AND_NOTES = "paper summary + notes"

# ---------------------------------------------------------------------------------
# appendix C: the datasets
# ---------------------------------------------------------------------------------
PAPER_DATASETS = {
    "CLEVR-2D": "576 scenes, 24 objects (8 x 3)",
    "captions (C.3)": "10,000 + 100 scenes, 10 x 10",
    "captions (released code)": "160,000 + 400 scenes, 20 x 20",
}

# ---------------------------------------------------------------------------------
# §4.1 additive decomposition, §4.2 / D.1 component attribution, D.2 editing
# ---------------------------------------------------------------------------------
# §4.1 reconstruction from object components (notes): R² avg, R² avg+pos, retrieval, probing
PAPER_RECONSTRUCTION = {
    ("text", "CLIP ViT-B/32"): (0.90, 0.92, 0.97, 0.99),
    ("PUG:SPARE", "CLIP ViT-B/32"): (0.75, 0.84, 0.93, 0.98),
    ("PUG:SPARE", "DINOv2"): (0.78, 0.86, 0.86, 0.98),
    ("CLEVR", "CLIP ViT-B/32"): (0.78, 0.83, 0.94, 0.96),
    ("text", "random init"): (0.47, 0.69, 0.42, 0.82),
}

# §4.1 (summary), CLIP ViT-B/32: the bag of concepts explains up to this R² ...
PAPER_CONCEPT_R2 = {"text": 0.84, "CLEVR": 0.71}
# ... and the bag of objects about this much more
PAPER_OBJECTS_OVER_CONCEPTS = 0.10

# §4.2 / D.1 subtraction, CLIP ViT-B/32: (concept, object) decoding accuracy
PAPER_ATTRIBUTION = {
    "text": {"original": (1.00, 1.00), "minus concepts": (0.06, 0.99), "minus objects": (0.05, 0.04),
             "permuted concepts": (0.92, 0.99), "permuted objects": (0.96, 1.00)},
    "image": {"original": (0.94, 0.96), "minus concepts": (0.05, 0.85), "minus objects": (0.02, 0.01),
              "permuted concepts": (0.99, 0.97), "permuted objects": (0.86, 0.92)},
}

# D.2 editing at k = 1 (notes): probing and retrieval per bank (obj-avg, pos-avg, single;
# None where the paper has no single-object images)
EDIT_BANKS = ("obj-avg", "pos-avg", "single")
PAPER_EDITING = {
    ("CLEVR", "CLIP ViT-B/32"): {"probing": (0.98, 0.98, 0.86), "retrieval": (1.00, 1.00, 0.97)},
    ("CLEVR-2D", "CLIP ViT-B/32"): {"probing": (0.98, 0.98, 0.92), "retrieval": (0.99, 0.99, 0.97)},
    ("PUG:SPARE", "CLIP ViT-B/32"): {"probing": (0.94, 0.95, None), "retrieval": (0.86, 0.94, None)},
    ("PUG:SPARE", "DINOv2"): {"probing": (0.97, 0.97, None), "retrieval": (0.48, 0.76, None)},
}

# ---------------------------------------------------------------------------------
# appendix D.3 (three objects, occlusion) and D.5 (MDS)
# ---------------------------------------------------------------------------------
# D.3, from the paper summary (not the secondary notes): pretrained CLIP on the authors'
# Blender three-object CLEVR scenes. The summary gives no probing number without occlusion.
PAPER_THREE_OBJECTS = {
    False: {"probing": "–", "retrieval": 0.76, "r2": "objects > concepts"},
    True: {"probing": "0.91–0.93", "retrieval": 0.65, "r2": "objects > concepts"},
}

# D.5, from the paper summary: what the MDS pictures show
PAPER_MDS = ("partial grid-like structure (colour x shape), strongest for text embeddings, more distorted for "
             "CLIP image embeddings; DINOv2 separates shapes and keeps similar colours close")

# the claims of D.3 and D.5: (claim, the paper's statement)
PAPER_CLAIMS_APPENDIX_D = (
    ("D.3 probing stays high with occlusion",
     f"probing {PAPER_THREE_OBJECTS[True]['probing']} with occlusions (CLIP, Blender CLEVR)"),
    ("D.3 object-based beats concept-based reconstruction", PAPER_THREE_OBJECTS[True]["r2"]),
    ("D.3 occlusion lowers retrieval",
     f"{PAPER_THREE_OBJECTS[False]['retrieval']:.2f} -> {PAPER_THREE_OBJECTS[True]['retrieval']:.2f}"),
    ("D.5 partial grid structure, strongest for text", PAPER_MDS),
)

# ---------------------------------------------------------------------------------
# §5 binding functions and binding generalization
# ---------------------------------------------------------------------------------
# Appendix D: the approximators' training protocol (Adam)
PAPER_APPROXIMATOR_PROTOCOL = {"steps": 10_000, "lrs": (1e-2, 1e-3, 1e-4), "batch_size": 4096}

# §5.1, CLIP (secondary notes)
PAPER_PRETRAINED_COMPLEXITY = (">= 0.80 concepts above fraction 0.3; objects about 0.20 at width 4096 and "
                               "fraction 0.9 (secondary notes)")

# §5.2: (claim, the paper's statement), in the order of the chapter's claims table
PAPER_CLAIMS_5_2 = (
    ("held-out object recognition rises with coverage", "sharp rise between coverage 0.1 and 0.9"),
    ("at high coverage it is far above the bag-of-concepts baseline", "near 1.0"),
    ("concept recognition generalizes at lower coverage than binding", "yes"),
    ("larger object spaces need a smaller fraction of their objects",
     "|O| >= 2,500 needs about 0.3 coverage (secondary notes)"),
)

# §5.3 and §5.4
PAPER_WIDTH = "small MLPs suffice; the gap grows with |O|"
PAPER_FORM = "additive: concepts yes, objects no; products recover objects; global product best"

# ---------------------------------------------------------------------------------
# appendix E: vision encoders trained from scratch on pixels (summary), and D.7
# ---------------------------------------------------------------------------------
PAPER_PIXELS = {
    "objects": "squares with a fill colour and a border colour",
    "values per concept": 50,
    "combinations": "up to 6.5 million",
    "model": "a convolutional front-end feeding an eight-layer transformer",
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

# D.7 beside appendix E: the global-product probe on frozen pretrained encoders and on
# models trained from scratch on pixels
PAPER_D7 = {"frozen": "fails (near 0) on CLIP and DINOv2", "pixels": "recovers objects"}
