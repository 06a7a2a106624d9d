"""What the reproduction report makes of the chapters' results: the parameters each chapter
ran with, and the tables, claim frames, comparison and outcome table (:func:`gather`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from bindcore.book.chapter import ran_with

# the chapters whose results the report shows, by notebook; appendix E's apart
CHAPTERS = ("04_1_geometry", "04_2_component_attribution", "05_1_pretrained_binding_complexity",
            "05_2_binding_generalization", "05_3_binding_function_complexity", "05_4_functional_form",
            "d_additional")
PIXELS = "e_pixel_encoders"


def report_parameters(profile: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """``({notebook: parameters it ran with on profile}, {notebook: their source})``."""
    from bindcore.parameters import NOTEBOOK_TABLES

    params, sources = {}, {}
    for nb in (*CHAPTERS, PIXELS):
        params[nb], sources[nb] = ran_with(nb, NOTEBOOK_TABLES[nb], profile)
    return params, sources


def gather(profile: str, params: dict[str, dict[str, Any]], sources: dict[str, str],
           results: dict[str, Any]) -> dict[str, Any]:
    """The report of ``profile``: ``build``, ``claims`` ({chapter: frame}), ``params``,
    ``sources``, ``encoder_note``, ``pixels``, ``outcomes`` and the tables it shows."""
    from bindcore.book.tables import attribution_table, decomposition_table, editing_table, mds_table
    from bindcore.book.toc import toc_notebooks

    from .additional import additional_claims, natural_claims
    from .approximators import figure9_claims, form_claims, pretrained_claims, width_claims
    from .comparison import Build
    from .geometry import attribution_claims, geometry_claims
    from .outcomes import outcome_table

    r = results
    geo, pre, sweep_params, app_d = (params[nb] for nb in ("04_1_geometry", "05_1_pretrained_binding_complexity",
                                               "05_2_binding_generalization", "d_additional"))
    sets, dec, att, edi = r["sets"], r["decomposition"], r["attribution"], r["editing"]
    grid = mds_table(r["grid_sets"], r["grid_frames"])
    claims = {**generalization_claims(profile, r["generalization_runs"], r["scale"], r.get("scale_earlier", ())),
        "§4.1 / D.2": geometry_claims(sets, dec, edi, profile, null_frames=r["null_decomposition"],
                                      null_edit_frames=r["null_editing"]),
        "§4.2": attribution_claims(sets, att, profile),
        "§5.1": pretrained_claims(r["pretrained"], profile),
        "§5.3": width_claims(r["widths"], profile),
        "§5.4": form_claims(r["forms"], profile),
        "figure 9": figure9_claims(r["fig9"], profile),
        "D.3 / D.5": additional_claims(r["three"], grid, profile),
        "D.4": natural_claims(r["natural"], profile),
    }
    build = Build(profile, geo, sets, dec, att, edi, r["pretrained"], pre, r["three"], r["natural"], grid, app_d,
                  sweep_params, claims, toc_notebooks())
    pixels = pixel_report(profile, params[PIXELS], sources[PIXELS], r["pixels"])
    return {"build": build, "claims": claims, "params": {nb: params[nb] for nb in CHAPTERS},
            "sources": {nb: sources[nb] for nb in CHAPTERS}, "encoder_note": r["encoder_note"],
            "pixels": pixels, "outcomes": outcome_table(claims, profile, pixels["claims"]),
            "decomposition": decomposition_table(sets, dec), "attribution": attribution_table(sets, att),
            "editing": editing_table(sets, edi, k=1.0), "three": r["three"], "natural": r["natural"], "grid": grid,
            "pretrained": r["pretrained"], "trees": r["trees"], "fig9": r["fig9"],
            "generalization_runs": r["generalization_runs"]}


def pixel_report(profile: str, params: dict[str, Any], source: str, results: dict[str, Any]) -> dict[str, Any]:
    """Appendix E on ``profile``: ``params``, ``source``, the ``results`` and their ``claims``."""
    from bindcore.book.tables import level_summary, pixel_results_table

    from .pixels import pixel_claims

    claims = pixel_claims(level_summary(pixel_results_table(results["runs"])), results["approx"], profile,
                          results["ceiling"])
    return {"params": params, "source": source, **results, "claims": claims}


def generalization_claims(profile: str, runs: list[dict[str, Any]], scale: list[dict[str, Any]],
                          earlier: Any = ()) -> dict[str, pd.DataFrame]:
    """The §5.2 claims of the chapter's sweep ``runs`` and (if any) the ``scale`` records of the
    plan's recipe, each with its summary as records in ``attrs["summary"]`` (pandas compares the
    attrs it concatenates); ``earlier``: the earlier recipe's scale records, whose comparison
    across sizes is a second, labelled frame (``"§5.2 (scale, earlier recipe)"``) that no
    outcome reads."""
    from bindcore.analysis.generalization import generalization_summary, results_table
    from bindcore.controlled.recipes import EARLIER_DEPTH, PLAN_DEPTH, depth_label, planned_coverages

    from .generalization import claims_table

    summary = generalization_summary(results_table(runs))
    out = {"§5.2": claims_table(summary, profile)}
    out["§5.2"].attrs["summary"] = summary.to_dict("records")
    if scale:
        scale_summary = generalization_summary(results_table(scale), planned=planned_coverages())
        out["§5.2 (scale)"] = claims_table(scale_summary, f"{depth_label(PLAN_DEPTH)} (published records)")
        out["§5.2 (scale)"].attrs["summary"] = scale_summary.to_dict("records")
    if len(earlier):
        frame = claims_table(generalization_summary(results_table(list(earlier)), planned=planned_coverages()),
                             f"{depth_label(EARLIER_DEPTH)}, earlier recipe (published records)")
        out["§5.2 (scale, earlier recipe)"] = frame[frame["subject"] == "across sizes"].reset_index(drop=True)
    return out


def claims_overview(claims: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per chapter, the status counts on the paper's kind, then substitutes and no-verdict rows apart."""
    from .core import CONTROL, CONTROLLED, NATIVE, SHOWN, STATUSES, SUBSTITUTE, status_counts

    rows = []
    for chapter, frame in claims.items():
        sub = status_counts(frame, evidence=SUBSTITUTE)
        other = int(frame["evidence"].isin([CONTROLLED, CONTROL]).sum()) if "evidence" in frame else 0
        rows.append({"chapter": chapter, **status_counts(frame, evidence=NATIVE),
                     "substitute: shown": sub[SHOWN], "substitute: other": sum(sub.values()) - sub[SHOWN],
                     "controlled model / control (no verdict)": other})
    return pd.DataFrame(rows, columns=["chapter", *STATUSES, "substitute: shown", "substitute: other",
                                       "controlled model / control (no verdict)"])
