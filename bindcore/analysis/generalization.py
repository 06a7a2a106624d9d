"""§5.2 binding generalization: the chapter's grid and ablation variants, the table of a
sweep's runs, the transition coverage and the summaries the §5.2 claims read."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from bindcore.controlled.recipes import fitted, steps_to_fit
from bindcore.controlled.search import BINDS_AT
from bindcore.controlled.training import TrainConfig


def generalization_configs(base: TrainConfig, params: dict[str, Any]) -> list[TrainConfig]:
    """The §5.2 sweep of a chapter's parameters: every (C, V) size x coverage x seed."""
    return [base.with_(n_concepts=c, n_values=v, coverage=cov, seed=s)
            for c, v in params["sizes"] for cov in params["coverages"] for s in params["seeds"]]


# the §5.2 ablation's variants, their table labels and their short names in prose
MAIN_RECIPE, ONE_PHASE, RELEASE_NEGATIVES = "main_recipe", "one_phase", "release_negatives"
ABLATION_LABELS = {MAIN_RECIPE: "main recipe", ONE_PHASE: "one-phase (concept loss from step 0)",
                   RELEASE_NEGATIVES: "release negatives (held-out objects as negatives)"}


ABLATION_NAMES = {MAIN_RECIPE: "main recipe", ONE_PHASE: "one-phase", RELEASE_NEGATIVES: "release negatives"}


def ablation_variants(base: TrainConfig, params: dict[str, Any], seed: int | None = None) -> dict[str, TrainConfig]:
    """The ablation's configs at the largest object space and coverage for ``seed`` (default: the
    chapter's first): main recipe, one-phase (concept loss from step 0) and release negatives
    (held-out objects as negatives). A variant equal to the main recipe is left out, so one run is
    not counted twice."""
    c0, v0 = max(params["sizes"], key=lambda cv: cv[1] ** cv[0])
    seed = params["seeds"][0] if seed is None else seed
    main = base.with_(n_concepts=c0, n_values=v0, coverage=max(params["coverages"]), seed=seed)
    variants = {
        MAIN_RECIPE: main,
        ONE_PHASE: main.with_(concept_loss_start=0.0, concept_loss_trigger=0.0),
        RELEASE_NEGATIVES: main.with_(heldout_as_negatives=True),
    }
    return {key: cfg for key, cfg in variants.items() if key == MAIN_RECIPE or cfg != main}


def ablation_configs(base: TrainConfig, params: dict[str, Any]) -> list[tuple[str, TrainConfig]]:
    """``(variant key, config)`` of :func:`ablation_variants` for every seed of the chapter."""
    return [(key, cfg) for seed in params["seeds"] for key, cfg in ablation_variants(base, params, seed).items()]


def ablation_summary(table) -> Any:
    """Per variant of ``table`` (:func:`results_table` with a ``variant`` column): seeds, median and
    range of test swap pairs and strict two-object recognition; for a non-main variant, the median
    per-seed difference in swap pairs to the main recipe and on how many seeds it is below."""
    import pandas as pd

    main = table[table["variant"] == MAIN_RECIPE].set_index("seed")
    rows = []
    for key in ABLATION_LABELS:
        runs = table[table["variant"] == key]
        if runs.empty:
            continue
        row = {"variant": ABLATION_LABELS[key], "seeds": len(runs)}
        for name, col in (("swap pairs", "test_swap_pair"), ("strict two objects", "test_object_2")):
            vals = runs[col].astype(float)
            row[name] = float(vals.median())
            row[f"{name} range"] = _range({"min": vals.min(), "max": vals.max()})
        if key != MAIN_RECIPE:
            diff = (runs.set_index("seed")["test_swap_pair"] - main["test_swap_pair"]).dropna()
            row["swap pairs - main (median over seeds)"] = float(diff.median()) if len(diff) else float("nan")
            row["seeds below the main recipe"] = f"{int((diff < 0).sum())} of {len(diff)}"
        rows.append(row)
    return pd.DataFrame(rows)


def ablation_sentence(summary) -> str:
    """:func:`ablation_summary` in one line: each variant's median swap pairs, range and difference."""
    short = {ABLATION_LABELS[key]: ABLATION_NAMES[key] for key in ABLATION_LABELS}
    parts = []
    for _, row in summary.iterrows():
        text = f"{short[row['variant']]} {row['swap pairs']:.2f} ({row['swap pairs range']})"
        if row["variant"] != ABLATION_LABELS[MAIN_RECIPE]:  # the others are compared with it
            text += (f", {row['swap pairs - main (median over seeds)']:+.2f} against the main recipe, "
                     f"below it on {row['seeds below the main recipe']} seeds")
        parts.append(text)
    n = int(summary["seeds"].max()) if len(summary) else 0
    return f"held-out swap pairs, median (range) over {n} seed(s): " + "; ".join(parts)


def values_seen_in_training(cfg: TrainConfig) -> float:
    """Fraction of the C*V concept values that occur in at least one training object."""
    space = cfg.space
    seen = space.value_tokens(space.object_values(cfg.split.train)).unique()
    return len(seen) / space.n_value_tokens


def results_table(records: list[dict[str, Any]]):
    """One row per run: scene space, coverage, metrics, bag-of-concepts baselines (``boc_*``), time and
    provenance."""
    import pandas as pd

    rows = []
    for rec in records:
        c = rec["config"]
        row = {
            "C": c["n_concepts"], "V": c["n_values"], "objects": c["n_values"] ** c["n_concepts"],
            "coverage": c["coverage"], "seed": c["seed"], "split seed": c.get("split_seed", 0), "steps": c["steps"],
            "layers": c.get("n_layers"),
            "fitted": fitted(rec), "steps to fit": steps_to_fit(rec.get("history") or []),
            "earlier budget": bool(rec.get("earlier_budget")),
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




def transition_coverage(coverages: Any, swap_pairs: Any, threshold: float = BINDS_AT) -> float:
    """The smallest coverage from which swap-pair recognition stays >= ``threshold`` at every larger
    coverage (NaN when the largest is below it)."""
    pairs = sorted(zip(coverages, swap_pairs))
    out = float("nan")
    for cov, swap in reversed(pairs):
        if swap < threshold:
            break
        out = float(cov)
    return out


def best_coverage(points: Iterable[tuple[float, float]]) -> float:
    """The coverage of the ``(coverage, median val_swap_pair)`` pair with the largest value
    (ties: the smaller coverage); NaN values never win."""
    return min((p for p in points if not math.isnan(p[1])), key=lambda p: (-p[1], p[0]))[0]


def chosen_coverage(sub) -> tuple[float, str]:
    """(coverage at which a size's binding is read, what chose it): :func:`best_coverage`, else the
    largest coverage. Never chosen on test objects. ``sub``: a row per coverage."""
    if "val_swap_pair" in sub and sub["val_swap_pair"].notna().any():
        return best_coverage(zip(sub["coverage"], sub["val_swap_pair"])), "validation swap pairs"
    return float(sub["coverage"].max()), "largest coverage (no validation objects in these records)"


def transition_gaps(run: Iterable[float], transition: float, planned: Iterable[float]) -> list[float]:
    """The planned coverages not run that could still move a transition found on the coverages
    ``run``: every one at or above the largest planned coverage below ``transition`` (every
    one, where none lies below); none without a transition (NaN: the runs at the largest
    coverage already say it lies above)."""
    if math.isnan(transition):
        return []
    planned, run = sorted(set(planned)), set(run)
    below = [c for c in planned if c < transition]
    start = below[-1] if below else planned[0] if planned else transition
    return [c for c in planned if c >= start and c not in run]


# §5.2's "concepts first": the concept recognition a size's concepts are said to generalize at
CONCEPTS_AT = 0.9


def generalization_summary(table, planned: dict[int, Iterable[float]] | None = None) -> Any:
    """Per object-space size, from held-out two-object scenes (median over seeds per coverage): where
    concepts reach :data:`CONCEPTS_AT`, the transition coverage, swap pairs (with range), strict
    recognition and bag ceiling at the largest and the :func:`chosen_coverage`, and the Spearman
    correlation of recognition with coverage. ``planned``: per size (objects), the coverages its
    grid plans; those not run yet that could move its transition (:func:`transition_gaps`) are
    listed in ``coverages not run near the transition``."""
    import pandas as pd

    out = []
    for objects, runs in table.groupby("objects"):
        sub = runs.groupby("coverage", as_index=False).median(numeric_only=True).sort_values("coverage")
        swap_range = runs.groupby("coverage")["test_swap_pair"].agg(["min", "max"])
        last = sub.iloc[-1]
        cov, chosen_on = chosen_coverage(sub)
        chosen = sub[sub["coverage"] == cov].iloc[0]
        at = runs[runs["coverage"] == cov]
        rho = sub["coverage"].rank().corr(sub["test_object_2"].rank()) if len(sub) > 1 else float("nan")
        transition = transition_coverage(sub["coverage"], sub["test_swap_pair"])
        out.append({
            "objects": objects, "C": int(last["C"]), "V": int(last["V"]), "coverages": len(sub),
            "layers": "/".join(str(int(n)) for n in sorted(set(runs["layers"].dropna()))) if "layers" in runs else "",
            "steps": "/".join(f"{int(n):,}" for n in sorted(set(runs["steps"]))) if "steps" in runs else "",
            "seeds": int(runs.groupby("coverage").size().min()),
            f"concepts >= {CONCEPTS_AT:g} from coverage": _first_coverage(sub, sub["test_concept_2"] >= CONCEPTS_AT),
            "transition coverage": transition,
            "transition coverage per seed": seed_transitions(runs),
            "smallest coverage": float(sub["coverage"].iloc[0]),
            "swap pairs at smallest coverage": float(sub["test_swap_pair"].iloc[0]),
            "largest coverage": float(last["coverage"]),
            "objects at largest coverage": float(last["test_object_2"]),
            "swap pairs at largest coverage": float(last["test_swap_pair"]),
            "swap pairs range at largest coverage": _range(swap_range.loc[last["coverage"]]),
            "bag ceiling at largest coverage": float(last["boc_ceiling_test_object_2"]),
            "bag floor at largest coverage": float(last["boc_test_object_2"]),
            "chosen coverage": cov, "chosen on": chosen_on,
            "swap pairs at chosen coverage": float(chosen["test_swap_pair"]),
            "swap pairs range at chosen coverage": _range(swap_range.loc[cov]),
            "objects at chosen coverage": float(chosen["test_object_2"]),
            "bag ceiling at chosen coverage": float(chosen["boc_ceiling_test_object_2"]),
            "every seed above the bag ceiling at chosen coverage":
                bool((at["test_object_2"] > at["boc_ceiling_test_object_2"]).all()),
            "fitted at transition": _fitted_at(runs, transition),
            "fitted at largest coverage": _fitted_at(runs, float(last["coverage"])),
            "coverages not run": sorted(set((planned or {}).get(objects, [])) - set(sub["coverage"])),
            "coverages not run near the transition": transition_gaps(sub["coverage"], transition,
                                                                     (planned or {}).get(objects, [])),
            "release two objects at chosen coverage": float(chosen.get("release_test_object_2", float("nan"))),
            "release bag ceiling at chosen coverage":
                float(chosen.get("boc_ceiling_release_test_object_2", float("nan"))),
            "rank correlation coverage vs objects": rho,
        })
    return pd.DataFrame(out)


def _fitted_at(runs, coverage: float) -> str:
    """``k of n`` runs at ``coverage`` that fitted their training task (``""``: unknown or NaN coverage)."""
    if "fitted" not in runs or math.isnan(coverage):
        return ""
    at = runs[runs["coverage"] == coverage]
    return f"{int(at['fitted'].sum())} of {len(at)}"


def seed_transitions(runs) -> str:
    """Each seed's :func:`transition_coverage` as ``seed: coverage`` text (``-``: none)."""
    if "seed" not in runs:
        return ""
    parts = []
    for seed, one in runs.groupby("seed", sort=True):
        t = transition_coverage(one["coverage"], one["test_swap_pair"])
        parts.append(f"{seed}: {'-' if math.isnan(t) else f'{t:g}'}")
    return ", ".join(parts)


# our columns to set beside the release's §5.2 numbers, under both protocols
PROTOCOL_COLUMNS = {
    "release protocol, pooled": "release_test_pooled",
    "release protocol, two objects": "release_test_object_2",
    "bag ceiling (release, two objects)": "boc_ceiling_release_test_object_2",
    "full vocabulary, two objects (strict)": "test_object_2",
    "bag ceiling (full vocabulary)": "boc_ceiling_test_object_2",
    "swap pairs": "test_swap_pair",
}


def protocol_comparison(table, min_objects: int = 0) -> Any:
    """:func:`seed_summary` of :data:`PROTOCOL_COLUMNS` for sizes of at least ``min_objects``, over
    records that carry the release protocol."""
    import pandas as pd

    if "release_test_pooled" not in table:
        return pd.DataFrame()
    table = table[(table["objects"] >= min_objects) & table["release_test_pooled"].notna()]
    return seed_summary(table, PROTOCOL_COLUMNS)


def _range(row) -> str:
    """``min-max`` of a row of per-seed values, as text (one value when they agree)."""
    lo, hi = float(row["min"]), float(row["max"])
    return f"{lo:.2f}" if round(lo, 2) == round(hi, 2) else f"{lo:.2f}-{hi:.2f}"


# the columns of seed_summary: per protocol, the model's number and the bag's on the same scenes
SEED_SUMMARY_METRICS = {
    "strict (full vocabulary)": "test_object_2",
    "swap pairs": "test_swap_pair",
    "bag ceiling (full vocabulary)": "boc_ceiling_test_object_2",
    "release protocol, pooled": "release_test_pooled",
    "release protocol, two objects": "release_test_object_2",
    "bag ceiling (release, two objects)": "boc_ceiling_release_test_object_2",
    "bag count scorer (release, pooled)": "boc_release_test_pooled",
    "validation: swap pairs": "val_swap_pair",
    "training task": "task_object_2",
    "cpu minutes": "cpu minutes",
}


def seed_summary(table, metrics: dict[str, str] | None = None) -> Any:
    """Per size and coverage: seed count, each metric's median and range over seeds (default
    :data:`SEED_SUMMARY_METRICS`, absent ones skipped), and whether every seed beats its bag ceiling."""
    import pandas as pd

    metrics = {k: v for k, v in (metrics or SEED_SUMMARY_METRICS).items() if v in table}
    stand_ins = "earlier budget" in table and bool(table["earlier budget"].any())
    rows = []
    for (objects, cov), runs in table.groupby(["objects", "coverage"], sort=True):
        row = {"objects": objects, "C": int(runs["C"].iloc[0]), "V": int(runs["V"].iloc[0]), "coverage": cov,
               "seeds": len(runs)}
        if "fitted" in runs:
            row["steps"] = "/".join(f"{s:,}" for s in sorted(set(runs["steps"])))
            row["fitted"] = f"{int(runs['fitted'].sum())} of {len(runs)}"
        if stand_ins:
            k = int(runs["earlier budget"].sum())
            row["stand-ins at an earlier budget"] = f"{k} of {len(runs)}" if k else "–"
        for name, col in metrics.items():
            vals = runs[col].astype(float)
            row[name] = float(vals.median())
            row[f"{name} range"] = _range({"min": vals.min(), "max": vals.max()})
        if {"test_object_2", "boc_ceiling_test_object_2"} <= set(runs):
            row["every seed above the bag ceiling"] = bool(
                (runs["test_object_2"] > runs["boc_ceiling_test_object_2"]).all())
        rows.append(row)
    return pd.DataFrame(rows)
