"""Appendix E claims per visual level (rules in words: :func:`pixel_claim_rules`) and D.7 beside it."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from bindcore.analysis.approximators.labels import FAMILY_LABELS
from bindcore.data.pixels import LEVELS
from bindcore.paper import PAPER_CLAIMS_APPENDIX_E, PAPER_D7

from .approximators import SMALL_SHARE, SMALL_WIDTH, form_sentences
from .core import (
    BAG_MARGIN,
    BINDS_AT,
    NATIVE,
    STATUSES,
    UNTESTABLE,
    _ceiling,
    _margin,
    _ok,
    evidence,
    verdict,
)

CEILING_SHARE = 0.75
PIXEL_COLUMNS = ["claim", "paper", "level", "ours", "null", "margin", "verdict", "profile"]


def pixel_claim_rules() -> str:
    """The rules by which :func:`pixel_claims` turns numbers into verdicts, in words."""
    return (
        f"binding generalizes: held-out strict recognition clears the bag-of-concepts ceiling of the same scenes by "
        f"{BAG_MARGIN:g} and held-out swap-pair recognition (any bag of concepts scores 0) reaches "
        f"{BINDS_AT:g}. Small MLPs approximate the binding map: the best MLP clears the bag ceiling by "
        f"{BAG_MARGIN:g}, an MLP of width <= {SMALL_WIDTH} reaches {SMALL_SHARE * 100:g} % of the best width's held-out object "
        f"recognition, and the best reaches {CEILING_SHARE:.0%} of the model's own (the probes reading its real "
        f"embeddings of the same scenes). The global product recovers objects: it beats the additive probe and "
        f"the bag ceiling by {BAG_MARGIN:g} on held-out objects and reaches {CEILING_SHARE:.0%} of the model's own. "
        f"'{UNTESTABLE}' when the model's own held-out object recognition does not clear the bag ceiling by "
        f"{BAG_MARGIN:g}: there is no binding to approximate. Every verdict is one of {', '.join(STATUSES)}."
    )


def _level_of(name: str) -> str:
    """The visual level in a pixel model's name."""
    for level in LEVELS:
        if f", {level}," in name:
            return level
    return name


def pixel_claims(summary: Any, approx: Any, profile: str, ceiling: Any = None):
    """Appendix E's claims per visual level (:data:`PIXEL_COLUMNS`), judged by
    :func:`pixel_claim_rules` from the level ``summary``, the ``approx`` table (largest
    fraction; ``model`` column) and the models' own ``ceiling``."""
    (generalizes, c_generalizes), (small, c_small), (product, c_product) = PAPER_CLAIMS_APPENDIX_E
    rows = []
    for s in summary.to_dict("records"):
        gap = s["held-out objects, strict"] - s["bag ceiling"]
        holds = gap >= BAG_MARGIN and s["swap pairs"] >= BINDS_AT
        rows.append({"claim": generalizes, "paper": c_generalizes, "level": s["level"],
                     "ours": f"coverage {s['coverage']:g}: swap pairs {s['swap pairs']:.2f}, strict "
                             f"{s['held-out objects, strict']:.2f} vs bag ceiling {s['bag ceiling']:.2f}",
                     "null": f"bag ceiling {s['bag ceiling']:.2f}; swap pairs 0",
                     "margin": _margin(s["held-out objects, strict"], s["bag ceiling"], BAG_MARGIN),
                     "verdict": verdict(bool(holds)) if _ok(gap, s["swap pairs"]) else UNTESTABLE})
    frac = approx["fraction"].max()
    top = approx[approx["fraction"] == frac]
    for name, sub in top.groupby("model", sort=False):
        level = _level_of(name)
        own = float("nan")
        if ceiling is not None:
            c = ceiling[(ceiling["model"] == name) & (ceiling["fraction"] == frac)]["heldout_object"]
            own = float(c.iloc[0]) if len(c) else own
        bag = _ceiling(sub)
        untestable = not _ok(bag) or (_ok(own) and own < bag + BAG_MARGIN)
        why_not = ("no bag ceiling of these scenes" if not _ok(bag) else
                   f"the model's own ({own:.2f}) does not clear the bag ceiling ({bag:.2f}) by {BAG_MARGIN:g}")
        own_text = f"; the model's own: {own:.2f}" if _ok(own) else ""
        null = f"bag ceiling {bag:.2f}" if _ok(bag) else "–"
        mlp = sub[sub["family"] == FAMILY_LABELS["mlp"]].groupby("width")["heldout_object"].mean().sort_index()
        if len(mlp):
            best = float(mlp.max())
            smallest = int(mlp.index[mlp >= SMALL_SHARE * best][0])
            close = not _ok(own) or best >= CEILING_SHARE * own
            ok = smallest <= SMALL_WIDTH and close and _ok(bag) and best >= bag + BAG_MARGIN
            rows.append({"claim": small, "paper": c_small, "level": level,
                         "ours": f"fraction {frac:g}, held-out objects by MLP width: "
                                 + ", ".join(f"{int(w)}: {v:.2f}" for w, v in mlp.items())
                                 + f"; width {smallest} reaches {SMALL_SHARE * 100:g} % of the best" + own_text
                                 + ("" if not untestable else f" ({why_not})"),
                         "null": null, "margin": _margin(best, bag, BAG_MARGIN) if _ok(bag) else "–",
                         "verdict": UNTESTABLE if untestable else verdict(bool(ok))})

        def fam(f: str, sub: Any = sub) -> float:
            v = sub[sub["family"] == FAMILY_LABELS[f]]["heldout_object"]
            return float(v.max()) if len(v) else float("nan")

        gp, add, both = fam("global_product"), fam("additive"), fam("sum_global_product")
        if _ok(gp):
            close = not _ok(own) or gp >= CEILING_SHARE * own
            ref = max(add if _ok(add) else -math.inf, bag)
            ok = _ok(bag) and gp >= ref + BAG_MARGIN and close
            rows.append({"claim": product, "paper": c_product, "level": level,
                         "ours": f"fraction {frac:g}, held-out objects: global product {gp:.2f}, additive + global "
                                 f"product {both:.2f}, additive {add:.2f}" + own_text
                                 + ("" if not untestable else f" ({why_not})"),
                         "null": null + (f", additive {add:.2f}" if _ok(add) else ""),
                         "margin": _margin(gp, ref, BAG_MARGIN) if _ok(bag) else "–",
                         "verdict": UNTESTABLE if untestable else verdict(bool(ok))})
    out = pd.DataFrame(rows, columns=PIXEL_COLUMNS[:-1])
    order = {c: i for i, c in enumerate(dict.fromkeys(out["claim"]))} if len(out) else {}
    out = out.sort_values("claim", key=lambda col: col.map(order), kind="stable").reset_index(drop=True)
    out["profile"] = profile
    return out


def pixel_form_sentences(forms: Any, claims: Any) -> list[str]:
    """Per pixel model: whether the paper's ordering of the families (global product > MLP >
    additive on held-out objects, largest fraction) shows in ``forms``, with the verdict of
    the global-product claim of its level in ``claims`` (:func:`pixel_claims`) beside it."""
    product = PAPER_CLAIMS_APPENDIX_E[2][0]
    rows = claims[claims["claim"] == product] if len(claims) else claims
    by_level = dict(zip(rows["level"], rows["verdict"])) if len(rows) else {}
    statuses = {name: by_level.get(_level_of(name), "") for name in dict.fromkeys(forms["model"])}
    return form_sentences(forms, claim=product, statuses=statuses)


def d7_contrast(pretrained: Any, pixel_approx: Any, profile: str):
    """D.7: held-out recognition of the global-product (and additive) probe at the largest
    fraction, per frozen encoder of §5.1 and per pixel model."""
    gp = FAMILY_LABELS["global_product"]
    rows = []
    for key, table in (("encoder", pretrained), ("model", pixel_approx)):
        top = table[table["fraction"] == table["fraction"].max()]
        for name, sub in top.groupby(key, sort=False):
            g, a = sub[sub["family"] == gp], sub[sub["family"] == FAMILY_LABELS["additive"]]
            if g.empty:
                continue
            rows.append({"encoder": name, "kind": "frozen encoder (§5.1)" if key == "encoder"
                         else "trained from scratch on pixels (appendix E)", "fraction": float(sub["fraction"].iloc[0]),
                         "global product: held-out objects": float(g["heldout_object"].max()),
                         "additive: held-out objects": float(a["heldout_object"].max()) if len(a) else float("nan"),
                         "global product: held-out concepts": float(g["heldout_concept"].max())})
    out = pd.DataFrame(rows)
    if not len(out):
        return out
    out["evidence"] = [evidence(n) if k.startswith("frozen") else NATIVE
                       for n, k in zip(out["encoder"], out["kind"])]
    # the paper's "near zero for CLIP and DINOv2" stands beside pretrained CLIP / DINOv2 rows only
    out["paper"] = [PAPER_D7["pixels"] if not k.startswith("frozen") else PAPER_D7["frozen"] if e == NATIVE
                    else "– (the paper's number is CLIP's and DINOv2's)" for k, e in zip(out["kind"], out["evidence"])]
    out["profile"] = profile
    return out
