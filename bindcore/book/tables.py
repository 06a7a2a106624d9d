"""Chapter and report tables: our numbers with the paper's beside rows of the same kind only
(pretrained beside CLIP, our scenes beside CLEVR as substitute data, none beside controlled models)."""

from __future__ import annotations

import html as htmllib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bindcore.analysis.embedding_sets import frame_row, weights_label
from bindcore.analysis.generalization import results_table
from bindcore.analysis.geometry_sets import EmbeddingSet
from bindcore.book.render import FOLD_OPEN
from bindcore.data.pixels import LEVELS
from bindcore.paper import (
    CLIP,
    EDIT_BANKS,
    PAPER_ATTRIBUTION,
    PAPER_EDITING,
    PAPER_EDITING_CASE,
    PAPER_RECONSTRUCTION,
    fmt_objects,
)
from bindcore.parameters import run_command

# our datasets standing for the paper's
PAPER_DATA = {"CLEVR (authors' images)": "CLEVR", "PUG:SPARE": "PUG:SPARE", "CLEVR-like 3-D": "CLEVR",
              "CLEVR-2D": "CLEVR-2D"}
# those of them made here rather than the authors' images: substitute data, named beside the paper's number
SUBSTITUTE_DATA = {"CLEVR-like 3-D": "CLEVR-like scenes ray-cast here", "CLEVR-2D": "CLEVR-2D drawn here"}


def _image_model(s: EmbeddingSet) -> str | None:
    """The paper's image encoder a pretrained set stands beside (CLIP or DINOv2; its key in
    :mod:`bindcore.paper`), else None."""
    if not s.pretrained or s.source != "image":
        return None
    return "CLIP ViT-B/32" if s.encoder.startswith("CLIP") else "DINOv2" if s.encoder.startswith("DINOv2") else None


# ---------------------------------------------------------------------------------
# §4.1, §4.2 / D.1 and D.2
# ---------------------------------------------------------------------------------
def sets_frame(sets: Sequence[EmbeddingSet]) -> pd.DataFrame:
    """One row per set: what it is and how big."""
    return pd.DataFrame([{"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s),
                          "scenes": len(s.Z), "d": s.Z.shape[1],
                          "objects": int(np.prod(s.values_per_concept)),
                          "single-object scenes": 0 if s.Z_single is None else len(s.Z_single)} for s in sets])


def _model_name(paper_key: str) -> str:
    """How a table names the paper's model: CLIP with its open_clip model and pretrained tag."""
    return CLIP if paper_key == "CLIP ViT-B/32" else paper_key


def _paper_decomposition(s: EmbeddingSet) -> dict[str, Any] | None:
    """The paper's row for this set (same modality and weights kind), else None."""
    if s.source == "text":
        model = "CLIP ViT-B/32" if s.pretrained else "random init"
        key, label = ("text", model), CLIP if s.pretrained else model
        if s.pretrained and not s.encoder.startswith("CLIP"):
            label = f"{CLIP} (ours: {s.encoder}, a substitute)"
    elif _image_model(s) and s.dataset in PAPER_DATA:
        key = (PAPER_DATA[s.dataset], _image_model(s))
        label = f"{_model_name(key[1])} on {key[0]}" + (f" (ours: {SUBSTITUTE_DATA[s.dataset]}, substitute data)"
                                                       if s.dataset in SUBSTITUTE_DATA else "")
    else:
        return None
    if key not in PAPER_RECONSTRUCTION:
        return None
    r2_avg, r2_pos, retrieval, probing = PAPER_RECONSTRUCTION[key]
    return {"model": label, "r2_avg": r2_avg, "r2_pos": r2_pos, "retrieval": retrieval, "probing": probing}


def _paper_editing(s: EmbeddingSet) -> dict[str, dict[str, float | None]]:
    """{metric: {bank: value}} of the paper's D.2 row for a pretrained image set, else {}."""
    if not _image_model(s) or s.dataset not in PAPER_DATA:
        return {}
    row = PAPER_EDITING.get((PAPER_DATA[s.dataset], _image_model(s)), {})
    return {metric: dict(zip(EDIT_BANKS, vals)) for metric, vals in row.items()}


def decomposition_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """§4.1, one row per set: R² of bag-of-concepts vs bag-of-objects (averaging, and least squares
    on 20 % held-out scenes), retrieval and probing of object reconstructions, paper beside ours."""
    rows = []
    for s, df in zip(sets, frames):
        c, o = frame_row(df, "concepts", "avg"), frame_row(df, "objects", "avg")
        cp, op = frame_row(df, "concepts", "pos-avg"), frame_row(df, "objects", "pos-avg")
        paper = _paper_decomposition(s) or {}
        rows.append({
            "dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s),
            "paper: model": paper.get("model", "–"),
            "R² concepts avg / pos": f"{c['r2_eval']:.2f} / {cp['r2_eval']:.2f}",
            "R² objects avg / pos": f"{o['r2_eval']:.2f} / {op['r2_eval']:.2f}",
            "paper: R² objects avg / pos": f"{paper['r2_avg']:.2f} / {paper['r2_pos']:.2f}" if paper else "–",
            "held-out R² concepts / objects (pos-lstsq)":
                f"{frame_row(df, 'concepts', 'pos-lstsq')['r2_heldout']:.2f} / "
                f"{frame_row(df, 'objects', 'pos-lstsq')['r2_heldout']:.2f}",
            "retrieval from objects (concepts)": f"{o['retrieval']:.2f} ({c['retrieval']:.2f})",
            "paper: retrieval": paper.get("retrieval", "–"),
            "retrieval chance": o["retrieval_chance"],
            "probing objects of object recon. (real)":
                f"{o['probe_object']:.2f} ({df.attrs.get('probe_real', {}).get('object', float('nan')):.2f})",
            "paper: probing": paper.get("probing", "–"),
        })
    return pd.DataFrame(rows)


def attribution_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """§4.2 / D.1: concept / object decoding per variant and set (a permuted control: mean over its
    derangements, with range and sd); the paper's CLIP numbers beside pretrained encoders only."""
    rows = []
    for s, df in zip(sets, frames):
        paper = PAPER_ATTRIBUTION.get(s.source, {}) if s.pretrained else {}
        for _, r in df.iterrows():
            variant = attribution_variant(r)
            pc = paper.get(variant)
            n = r.get("permutations")
            spread = (f"{int(n)} derangements: concepts {r['concept_min']:.2f}–{r['concept_max']:.2f} "
                      f"(sd {r['concept_sd']:.3f}), objects {r['object_min']:.2f}–{r['object_max']:.2f} "
                      f"(sd {r['object_sd']:.3f})" if pd.notna(n) else "–")
            rows.append({"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s), "variant": variant,
                         "concepts": r["concept"], "objects": r["object"],
                         "paper: model": CLIP if pc else "–",
                         "paper (CLIP): concepts / objects": f"{pc[0]:.2f} / {pc[1]:.2f}" if pc else "–",
                         "removed norm / original": r["removed_norm_ratio"], "controls: spread": spread})
    return pd.DataFrame(rows)


def attribution_variant(row: pd.Series) -> str:
    """The paper's name of a :func:`~bindcore.analysis.attribution.component_attribution` row."""
    return str(row["variant"]).replace(" (control)", "")


EDIT_CASES = ("different", "shared (release)", "shared", "all")


def editing_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame], k: float = 1.0) -> pd.DataFrame:
    """D.2 at strength ``k``: probing and retrieval of the intended counterfactual per bank and case.

    Cases: ``different`` (replaced object shares no value with the other), ``shared (release)``
    (shares only the edited colour), ``shared`` (any shared value) and ``all``. ``retrieval``
    accepts either object order, ``retrieval exact`` only the intended one. The paper's CLIP
    numbers stand beside pretrained image encoders' :data:`~bindcore.paper.PAPER_EDITING_CASE` edits.
    """
    rows = []
    for s, df in zip(sets, frames):
        paper = _paper_editing(s)
        sub = df[np.isclose(df["k"], k)]
        for bank, b in sub.groupby("bank", sort=False):
            row = {"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s), "bank": bank,
                   "paper: model": _model_name(_image_model(s)) if paper else "–"}
            for case in EDIT_CASES:
                r = b[b["case"] == case]
                if len(r):
                    row[f"retrieval ({case})"] = r["retrieval"].iloc[0]
                    row[f"retrieval exact ({case})"] = r["retrieval_exact"].iloc[0]
                    row[f"probing ({case})"] = r["probe_concepts"].iloc[0]
                    row[f"edits ({case})"] = int(r["n"].iloc[0])
                if case == PAPER_EDITING_CASE:  # the paper's numbers are of these edits: beside ours
                    row[f"paper (CLIP, {case}): probing / retrieval"] = (
                        f"{paper['probing'][bank]:.2f} / {paper['retrieval'][bank]:.2f}"
                        if paper and paper["probing"].get(bank) is not None else "–")
            rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------
# appendix D.5
# ---------------------------------------------------------------------------------
def mds_table(sets: Sequence[EmbeddingSet], frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Grid-likeness per set: share of each object's nearest neighbours sharing a concept value, in
    MDS and full embedding, against chance; with 2 neighbours (also per concept) and with grid ones."""
    rows = []
    for s, df in zip(sets, frames):
        g = df.attrs["grid"]
        row = {"dataset": s.dataset, "encoder": s.encoder, "weights": weights_label(s),
               "objects": int(g["mds"]["n_points"]), "neighbours": int(g["mds"]["n_neighbors"]),
               "grid-likeness (MDS)": g["mds"]["score"], "grid-likeness (full d)": g["full"]["score"],
               "grid neighbours": int(g["mds_grid"]["n_neighbors"]),
               "grid-neighbour recall (MDS)": g["mds_grid"]["score"],
               "grid-neighbour recall (full d)": g["full_grid"]["score"], "chance": g["mds"]["chance"]}
        row["concepts 0 / 1"] = " / ".join(s.concept_names[:2]) if s.concept_names else "–"
        for c in range(len(s.values_per_concept)):
            row[f"same concept {c} (MDS)"] = g["mds"][f"concept_{c}"]
            row[f"same concept {c} chance"] = g["mds"][f"concept_{c}_chance"]
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------
# appendix E: pixel dual encoders
# ---------------------------------------------------------------------------------
def pixel_results_table(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The §5.2 results table of pixel runs plus level, CPU minutes and held-out object count."""
    table = results_table(list(records))
    table.insert(0, "level", [r["config"]["level"] for r in records])
    table["CPU minutes"] = [r.get("cpu_seconds", float("nan")) / 60 for r in records]
    table["held-out objects"] = [r["n_test_objects"] for r in records]
    return table


def level_support(table: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """What each level's claims rest on at its largest coverage, keyed as the claim rows name it
    ("level clean"): held-out test objects over its object splits, and seeds."""
    out = {}
    for level, sub in table.groupby("level", sort=False):
        top = sub[sub["coverage"] == sub["coverage"].max()]
        out[f"level {level}"] = (int(top.groupby("split seed")["held-out objects"].max().sum()),
                                 int(top["seed"].nunique()))
    return out


def level_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per level at its largest coverage: held-out two-object recognition beside the bag floor and ceiling."""
    rows = []
    for level in [lv for lv in LEVELS if lv in set(table["level"])]:
        sub = table[table["level"] == level]
        top = sub[sub["coverage"] == sub["coverage"].max()].mean(numeric_only=True)
        rows.append({"level": level, "coverage": top["coverage"], "held-out objects, strict": top["test_object_2"],
                     "swap pairs": top.get("test_swap_pair", float("nan")),
                     "swap pairs, twins of held-out objects": top.get("test_swap_pair_heldout", float("nan")),
                     "bag floor": top["boc_test_object_2"], "bag ceiling": top["boc_ceiling_test_object_2"],
                     "held-out concepts": top["test_concept_2"],
                     "training task (training objects)": top["task_object_2"]})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------
# §5.4 figure 9: the correlations of the global product with the models
# ---------------------------------------------------------------------------------
def figure9_correlations(table: pd.DataFrame) -> pd.DataFrame:
    """Per object-space size: model count and Pearson / Spearman correlation of the global product's
    held-out recognition with the model's (NaN with fewer than three models), and the level gap: the
    models' median held-out recognition beside the probe's, and the median of their differences."""
    rows = []
    for objects, sub in table.groupby("objects", sort=True):
        sub = sub.dropna(subset=["model: held-out objects", "global product: held-out objects"])
        x, y = sub["model: held-out objects"], sub["global product: held-out objects"]
        ok = len(sub) >= 3 and x.nunique() > 1 and y.nunique() > 1
        rows.append({"objects": objects, "models": len(sub), "Pearson r": x.corr(y) if ok else np.nan,
                     "Spearman rho": x.rank().corr(y.rank()) if ok else np.nan,
                     "model (median)": x.median(), "global product (median)": y.median(),
                     "level gap (median of model - product)": (x - y).median()})
    return pd.DataFrame(rows, columns=["objects", "models", "Pearson r", "Spearman rho", "model (median)",
                                       "global product (median)", "level gap (median of model - product)"])


def figure9_level(corr: pd.DataFrame) -> str:
    """Figure 9 in two readings, per size: the rank relation (the claim's) and the level gap (how
    far below the model's own held-out recognition the fitted product sits)."""
    parts = [f"{fmt_objects(r['objects'])}: "
             + (f"Spearman {r['Spearman rho']:.2f}" if np.isfinite(r["Spearman rho"]) else "no rank correlation "
                f"({int(r['models'])} model{'s' if r['models'] != 1 else ''}, or no spread)") + ", the models at "
             f"{r['model (median)']:.2f} and the product at {r['global product (median)']:.2f} "
             f"(median gap {r['level gap (median of model - product)']:.2f})"
             for _, r in corr.iterrows() if r["models"]]
    if not parts:
        return "No model of figure 9 has a fitted global product in this build."
    return ("In rank and in level, per object-space size (medians over models): " + "; ".join(parts)
            + ". A high rank correlation with a large level gap says the product orders the models as they "
              "bind, not that it recovers their binding.")


# ---------------------------------------------------------------------------------
# §5.2: the recipe search log
# ---------------------------------------------------------------------------------
def recipe_search_table(path: Any = None) -> pd.DataFrame:
    """The §5.2 recipe search attempts (``published/recipe-search.json``), failed ones included, with
    changed fields and code version; empty without a log."""

    from bindcore.controlled.search import read_attempts
    from bindcore.store import code_version

    rows = read_attempts(path, "recipe-search.json")
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame([{
        "attempt": r["name"].split("_")[0],
        "changes": f"{r['base']} + " + ", ".join(f"{k}={v}" for k, v in r["changes"].items()
                                                 if k not in ("n_values", "coverage", "steps")),
        "|O|": r["objects"], "coverage": r["coverage"], "steps": r["step reached"],
        "CPU min": r["cpu minutes"], "strict": r["strict"], "swap pairs": r["swap pairs"],
        "swap pairs (held-out twins)": r["swap pairs, held-out twins"], "bag ceiling": r["bag ceiling"],
        "training task": r["training task"],
        "release two-object": r.get("release two-object"),
        "release bag ceiling": r.get("release bag ceiling, two-object"), "status": r["status"],
        "chosen on": r.get("chosen on", RECIPE_SEARCH_CHOSEN_ON),
        "code": code_version(r.get("code")),
    } for r in rows])
    return out


# attempts logged before held-out objects were split into validation and test were chosen on test_*
RECIPE_SEARCH_CHOSEN_ON = "held-out objects (test_*: before the validation split)"


def fit_search_table(path: Any = None) -> pd.DataFrame:
    """The §5.2 fit search attempts (``published/fit-search.json``): changed fields, and per seed the
    step the training task reached the target ("-": never), last reading, its step (an attempt with a
    ``stop at`` gives up there) and CPU minutes; empty
    without a log."""

    from bindcore.controlled.search import read_attempts

    rows = []
    for r in read_attempts(path, "fit-search.json"):
        runs = r["runs"]
        rows.append({
            "attempt": r["name"],
            "changes": f"{r['base']} + " + ", ".join(f"{k}={v}" for k, v in r["changes"].items()
                                                     if k not in ("n_values", "coverage")),
            "V": r["changes"].get("n_values"), "coverage": r["changes"].get("coverage"),
            "seeds": " / ".join(str(x["seed"]) for x in runs),
            f"steps to {r['target']:g}": " / ".join("-" if x["steps_to_target"] is None
                                                   else f"{x['steps_to_target']:,}" for x in runs),
            "last reading": " / ".join(f"{x['last_task_object_2']:.2f}" for x in runs),
            "at step": " / ".join(f"{x['curve'][-1]['step']:,}" if x["curve"] else "-" for x in runs),
            "every seed fitted": r["every seed fitted"],
            "CPU min": " / ".join("?" if x["cpu_minutes"] is None else f"{x['cpu_minutes']:.0f}" for x in runs),
            "chosen on": r["chosen on"], "status": r.get("status", "finished"),
        })
    return pd.DataFrame(rows)


def claims_display(frame: pd.DataFrame, notebook: str | None = None) -> tuple[pd.DataFrame, str]:
    """(rows with a verdict, markdown of the rest grouped by status and reason); untestable claims
    get the command that runs the chapter on the paper's profile."""
    from bindcore.verdicts.core import NOT_SHOWN, SHOWN, UNTESTABLE

    judged = frame[frame["status"].isin([SHOWN, NOT_SHOWN])].reset_index(drop=True)
    lines = []
    for (status, why), rows in frame[~frame["status"].isin([SHOWN, NOT_SHOWN])].groupby(["status", "why"],
                                                                                      sort=False):
        claims = "; ".join(f"{claim} ({', '.join(dict.fromkeys(sub['subject'].astype(str)))})"
                           for claim, sub in rows.groupby("claim", sort=False))
        lines.append(f"* **{status}**, {why}: {claims}.")
    if notebook and (frame["status"] == UNTESTABLE).any():
        lines.append(f"* The paper's profile runs what this one cannot: {run_command(notebook, profile='paper')}.")
    return judged, "\n".join(lines)


def said_once(judged: pd.DataFrame, keep: Sequence[str] = ("claim", "subject", "ours", "status")
              ) -> tuple[pd.DataFrame, str]:
    """``judged`` without columns constant over 2+ rows (never ``keep``), and those said once as markdown."""
    same = [c for c in judged.columns if c not in keep and len(judged) > 1 and judged[c].astype(str).nunique() == 1]
    line = "; ".join(f"{c}: {judged[c].iloc[0]}" for c in same)
    return judged.drop(columns=same), (f"Every row below: {line}." if line else "")


def show_claims(frame: pd.DataFrame, notebook: str | None = None) -> None:
    """Display :func:`claims_display`: the judged rows as a table (the columns that hold one
    value said once above it, :func:`said_once`), the rest as a list."""
    from IPython.display import Markdown, display

    judged, rest = claims_display(frame, notebook)
    if len(judged):
        table, common = said_once(judged)
        if common:
            display(Markdown(common))
        with pd.option_context("display.max_colwidth", None):
            display(table.round(3))
    else:
        display(Markdown("No claim of this chapter could be judged in this build."))
    if rest:
        display(Markdown(rest))


# the approximator sweeps' columns as a reader names them
SWEEP_COLUMNS = {"family": "family", "width": "width", "fraction": "data fraction", "lr": "learning rate",
                 "heldout_concept": "held-out concepts", "heldout_object": "held-out objects",
                 "heldout_r2": "held-out R²", "train_object": "training objects", "train_r2": "training R²",
                 "seconds": "seconds", "one_plus": "1 + 0.1 N(0, 1)"}


def sweep_display(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``columns`` of a sweep table renamed by :data:`SWEEP_COLUMNS`, widths as integers ("–": none),
    other numbers to two decimals."""
    out = table[list(columns)].rename(columns=SWEEP_COLUMNS)
    if "width" in out:
        out["width"] = [("–" if pd.isna(w) else f"{int(w):,}") for w in out["width"]]
    return out.round(2)


# ---------------------------------------------------------------------------------
# a chapter's parameters
# ---------------------------------------------------------------------------------
MACHINE_PARAMETERS = ("profile", "workers", "device")  # where and how a run executes, not what it computes


def _parameter_text(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, (list, tuple)):
        return ", ".join(_parameter_text(v) for v in value) or "–"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def parameter_table(chapter: str, params: dict[str, Any]) -> pd.DataFrame:
    """A run's parameters (``params``; the machine's, :data:`MACHINE_PARAMETERS`, left out) as a
    small table beside the paper profile's values ("same" where equal)."""
    from bindcore.parameters import chapter_parameters

    paper = chapter_parameters(chapter, "paper")
    return pd.DataFrame([{"parameter": k, "this run": _parameter_text(v),
                          "paper profile": "same" if paper.get(k) == v else _parameter_text(paper.get(k))}
                         for k, v in params.items() if k not in MACHINE_PARAMETERS])


# ---------------------------------------------------------------------------------
# tables as a page shows them
# ---------------------------------------------------------------------------------
FOLD_ROWS = 15  # a longer table is folded under a one-line summary (a details block)
MAX_SHOWN_ROWS = 500  # beyond this pandas shows the first and last rows only

# the parts of a run's metric names (bindcore.controlled.evaluation) in words
_METRIC_SETS = {"test": "test objects", "val": "validation objects", "train": "training objects",
                "task": "training task"}
_METRIC_KINDS = {"object": "strict", "concept": "concepts", "swap_pair": "swap pairs",
                 "swap_pair_heldout": "swap pairs (held-out twins)", "pooled": "pooled"}
_NUMBER = r"[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?"
# a group of numbers that reads as one: numbers joined by a sign or a word ("10,000 / 0", "0.91-0.95",
# "3 of 5"), or a comparison and its number ("<= 0.1")
NUMBER_GROUP = re.compile(rf"(?:(?:<=|>=|<|>|=|≥|≤|≈) )?{_NUMBER}(?: ?(?:/|–|-|×) ?{_NUMBER}| (?:of|vs|x|to) {_NUMBER})*")


def numbers_only(text: str) -> bool:
    """Whether a cell holds numbers only (signs, brackets and the words of a number group
    between them: "10,000 / 0", "0.87 (0.93)", "3 of 3", "0.91-0.95", "nan")."""
    if not any(c.isdigit() for c in text):
        return False
    rest = re.sub(r"(?<=\d)e[-+]?\d+", "", re.sub(r"\b(?:of|vs|nan|NaN|inf|x)\b", " ", text))
    return re.fullmatch(r"[\s\d.,/:;()\[\]<>=≥≤≈~×–—+%−-]*", rest) is not None


# what a line must not break inside: a number group, or a word holding a digit and a dash or
# slash (a name such as ViT-B/32, all-MiniLM-L6-v2, a range written 3-D)
_KEEP = re.compile(rf"{NUMBER_GROUP.pattern}|[^\s<>]*\d[^\s<>]*")
# cells without a digit that stand in a column of numbers: kept on one line and aligned like them
_NUMBER_LIKE = {"–", "-", "—", "nan", "NaN", "None", "True", "False", "?", "inf"}
LONG_TEXT = 20  # a text cell longer than this gets a minimum width, so that it is not squeezed word by word


def _breaks_inside(piece: str) -> bool:
    return re.search(r"[\s/–-]", piece.lstrip("-+−")) is not None


# a file path (two slashes or more: notebooks/profiles/paper/05_1_....yaml) is no number: it may
# break after a slash (a <wbr>), or it would hold a cell as wide as itself
_PATH = re.compile(r"`?[\w.-]+(?:/[\w.-]+){2,}`?")


def breakable_groups(text: str) -> list[str]:
    """The pieces of ``text`` a line must not break inside (:data:`_KEEP`) that a browser could
    break: at a space, after a dash or a slash (file paths aside)."""
    return [m.group(0) for m in _KEEP.finditer(text) if _breaks_inside(m.group(0)) and not _PATH.fullmatch(m.group(0))]


def keep_number_groups(text: str) -> str:
    """``text`` as HTML with each of its :func:`breakable_groups` in a ``nowrap`` span, and a
    file path free to break after each slash."""
    out, at = [], 0
    for m in _KEEP.finditer(text):
        if _PATH.fullmatch(m.group(0)):
            out += [htmllib.escape(text[at:m.start()], quote=False),
                    htmllib.escape(m.group(0), quote=False).replace("/", "/<wbr>")]
            at = m.end()
        elif _breaks_inside(m.group(0)):
            out += [htmllib.escape(text[at:m.start()], quote=False),
                    f'<span class="nowrap">{htmllib.escape(m.group(0), quote=False)}</span>']
            at = m.end()
    return "".join(out) + htmllib.escape(text[at:], quote=False)


def column_label(name: Any) -> Any:
    """A column's name as a reader reads it: a run's metric (``boc_ceiling_test_object_2``) in
    words ("bag ceiling: test objects, strict, 2-object scenes"), any other identifier with spaces for
    its underscores; names that are already words are kept."""
    if not isinstance(name, str) or "_" not in name or " " in name:
        return name
    if name in SWEEP_COLUMNS:
        return SWEEP_COLUMNS[name]
    rest, prefix = name, ""
    for key, words in (("boc_ceiling_", "bag ceiling: "), ("boc_", "bag floor: ")):
        if rest.startswith(key):
            rest, prefix = rest.removeprefix(key), words
            break
    if rest.startswith("release_"):
        rest, prefix = rest.removeprefix("release_"), prefix + "release protocol, "
    parts = rest.split("_")
    if parts[0] in _METRIC_SETS and len(parts) >= 2:
        tail = parts[1:]
        n = tail.pop() if tail[-1].isdigit() else None
        kind = "_".join(tail)
        if kind in _METRIC_KINDS:
            return (f"{prefix}{_METRIC_SETS[parts[0]]}, {_METRIC_KINDS[kind]}"
                    + (f", {n}-object scenes" if n else ""))
    return prefix + rest.replace("_", " ")


def _cell(match: re.Match) -> str:
    """One cell (``<td>`` or header ``<th>``) of :func:`page_table`: a cell of numbers marked
    ``num`` (kept on one line), a text cell's number groups and names kept whole
    (:func:`keep_number_groups`), a long text cell marked ``long``."""
    tag, attrs, body = match.group(1), match.group(2), match.group(3)
    text = htmllib.unescape(body)
    if tag == "td" and (numbers_only(text) or text.strip() in _NUMBER_LIKE):
        return f'<td{attrs} class="num">{body}</td>'
    long = ' class="long"' if tag == "td" and len(text) > LONG_TEXT else ""
    return f"<{tag}{attrs}{long}>{keep_number_groups(text)}</{tag}>"


def _value_text(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    return str(v)


def with_ranges(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each column of seed ranges ("swap pairs range", "swap pairs range at chosen
    coverage") set in one cell beside the value it ranges ("0.95 (0.91-0.98)") rather than in a
    column of its own; the value alone where the seeds agree (a range of one number). Presentation
    only: the numbers are the table's."""
    out = df.copy()
    for col in [c for c in df.columns if isinstance(c, str) and " range" in c]:
        head, _, tail = col.partition(" range")
        base = head + tail
        if base not in out.columns or base == col:
            continue
        out[base] = [f"{_value_text(v)} ({r})" if "-" in _value_text(r).lstrip("-") else _value_text(v)
                     for v, r in zip(out[base], out[col])]
        out = out.drop(columns=col)
    return out


def per_size(summary: pd.DataFrame) -> pd.DataFrame:
    """A summary of one row per object-space size and many columns (``generalization_summary``)
    read down instead of across: a column per size ("|O| = 100"), a row per measure, seed ranges
    beside their values (:func:`with_ranges`)."""
    out = with_ranges(summary).set_index("objects").T
    out.columns = [fmt_objects(o) for o in out.columns]
    return out.rename_axis("measure")


def page_table(df: pd.DataFrame) -> str:
    """``df`` as a page shows it: headers in words (:func:`column_label`, at each level of a pivot's), seed ranges beside their
    values (:func:`with_ranges`), no plain 0..n-1 index,
    every column (a wide table scrolls in its box, ``bindcore-table-scroll``), cells of numbers
    kept on one line (``td.num``) and number groups in text too (``span.nowrap``), a cell's line
    breaks kept; longer than :data:`FOLD_ROWS` rows:
    folded in a details block under a line that says its size and columns."""
    index = df.index
    plain = index.nlevels == 1 and index.name is None and pd.api.types.is_integer_dtype(index.dtype)
    shown = (with_ranges(df) if df.columns.nlevels == 1 else df).rename(columns=column_label)  # a pivot's every level
    html = shown.to_html(index=not plain, classes="bindcore-table", border=0, max_cols=None,
                         max_rows=None if len(df) <= MAX_SHOWN_ROWS else MAX_SHOWN_ROWS, show_dimensions=False)
    html = re.sub(r"<(td|th)((?:\s[^>]*)?)>(.*?)</\1>", _cell, html, flags=re.S)
    html = html.replace("\\n", "<br>")  # pandas writes a cell's line breaks as "\n"
    box = f'<div class="bindcore-table-scroll">{html}</div>'
    if len(df) <= FOLD_ROWS:
        return box
    names = [str(c) for c in shown.columns]
    listed = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
    return (f'{FOLD_OPEN}<summary>The table: {len(df)} rows × {len(names)} column{"s" if len(names) != 1 else ""} '
            f'({htmllib.escape(listed, quote=False)})</summary>{box}</details>')
