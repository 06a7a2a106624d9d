"""The §5.2 recipe search: one attempt = a recipe (``--base``, default quick) with fields
changed, trained on one CPU thread, and one row appended to the search log
(``published/recipe-search.json``, rewritten atomically) with its strict and swap-pair
recognition of validation objects (never test objects), the bag-of-concepts floor and
ceiling, and its CPU-minutes. The §5.2 chapter shows the log, failed attempts included.
(The log's first attempts, made before the held-out objects were divided, were judged on
all held-out objects; their rows say so.)

    python benchmarks/recipe_search.py N1 '{"n_values": 50, "coverage": 0.5, "steps": 8000}'
    python benchmarks/recipe_search.py N1 '{...}' --stopped "no progress by step 5000"

``--stopped REASON`` records an attempt that was stopped before its last step, from its
latest checkpoint (the run is not continued); ``--record DIR`` logs a finished run of the
attempt's config from its record folder (e.g. a published one) without training it. Runs go to ``--results`` (default
``results-search/``, kept apart from the book's store).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "published" / "recipe-search.json"
CHOSEN_ON = "validation objects (val_*)"


def _row(name: str, base: str, changes: dict[str, Any], cfg: Any, metrics: dict[str, Any], bag: dict[str, Any],
         step: int, cpu_seconds: float | None, status: str, path: str,
         code: dict[str, Any] | None = None) -> dict[str, Any]:
    """One attempt of the log, from the run's training and validation numbers only (read
    through :func:`bindcore.controlled.search.search_view`: no test key); ``code``: the
    record's code version (``result.json``'s ``code``; None when no record was finished)."""
    from bindcore.controlled.search import search_view

    metrics, bag = search_view(metrics), search_view(bag)
    return {
        "name": name, "base": base, "changes": changes, "objects": cfg.n_values ** cfg.n_concepts,
        "C": cfg.n_concepts, "V": cfg.n_values, "coverage": cfg.coverage, "steps": cfg.steps, "step reached": step,
        "cpu minutes": None if cpu_seconds is None else cpu_seconds / 60,
        "strict": metrics.get("val_object_2"), "swap pairs": metrics.get("val_swap_pair"),
        "swap pairs, held-out twins": metrics.get("val_swap_pair_heldout"),
        "training task": metrics.get("task_object_2"), "concepts": metrics.get("val_concept_2"),
        "bag floor": bag.get("val_object_2"), "bag ceiling": bag.get("ceiling_val_object_2"),
        "release pooled": metrics.get("release_val_pooled"), "release two-object": metrics.get("release_val_object_2"),
        "release bag ceiling, two-object": bag.get("ceiling_release_val_object_2"),
        "chosen on": CHOSEN_ON, "status": status, "hash": Path(path).name, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "code": code,
    }


def append(row: dict[str, Any], log: Path = LOG) -> None:
    """Add ``row`` to the log (replacing an earlier row of the same name), atomically."""
    from bindcore.controlled.search import log_attempt

    log_attempt(log, row, __doc__.split("\n\n")[0])


def stopped_row(name: str, base: str, changes: dict[str, Any], reason: str, results: Path) -> dict[str, Any]:
    """The row of an attempt stopped early, from its latest checkpoint's last evaluation."""
    import torch

    from bindcore.controlled.recipes import recipe
    from bindcore.store import ResultStore, provenance

    cfg = recipe(base, **changes)
    entry = ResultStore(results, published=None).local_dir(cfg.store_kind, cfg.to_dict())
    ckpt = entry / "checkpoint.pt"
    if not ckpt.exists():
        raise SystemExit(f"{name}: no checkpoint at {ckpt}")
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    last = state["history"][-1] if state["history"] else {}
    clock = state.get("clock") or {}
    return _row(name, base, changes, cfg, last, {}, int(state["step"]), clock.get("cpu_seconds"),
                f"stopped at step {int(state['step'])}: {reason}", str(entry),
                code={**provenance(), "note": "the code that wrote this row; a "
                      "checkpoint does not record the code that trained it"})


def record_row(name: str, base: str, changes: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The row of an attempt from a finished run's record folder (``result.json``), which
    must hold the attempt's config: read, not trained again."""
    from bindcore.controlled.recipes import recipe

    cfg = recipe(base, **changes)
    rec = json.loads((folder / "result.json").read_text())
    if rec["config"] != cfg.to_dict():
        differ = sorted(k for k in set(rec["config"]) | set(cfg.to_dict())
                        if rec["config"].get(k) != cfg.to_dict().get(k))
        raise SystemExit(f"{name}: the record in {folder} has another config (fields {', '.join(differ)})")
    return _row(name, base, changes, cfg, rec["metrics"], rec.get("bag_of_concepts") or {}, cfg.steps,
                rec.get("cpu_seconds"), f"finished (read from the record {folder.name})", str(folder),
                code=rec.get("code"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("name")
    p.add_argument("changes", help="JSON object of TrainConfig fields to change")
    p.add_argument("--base", default="quick", help="recipe profile to start from")
    p.add_argument("--stopped", default=None, metavar="REASON", help="record a run stopped early")
    p.add_argument("--results", type=Path, default=ROOT / "results-search")
    p.add_argument("--log", type=Path, default=LOG)
    p.add_argument("--record", type=Path, default=None, metavar="DIR",
                   help="log a finished run of this attempt's config from its record folder (e.g. a published "
                   "record) instead of training it")
    args = p.parse_args(argv)
    changes = json.loads(args.changes)
    if args.stopped is not None:
        row = stopped_row(args.name, args.base, changes, args.stopped, args.results)
    elif args.record is not None:
        row = record_row(args.name, args.base, changes, args.record)
    else:
        import torch

        from bindcore.controlled.recipes import recipe
        from bindcore.controlled.runs import train
        from bindcore.store import ResultStore

        torch.set_num_threads(1)
        cfg = recipe(args.base, **changes)
        rec = train(cfg, store=ResultStore(args.results, published=None), progress=False)
        row = _row(args.name, args.base, changes, cfg, rec["metrics"], rec["bag_of_concepts"], cfg.steps,
                   rec.get("cpu_seconds"), "finished", rec["path"], code=rec.get("code"))
    append(row, args.log)
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
