"""Parameter sweeps over training configs (§5.2): a local executor.

Runs already in the result store are returned at once. The rest run either in this
process (one at a time: the right choice on a GPU) or as parallel ``bindcore train``
subprocesses, each with one CPU thread: at the model sizes of the quick profile two
one-thread runs side by side do about twice the work of one two-thread run.
Workers exchange nothing but JSON files in the store (no pickle crosses a process); a
thread pool (``concurrent.futures``) keeps ``workers`` of them running.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from itertools import product
from typing import Any

from .controlled.training import TrainConfig, check_fields, train
from .runtime import openmp_environment, progress_bar, resolve_device
from .store import ResultStore


def grid(base: TrainConfig, **axes: Iterable[Any]) -> list[TrainConfig]:
    """Configs for every combination of the given field values, e.g.
    ``grid(cfg, n_values=[10, 20], coverage=[0.2, 0.8])``. Each axis is a field of
    ``base``'s config class with a non-empty list of values, each parsed and checked as
    that field (:class:`TrainConfig`); anything else is a ``ValueError`` naming the axis."""
    check_fields(axes, type(base))
    for name, values in axes.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValueError(f"sweep axis {name} = {values!r}: must be a list of values")
        axes[name] = list(values)
        if not axes[name]:
            raise ValueError(f"sweep axis {name}: needs at least one value (an empty axis sweeps nothing)")
    names = list(axes)
    return [base.with_(**dict(zip(names, vals))) for vals in product(*(axes[n] for n in names))]


def generalization_configs(base: TrainConfig, params: dict[str, Any]) -> list[TrainConfig]:
    """The §5.2 sweep of a chapter's parameters: every (C, V) size x coverage x seed."""
    return [base.with_(n_concepts=c, n_values=v, coverage=cov, seed=s)
            for c, v in params["sizes"] for cov in params["coverages"] for s in params["seeds"]]


def ablation_configs(base: TrainConfig, params: dict[str, Any]) -> dict[str, TrainConfig]:
    """At the largest object space and the largest coverage: the main recipe, the
    one-phase objective (concept loss from step 0, no trigger) and the released code's
    negatives (held-out objects used as training negatives)."""
    c0, v0 = max(params["sizes"], key=lambda cv: cv[1] ** cv[0])
    main = base.with_(n_concepts=c0, n_values=v0, coverage=max(params["coverages"]), seed=params["seeds"][0])
    return {
        "main recipe": main,
        "one-phase (concept loss from step 0)": main.with_(concept_loss_start=0.0, concept_loss_trigger=0.0),
        "release negatives (held-out objects as negatives)": main.with_(heldout_as_negatives=True),
    }


def default_workers(n_pending: int, device: str | None = None) -> int:
    if resolve_device(device).type == "cuda":
        return 1
    return max(1, min(n_pending, os.cpu_count() or 1))


def run_sweep(
    configs: list[TrainConfig],
    store: ResultStore | None = None,
    workers: int | None = None,
    device: str | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train every config (or fetch its stored result); results in the order given."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1 (or None: one per CPU core), got {workers!r}")
    store = store or ResultStore()
    pending = [c for c in dict.fromkeys(configs) if store.find(c.store_kind, c.to_dict()) is None]
    n_workers = workers if workers is not None else default_workers(len(pending), device)
    if pending and n_workers <= 1:
        for cfg in progress_bar(pending, enabled=progress, desc="sweep"):
            train(cfg, store=store, device=device, progress=progress)
    elif pending:
        _run_in_subprocesses(pending, store, n_workers, device, progress)
    return [train(c, store=store, device=device, progress=False) for c in configs]


def _run_in_subprocesses(
    pending: list[TrainConfig], store: ResultStore, n_workers: int, device: str | None, progress: bool
) -> None:
    """Each pending run as a ``bindcore train`` subprocess with one CPU thread, at most
    ``n_workers`` at a time; its output goes to ``worker.log`` in its store entry."""
    env = {**os.environ, **openmp_environment(threads=1)}

    def run(cfg: TrainConfig) -> str | None:
        entry = store.prepare(cfg.store_kind, cfg.to_dict())
        cmd = [sys.executable, "-m", "bindcore", "train", "--config", str(entry.path / "config.json"),
               "--threads", "1", "--results", str(store.root), "--quiet"]
        if device:
            cmd += ["--device", device]
        log_path = entry.path / "worker.log"
        with open(log_path, "w") as log:
            code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
        return None if code == 0 else f"{log_path}:\n" + log_path.read_text()[-2000:]

    failures = []
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        bar = progress_bar(total=len(pending), enabled=progress, desc=f"sweep ({n_workers} workers)")
        for failure in (f.result() for f in as_completed(pool.submit(run, cfg) for cfg in pending)):
            bar.update(1)
            if failure:
                failures.append(failure)
        bar.close()
    if failures:
        raise RuntimeError(f"{len(failures)} sweep run(s) failed:\n" + "\n".join(failures))


def values_seen_in_training(cfg: TrainConfig) -> float:
    """Fraction of the C*V concept values that occur in at least one training object
    (at low coverage some values never do, and no model can recognise them)."""
    space = cfg.space
    seen = space.value_tokens(space.object_values(cfg.split.train)).unique()
    return len(seen) / space.n_value_tokens


def results_table(records: list[dict[str, Any]]):
    """One row per run: its scene space, coverage, held-out and training accuracies
    (with swap-pair recognition), the bag-of-concepts floor and ceiling on the same
    held-out scenes (``boc_*``), time and provenance."""
    import pandas as pd

    rows = []
    for rec in records:
        c = rec["config"]
        row = {
            "C": c["n_concepts"], "V": c["n_values"], "objects": c["n_values"] ** c["n_concepts"],
            "coverage": c["coverage"], "seed": c["seed"], "steps": c["steps"],
        }
        row["values seen in training"] = values_seen_in_training(TrainConfig.from_dict(c))
        row.update(rec["metrics"])
        row.update({f"boc_{k}": v for k, v in rec["bag_of_concepts"].items()})
        cpu = rec.get("cpu_seconds")
        row.update({"minutes": rec["seconds"] / 60, "cpu minutes": cpu / 60 if cpu is not None else float("nan"),
                    "device": rec["device"], "machine": (rec.get("machine") or {}).get("hostname", "?"),
                    "finished": rec.get("finished_at", "?"), "source": rec.get("source", "local")})
        rows.append(row)
    return pd.DataFrame(rows)


def _first_coverage(sub, mask) -> float:
    """The smallest coverage of the rows of ``sub`` (sorted by coverage) where ``mask`` holds."""
    hit = sub[mask]
    return float(hit["coverage"].iloc[0]) if len(hit) else float("nan")


# binding is shown at a coverage when held-out swap-pair recognition reaches this (a bag
# of concepts scores 0 there); the smallest such coverage is the transition coverage
TRANSITION_SWAP = 0.5


def generalization_summary(table, concept_threshold: float = 0.9, transition: float = TRANSITION_SWAP) -> Any:
    """Per object-space size, from the held-out two-object scenes (seeds averaged): the
    smallest coverage at which concept recognition reaches ``concept_threshold``; the
    transition coverage, the smallest at which swap-pair recognition reaches
    ``transition``; swap pairs, strict object recognition and the bag-of-concepts ceiling
    at the largest coverage and at the best one; and how strongly object recognition
    rises with coverage (Spearman rank correlation)."""
    import pandas as pd

    out = []
    for objects, sub in table.groupby("objects"):
        sub = sub.groupby("coverage", as_index=False).mean(numeric_only=True).sort_values("coverage")
        last = sub.iloc[-1]
        best = sub.loc[sub["test_swap_pair"].idxmax()]
        rho = sub["coverage"].rank().corr(sub["test_object_2"].rank()) if len(sub) > 1 else float("nan")
        out.append({
            "objects": objects, "C": int(last["C"]), "V": int(last["V"]), "coverages": len(sub),
            f"concepts >= {concept_threshold:g} from coverage":
                _first_coverage(sub, sub["test_concept_2"] >= concept_threshold),
            "transition coverage": _first_coverage(sub, sub["test_swap_pair"] >= transition),
            "smallest coverage": float(sub["coverage"].iloc[0]),
            "swap pairs at smallest coverage": float(sub["test_swap_pair"].iloc[0]),
            "largest coverage": float(last["coverage"]),
            "objects at largest coverage": float(last["test_object_2"]),
            "swap pairs at largest coverage": float(last["test_swap_pair"]),
            "bag ceiling at largest coverage": float(last["boc_ceiling_test_object_2"]),
            "bag floor at largest coverage": float(last["boc_test_object_2"]),
            "best swap pairs": float(best["test_swap_pair"]),
            "objects at best swap pairs": float(best["test_object_2"]),
            "bag ceiling at best swap pairs": float(best["boc_ceiling_test_object_2"]),
            "coverage of best swap pairs": float(best["coverage"]),
            "rank correlation coverage vs objects": rho,
        })
    return pd.DataFrame(out)
