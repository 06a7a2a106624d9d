"""The paper's claims beside what this book shows, one table per chapter: each row is a
claim, the paper's statement of it (:mod:`bindcore.paper`) and ours, computed from the
chapter's results; "ours" names the profile or the encoder it comes from."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from bindcore.data.pixels import LEVELS
from bindcore.paper import (
    PAPER_CLAIMS_5_2,
    PAPER_CLAIMS_APPENDIX_D,
    PAPER_CLAIMS_APPENDIX_E,
    PAPER_D7,
    PAPER_FORM,
    PAPER_PRETRAINED_COMPLEXITY,
    PAPER_WIDTH,
)

from .tables import FAMILY_LABELS


def pretrained_claims(table: Any, profile: str):
    """§5.1's claims beside ours: concept recognition above fraction 0.3, object
    recognition at the largest fraction (widest MLP and best family)."""
    rows = []
    for name, sub in table.groupby("encoder", sort=False):
        above = sub[sub["fraction"] > 0.3]
        mlp_above = above[above["family"] == FAMILY_LABELS["mlp"]]
        top = sub[sub["fraction"] == sub["fraction"].max()]
        mlp_top = top[top["family"] == FAMILY_LABELS["mlp"]]
        rows.append({
            "encoder": name,
            "paper (CLIP)": PAPER_PRETRAINED_COMPLEXITY,
            "concepts above fraction 0.3 (widest MLP)": mlp_above[mlp_above["width"] == mlp_above["width"].max()]
                ["heldout_concept"].min() if len(mlp_above) else math.nan,
            "concepts above fraction 0.3 (worst family)": above["heldout_concept"].min() if len(above) else math.nan,
            "objects, widest MLP, largest fraction": mlp_top.loc[mlp_top["width"].idxmax(), "heldout_object"]
            if len(mlp_top) else math.nan,
            "objects, best family, largest fraction": top["heldout_object"].max(),
            "best family": top.loc[top["heldout_object"].idxmax(), "family"],
            "profile": profile,
        })
    return pd.DataFrame(rows)



def width_claims(table: Any, profile: str):
    """§5.3: at the largest fraction, how small an MLP reaches 90 % of the best held-out
    object recognition, per controlled model."""
    top = table[(table["fraction"] == table["fraction"].max()) & (table["family"] == FAMILY_LABELS["mlp"])]
    rows = []
    for name, sub in top.groupby("model", sort=False):
        small, large = sub.loc[sub["width"].idxmin()], sub.loc[sub["width"].idxmax()]
        good = sub[sub["heldout_object"] >= 0.9 * sub["heldout_object"].max()]
        rows.append({"model": name, "paper": PAPER_WIDTH,
                     f"width {int(small['width'])}: held-out objects": small["heldout_object"],
                     f"width {int(large['width'])}: held-out objects": large["heldout_object"],
                     "smallest width reaching 90 % of the best": int(good["width"].min()), "profile": profile})
    return pd.DataFrame(rows)



def form_claims(table: Any, profile: str):
    """§5.4: additive vs product families at the largest fraction, per controlled model."""
    top = table[table["fraction"] == table["fraction"].max()]

    def best(sub: Any, family: str, metric: str) -> float:
        vals = sub[sub["family"] == FAMILY_LABELS[family]][metric]
        return float(vals.max()) if len(vals) else float("nan")

    rows = []
    for name, sub in top.groupby("model", sort=False):
        rows.append({
            "model": name,
            "paper": PAPER_FORM,
            "additive: concepts": best(sub, "additive", "heldout_concept"),
            "additive: objects": best(sub, "additive", "heldout_object"),
            "global product: objects": best(sub, "global_product", "heldout_object"),
            "additive + global product: objects": best(sub, "sum_global_product", "heldout_object"),
            "best family (objects)": sub.loc[sub["heldout_object"].idxmax(), "family"],
            "profile": profile,
        })
    return pd.DataFrame(rows)



def claims_table(summary, profile: str, concept_threshold: float = 0.9, binding_margin: float = 0.1):
    """The §5.2 claims, the paper's statement of each, and what our sweep shows."""
    conc = summary[f"concepts >= {concept_threshold:g} from coverage"]
    bind = summary[f"objects beat oracle by {binding_margin:g} from coverage"]

    def order(c: float, b: float) -> str:
        if pd.isna(c):
            return f"concepts never reach {concept_threshold:g}"
        if pd.isna(b) or c < b:
            return f"concepts earlier ({c:g} vs {'never' if pd.isna(b) else f'{b:g}'})"
        return f"{'same coverage' if c == b else 'binding earlier'} ({c:g} vs {b:g})"

    (rises, c_rises), (above, c_above), (order_claim, c_order), (fraction, c_fraction) = PAPER_CLAIMS_5_2
    rows = [
        (rises, c_rises,
         "rank correlation " + ", ".join(f"|O|={o}: {r:.2f}" for o, r in
                                         zip(summary["objects"], summary["rank correlation coverage vs objects"]))),
        (above, c_above,
         ", ".join(f"|O|={o}: {a:.2f} vs oracle {b:.2f} at coverage {c:g}" for o, a, b, c in
                   zip(summary["objects"], summary["objects at largest coverage"],
                       summary["oracle at largest coverage"], summary["largest coverage"]))),
        (order_claim, c_order,
         f"coverage where concepts reach {concept_threshold:g} vs where objects beat the oracle by "
         f"{binding_margin:g}: " + "; ".join(f"|O|={o}: {order(c, b)}" for o, c, b in zip(summary["objects"], conc, bind))),
        (fraction, c_fraction,
         "onset of binding generalization: " + ", ".join(f"|O|={o}: {b:g}" for o, b in zip(summary["objects"], bind))
         + "; objects at the largest coverage: " + ", ".join(
             f"|O|={o}: {a:.2f}" for o, a in zip(summary["objects"], summary["objects at largest coverage"]))),
    ]
    return pd.DataFrame(rows, columns=["claim", "paper", f"ours (profile '{profile}')"])



def _who(r: pd.Series) -> str:
    """An encoder and what its weights are, once (no "random init (random init)")."""
    if r["weights"] == "random init (control)":
        return f"{r['encoder']}, control" if "random init" in r["encoder"] else f"{r['encoder']}, random init (control)"
    return f"{r['encoder']}, {r['weights']}"



def additional_claims(three: pd.DataFrame, grid: pd.DataFrame) -> pd.DataFrame:
    """The paper's D.3 and D.5 claims (summary) next to ours: ``three`` from
    :func:`three_object_table`, ``grid`` from :func:`mds_table`. Each line of our cells
    names the encoder it comes from (random-init ones as the control); lines are
    separated by newlines."""
    def three_cell(fmt: Callable[[pd.Series], str]) -> str:
        return "\n".join(f"{'occluded' if r['occlusion'] else 'no occlusion'} ({_who(r)}): {fmt(r)}"
                         for _, r in three.iterrows())

    def r2(r: pd.Series) -> str:
        o, c = "R² held-out objects", "R² held-out concepts"
        return (f"held-out R² objects vs concepts: lstsq {r[o + ' (lstsq)']:.2f} vs {r[c + ' (lstsq)']:.2f}, "
                f"avg {r[o + ' (avg)']:.2f} vs {r[c + ' (avg)']:.2f}")

    def retrieval(r: pd.Series) -> str:
        return (f"{r['retrieval objects (all scenes)']:.2f} all scenes, {r['retrieval objects (held-out)']:.2f} "
                f"held-out (chance {r['retrieval chance (held-out)']:.3f})")

    grid_lines = [f"{r['dataset']} ({_who(r)}): {r['grid-likeness (MDS)']:.2f} "
                  f"({r['grid-neighbour recall (full d)']:.2f}; {r['chance']:.2f})" for _, r in grid.iterrows()]
    ours = [
        three_cell(lambda r: f"concepts {r['probing concepts']:.2f}, objects {r['probing objects']:.2f}"),
        three_cell(r2),
        three_cell(retrieval),
        "\n".join(["grid-likeness of the 2-D picture (grid-neighbour recall in the full embedding; chance):",
                   *grid_lines, "DINOv2 is not run in this book."]),
    ]
    rows = [{"claim": claim, "paper (summary)": paper, "ours": o} for (claim, paper), o in zip(PAPER_CLAIMS_APPENDIX_D, ours)]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------
# appendix E (pixel encoders) and the D.7 contrast
# ---------------------------------------------------------------------------------
# thresholds of the claim rules (see :func:`pixel_claim_rules`)
SWAP_THRESHOLD = 0.1
SMALL_WIDTH = 64
CEILING_SHARE = 0.75


def pixel_claim_rules() -> str:
    """The rules by which :func:`pixel_claims` turns numbers into verdicts, in words."""
    return (
        f"binding generalizes at a level: held-out swap-pair recognition (any bag of concepts scores 0) reaches "
        f"{SWAP_THRESHOLD:g}. Small MLPs approximate the binding map: an MLP of width <= {SMALL_WIDTH} reaches "
        f"90 % of the best width's held-out object recognition, and the best reaches {CEILING_SHARE:.0%} of the "
        f"model's own (the probes reading its real embeddings of the same scenes) ('partly shown' when only the "
        f"first holds). The global product recovers objects: it beats the additive probe on held-out objects and "
        f"reaches {CEILING_SHARE:.0%} of the model's own ('partly shown' when it beats the additive probe by at "
        f"least {SWAP_THRESHOLD:g} but stays below that share). 'cannot be tested' when the model's own held-out "
        f"object recognition is below {SWAP_THRESHOLD:g}: there is no binding to approximate."
    )


def _level_of(name: str) -> str:
    """The visual level in a pixel model's name (``PixelTrainConfig.short_name``)."""
    for level in LEVELS:
        if f", {level}," in name:
            return level
    return name


def pixel_claims(summary: Any, approx: Any, profile: str, ceiling: Any = None):
    """Appendix E's claims, the paper's statement of each and ours, per visual level,
    with the verdicts of :func:`pixel_claim_rules`.

    ``summary``: :func:`bindcore.book.tables.level_summary`; ``approx``: the approximator
    table (:func:`bindcore.book.tables.approximator_table` rows with a ``model`` column)
    of the MLP widths and families; ``ceiling``:
    :func:`bindcore.analysis.complexity.true_embedding_ceiling` of the same binding data
    (``model`` column). Approximators are read at their largest data fraction."""
    (generalizes, c_generalizes), (small, c_small), (product, c_product) = PAPER_CLAIMS_APPENDIX_E
    rows = []
    for s in summary.to_dict("records"):
        rows.append({"claim": generalizes, "paper": c_generalizes, "level": s["level"],
                     "ours": f"coverage {s['coverage']:g}: swap pairs {s['swap pairs']:.2f}, strict "
                             f"{s['held-out objects, strict']:.2f} (bag floor {s['bag floor']:.2f}, ceiling "
                             f"{s['bag ceiling']:.2f})",
                     "verdict": "shown" if s["swap pairs"] >= SWAP_THRESHOLD else "not shown"})
    frac = approx["fraction"].max()
    top = approx[approx["fraction"] == frac]
    for name, sub in top.groupby("model", sort=False):
        level = _level_of(name)
        own = float("nan")
        if ceiling is not None:
            c = ceiling[(ceiling["model"] == name) & (ceiling["fraction"] == frac)]["heldout_object"]
            own = float(c.iloc[0]) if len(c) else own
        untestable = own == own and own < SWAP_THRESHOLD
        own_text = f"; the model's own: {own:.2f}" if own == own else ""
        mlp = sub[sub["family"] == FAMILY_LABELS["mlp"]].groupby("width")["heldout_object"].mean().sort_index()
        if len(mlp):
            best = float(mlp.max())
            smallest = int(mlp.index[mlp >= 0.9 * best][0])
            small_ok = smallest <= SMALL_WIDTH and best >= SWAP_THRESHOLD
            close = own != own or best >= CEILING_SHARE * own
            verdict = ("cannot be tested" if untestable else "shown" if small_ok and close
                       else "partly shown" if small_ok else "not shown")
            rows.append({"claim": small, "paper": c_small, "level": level,
                         "ours": f"fraction {frac:g}, held-out objects by MLP width: "
                                 + ", ".join(f"{int(w)}: {v:.2f}" for w, v in mlp.items())
                                 + f"; width {smallest} reaches 90 % of the best" + own_text,
                         "verdict": verdict})

        def fam(f: str, sub: Any = sub) -> float:
            v = sub[sub["family"] == FAMILY_LABELS[f]]["heldout_object"]
            return float(v.max()) if len(v) else float("nan")

        gp, add, both = fam("global_product"), fam("additive"), fam("sum_global_product")
        if gp == gp:
            close = own != own or gp >= CEILING_SHARE * own
            verdict = ("cannot be tested" if untestable else "shown" if gp > add and close and gp >= SWAP_THRESHOLD
                       else "partly shown" if gp >= add + SWAP_THRESHOLD else "not shown")
            rows.append({"claim": product, "paper": c_product, "level": level,
                         "ours": f"fraction {frac:g}, held-out objects: global product {gp:.2f}, additive + global "
                                 f"product {both:.2f}, additive {add:.2f}" + own_text,
                         "verdict": verdict})
    out = pd.DataFrame(rows)
    order = {c: i for i, c in enumerate(dict.fromkeys(out["claim"]))} if len(out) else {}
    out = out.sort_values("claim", key=lambda col: col.map(order), kind="stable").reset_index(drop=True)
    out["profile"] = profile
    return out


def d7_contrast(pretrained: Any, pixel_approx: Any, profile: str):
    """D.7 beside appendix E: held-out object recognition of the global-product probe
    (and of the additive probe, the bag-of-concepts reference) at the largest data
    fraction, on each frozen encoder of §5.1 (``pretrained``: the §5.1 sweep table,
    column ``encoder``) and on each pixel model (column ``model``)."""
    gp = FAMILY_LABELS["global_product"]
    rows = []
    for key, table in (("encoder", pretrained), ("model", pixel_approx)):
        top = table[table["fraction"] == table["fraction"].max()]
        for name, sub in top.groupby(key, sort=False):
            g, a = sub[sub["family"] == gp], sub[sub["family"] == FAMILY_LABELS["additive"]]
            if g.empty:
                continue
            rows.append({"encoder": name, "kind": "frozen, pretrained or random init (§5.1)" if key == "encoder"
                         else "trained from scratch on pixels (appendix E)", "fraction": float(sub["fraction"].iloc[0]),
                         "global product: held-out objects": float(g["heldout_object"].max()),
                         "additive: held-out objects": float(a["heldout_object"].max()) if len(a) else float("nan"),
                         "global product: held-out concepts": float(g["heldout_concept"].max())})
    out = pd.DataFrame(rows)
    out["paper"] = [PAPER_D7["frozen"] if k.startswith("frozen") else PAPER_D7["pixels"] for k in out["kind"]]
    out["profile"] = profile
    return out
