"""What a chapter does around its science: its parameters and its page. The encoders,
models and data a chapter uses, and its notes on stored results, are the experiments'
(:mod:`bindcore.experiments`).

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bindcore.io import atomic_write_json
from bindcore.runtime import check_profile
from bindcore.settings import unknown_name

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
    from bindcore.figures import use_style

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
