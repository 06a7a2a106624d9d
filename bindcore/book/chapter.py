"""A chapter's page setup and run parameters: ``P = start_chapter("<chapter>", globals())`` after
its ``parameters`` cell; the book build records ``P`` in the executed notebook (:func:`ran_with`)."""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bindcore.io import atomic_write_json
from bindcore.parameters import TYPES, chapter_parameters, check_parameters, parameter_names
from bindcore.runtime import context
from bindcore.settings import unknown_name

METADATA_KEY = "bindcore"  # of an executed notebook's metadata


# ---------------------------------------------------------------------------------
# parameters and page
# ---------------------------------------------------------------------------------
def start_chapter(chapter: str | None, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Set up the page (:func:`prepare_page`) and return this run's checked parameters.

    ``namespace``: the notebook's ``globals()``. Each parameter of ``chapter`` is taken from it
    (checked against its declared type) or, if the notebook does not define it, from the profile
    file; so is each other name papermill set. A name papermill set that is not one of the
    notebook's parameters cell is refused. ``chapter=None``: only ``profile``."""
    prepare_page()
    injected = _injected(namespace)
    known = {"profile"} | _parameters_cell_names(namespace) | (set(parameter_names(chapter)) if chapter else set())
    unknown = sorted(set(injected) - known)
    if unknown:
        where = f" of chapter {chapter!r}" if chapter else ""
        message = str(unknown_name(unknown[0], known, "parameter", f"{where} (set by papermill)"))
        raise ValueError(message if "; known:" in message else f"{message}; known: {sorted(known)}")
    check_parameters(chapter, {k: namespace[k] for k in injected if k in namespace and k in TYPES})
    profile = check_parameters(chapter, {"profile": namespace["profile"]})["profile"]
    if chapter is None:
        params: dict[str, Any] = {"profile": profile}
    else:
        names = parameter_names(chapter)
        own = chapter_parameters(chapter, profile)  # the profile's file
        params = {**own, **check_parameters(chapter, {k: namespace[k] for k in names if k in namespace})}
        params["profile"] = params.pop("profile")
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


def paper_differences(chapter: str, params: dict[str, Any]) -> list[str]:
    """Each parameter of a run of ``chapter`` (``params``) that differs from the paper
    profile's, as "name: this run's (paper: the paper profile's)": what a cheaper
    profile or an override reduces or changes."""
    paper = chapter_parameters(chapter, "paper")
    return [f"{k}: {params[k]!r} (paper: {v!r})" for k, v in paper.items()
            if k != "profile" and k in params and params[k] != v]


INJECTED_CELL = "# Parameters"  # how papermill's injected-parameters cell (Python) begins


def _assigned(source: str) -> list[str]:
    """The names a cell's source assigns at its top level (none if it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def _cells(namespace: Mapping[str, Any]) -> list[str]:
    cells = namespace.get("In")  # IPython: the source of every cell run so far
    return [c for c in cells if isinstance(c, str)] if isinstance(cells, list) else []


def _parameters_cell_names(namespace: Mapping[str, Any]) -> set[str]:
    """The names of the notebook's own ``parameters`` cell (the first non-papermill cell assigning
    ``profile``)."""
    for cell in _cells(namespace):
        if not cell.lstrip().startswith(INJECTED_CELL) and "profile" in _assigned(cell):
            return set(_assigned(cell))
    return set()


def _injected(namespace: Mapping[str, Any]) -> list[str]:
    """The names papermill injected (read from IPython's ``In``); none outside papermill."""
    injected = [c for c in _cells(namespace) if c.lstrip().startswith(INJECTED_CELL)]
    return _assigned(injected[-1]) if injected else []


def in_book_build() -> bool:
    """Whether a book build executes this chapter (no live kernel for widgets)."""
    return "executed" in context()


def record_run_parameters(params: Mapping[str, Any]) -> None:
    """Write this run's parameters to the JSON file the book build names; no-op outside a build."""
    path = context().get("record")
    if path:
        atomic_write_json(Path(path), dict(params))


def ran_with(notebook: str, chapter: str, profile: str) -> tuple[dict[str, Any], str]:
    """(parameters, source): what ``notebooks/<notebook>`` ran with in this build, or the profile
    file's when this build has no executed copy of it on ``profile``."""
    folder = context().get("executed")
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
    """Apply the figure style, silence library logging, and show DataFrames with :func:`table_html`."""
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
    """Give the root logger a null handler, so a library's ``logging.warning`` does not print into
    the page."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def table_html(df: Any) -> str:
    """A DataFrame as HTML for a page (:func:`bindcore.book.tables.page_table`): every column and
    row, headers in words, numbers kept on one line, in a sideways-scrolling box
    (``bindcore-table-scroll``), folded under a one-line summary when longer than
    :data:`~bindcore.book.tables.FOLD_ROWS` rows."""
    from bindcore.book.tables import page_table

    return page_table(df)


def show_source(*objects: Any) -> Any:
    """Library code shown on the page, in Colab as in the HTML: each function or class (a method
    too) as a Python block under its file's path."""
    import inspect
    import textwrap

    from IPython.display import Markdown

    blocks = []
    for obj in objects:
        code = textwrap.dedent(inspect.getsource(obj)).rstrip()
        blocks.append(f"`{obj.__module__.replace('.', '/')}.py`: `{obj.__qualname__}`\n\n```python\n{code}\n```")
    return Markdown("\n\n".join(blocks))
