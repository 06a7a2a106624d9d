"""What a chapter does around its science: its parameters and its page, its notes on
stored results, and the encoders and trained models it uses.

Every chapter's code starts, after its ``parameters`` cell, with
``P = start_chapter("<chapter>", globals())``: the figure style, library logging kept
out of the page (a chapter speaks in its own one-line notes), tables without pandas'
0..n-1 index, and ``P``, the parameters of this run: the values of the notebook's
variables as the parameters cell set them (the ``quick`` profile's) or papermill did
(``-f notebooks/profiles/<profile>/<notebook>.yaml``, ``-p``, ``-y``), each checked
against its rule (:mod:`bindcore.book.profiles`). A new parameter is added to the
parameters cell and to the chapter's profile files; nothing else. When the book build
executes a chapter, the parameters it ran with are recorded in the executed notebook's
metadata, where the reproduction report reads them (:func:`ran_with`).
"""

from __future__ import annotations

import ast
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bindcore.io import atomic_write_json
from bindcore.runtime import check_profile
from bindcore.settings import unknown_name
from bindcore.store import Kind, code_version

from .profiles import chapter_parameters, check_parameter, paper_differences, parameter_names

# set by the book build (bindcore.book.build) in the environment of the kernel it starts
PARAMETERS_FILE_ENV = "BINDCORE_PARAMETERS_FILE"  # where a chapter records the parameters it ran with
EXECUTED_DIR_ENV = "BINDCORE_EXECUTED_DIR"  # the executed notebooks of this build
METADATA_KEY = "bindcore"  # of an executed notebook's metadata

# ---------------------------------------------------------------------------------
# parameters and page
# ---------------------------------------------------------------------------------
def start_chapter(chapter: str | None, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Set up the page and return the parameters of this run (see the module docstring).

    ``namespace``: the notebook's ``globals()``; every parameter of ``chapter`` found
    there is taken as it is (None included, where its rule allows None) and parsed as the
    parameter's declared type or refused with an error naming it
    (:mod:`bindcore.book.profiles`); one the notebook does not define (04_2 has no
    editing strengths) is the profile file's. A name papermill set that is neither
    (``-p stepz 5``) is refused, naming the known ones (:func:`unknown_parameters`).
    ``chapter=None``: a page without chapter parameters (only ``profile``)."""
    prepare_page()
    unknown = unknown_parameters(chapter, namespace)
    if unknown:
        where = f" of chapter {chapter!r}" if chapter else ""
        known = sorted(_known_parameters(chapter, namespace))
        message = str(unknown_name(unknown[0], known, "parameter", f"{where} (set by papermill)"))
        raise ValueError(message if "; known:" in message else f"{message}; known: {known}")
    profile = check_profile(namespace["profile"])
    if chapter is None:
        params: dict[str, Any] = {"profile": profile}
    else:
        names = parameter_names(chapter)
        own = chapter_parameters(chapter, profile)  # the profile's file
        params = {k: check_parameter(chapter, k, namespace[k]) if k in namespace else own[k] for k in names}
        params["profile"] = profile
        if profile != "quick":  # e.g. `-p profile paper` without the paper file: the cell's values
            off = [f"{k}: {params[k]!r} ({profile}: {own[k]!r})" for k in names if params[k] != own[k]]
            if off:
                print(f"this run's parameters that differ from the {profile!r} profile's file "
                      f"(notebooks/profiles/{profile}/, papermill -f): " + "; ".join(off))
        changed = paper_differences(chapter, params)
        if changed:
            print(f"this run's parameters that differ from the paper profile's ({profile!r} or set here): "
                  + "; ".join(changed))
    record_run_parameters(params)
    return params


INJECTED_CELL = "# Parameters"  # how papermill's injected-parameters cell (Python) begins


def _assigned(source: str) -> set[str]:
    """The names a cell's source assigns at its top level (none if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _cells(namespace: Mapping[str, Any]) -> list[str]:
    cells = namespace.get("In")  # IPython: the source of every cell run so far
    return [c for c in cells if isinstance(c, str)] if isinstance(cells, list) else []


def _parameters_cell_names(namespace: Mapping[str, Any]) -> set[str]:
    """The names of the notebook's own ``parameters`` cell: the first cell run that
    assigns ``profile`` and is not papermill's."""
    for cell in _cells(namespace):
        if not cell.lstrip().startswith(INJECTED_CELL) and "profile" in _assigned(cell):
            return _assigned(cell)
    return set()


def unknown_parameters(chapter: str | None, namespace: Mapping[str, Any]) -> list[str]:
    """The names papermill set (its injected ``# Parameters`` cell, read from IPython's
    cell history ``In``) that are not parameters of ``chapter``: not in its profile
    files and not in its ``parameters`` cell. Sorted; empty outside papermill."""
    injected = [c for c in _cells(namespace) if c.lstrip().startswith(INJECTED_CELL)]
    if not injected:
        return []
    return sorted(_assigned(injected[-1]) - _known_parameters(chapter, namespace))


def _known_parameters(chapter: str | None, namespace: Mapping[str, Any]) -> set[str]:
    return {"profile"} | _parameters_cell_names(namespace) | (set(parameter_names(chapter)) if chapter else set())


def record_run_parameters(params: Mapping[str, Any]) -> None:
    """Hand the parameters of this run to the book build (a JSON file it names), which
    puts them in the executed notebook's metadata; nothing outside a book build."""
    path = os.environ.get(PARAMETERS_FILE_ENV)
    if path:
        atomic_write_json(Path(path), dict(params))


def ran_with(notebook: str, chapter: str, profile: str) -> tuple[dict[str, Any], str]:
    """(the parameters ``notebooks/<notebook>`` ran with in this book build, read from its
    executed copy, and where they come from); the chapter's profile file when this build
    has no executed copy of it on ``profile`` (e.g. a page run on its own)."""
    folder = os.environ.get(EXECUTED_DIR_ENV)
    if folder:
        try:
            meta = json.loads((Path(folder) / f"{notebook}.ipynb").read_text(encoding="utf-8"))["metadata"]
            params = meta[METADATA_KEY]["run_parameters"]
        except (OSError, ValueError, KeyError, TypeError):
            params = None
        if params and params.get("profile") == profile:
            return params, f"{notebook}: the parameters it ran with in this build"
    return chapter_parameters(chapter, profile), f"{notebook}: the '{profile}' profile's parameters file (not run in this build)"


def prepare_page() -> None:
    """The book's figure style; library logging kept out of the page; tables without a
    meaningless index (:func:`table_html`)."""
    from .figures import use_style

    use_style()
    quiet_library_logging()
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        import pandas as pd

        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)


def quiet_library_logging() -> None:
    """Give the root logger a handler that drops records, so that a library's
    ``logging.warning(...)`` does not configure logging to print every warning (e.g.
    open_clip's "No pretrained weights loaded") into the page."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def table_html(df: Any) -> str:
    """A DataFrame as HTML for a page: without its index when that is a plain row number
    (unnamed integers, pandas' default), with it otherwise (e.g. ``set_index("claim")``);
    numbers formatted as pandas' own HTML does; a cell's lines on lines of their own; in
    a box that scrolls sideways when the table is wider than the page
    (``bindcore-table-scroll`` in ``book/_static/bindcore.css``), so no column is cut off."""
    import pandas as pd

    index = df.index
    plain = index.nlevels == 1 and index.name is None and pd.api.types.is_integer_dtype(index.dtype)
    html = df.to_html(index=not plain, classes="bindcore-table", border=0,
                      max_rows=pd.get_option("display.max_rows"), max_cols=pd.get_option("display.max_columns"),
                      show_dimensions=False)
    html = html.replace("\\n", "<br>")  # pandas writes a cell's line breaks as "\n"
    return f'<div class="bindcore-table-scroll">{html}</div>'


# ---------------------------------------------------------------------------------
# notes on stored results
# ---------------------------------------------------------------------------------
def shown_path(path: str | Path) -> str:
    """``path`` as a page shows it, never the build machine's absolute path: relative to
    the project (``results/train-2/<hash>``), else to ``$BINDCORE_RESULTS`` (written so),
    else to the working folder, else the store's last two levels (``<kind>/<hash>``)."""
    from .paths import PACKAGE_DIR

    path = Path(path).absolute()
    env = os.environ.get("BINDCORE_RESULTS")
    for base, prefix in ((PACKAGE_DIR.parent, ""), (Path(env) if env else None, "$BINDCORE_RESULTS/"),
                         (Path.cwd(), "")):
        if base is not None and path.is_relative_to(base.absolute()):
            return prefix + path.relative_to(base.absolute()).as_posix()
    return "/".join(path.parts[-2:])


def note_stored(records: Iterable[Mapping[str, Any]], kind: Kind | None = None, what: str = "training runs") -> None:
    """Print the code version of stored records a chapter uses: one line for those made
    by the current code, one line for each made by other code and reused without being
    computed again (an expensive kind, or a published record)."""
    from bindcore.controlled.training import STORE_KIND

    kind = kind or STORE_KIND
    recs = list(records)
    fresh = [r for r in recs if not r.get("stale")]
    if fresh:
        versions = sorted({code_version(r.get("code")) for r in fresh})
        sources = sorted({r.get("source", "local") for r in fresh})
        print(f"{len(fresh)} {what} ({', '.join(sources)}) made by the current code: {'; '.join(versions)}")
    for r in recs:
        if r.get("stale"):
            print(f"Note: {what[:-1] if what.endswith('s') else what} {r.get('hash', Path(r['path']).name)} "
                  f"({r.get('source', 'local')}, finished {r.get('finished_at', '?')}) was made by "
                  f"{code_version(r.get('code'))}, not by the current code ({kind.fingerprint()[:12]}); it is "
                  f"shown as stored, not recomputed (delete {shown_path(r['path'])} to compute it again).")


# ---------------------------------------------------------------------------------
# the encoders and trained models the chapters use
# ---------------------------------------------------------------------------------
def geometry_encoders() -> tuple[dict[str, list[tuple[Any, bool]]], str]:
    """The encoders of the §4 chapters: ({"text": [(encoder, pretrained)], "image": [...]},
    note for the top of the page). Pretrained CLIP for both modalities where its weights
    are reachable, each with the random-init control beside it; otherwise MiniLM and the
    control for texts and only the control for images."""
    from bindcore import encoders

    d = encoders.default_encoders()
    if d.pretrained_clip:
        control = encoders.random_init_like(d.image, seed=0)
        return {"text": [(d.text, True), (control, False)], "image": [(d.image, True), (control, False)]}, d.note
    return {"text": [(d.text, True), (d.image, False)], "image": [(d.image, False)]}, d.note


def pretrained_encoders() -> tuple[dict[str, Any], str]:
    """The encoders of §5.1: pretrained CLIP's text tower where reachable, else the
    pretrained MiniLM text encoder; and CLIP's architecture with random weights, the
    paper's control. Returns ({name: encoder}, note for the top of the page)."""
    from bindcore import encoders

    d = encoders.default_encoders()
    control = encoders.RandomInitClipEncoder("ViT-B-32-quickgelu", seed=0)
    if d.pretrained_clip:
        return {"CLIP ViT-B/32 (pretrained)": d.text, "ViT-B/32 (random init)": control}, d.note
    return {"all-MiniLM-L6-v2 (pretrained text encoder)": d.text,
            "ViT-B/32 text tower (random init)": control}, d.note


def chapter_recipe(profile: str, steps: int | None = None, eval_scenes: int | None = None,
                   pixels: bool = False, batch_size: int | None = None) -> Any:
    """The training recipe of ``profile`` (the pixel recipe with ``pixels``) with a
    chapter's ``steps``, ``eval_scenes`` and ``batch_size`` (its ``train_batch``) where
    they are set (None: the recipe's)."""
    from bindcore.controlled.recipes import pixel_recipe, recipe

    given = {k: v for k, v in dict(steps=steps, eval_scenes=eval_scenes, batch_size=batch_size).items()
             if v is not None}
    return pixel_recipe(profile, **given) if pixels else recipe(profile, **given)


def generalizing_configs(profile: str, params: Mapping[str, Any] | None = None) -> list[Any]:
    """The configs of the §5.2 models the other chapters use: the largest coverage of each
    object space of ``profile``, its first seed, with a chapter's ``controlled_steps`` and
    ``controlled_eval_scenes`` (``params``; None or absent: the profile's recipe)."""
    from bindcore.sweep import generalization_configs

    params = params or {}
    p = chapter_parameters("binding_generalization", profile)
    base = chapter_recipe(profile, params.get("controlled_steps"), params.get("controlled_eval_scenes"))
    return generalization_configs(base, {**p, "coverages": [max(p["coverages"])], "seeds": p["seeds"][:1]})


def generalizing_runs(profile: str, params: Mapping[str, Any] | None = None, workers: int | None = None,
                      device: str | None = None, executor: Any = None) -> list[dict[str, Any]]:
    """The controlled dual encoders of :func:`generalizing_configs` (stored runs are
    reused; their code version is printed; ``executor``: :func:`bindcore.sweep.run_sweep`'s)."""
    from bindcore.sweep import run_sweep

    runs = run_sweep(generalizing_configs(profile, params), workers=workers, device=device, progress=False,
                     executor=executor)
    note_stored(runs, what="controlled models (stored §5.2 training runs)")
    return runs


def controlled_datasets(profile: str, params: dict[str, Any], workers: int | None = None, device: str | None = None,
                        executor: Any = None):
    """(runs, binding data) of the generalizing controlled models of ``profile`` (§5.3, §5.4)."""
    from bindcore.analysis.probes import controlled_binding_data

    runs = generalizing_runs(profile, params, workers=workers, device=device, executor=executor)
    return runs, [controlled_binding_data(r, max_objects=params["max_objects"], device=device or "cpu") for r in runs]


def controlled_sets(profile: str, params: dict[str, Any], workers: int | None = None,
                    device: str | None = None) -> list[Any]:
    """The generalizing controlled models of §5.2 as embedding sets: scene embeddings of
    all ordered pairs of a sub-grid of at most ``controlled_objects`` objects."""
    from bindcore.analysis.embedding_sets import controlled_set
    from bindcore.analysis.probes import controlled_binding_data

    return [controlled_set(controlled_binding_data(rec, max_objects=params["controlled_objects"],
                                                   device=device or "cpu"))
            for rec in generalizing_runs(profile, params, workers=workers, device=device)]


def geometry_sets(profile: str, params: dict[str, Any], workers: int | None = None,
                  device: str | None = None) -> tuple[list[Any], str]:
    """Every embedding set of the §4 chapters and the encoder note for the top of the page:
    captions and images by :func:`geometry_encoders` (images also by DINOv2 where the
    ``dinov2`` parameter names it and its weights are here), the authors' image folders
    where given (:func:`authors_data`), and (``controlled``) the controlled models of
    §5.2."""
    from bindcore.analysis.embedding_sets import caption_sets, dataset_sets, image_sets

    encoders, note = geometry_encoders()
    folders, _ = authors_data(params)
    dino, _ = dinov2_encoder(params)
    images = list(encoders["image"]) + ([(dino, True)] if dino is not None else [])
    sets = caption_sets(params, encoders["text"]) + image_sets(params, images) + dataset_sets(folders, images)
    if params.get("controlled", True):
        sets += controlled_sets(profile, params, workers=workers, device=device)
    return sets, note


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
            for r in generalizing_pixel_runs(list(runs))]


# ---------------------------------------------------------------------------------
# the authors' data and DINOv2, where a reader has them
# ---------------------------------------------------------------------------------
# chapter parameter -> (load_folder kind, dataset name in the tables)
AUTHOR_FOLDERS = {"clevr_dir": ("clevr", "CLEVR (authors' images)"), "pug_dir": ("pug_spare", "PUG:SPARE")}
AUTHOR_DATA_HOW = ("The authors share their images outside their repository (the link is in the README of "
                   "oshapio/binding-concepts-complexity); a folder holds the images and a labels.csv in the release's "
                   "layout (bindcore.data.load_folder reads it).")


def authors_data(params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The authors' image folders a chapter was given (``clevr_dir``, ``pug_dir``) as
    datasets (:func:`bindcore.data.load_folder`), and one line per folder saying what
    was loaded, or that it was not given or not found and how to get it. Absence is
    decided by a directory check: nothing is downloaded or waited for."""
    from bindcore.data import load_folder

    out, notes = {}, []
    for key, (kind, name) in AUTHOR_FOLDERS.items():
        path = params.get(key)
        if not path:
            notes.append(f"{name}: not given (`{key}` is None).")
        elif not Path(path).is_dir():
            notes.append(f"{name}: folder {path} not found; nothing of it runs.")
        else:
            ds = load_folder(path, kind)
            out[name] = ds
            notes.append(f"{name}: {len(ds)} scenes loaded from {path}.")
    return out, notes


def dinov2_encoder(params: dict[str, Any]) -> tuple[Any | None, str]:
    """(the DINOv2 encoder named by the chapter parameter ``dinov2``, or None; a line
    saying which runs, or why not and how to get it). Decided without building the
    model: at most one 0.5 s probe of the Hugging Face Hub (none under HF_HUB_OFFLINE=1)."""
    from bindcore.encoders import DinoV2Encoder, EncoderUnavailable

    name = params.get("dinov2")
    if not name:
        return None, ("DINOv2: not asked for (`dinov2` is None). Pass `-p dinov2 facebook/dinov2-base` where its "
                      "weights download (e.g. Colab) or sit in the Hugging Face cache.")
    enc = DinoV2Encoder(name)
    try:
        enc.check_available()
    except (EncoderUnavailable, ImportError) as e:
        return None, f"DINOv2 ({name}): not run here. {e}"
    return enc, f"DINOv2 ({name}): runs on the image sets."


def data_and_weights_note(params: dict[str, Any], notebook: str, cells: str) -> tuple[dict[str, Any], Any, str]:
    """The authors' folders and DINOv2 of a chapter: (datasets, DINOv2 encoder or None,
    a markdown note for the page naming what runs, and for what does not, the cells
    that would run with it and the command that runs them)."""
    datasets, notes = authors_data(params)
    dino, dnote = dinov2_encoder(params)
    missing = [k for k, (_, name) in AUTHOR_FOLDERS.items() if name not in datasets] + ([] if dino else ["dinov2"])
    lines = ["**The authors' data and DINOv2 on this page.**", *(f"* {n}" for n in notes), f"* {dnote}"]
    if missing:
        args = " ".join(f"-p {k} {'facebook/dinov2-base' if k == 'dinov2' else '/path/to/folder'}" for k in missing)
        lines.append(f"\nWith them, {cells} also run on those data and that encoder: "
                     f"`papermill notebooks/{notebook}.ipynb out.ipynb {args}`. "
                     + (AUTHOR_DATA_HOW if any(k != "dinov2" for k in missing) else ""))
    return datasets, dino, "\n".join(lines)


# ---------------------------------------------------------------------------------
# §5.2 up to the paper's smaller object space: the scale sweep's stored records
# ---------------------------------------------------------------------------------
def scale_records(store: Any = None) -> tuple[list[dict[str, Any]], list[Any]]:
    """The stored runs of the ``scale`` sweep (:func:`bindcore.controlled.recipes.scale_plan`),
    local or published, and the configs of the plan that have none yet. The quick book
    shows them; ``bindcore sweep --profile scale --publish`` computes the missing ones."""
    from bindcore.controlled.recipes import scale_plan
    from bindcore.store import ResultStore

    store = store or ResultStore()
    found, missing = [], []
    for cfg in scale_plan():
        entry = store.find(cfg.store_kind, cfg.to_dict())
        if entry is None:
            missing.append(cfg)
        else:
            found.append(entry.record())
    return found, missing


def describe_scale_records(records: list[dict[str, Any]], missing: list[Any]) -> str:
    """Where and how the scale records were made, in one paragraph of text."""
    if not records:
        return (f"No record of the scale sweep is stored ({len(missing)} runs planned): "
                f"`bindcore sweep --profile scale --publish` computes them.")
    machines = sorted({f"{(r.get('machine') or {}).get('hostname', '?')} ({r.get('device', '?')}, "
                       f"{r.get('threads', '?')} thread{'s' if r.get('threads') != 1 else ''} per run)" for r in records})
    cpu = [r["cpu_seconds"] / 60 for r in records if r.get("cpu_seconds") is not None]
    when = sorted(r.get("finished_at", "?") for r in records)
    text = (f"{len(records)} runs of the scale sweep ({', '.join(sorted({r.get('source', 'local') for r in records}))}"
            f" records), computed on {', '.join(machines)} between {when[0]} and {when[-1]}"
            + (f"; {min(cpu):.1f} to {max(cpu):.1f} CPU-minutes per run, {sum(cpu):.0f} in all" if cpu else "")
            + ". Recompute them with `bindcore sweep --profile scale` (add `--publish` to copy the records to "
              "published/).")
    if missing:
        text += (f" Not computed yet: {len(missing)} runs (" + ", ".join(
            f"|O| = {c.n_values ** c.n_concepts:,} at {c.coverage:g}" for c in missing[:8])
            + (", ..." if len(missing) > 8 else "") + ").")
    return text


def geometry_nulls(sets: Iterable[Any], params: dict[str, Any], store: Any = None,
                   seed: int = 0) -> tuple[list[Any], list[Any]]:
    """The nulls the §4.1 / D.2 claims are judged against (:func:`bindcore.book.claims.geometry_claims`):
    per set of a pretrained encoder, the decomposition and editing frames of its Gaussian
    null (:func:`~bindcore.analysis.embedding_sets.gaussian_null`: the same labels,
    Gaussian embeddings of the same size and spectrum); None for sets whose claims get
    no verdict (controlled models, random-init controls). Stored like the sets' own."""
    from bindcore.analysis.embedding_sets import gaussian_null
    from bindcore.analysis.geometry_sets import decomposition, editing

    from .claims import CONTROL, CONTROLLED, set_evidence

    dec, edi = [], []
    for s in sets:
        if set_evidence(s) in (CONTROL, CONTROLLED):
            dec.append(None)
            edi.append(None)
            continue
        n = gaussian_null(s, seed)
        dec.append(decomposition(n, params, store))
        edi.append(editing(n, params, store))
    return dec, edi
