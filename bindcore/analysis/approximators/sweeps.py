"""Approximator sweeps over families and data fractions, and choice of learning rate or tree
settings on validation scenes (§5.1, §5.3, §5.4)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..probes import BindingData, ObjectLevelSplit, object_level_split
from .families import FAMILIES
from .trainer import STACK_OVERHEAD_WORK, ModelSpec, Protocol, get_protocol, make_specs, train_models
from .trees import TREE_KINDS, fit_trees


def fit_family(data: BindingData, split: ObjectLevelSplit, family: str, widths: Iterable[int] | None = None,
               lrs: Iterable[float] | None = None, protocol: str | Protocol = "release", seed: int = 0,
               val_fraction: float = 0.2, steps: int | None = None, eval_every: int | None = None,
               device: str | None = None, progress: bool = True, fraction: float | None = None,
               **kwargs: Any) -> list[dict[str, Any]]:
    """One record per (width, lr) of a torch family (stacked; ``lrs=None``: the protocol's),
    or per grid point of a tree kind (``kwargs`` to :func:`fit_trees`), on one split."""
    if family in TREE_KINDS:
        return fit_trees(data, split, family, val_fraction=val_fraction, seed=seed, progress=progress,
                         fraction=fraction, **kwargs)
    proto = get_protocol(protocol, steps=steps, eval_every=eval_every)
    specs = make_specs(data, split, family, widths, proto.lrs if lrs is None else lrs, (seed,), val_fraction,
                       seed, fraction)
    return train_models(data, specs, proto, device=device, progress=progress, **kwargs)


def sweep_fractions(data: BindingData, fractions: Iterable[float], families: Iterable[str],
                    widths: dict[str, Iterable[int]] | Iterable[int] | None = None, lrs: Iterable[float] | None = None,
                    protocol: str | Protocol = "release", seeds: Iterable[int] = (0,), split_seed: int = 0,
                    val_fraction: float = 0.2, steps: int | None = None, eval_every: int | None = None,
                    device: str | None = None, progress: bool = True, pad_work: float = STACK_OVERHEAD_WORK,
                    tree_grid: dict[str, list[dict[str, Any]]] | None = None,
                    tree_kwargs: dict[str, Any] | None = None, product_init: str = "one_plus",
                    estimate: bool = False) -> list[dict[str, Any]]:
    """Records of every family x width x lr x seed at every fraction, all torch models in one
    stacked run. ``widths``: a list or ``{family: widths}`` (missing: :func:`default_width`);
    ``product_init``: ``"normal"`` is the release's; ``estimate``: print the run's cost."""
    fractions, families = list(fractions), list(families)
    if not fractions or not families:
        raise ValueError(f"a sweep needs at least one fraction and one family, got fractions={fractions}, "
                         f"families={families}")
    for fam in families:
        if fam not in FAMILIES and fam not in TREE_KINDS:
            raise ValueError(f"family must be one of {FAMILIES + TREE_KINDS}, got {fam!r}")
    proto = get_protocol(protocol, steps=steps, eval_every=eval_every)
    records: list[dict[str, Any]] = []
    trees = [fam for fam in families if fam in TREE_KINDS]
    for frac in fractions if trees else ():
        split = object_level_split(data, frac, seed=split_seed)
        for fam in trees:
            records += fit_trees(data, split, fam, grid=(tree_grid or {}).get(fam), val_fraction=val_fraction,
                                 seed=split_seed, progress=progress, fraction=frac, **(tree_kwargs or {}))
    specs = sweep_specs(data, fractions, families, widths, proto.lrs if lrs is None else lrs, seeds, split_seed,
                        val_fraction, product_init)
    records += train_models(data, specs, proto, device=device, progress=progress, pad_work=pad_work,
                            estimate=estimate)
    return records


def sweep_specs(data: BindingData, fractions: Iterable[float], families: Iterable[str],
                widths: dict[str, Iterable[int]] | Iterable[int] | None, lrs: Iterable[float],
                seeds: Iterable[int] = (0,), split_seed: int = 0, val_fraction: float = 0.2,
                product_init: str = "one_plus") -> list[ModelSpec]:
    """The torch approximators of a sweep (:func:`sweep_fractions`; tree kinds are left out), in
    the order it trains them: per fraction, per family, per width x lr x seed."""
    specs: list[ModelSpec] = []
    for frac in fractions:
        split = object_level_split(data, frac, seed=split_seed)
        for fam in families:
            if fam not in TREE_KINDS:
                w = widths.get(fam) if isinstance(widths, dict) else widths
                specs += make_specs(data, split, fam, w, tuple(lrs), seeds, val_fraction, split_seed, frac,
                                    product_init=product_init)
    return specs


GROUP_KEYS = ("family", "width", "fraction", "seed", "protocol")


def select_best(records: Sequence[dict[str, Any]], by: str = "selected_val_mse",
                group: Sequence[str] = GROUP_KEYS) -> list[dict[str, Any]]:
    """Per ``group``, the record with the lowest validation number ``by`` (NaN loses; ties keep
    the first); ``ValueError`` unless ``by`` is a validation number."""
    if not by.startswith(("selected_val", "final_val")):
        raise ValueError(f"select on a validation number (selected_val_*, final_val_*), not {by!r}")
    best: dict[tuple, tuple[dict[str, Any], float]] = {}
    for r in records:
        key = tuple(r.get(k) for k in group)
        v = r.get(by)
        v = float("inf") if v is None or math.isnan(v) else float(v)
        if key not in best or v < best[key][1]:
            best[key] = (r, v)
    return [rv[0] for rv in best.values()]
