"""The paper's claims beside what this book shows, one table per chapter: each row is a
claim, the paper's statement of it (:mod:`bindcore.paper`) and ours, computed from the
chapter's results; "ours" names the profile or the encoder it comes from."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from bindcore.paper import (
    PAPER_CLAIMS_5_2,
    PAPER_CLAIMS_APPENDIX_D,
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
