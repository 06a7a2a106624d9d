"""Embedding sets and their §4 / appendix D analyses (§4.1, §4.2, D.1, D.2, D.3, D.5), stored
under the set's hash and the parameters so that chapters and the report re-read them in seconds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bindcore.io import arrays_hash, digest
from bindcore.store import Kind, ResultStore

from .attribution import component_attribution
from .geometry import (
    additive_decomposition,
    average_components,
    editing_sweep,
    grid_likeness,
    mds_frame,
    object_ids,
)
from .inputs import check_inputs

GEOMETRY_STORE_KIND = Kind("geometry-1")  # bump the version when the analyses' results change
HOLDOUT = 0.2  # share of scenes held out for the held-out R² of §4.1 and D.3


@dataclass
class EmbeddingSet:
    """Scene embeddings of one dataset by one encoder, labels, and single-object scenes if any."""

    dataset: str
    encoder: str
    source: str  # "text", "image" or "controlled": which of the paper's rows it sits beside
    pretrained: bool  # False for random weights; the controlled models count as trained (True)
    Z: np.ndarray
    objects: np.ndarray
    values_per_concept: list[int]
    concept_names: list[str] = field(default_factory=list)
    value_names: list[list[str]] = field(default_factory=list)
    Z_single: np.ndarray | None = None
    objects_single: np.ndarray | None = None
    # what made Z (and Z_single), as JSON: stored embeddings or a trained model's weights
    # (:func:`bindcore.analysis.probes.data_origin`); None: only the arrays say
    origin: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_inputs(self.Z, self.objects, self.values_per_concept)
        if (self.Z_single is None) != (self.objects_single is None):
            raise ValueError("Z_single and objects_single come together (both or neither)")
        if self.Z_single is not None:
            check_inputs(self.Z_single, self.objects_single, self.values_per_concept, name="Z_single")

    @property
    def label(self) -> str:
        return f"{self.dataset} | {self.encoder}"

    def content_hash(self) -> str:
        """The key of the set's analyses: its ``origin`` and labels (the same on every machine,
        unlike the floats), else the arrays' content."""
        if self.origin is not None:
            return digest("embedding set", self.origin, np.asarray(self.objects), self.objects_single)
        return arrays_hash(self.Z, self.objects, self.Z_single, self.objects_single)

    def args(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        return self.Z, self.objects, self.values_per_concept


# ---------------------------------------------------------------------------------
# stored analyses
# ---------------------------------------------------------------------------------
def stored_frame(s: EmbeddingSet, analysis: str, params: dict[str, Any],
                 compute: Callable[[], pd.DataFrame], store: Any = None) -> pd.DataFrame:
    """``compute()`` for set ``s``, stored under (analysis, set content, params)."""
    store = store or ResultStore()
    key = {"analysis": analysis, "set": s.content_hash(), "label": s.label, "params": params}

    def run() -> dict[str, Any]:
        df = compute()
        return {"rows": df.to_dict("records"), "attrs": {k: v for k, v in df.attrs.items()}}

    res = store.cached(GEOMETRY_STORE_KIND, key, run)
    df = pd.DataFrame(res["rows"])
    df.attrs.update(res.get("attrs", {}))
    return df


def _probe_kw(params: dict[str, Any]) -> dict[str, Any]:
    return {"epochs": int(params["probe_epochs"]), "lr": float(params["probe_lr"])}


def _probe_key(params: dict[str, Any]) -> dict[str, Any]:
    """The probe settings that key a stored analysis."""
    return {"probe_epochs": params["probe_epochs"], "probe_lr": params["probe_lr"]}


def decomposition(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """§4.1: R² (all scenes and :data:`HOLDOUT` held out), retrieval and probing of the
    reconstructions, per kind and estimator."""
    p = {**_probe_key(params), "holdout": HOLDOUT}

    def compute() -> pd.DataFrame:
        full = additive_decomposition(*s.args(), probes="fit", probe_kw=_probe_kw(params))
        held = additive_decomposition(*s.args(), holdout=HOLDOUT, retrieval=False)
        full["r2_heldout"] = held["r2_eval"].to_numpy()
        return full

    return stored_frame(s, "decomposition", p, compute, store)


ATTRIBUTION_FOLDS = 2  # §4.2: components cross-fitted, never on the scene they are subtracted from


def attribution(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """§4.2 / D.1: probes re-fitted after subtracting cross-fitted components, with the
    permuted-ID controls (``params["permutations"]`` each, default 1)."""
    n = int(params.get("permutations", 1))
    p = {**_probe_key(params), "permutations": n, "folds": ATTRIBUTION_FOLDS}
    return stored_frame(s, "attribution", p,
                        lambda: component_attribution(*s.args(), permutations=n, probe_kw=_probe_kw(params),
                                                      folds=ATTRIBUTION_FOLDS), store)


def editing(s: EmbeddingSet, params: dict[str, Any], store: Any = None) -> pd.DataFrame:
    """D.2: object-replacement edits for every bank and strength k."""
    p = {**_probe_key(params), "ks": list(params["ks"]), "max_edits": params["max_edits"]}

    def compute() -> pd.DataFrame:
        return editing_sweep(*s.args(), Z_single=s.Z_single, objects_single=s.objects_single, ks=params["ks"],
                             max_edits=params["max_edits"], probe_kw=_probe_kw(params))

    return stored_frame(s, "editing", p, compute, store)


# ---------------------------------------------------------------------------------
# appendix D.3 (three-object scenes, occlusion) and D.5 (MDS pictures)
# ---------------------------------------------------------------------------------
def object_occurrences(s: EmbeddingSet) -> dict[str, int | float]:
    """Number of objects, those never seen, and the min and median occurrences of the others."""
    ids = object_ids(s.objects, s.values_per_concept)
    counts = np.bincount(ids[ids >= 0], minlength=int(np.prod(s.values_per_concept)))
    seen = counts[counts > 0]
    return {"objects": int(len(counts)), "never_seen": int((counts == 0).sum()),
            "min": int(seen.min()) if len(seen) else 0, "median": float(np.median(seen)) if len(seen) else 0.0}


def three_object_analysis(s: EmbeddingSet, params: dict[str, Any], store: Any = None,
                          holdout: float = HOLDOUT) -> pd.DataFrame:
    """D.3: :func:`~bindcore.analysis.geometry.additive_decomposition` on all scenes plus, with a
    ``holdout`` share held out, ``r2_heldout`` (NaN with < 2 scenes), ``retrieval_heldout``,
    ``retrieval_chance_heldout``, ``n_heldout``, ``n_excluded_heldout``; ``attrs["occurrences"]``."""
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"holdout must lie in (0, 1), got {holdout}")
    p = {**_probe_key(params), "holdout": holdout}

    def compute() -> pd.DataFrame:
        full = additive_decomposition(*s.args(), probes="fit", probe_kw=_probe_kw(params))
        with np.errstate(divide="ignore", invalid="ignore"):  # R² of < 2 scenes: set to NaN below
            held = additive_decomposition(*s.args(), holdout=holdout)
        for col, new in (("r2_eval", "r2_heldout"), ("retrieval", "retrieval_heldout"),
                         ("retrieval_chance", "retrieval_chance_heldout"), ("n_eval", "n_heldout"),
                         ("n_excluded", "n_excluded_heldout")):
            full[new] = held[col].to_numpy()
        # R² needs at least two held-out scenes left to have a spread (SST > 0)
        few = (full["n_heldout"] - full["n_excluded_heldout"]) < 2
        full.loc[few, "r2_heldout"] = np.nan
        full.attrs["occurrences"] = object_occurrences(s)
        return full

    return stored_frame(s, "three-objects", p, compute, store)


def mds_analysis(s: EmbeddingSet, params: dict[str, Any], store: Any = None, n_neighbors: int = 2) -> pd.DataFrame:
    """D.5: classical chord MDS of the averaged object and concept banks (column ``bank``);
    ``attrs["grid"]``: grid likeness in MDS (``"mds"``) and full space (``"full"``), and with
    ``sum(V_c - 1)`` neighbours (``"mds_grid"``, ``"full_grid"``)."""
    n = int(params["mds_components"])
    p = {"mds_components": n, "method": "classical", "distance": "chord", "n_neighbors": n_neighbors,
         "grid_neighbors": "sum(V_c - 1)"}

    def compute() -> pd.DataFrame:
        objects = average_components(*s.args(), kind="objects")
        concepts = average_components(*s.args(), kind="concepts")
        fo = mds_frame(objects, n, position=0).assign(bank="objects")
        fc = mds_frame(concepts, n, position=0).assign(bank="concepts")
        values = fo[[f"value_{c}" for c in range(len(s.values_per_concept))]].to_numpy()
        vec = objects.vectors[0] + objects.intercept
        vec = vec[np.isfinite(vec).all(1)]
        vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
        coords = fo[[f"mds_{i + 1}" for i in range(n)]].to_numpy()
        k = min(n_neighbors, len(fo) - 1)
        kg = max(1, min(int(sum(v - 1 for v in s.values_per_concept)), len(fo) - 1))
        df = pd.concat([fo, fc], ignore_index=True)
        df.attrs["grid"] = {"mds": grid_likeness(coords, values, k), "full": grid_likeness(vec, values, k),
                            "mds_grid": grid_likeness(coords, values, kg), "full_grid": grid_likeness(vec, values, kg)}
        return df

    return stored_frame(s, "mds", p, compute, store)
