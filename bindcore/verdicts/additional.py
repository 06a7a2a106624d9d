"""Appendix D.3-D.5 claims: occlusion and MDS grids (:func:`additional_claims`), natural images."""

from __future__ import annotations

import math

import pandas as pd

from bindcore.paper import PAPER_CLAIMS_APPENDIX_D

from .core import (
    CONTROL,
    NATIVE,
    SUBSTITUTE,
    UNTESTABLE,
    _frame,
    _num,
    _ok,
    _row,
    evidence,
    gaussian_null_why,
    margin_text,
    verdict,
)


def _who(r: pd.Series) -> str:
    """An encoder and what its weights are, once (no "random init (random init)")."""
    if r["weights"] == "random init (control)":
        return f"{r['encoder']}, control" if "random init" in r["encoder"] else f"{r['encoder']}, random init (control)"
    return f"{r['encoder']}, {r['weights']}"


def _row_evidence(r: pd.Series) -> str:
    return evidence(r["encoder"], r["weights"] == "pretrained")


# D.3's "occlusion lowers retrieval" and D.4's "above chance": how many standard errors each needs
OCCLUSION_Z = 2.0
CHANCE_Z = 3.0


def two_rates_differ(a: float, b: float, n_a: int, n_b: int) -> bool:
    """Whether ``a - b`` (rates of ``n_a``, ``n_b`` trials) exceeds :data:`OCCLUSION_Z` pooled standard errors."""
    if not _ok(a, b) or n_a < 1 or n_b < 1:
        return False
    p = (a * n_a + b * n_b) / (n_a + n_b)
    return a - b > OCCLUSION_Z * math.sqrt(max(p * (1 - p), 1e-12) * (1 / n_a + 1 / n_b))


def additional_claims(three: pd.DataFrame, grid: pd.DataFrame, profile: str, keep: float = 0.9,
                      high: float = 0.5, r2_margin: float = 0.02, retrieval_margin: float = 0.05,
                      grid_margin: float = 0.05, null_margin: float = 0.2) -> pd.DataFrame:
    """D.3 and D.5 claims per image encoder of ``three`` and over ``grid``'s pretrained sets:
    occluded object probing keeps ``keep`` and reaches ``high`` (``null_margin`` over the null);
    held-out R² objects > concepts by ``r2_margin``; occlusion lowers retrieval by
    ``retrieval_margin`` and :data:`OCCLUSION_Z` SEs; caption grids beat chance and images by ``grid_margin``."""
    (c_probe, p_probe), (c_r2, p_r2), (c_ret, p_ret), (c_mds, p_mds) = PAPER_CLAIMS_APPENDIX_D
    rows = []
    for (enc, _), sub in three.groupby(["encoder", "weights"], sort=False):
        by = {bool(r["occlusion"]): r for _, r in sub.iterrows()}
        first = sub.iloc[0]
        who, ev = _who(first), _row_evidence(first)
        specs = ((c_probe, p_probe), (c_r2, p_r2), (c_ret, p_ret))
        if ev == CONTROL:
            rows += [_row(c, who, p, "–", UNTESTABLE, f"{enc} has random weights; the claim is pretrained CLIP's",
                          profile, evidence=ev) for c, p in specs]
            continue
        if set(by) != {False, True}:
            rows += [_row(c, who, p, "–", UNTESTABLE, "needs scenes with and without occlusion", profile, evidence=ev)
                     for c, p in specs]
            continue
        a, b = by[False], by[True]
        null_probe, null_gap = _num(b.get("probing objects (null)")), _num(b.get("R² held-out gap (null)"))
        floor = max(keep * a["probing objects"], high, null_probe + null_margin if _ok(null_probe) else -math.inf)
        rows.append(_row(c_probe, who, p_probe,
                         f"objects {a['probing objects']:.2f} -> {b['probing objects']:.2f} (concepts "
                         f"{a['probing concepts']:.2f} -> {b['probing concepts']:.2f})",
                         verdict(b["probing objects"] >= floor),
                         f"shown when occluded object probing keeps {keep:g} of it, reaches {high:g}"
                         + (f" and clears its Gaussian null by {null_margin:g}" if _ok(null_probe) else ""), profile,
                         evidence=ev, null=f"{null_probe:.2f}" if _ok(null_probe) else "–",
                         margin=margin_text(b['probing objects'] - floor, 0)))
        o, c = "R² held-out objects (avg)", "R² held-out concepts (avg)"
        ref = max(null_gap, 0.0) if _ok(null_gap) else 0.0
        gap = min(a[o] - a[c], b[o] - b[c]) - ref
        rows.append(_row(c_r2, who, p_r2,
                         f"objects vs concepts: {a[o]:.2f} vs {a[c]:.2f}; occluded {b[o]:.2f} vs {b[c]:.2f}",
                         verdict(bool(gap >= r2_margin)),
                         f"shown when objects beat concepts by >= {r2_margin:g} in both (held-out scenes)"
                         + (" beyond the Gaussian null's gap" if _ok(null_gap) else ""), profile,
                         evidence=ev, null=f"gap {null_gap:+.2f}" if _ok(null_gap) else "concepts' R²",
                         margin=margin_text(gap, r2_margin)))
        rt = "retrieval objects (all scenes)"
        drop = a[rt] - b[rt]
        n_a, n_b = (int(a["scenes"]), int(b["scenes"])) if "scenes" in a and _ok(a["scenes"], b["scenes"]) else (0, 0)
        sig = two_rates_differ(a[rt], b[rt], n_a, n_b) if n_a else True
        rows.append(_row(c_ret, who, p_ret, f"{a[rt]:.2f} -> {b[rt]:.2f}",
                         verdict(bool(drop >= retrieval_margin and sig)),
                         f"shown when retrieval is lower with occlusion by >= {retrieval_margin:g}"
                         + (f" and by more than {OCCLUSION_Z:g} standard errors ({n_a} and {n_b} scenes)" if n_a else ""),
                         profile, evidence=ev, null=f"no occlusion: {a[rt]:.2f}",
                         margin=margin_text(drop, retrieval_margin)))
    pre = grid[grid["weights"] == "pretrained"]
    text = pre[pre["dataset"].str.startswith("captions")]
    image = pre[~pre["dataset"].str.startswith("captions")]
    col = "grid-neighbour recall (full d)"
    if not len(text) or not len(image):
        ours = "; ".join(f"{r['dataset']} ({_who(r)}): {r[col]:.2f} (chance {r['chance']:.2f})"
                         for _, r in grid.iterrows())
        rows.append(_row(c_mds, "pretrained sets", p_mds, ours, UNTESTABLE,
                         "needs pretrained caption and image sets (pretrained image encoders need the Hugging Face "
                         "Hub); DINOv2 runs where its weights are", profile))
    else:
        ours = "; ".join(f"{r['dataset']} ({_who(r)}): {r[col]:.2f} (chance {r['chance']:.2f})"
                         for _, r in pre.iterrows())
        ev = NATIVE if all(_row_evidence(r) == NATIVE for _, r in pre.iterrows()) else SUBSTITUTE
        lead = min(float((text[col] - text["chance"]).min()), float(text[col].min() - image[col].max()))
        rows.append(_row(c_mds, "pretrained sets", p_mds, ours, verdict(bool(lead >= grid_margin)),
                         f"shown when every caption set beats chance and every image set by >= {grid_margin:g}",
                         profile, evidence=ev, null=f"chance, image sets up to {image[col].max():.2f}",
                         margin=margin_text(lead, grid_margin)))
    return _frame(rows)


def above_chance(rate: float, chance: float, n: int) -> bool:
    """Whether ``rate`` of ``n`` trials lies over :data:`CHANCE_Z` binomial standard errors above ``chance``."""
    if not _ok(rate, chance) or n < 1:
        return False
    return rate > chance + CHANCE_Z * math.sqrt(max(chance * (1 - chance), 1e-12) / n)


def natural_claims(table: pd.DataFrame, profile: str) -> pd.DataFrame:
    """D.4 per encoder: shown when decomposition and editing retrieval lie :data:`CHANCE_Z` SEs above both
    chance and their Gaussian null (in-sample retrieval of noise is far above chance); no null:
    untestable."""
    from bindcore.paper import PAPER_NATURAL_CLAIM

    rows = []
    for _, r in table.iterrows():
        who, ev = _who(r), _row_evidence(r)
        claim = "decomposition and editing retrieval above chance"
        ours = (f"decomposition {r['retrieval']:.2f} (chance {r['retrieval chance']:.3f}, {int(r['scenes'])} scenes); "
                f"editing {r['edit retrieval']:.2f} (chance {r['edit chance']:.3f}, {int(r['edits'])} edits)")
        if ev == CONTROL:
            rows.append(_row(claim, who, PAPER_NATURAL_CLAIM, ours, UNTESTABLE,
                             f"{r['encoder']} has random weights; the claim is pretrained CLIP's", profile, evidence=ev))
            continue
        nr, ne = _num(r.get("retrieval null")), _num(r.get("edit retrieval null"))
        if not _ok(nr, ne):
            rows.append(_row(claim, who, PAPER_NATURAL_CLAIM, ours, UNTESTABLE,
                             f"no null computed ({gaussian_null_why()})", profile, evidence=ev))
            continue
        ref_r, ref_e = max(nr, r["retrieval chance"]), max(ne, r["edit chance"])
        holds = above_chance(r["retrieval"], ref_r, int(r["scenes"])) and above_chance(
            r["edit retrieval"], ref_e, int(r["edits"]))
        rows.append(_row(claim, who, PAPER_NATURAL_CLAIM, ours, verdict(holds),
                         f"shown when both lie {CHANCE_Z:g} standard errors above their null ({gaussian_null_why()}) "
                         "and chance", profile, evidence=ev, null=f"decomposition {nr:.2f}, editing {ne:.2f}",
                         margin=f"{r['retrieval'] - ref_r:+.2f}, {r['edit retrieval'] - ref_e:+.2f}"))
    return _frame(rows)
