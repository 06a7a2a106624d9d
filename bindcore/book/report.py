"""What the reproduction report reads: every chapter's stored results on a profile, with
the parameters each chapter ran with in this build (:func:`~bindcore.book.chapter.ran_with`),
gathered once into a :class:`~bindcore.book.comparison.Build` and the claim frames of
each chapter. Results are read from the store; what is missing is computed (and stored)
the way the chapter computes it."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .chapter import chapter_recipe, ran_with


def gather(profile: str, workers: int | None = None, device: str | None = None) -> dict[str, Any]:
    """The chapters' results on ``profile``: ``build`` (a
    :class:`~bindcore.book.comparison.Build`), ``claims`` ({chapter: claim frame}),
    ``params`` ({chapter: parameters}), ``sources`` (where each chapter's parameters
    came from), and the tables the report shows: ``decomposition``, ``attribution``,
    ``editing``, ``three``, ``natural``, ``grid``, ``pretrained``, ``trees``, ``fig9``, and the §5.2
    sweep's records (``generalization_runs``), appendix E's results (``pixels``:
    :func:`pixel_results`) and the outcome table (``outcomes``:
    :func:`~bindcore.book.outcomes.outcome_table`)."""
    from bindcore.analysis import complexity as CX
    from bindcore.analysis.approximators import FAMILIES
    from bindcore.analysis.embedding_sets import natural_sets, pretrained_binding, three_object_sets
    from bindcore.analysis.geometry_sets import attribution, decomposition, editing, mds_analysis

    from . import claims as CL
    from .chapter import (
        controlled_datasets,
        dinov2_encoder,
        geometry_encoders,
        geometry_nulls,
        geometry_sets,
        pretrained_encoders,
    )
    from .comparison import Build
    from .outcomes import outcome_table
    from .profiles import NOTEBOOK_TABLES
    from .tables import (
        attribution_table,
        controlled_sweeps,
        decomposition_table,
        editing_table,
        figure9_table,
        mds_table,
        natural_table,
        pretrained_sweeps,
        three_object_table,
    )
    from .toc import toc_notebooks

    params, sources = {}, {}
    for nb in ("04_1_geometry", "04_2_component_attribution", "05_1_pretrained_binding_complexity",
               "05_2_binding_generalization", "05_3_binding_function_complexity", "05_4_functional_form",
               "d_additional"):
        params[nb], sources[nb] = ran_with(nb, NOTEBOOK_TABLES[nb], profile)
    p4, p42, p51 = params["04_1_geometry"], params["04_2_component_attribution"], \
        params["05_1_pretrained_binding_complexity"]
    p53, p54, pd_ = params["05_3_binding_function_complexity"], params["05_4_functional_form"], params["d_additional"]

    sets, encoder_note = geometry_sets(profile, p4, workers=workers, device=device)
    dec = [decomposition(s, p4) for s in sets]
    att = [attribution(s, p42) for s in sets]
    edi = [editing(s, p4) for s in sets]
    null_dec, null_edi = geometry_nulls(sets, p4)

    encoders, _ = pretrained_encoders()
    binding, _ = pretrained_binding(p51, encoders)
    t51 = pretrained_sweeps(p51, binding, device=device)
    first = next(iter(binding.values()))
    trees = CX.tree_components(first, max(p51["fractions"]), p51["tree_components"], CX.tree_grid(p51["tree_grid"]))

    dino, _ = dinov2_encoder(pd_)
    images = list(geometry_encoders()[0]["image"]) + ([(dino, True)] if dino is not None else [])
    three = three_object_table(three_object_sets(pd_, images), pd_)
    natural = natural_table(natural_sets(pd_, images), pd_)
    gparams = {**p4, **{k: pd_.get(k) for k in ("clevr_dir", "pug_dir", "dinov2")}}
    gsets = sets if gparams == p4 else geometry_sets(profile, gparams, workers=workers, device=device)[0]
    grid = mds_table(gsets, [mds_analysis(s, pd_) for s in gsets])

    _, d53 = controlled_datasets(profile, p53, workers=workers, device=device)
    d54 = d53 if p54["max_objects"] == p53["max_objects"] else controlled_datasets(profile, p54, workers=workers,
                                                                                 device=device)[1]
    widths = controlled_sweeps(d53, p53, ["mlp"], widths=p53["widths"], device=device)
    forms = controlled_sweeps(d54, p54, list(FAMILIES), widths={"mlp": [max(p54["widths"])]}, device=device)
    fig9 = figure9_table(CX.protocol_for(p54), p54["max_objects"], device=device)

    runs52 = generalization_runs(profile, params["05_2_binding_generalization"], workers, device)
    claims = {**generalization_claims(profile, params["05_2_binding_generalization"], runs52),
        "§4.1 / D.2": CL.geometry_claims(sets, dec, edi, profile, null_frames=null_dec, null_edit_frames=null_edi),
        "§4.2": CL.attribution_claims(sets, att, profile),
        "§5.1": CL.pretrained_claims(t51, profile),
        "§5.3": CL.width_claims(widths, profile),
        "§5.4": CL.form_claims(forms, profile),
        "figure 9": CL.figure9_claims(fig9, profile),
        "D.3 / D.5": CL.additional_claims(three, grid, profile),
        "D.4": CL.natural_claims(natural, profile),
    }
    build = Build(profile, p4, sets, dec, att, edi, t51, p51, three, natural, grid, pd_,
                  params["05_2_binding_generalization"], claims, toc_notebooks())
    pixels = pixel_results(profile, workers, device)
    return {"build": build, "claims": claims, "params": params, "sources": sources, "encoder_note": encoder_note,
            "pixels": pixels, "outcomes": outcome_table(claims, profile, pixels["claims"]),
            "decomposition": decomposition_table(sets, dec), "attribution": attribution_table(sets, att),
            "editing": editing_table(sets, edi, k=1.0), "three": three, "natural": natural, "grid": grid,
            "pretrained": t51, "trees": trees, "fig9": fig9, "generalization_runs": runs52}


def pixel_results(profile: str, workers: int | None = None, device: str | None = None) -> dict[str, Any]:
    """Appendix E as its chapter ran on ``profile``: parameters ``params`` (and their
    ``source``), the runs, binding data, approximator table ``approx`` (with the bag
    ceiling of its scenes), the models' own ceiling and the ``claims``
    (:func:`~bindcore.book.claims.pixel_claims`)."""
    from bindcore.analysis.complexity import true_embedding_ceiling

    from .chapter import pixel_binding_data, pixel_runs
    from .claims import pixel_claims
    from .tables import level_summary, pixel_results_table, pixel_sweeps

    pe, source = ran_with("e_pixel_encoders", "pixel_encoders", profile)
    runs = pixel_runs(profile, pe, workers=workers, device=device)
    data = pixel_binding_data(runs, pe)
    approx = pd.concat(pixel_sweeps(data, pe, device=device), ignore_index=True)
    ceiling = true_embedding_ceiling({d.name: d for d in data}, pe["fractions"], key="model")
    claims = pixel_claims(level_summary(pixel_results_table(runs)), approx, profile, ceiling)
    return {"params": pe, "source": source, "runs": runs, "data": data, "approx": approx, "ceiling": ceiling,
            "claims": claims}


def generalization_runs(profile: str, p52: dict[str, Any], workers: int | None = None,
                        device: str | None = None) -> list[dict[str, Any]]:
    """The records of the §5.2 chapter's own sweep (stored runs; missing ones trained)."""
    from bindcore.sweep import generalization_configs, run_sweep

    base = chapter_recipe(profile, p52["steps"], p52.get("eval_scenes"))
    return run_sweep(generalization_configs(base, p52), workers=workers, device=device, progress=False)


def generalization_claims(profile: str, p52: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """The §5.2 claims of the chapter's own sweep (``runs``: :func:`generalization_runs`)
    and, when the chapter shows them, of the scale sweep's stored records; each frame
    carries the rows of its :func:`~bindcore.sweep.generalization_summary` in
    ``attrs["summary"]`` (records: pandas compares the attrs of frames it concatenates)."""
    from bindcore.sweep import generalization_summary, results_table

    from . import claims as CL
    from .chapter import scale_records

    summary = generalization_summary(results_table(runs))
    out = {"§5.2": CL.claims_table(summary, profile)}
    out["§5.2"].attrs["summary"] = summary.to_dict("records")
    scale, _ = scale_records() if p52.get("show_scale") else ([], [])
    if scale:
        scale_summary = generalization_summary(results_table(scale))
        out["§5.2 (scale)"] = CL.claims_table(scale_summary, "scale (published records)")
        out["§5.2 (scale)"].attrs["summary"] = scale_summary.to_dict("records")
    return out


def claims_overview(claims: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per chapter: how many of its claims are shown, not shown, untestable on
    the encoders or models the paper's claims are about; rows on substitutes (another
    pretrained encoder) counted apart, and rows on controlled models or random-init
    controls (no verdict) apart again."""
    from .claims import CONTROL, CONTROLLED, NATIVE, SHOWN, STATUSES, SUBSTITUTE, status_counts

    rows = []
    for chapter, frame in claims.items():
        sub = status_counts(frame, evidence=SUBSTITUTE)
        other = int(frame["evidence"].isin([CONTROLLED, CONTROL]).sum()) if "evidence" in frame else 0
        rows.append({"chapter": chapter, **status_counts(frame, evidence=NATIVE),
                     "substitute: shown": sub[SHOWN], "substitute: other": sum(sub.values()) - sub[SHOWN],
                     "controlled model / control (no verdict)": other})
    return pd.DataFrame(rows, columns=["chapter", *STATUSES, "substitute: shown", "substitute: other",
                                       "controlled model / control (no verdict)"])
