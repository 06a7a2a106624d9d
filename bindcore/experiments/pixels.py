"""Appendix E as its chapter runs it: the pixel dual encoders of every visual level x
coverage x seed, the binding data of each level's generalizing model, and the
approximators of §5.3 and §5.4 on them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from .complexity import controlled_sweeps
from .generalization import chapter_recipe, note_stored, with_weights


def pixel_base(profile: str, params: dict[str, Any]):
    """The pixel recipe of ``profile`` (appendix E) with the chapter's ``steps``,
    ``eval_scenes`` and ``train_batch`` where set."""
    return chapter_recipe(profile, params["steps"], params.get("eval_scenes"), pixels=True,
                          batch_size=params.get("train_batch"))


def pixel_runs(profile: str, params: dict[str, Any], workers: int | None = None, device: str | None = None,
               progress: bool = False, executor: Any = None) -> list[dict[str, Any]]:
    """The pixel dual encoders of appendix E, every level x coverage x seed of
    ``params`` (stored runs are reused; their code version is printed; ``executor``:
    :func:`bindcore.sweep.run_sweep`'s)."""
    from bindcore.controlled.pixels import PIXEL_STORE_KIND, level_configs
    from bindcore.sweep import run_sweep

    runs = run_sweep(level_configs(pixel_base(profile, params), params), workers=workers, device=device,
                     progress=progress, executor=executor)
    note_stored(runs, kind=PIXEL_STORE_KIND, what="pixel training runs")
    return runs


def pixel_binding_data(runs: Iterable[Mapping[str, Any]], params: dict[str, Any]) -> list[Any]:
    """The binding data (§5.3) of the generalizing pixel model of each level (largest
    coverage): all ordered pairs of up to ``max_objects`` objects, each scene's
    embedding the mean over ``renders`` seeded renderings."""
    from bindcore.analysis.probes import controlled_binding_data
    from bindcore.controlled.pixels import generalizing_pixel_runs

    return [controlled_binding_data(r, max_objects=params["max_objects"], renders=params["renders"], device="cpu")
            for r in with_weights(generalizing_pixel_runs(list(runs)))]


def pixel_approximator_params(params: dict[str, Any]) -> dict[str, Any]:
    """The approximator parameters of the appendix-E chapter's ``params`` under the names
    the §5 sweeps read (``approx_steps`` as ``steps``; ``lrs``, ``batch_size``, ``fractions``)."""
    return {"steps": params["approx_steps"], "lrs": params["lrs"], "batch_size": params["batch_size"],
            "fractions": params["fractions"]}


def pixel_sweeps(datasets: Sequence[Any], params: dict[str, Any], device: str | None = None,
                 executor: Any = None, workers: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Appendix E's approximators on the pixel models' binding data, with the chapter's
    approximator parameters (:func:`pixel_approximator_params`): (MLPs of every width
    (the §5.3 method), every family with the widest MLP (§5.4)); ``executor``/``workers``:
    :func:`bindcore.analysis.complexity.stored_sweeps`."""
    from bindcore.analysis.approximators import FAMILIES

    approx = pixel_approximator_params(params)
    mlp = controlled_sweeps(datasets, approx, ["mlp"], widths=params["widths"], device=device, executor=executor,
                            workers=workers)
    forms = controlled_sweeps(datasets, approx, list(FAMILIES), widths={"mlp": [max(params["widths"])]},
                              device=device, executor=executor, workers=workers)
    return mlp, forms


def pixel_results(profile: str, params: dict[str, Any], workers: int | None = None,
                  device: str | None = None) -> dict[str, Any]:
    """Appendix E as its chapter ran with ``params``: the ``runs``, the binding ``data``
    of each level's generalizing model, the approximator table ``approx`` (both sweeps of
    :func:`pixel_sweeps`, with the bag ceiling of their scenes) and the models' own
    ``ceiling`` (:func:`~bindcore.analysis.complexity.true_embedding_ceiling`)."""
    from bindcore.analysis.complexity import true_embedding_ceiling

    runs = pixel_runs(profile, params, workers=workers, device=device)
    data = pixel_binding_data(runs, params)
    approx = pd.concat(pixel_sweeps(data, params, device=device), ignore_index=True)
    ceiling = true_embedding_ceiling({d.name: d for d in data}, params["fractions"], key="model")
    return {"runs": runs, "data": data, "approx": approx, "ceiling": ceiling}
