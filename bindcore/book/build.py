"""Build the book: execute the notebooks with papermill, then render them with Jupyter Book.

The jupytext ``py:percent`` files under ``notebooks/`` are the source of truth. A build

1. executes every notebook listed in ``_toc.yml`` (:mod:`bindcore.book.toc`) with
   papermill (``profile`` injected as a parameter) into
   ``<build_dir>/executed/<profile>/<name>.ipynb``, skipping a notebook whose source,
   parameters and ``bindcore`` code are unchanged since its last successful execution
   (the cache key is stored in the executed notebook's metadata, with the parameters
   the chapter ran with, :func:`bindcore.book.chapter.start_chapter`); a page that
   reads other chapters' parameters (the reproduction report,
   :func:`bindcore.book.chapter.ran_with`) is keyed by those too;
2. stages a source tree ``<build_dir>/src/<profile>/`` (config, toc, ``book/``, the
   executed notebooks as pages for readers: :func:`reader_page`) so that the
   repository itself is never written to;
3. runs Jupyter Book 1.x on it (its own execution is off) and swaps the result into
   ``<build_dir>/html``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindcore.io import atomic_write_bytes, digest
from bindcore.runtime import check_profile, openmp_environment

from .chapter import EXECUTED_DIR_ENV, METADATA_KEY, PARAMETERS_FILE_ENV
from .pairs import sync_pairs
from .paths import PACKAGE_DIR, repo_root
from .paths import resolve_root as _resolve_root
from .toc import toc_files, toc_notebooks

__all__ = [
    "BookBuildError", "NotebookExecutionError", "NotebookRun", "build_book", "build_html", "cache_key", "execute_book",
    "execute_notebook", "library_hash", "reader_page", "repo_root", "sync_pairs", "toc_files", "toc_notebooks",
]

logger = logging.getLogger(__name__)

KERNEL_NAME = "python3"
# Files next to the notebooks that a rendered page may reference (figures).
NOTEBOOK_ASSET_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg")
# A page that calls this reads the parameters other chapters ran with (its key includes them).
READS_CHAPTERS = "ran_with("
PARAMETERS_PROMPT = "Parameters of this run"


class NotebookExecutionError(RuntimeError):
    """A notebook failed while papermill executed it."""


class BookBuildError(RuntimeError):
    """Jupyter Book failed to render the staged book."""


@dataclass(frozen=True)
class NotebookRun:
    """What happened to one notebook during a build."""

    name: str
    path: Path
    cached: bool
    seconds: float


def _check_profile(profile: str) -> None:
    check_profile(profile)


# --------------------------------------------------------------------------- cache key


def library_hash(package_dir: Path | str | None = None) -> str:
    """Hash of the relative path and content of every ``*.py`` file of the package."""
    package_dir = Path(package_dir) if package_dir is not None else PACKAGE_DIR
    files = [p for p in sorted(package_dir.rglob("*.py")) if "__pycache__" not in p.parts]
    return digest(*(part for p in files for part in (p.relative_to(package_dir).as_posix(), p.read_bytes())),
                  length=None)


def cache_key(source: str, parameters: Mapping[str, Any], library: str, chapters: Any = None) -> str:
    """Key of one execution: the notebook source, its parameters and the library code
    (which includes this build code), and for a page that reads other chapters'
    parameters, those (``chapters``)."""
    return digest(source, json.dumps(parameters, sort_keys=True), library, chapters, length=None)


def _stored_key(executed: Path) -> str | None:
    try:
        with executed.open(encoding="utf-8") as f:
            return json.load(f)["metadata"][METADATA_KEY]["cache_key"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --------------------------------------------------------------------------- execution


@contextmanager
def _kernel_environment(profile: str, root: Path, parameters_file: Path | None = None,
                        executed_dir: Path | None = None) -> Iterator[None]:
    """Environment inherited by the kernel that papermill starts (restored afterwards)."""
    saved = dict(os.environ)
    os.environ.update(openmp_environment())
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ["BINDCORE_PROFILE"] = profile
    # progress bars inside a kernel would land in the rendered pages as many lines of text;
    # papermill reports progress per cell instead
    os.environ["TQDM_DISABLE"] = "1"
    # chapters leave out live-only parts (ipywidgets explorers) when the book executes them
    os.environ["BINDCORE_BOOK_BUILD"] = "1"
    # where the chapter records the parameters it ran with, and the other chapters' records
    for var, path in ((PARAMETERS_FILE_ENV, parameters_file), (EXECUTED_DIR_ENV, executed_dir)):
        if path is not None:
            os.environ[var] = str(path)
    # The kernel runs in notebooks/; make sure it imports this checkout's bindcore.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), saved.get("PYTHONPATH")) if p)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


# Longest a single cell may run before the build fails instead of waiting for ever (a hung
# kernel would otherwise stall CI): generous for each profile's heaviest cell; none on `paper`.
CELL_TIMEOUT_S = {"smoke": 900, "quick": 3 * 3600, "paper": None}


def _run_papermill(input_path: Path, output_path: Path, parameters: dict[str, Any], cwd: Path) -> None:
    """Execute ``input_path`` into ``output_path`` (the one place papermill is called)."""
    import papermill

    papermill.execute_notebook(
        str(input_path),
        str(output_path),
        parameters=parameters,
        kernel_name=KERNEL_NAME,
        cwd=str(cwd),
        progress_bar=True,
        request_save_on_cell_execute=True,
        execution_timeout=CELL_TIMEOUT_S.get(parameters.get("profile", "paper")),
    )


def _read_py_notebook(py_path: Path):
    import jupytext

    return jupytext.reads(py_path.read_text(encoding="utf-8"), fmt="py:percent")


def _failure_message(name: str, source_nb, exc: BaseException, partial: Path) -> str:
    """Name the notebook and the failing cell (index in the .py source, first lines)."""
    cell_source = getattr(exc, "source", None)
    exec_count = getattr(exc, "exec_count", None)
    if cell_source is None and partial.is_file():
        # Kernel death or timeout: papermill marks the cell it was running.
        try:
            import nbformat

            executed = nbformat.read(partial, as_version=4)
            for cell in executed.cells:
                if cell.get("metadata", {}).get("papermill", {}).get("status") in ("running", "failed"):
                    cell_source, exec_count = cell.source, cell.get("execution_count")
                    break
        except Exception:  # noqa: BLE001 - best effort, the original error is what matters
            pass
    where = "an unknown cell"
    if cell_source is not None:
        index = next((i for i, c in enumerate(source_nb.cells) if c.source == cell_source), None)
        if index is not None:
            where = f"cell {index + 1} of {len(source_nb.cells)}"
        elif "injected-parameters" in cell_source or cell_source.startswith("# Parameters"):
            where = "the injected parameters cell"
        else:
            where = "a cell"
        if exec_count is not None:
            where += f" (In [{exec_count}])"
        excerpt = "\n".join("    " + line for line in cell_source.splitlines()[:6])
        where += f":\n{excerpt}"
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    detail = str(exc) if hasattr(exc, "traceback") else ""
    return f"notebook {name} (notebooks/{name}.py) failed in {where}\n{ename}: {evalue}{detail}"


def _run_records(out_dir: Path, but: str) -> dict[str, Any]:
    """{notebook: the parameters it ran with} of the executed notebooks in ``out_dir``
    (all but ``but``)."""
    records = {}
    for path in sorted(out_dir.glob("*.ipynb")):
        if path.stem == but:
            continue
        try:
            records[path.stem] = json.loads(path.read_text(encoding="utf-8"))["metadata"][METADATA_KEY].get(
                "run_parameters")
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return records


def _execute(
    name: str,
    profile: str,
    out_dir: Path,
    parameters: Mapping[str, Any] | None,
    force: bool,
    root: Path,
    library: str | None = None,
) -> NotebookRun:
    import nbformat

    _check_profile(profile)
    py_path = root / "notebooks" / f"{name}.py"
    if not py_path.is_file():
        raise FileNotFoundError(f"notebook source {py_path} does not exist")
    source = py_path.read_text(encoding="utf-8")
    params: dict[str, Any] = {"profile": profile, **(parameters or {})}
    out_dir.mkdir(parents=True, exist_ok=True)
    chapters = _run_records(out_dir, but=name) if READS_CHAPTERS in source else None
    key = cache_key(source, params, library if library is not None else library_hash(root / "bindcore"), chapters)

    executed = out_dir / f"{name}.ipynb"
    if not force and executed.is_file() and _stored_key(executed) == key:
        return NotebookRun(name, executed, cached=True, seconds=0.0)

    source_nb = _read_py_notebook(py_path)
    work = Path(tempfile.mkdtemp(dir=out_dir, prefix=f".{name}."))  # this execution's own files
    input_path, partial, recorded = work / "input.ipynb", work / "partial.ipynb", work / "parameters.json"
    print(f"[book] executing {name} (profile={profile}, parameters={json.dumps(params)})", flush=True)
    start = time.perf_counter()
    try:
        nbformat.write(source_nb, input_path)
        with _kernel_environment(profile, root, parameters_file=recorded, executed_dir=out_dir):
            try:
                _run_papermill(input_path, partial, params, root / "notebooks")
            except Exception as exc:
                raise NotebookExecutionError(_failure_message(name, source_nb, exc, partial)) from exc
        seconds = time.perf_counter() - start
        nb = nbformat.read(partial, as_version=4)
        nb.metadata[METADATA_KEY] = {
            "cache_key": key,
            "profile": profile,
            "parameters": params,
            # the parameters the chapter ran with (profile defaults with the given ones on top)
            "run_parameters": json.loads(recorded.read_text()) if recorded.is_file() else None,
            "source": f"notebooks/{name}.py",
            "seconds": round(seconds, 3),
        }
        papermill_meta = nb.metadata.get("papermill")
        if papermill_meta is not None:  # record the real source, not the temporary input
            papermill_meta["input_path"] = f"notebooks/{name}.py"
            papermill_meta["output_path"] = executed.name
        atomic_write_bytes(executed, nbformat.writes(nb).encode("utf-8"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return NotebookRun(name, executed, cached=False, seconds=seconds)


def execute_notebook(
    name: str,
    profile: str,
    out_dir: Path | str,
    parameters: Mapping[str, Any] | None = None,
    force: bool = False,
    *,
    root: Path | str | None = None,
) -> Path:
    """Execute ``notebooks/<name>.py`` with papermill into ``<out_dir>/<name>.ipynb``.

    The notebook is skipped when its executed copy carries the same cache key (source,
    parameters, bindcore code). The executed file is replaced atomically and only after
    a successful run; a failure raises :class:`NotebookExecutionError` naming the cell.
    """
    run = _execute(name, profile, Path(out_dir), parameters, force, _resolve_root(root))
    return run.path


# --------------------------------------------------------------------------- whole book


def execute_book(
    profile: str = "quick",
    build_dir: Path | str = "_build",
    force: bool = False,
    only: Iterable[str] | None = None,
    *,
    root: Path | str | None = None,
) -> list[NotebookRun]:
    """Execute the notebooks of ``_toc.yml`` (or the ``only`` subset) and print timings."""
    _check_profile(profile)
    root = _resolve_root(root)
    names = toc_notebooks(root)
    selected = list(names)
    if only:
        only = list(only)
        unknown = [n for n in only if n not in names]
        if unknown:
            raise ValueError(f"--only {', '.join(unknown)}: not in _toc.yml; choose from {', '.join(names)}")
        selected = [n for n in names if n in only]
    build_dir = _absolute(build_dir)
    out_dir = build_dir / "executed" / profile
    library = library_hash(root / "bindcore")
    runs = []
    for name in selected:
        run = _execute(name, profile, out_dir, None, force, root, library)
        status = "cached" if run.cached else f"executed in {run.seconds:.1f} s"
        print(f"[book] {name}: {status}", flush=True)
        runs.append(run)
    return runs


def _absolute(path: Path | str) -> Path:
    """A relative build directory is taken relative to the current directory."""
    return Path(path).resolve()


def reader_page(nb: Any) -> bytes:
    """An executed notebook (an ``nbformat`` node) as the page a reader meets: the
    parameters cell and papermill's injected-parameters cell merged into one cell,
    collapsed under one "Parameters of this run" toggle (a myst-nb ``hide-cell`` with
    its own prompt). Everything else is left as it is."""
    import nbformat

    cells = nb.cells
    at = next((i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if at is not None:
        cell = cells[at]
        if at + 1 < len(cells) and "injected-parameters" in cells[at + 1].get("metadata", {}).get("tags", []):
            injected = cells.pop(at + 1)
            body = injected.source.replace("# Parameters\n", "", 1).strip()
            cell.source = (f"{cell.source.rstrip()}\n\n# {PARAMETERS_PROMPT} (given to papermill; they replace the "
                           f"defaults above)\n{body}")
            cell.outputs = list(cell.get("outputs", [])) + list(injected.get("outputs", []))
        tags = list(cell.metadata.get("tags", []))
        cell.metadata["tags"] = tags + [t for t in ("hide-cell",) if t not in tags]
        cell.metadata["mystnb"] = {"code_prompt_show": PARAMETERS_PROMPT, "code_prompt_hide": f"Hide the {PARAMETERS_PROMPT.lower()}"}
    return nbformat.writes(nb).encode("utf-8")


def _staging_files(root: Path, profile: str, executed_dir: Path) -> dict[str, Path | bytes]:
    """Relative path in the staged tree -> source file (or content). ``book/_static/``
    (the book's CSS) becomes the staged ``_static/``."""
    import nbformat

    files: dict[str, Path | bytes] = {
        "_config.yml": root / "_config.yml",
        "_toc.yml": root / "_toc.yml",
    }
    if (root / "references.bib").is_file():
        files["references.bib"] = root / "references.bib"
    book = root / "book"
    if book.is_dir():
        for path in sorted(book.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and ".ipynb_checkpoints" not in path.parts:
                rel = path.relative_to(book)
                files[rel.as_posix() if rel.parts[0] == "_static" else path.relative_to(root).as_posix()] = path
    notebooks = root / "notebooks"
    for path in sorted(notebooks.rglob("*")):
        if path.is_file() and path.suffix.lower() in NOTEBOOK_ASSET_SUFFIXES:
            files[path.relative_to(root).as_posix()] = path
    for name in toc_notebooks(root):
        executed = executed_dir / f"{name}.ipynb"
        if executed.is_file():
            nb = nbformat.read(executed, as_version=4)
        else:
            # Only possible with --only: render the page without outputs rather than not at all.
            print(f"[book] warning: {name} has no executed copy for profile {profile}; "
                  "its page is rendered without outputs", flush=True)
            nb = _read_py_notebook(root / "notebooks" / f"{name}.py")
        files[f"notebooks/{name}.ipynb"] = reader_page(nb)
    return files


def _sync_tree(files: Mapping[str, Path | bytes], dest: Path) -> None:
    """Make ``dest`` hold exactly ``files``; unchanged files are left alone."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel, src in files.items():
        target = dest / rel
        content = src if isinstance(src, bytes) else src.read_bytes()
        if target.is_file() and target.read_bytes() == content:
            continue
        atomic_write_bytes(target, content)
    wanted = {dest / rel for rel in files}
    for path in sorted(dest.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file() and path not in wanted:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


_WARNING_RE = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b")
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


def build_html(
    profile: str = "quick",
    build_dir: Path | str = "_build",
    force: bool = False,
    strict: bool = False,
    *,
    root: Path | str | None = None,
) -> Path:
    """Stage the book with the executed notebooks and render it with Jupyter Book 1.x."""
    _check_profile(profile)
    root = _resolve_root(root)
    build_dir = _absolute(build_dir)
    staging = build_dir / "src" / profile
    jb_out = build_dir / "jb" / profile
    if force and jb_out.exists():
        shutil.rmtree(jb_out)
    _sync_tree(_staging_files(root, profile, build_dir / "executed" / profile), staging)

    cmd = [
        sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
        "build", str(staging), "--path-output", str(jb_out), "--builder", "html",
        # Re-read every page: a few seconds, and every warning (broken reference) is
        # reported on every build, not only on the build that introduced it.
        "--all",
    ]
    if strict:
        cmd += ["-W", "--keep-going"]
    print(f"[book] rendering HTML (Jupyter Book) from {staging}", flush=True)
    start = time.perf_counter()
    warnings: list[str] = []
    env = dict(os.environ)
    color = sys.stdout.isatty()
    if not color:
        env["NO_COLOR"] = "1"  # plain text in logs and CI
    with subprocess.Popen(
        cmd, cwd=staging, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            plain = _ANSI_RE.sub("", line)
            sys.stdout.write(line if color else plain)
            if _WARNING_RE.search(plain):
                # Point at the repository's file rather than its staged copy.
                warnings.append(plain.rstrip().replace(f"{staging}{os.sep}", ""))
        returncode = proc.wait()
    seconds = time.perf_counter() - start
    if returncode != 0:
        raise BookBuildError(f"jupyter-book build failed (exit {returncode}) after {seconds:.1f} s; "
                             f"{len(warnings)} warnings/errors:\n" + "\n".join(warnings))
    built = jb_out / "_build" / "html"
    if not (built / "index.html").is_file():
        raise BookBuildError(f"jupyter-book finished but {built / 'index.html'} is missing")

    # Swap the new HTML in: copy next to the old one, then two renames.
    html = build_dir / "html"
    fresh = build_dir / f".html.new.{os.getpid()}"
    stale = build_dir / f".html.old.{os.getpid()}"
    for path in (fresh, stale):
        if path.exists():
            shutil.rmtree(path)
    shutil.copytree(built, fresh)
    if html.exists():
        os.replace(html, stale)
    os.replace(fresh, html)
    shutil.rmtree(stale, ignore_errors=True)

    print(f"[book] HTML built in {seconds:.1f} s with {len(warnings)} warning(s)", flush=True)
    for line in warnings:
        print(f"[book]   {line}", flush=True)
    return html / "index.html"


def build_book(
    profile: str = "quick",
    build_dir: Path | str = "_build",
    force: bool = False,
    only: Iterable[str] | None = None,
    *,
    strict: bool = False,
    root: Path | str | None = None,
) -> Path:
    """Execute the notebooks, render the book, return ``<build_dir>/html/index.html``."""
    root = _resolve_root(root)
    start = time.perf_counter()
    runs = execute_book(profile, build_dir, force=force, only=only, root=root)
    html_start = time.perf_counter()
    index = build_html(profile, build_dir, force=force, strict=strict, root=root)
    html_seconds = time.perf_counter() - html_start
    print(f"[book] summary (profile={profile}):", flush=True)
    for run in runs:
        status = "cached" if run.cached else f"{run.seconds:8.1f} s"
        print(f"[book]   {run.name:<40} {status}", flush=True)
    print(f"[book]   {'HTML build':<40} {html_seconds:8.1f} s", flush=True)
    print(f"[book]   {'total':<40} {time.perf_counter() - start:8.1f} s", flush=True)
    print(f"[book] open {index}", flush=True)
    return index
