"""What the reproduction report shows, computed as the chapters compute it: every
chapter's results on a profile, read from the store where they are there and computed
(and stored) where not, with the parameters each chapter ran with. The book turns them
into its tables, claims and outcomes (:mod:`bindcore.verdicts.report`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bindcore.controlled.recipes import EARLIER_DEPTH

from .complexity import controlled_datasets, controlled_sweeps, figure9_runs, figure9_table, pretrained_sweeps
from .generalization import generalization_runs, scale_records
from .geometry import geometry_nulls, geometry_sets, natural_table, three_object_table
from .inputs import dinov2_encoder, geometry_encoders, pretrained_encoders
from .pixels import pixel_results

# the chapters whose results the report shows, by notebook
REPORT_NOTEBOOKS = ("04_1_geometry", "04_2_component_attribution", "05_1_pretrained_binding_complexity",
                    "05_2_binding_generalization", "05_3_binding_function_complexity", "05_4_functional_form",
                    "d_additional", "e_pixel_encoders")


def gather_results(profile: str, params: Mapping[str, dict[str, Any]], sweep_params: Mapping[str, Any],
                   workers: int | None = None, device: str | None = None) -> dict[str, Any]:
    """The chapters' results on ``profile``, each with its chapter's parameters
    (``params``: {notebook: parameters} of :data:`REPORT_NOTEBOOKS`; ``sweep_params``: the §5.2
    chapter's parameters that choose the models the other chapters reuse,
    :func:`~bindcore.experiments.generalization.generalizing_configs`):

    ``sets`` (the §4 embedding sets, with ``encoder_note``) and their ``decomposition``,
    ``attribution`` and ``editing`` frames and Gaussian-null frames (``null_decomposition``,
    ``null_editing``); ``pretrained`` (the §5.1 sweep) and ``trees`` (its tree
    components); ``three`` and ``natural`` (D.3, D.4 tables); ``grid_sets`` and
    ``grid_frames`` (D.5's MDS analyses); ``widths``, ``forms`` and ``fig9`` (§5.3, §5.4,
    figure 9); ``generalization_runs`` (the §5.2 sweep) and ``scale`` (the scale sweep's
    stored records where the §5.2 chapter shows them, of the plan's recipe) and ``scale_earlier``
    (the earlier two-layer recipe's, a second labelled row); ``pixels`` (appendix E,
    :func:`~bindcore.experiments.pixels.pixel_results`)."""
    geo, app_d = params["04_1_geometry"], params["d_additional"]
    out = _geometry(profile, geo, params["04_2_component_attribution"], sweep_params, workers, device)
    out.update(_pretrained(params["05_1_pretrained_binding_complexity"], device))
    out.update(_appendix_d(profile, geo, app_d, sweep_params, out["sets"], workers, device))
    out.update(_controlled(profile, params["05_3_binding_function_complexity"], params["05_4_functional_form"],
                           sweep_params, workers, device))
    own = params["05_2_binding_generalization"]
    out["generalization_runs"] = generalization_runs(profile, own, workers, device)
    out["scale"] = scale_records()[0] if own.get("show_scale") else []
    out["scale_earlier"] = scale_records(n_layers=EARLIER_DEPTH)[0] if own.get("show_scale") else []
    out["pixels"] = pixel_results(profile, params["e_pixel_encoders"], workers, device)
    return out


def _geometry(profile: str, geo: dict[str, Any], attr: dict[str, Any], sweep_params: Mapping[str, Any],
              workers: int | None, device: str | None) -> dict[str, Any]:
    """§4.1, §4.2 and D.2: the sets, their analyses and the nulls of their claims."""
    from bindcore.analysis.geometry_sets import attribution, decomposition, editing

    sets, note = geometry_sets(profile, geo, sweep_params, workers=workers, device=device)
    dec = [decomposition(s, geo) for s in sets]
    att = [attribution(s, attr) for s in sets]
    edi = [editing(s, geo) for s in sets]
    null_dec, null_edi = geometry_nulls(sets, geo)
    return {"sets": sets, "encoder_note": note, "decomposition": dec, "attribution": att, "editing": edi,
            "null_decomposition": null_dec, "null_editing": null_edi}


def _pretrained(pre: dict[str, Any], device: str | None) -> dict[str, Any]:
    """§5.1: the sweep of the text encoders' binding data and the tree components of the first."""
    from bindcore.analysis import complexity as CX
    from bindcore.analysis.embedding_sets import pretrained_binding

    encoders, _ = pretrained_encoders()
    binding, _ = pretrained_binding(pre, encoders)
    t51 = pretrained_sweeps(pre, binding, device=device)
    first = next(iter(binding.values()))
    trees = CX.tree_components(first, max(pre["fractions"]), pre["tree_components"], CX.tree_grid(pre["tree_grid"]))
    return {"pretrained": t51, "trees": trees}


def _appendix_d(profile: str, geo: dict[str, Any], app_d: dict[str, Any], sweep_params: Mapping[str, Any],
                sets: list[Any],
                workers: int | None, device: str | None) -> dict[str, Any]:
    """D.3, D.4 and D.5: the three-object and natural tables, and the MDS analyses of the
    §4 sets (made again where the appendix chapter gave other folders or DINOv2)."""
    from bindcore.analysis.embedding_sets import natural_sets, three_object_sets
    from bindcore.analysis.geometry_sets import mds_analysis

    dino, _ = dinov2_encoder(app_d)
    images = list(geometry_encoders()[0]["image"]) + ([(dino, True)] if dino is not None else [])
    three = three_object_table(three_object_sets(app_d, images), app_d)
    natural = natural_table(natural_sets(app_d, images), app_d)
    gparams = {**geo, **{k: app_d.get(k) for k in ("clevr_dir", "pug_dir", "dinov2")}}
    gsets = sets if gparams == geo else geometry_sets(profile, gparams, sweep_params, workers=workers, device=device)[0]
    return {"three": three, "natural": natural, "grid_sets": gsets,
            "grid_frames": [mds_analysis(s, app_d) for s in gsets]}


def _controlled(profile: str, width_params: dict[str, Any], form_params: dict[str, Any],
                sweep_params: Mapping[str, Any], workers: int | None, device: str | None) -> dict[str, Any]:
    """§5.3, §5.4 and figure 9 on the generalizing controlled models."""
    from bindcore.analysis.approximators import FAMILIES
    from bindcore.analysis.complexity import protocol_for

    _, d53 = controlled_datasets(profile, width_params, sweep_params, workers=workers, device=device)
    d54 = d53 if form_params["max_objects"] == width_params["max_objects"] else controlled_datasets(
        profile, form_params, sweep_params, workers=workers, device=device)[1]
    widths = controlled_sweeps(d53, width_params, ["mlp"], widths=width_params["widths"], device=device)
    forms = controlled_sweeps(d54, form_params, list(FAMILIES), widths={"mlp": [max(form_params["widths"])]},
                              device=device)
    fig9_runs, _ = figure9_runs(profile, form_params.get("models"))
    fig9 = figure9_table(protocol_for(form_params), form_params["max_objects"], fig9_runs, device=device)
    return {"widths": widths, "forms": forms, "fig9": fig9}
