"""Render the book: stage the config, the table of contents, ``book/``, the executed
notebooks (as pages for readers, :func:`reader_page`) into ``<build_dir>/src/<profile>/``, then run
Jupyter Book 1.x there; the repository itself is never written to."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bindcore.io import atomic_write_bytes
from bindcore.runtime import check_profile

from .paths import resolve_root
from .toc import toc_notebooks

# Files next to the notebooks that a rendered page may reference (figures).
NOTEBOOK_ASSET_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg")
PARAMETERS_PROMPT = "Parameters of this run"
FOLD_OPEN = '<details class="bindcore-fold">'  # how bindcore.book.tables.page_table folds a long table
_FOLDED = re.compile(re.escape(FOLD_OPEN) + r"<summary>.*?</summary>(.*?)</details>", re.S)


class BookBuildError(RuntimeError):
    """Jupyter Book failed to render the staged book."""


def read_py_notebook(py_path: Path):
    """A jupytext py:percent notebook as an ``nbformat`` node."""
    import jupytext

    return jupytext.reads(py_path.read_text(encoding="utf-8"), fmt="py:percent")


def reader_page(nb: Any) -> bytes:
    """An executed notebook (an ``nbformat`` node) as the page a reader meets: the
    parameters cell and papermill's injected-parameters cell merged into one cell,
    collapsed under one "Parameters of this run" toggle (a myst-nb ``hide-cell`` with
    its own prompt). A long table folded in its own details block
    (:func:`bindcore.book.tables.page_table`) in a cell whose output is already folded
    (``hide-output``) is unfolded: one click shows it. Everything else is left as it is."""
    import nbformat

    cells = nb.cells
    for cell in cells:
        if "hide-output" in cell.get("metadata", {}).get("tags", []):
            for out in cell.get("outputs", []):
                html = out.get("data", {}).get("text/html")
                if isinstance(html, str) and FOLD_OPEN in html:
                    out["data"]["text/html"] = _FOLDED.sub(r"\1", html)
    at = next((i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if at is not None:
        cell = cells[at]
        if at + 1 < len(cells) and "injected-parameters" in cells[at + 1].get("metadata", {}).get("tags", []):
            injected = cells.pop(at + 1)
            body = injected.source.replace("# Parameters\n", "", 1).strip()
            cell.source = (f"{cell.source.rstrip()}\n\n# {PARAMETERS_PROMPT} (given to papermill; they replace the "
                           f"values above)\n{body}")
            cell.outputs = list(cell.get("outputs", [])) + list(injected.get("outputs", []))
        tags = list(cell.metadata.get("tags", []))
        cell.metadata["tags"] = tags + [t for t in ("hide-cell",) if t not in tags]
        cell.metadata["mystnb"] = {"code_prompt_show": PARAMETERS_PROMPT, "code_prompt_hide": f"Hide the {PARAMETERS_PROMPT.lower()}"}
    return nbformat.writes(nb).encode("utf-8")


def staging_files(root: Path, profile: str, executed_dir: Path) -> dict[str, Path | bytes]:
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
        nb = None
        if executed.is_file():
            try:
                nb = nbformat.read(executed, as_version=4)
            except Exception as exc:  # garbled (cut short, edited): render without outputs, naming it
                print(f"[book] warning: {executed} cannot be read ({type(exc).__name__}); the page of {name} is "
                      f"rendered without outputs: execute it again (bindcore book --only {name})", flush=True)
        if nb is None and executed.is_file():
            nb = read_py_notebook(root / "notebooks" / f"{name}.py")
        elif nb is None:
            # Only possible with --only: render the page without outputs rather than not at all.
            print(f"[book] warning: {name} has no executed copy for profile {profile}; "
                  "its page is rendered without outputs", flush=True)
            nb = read_py_notebook(root / "notebooks" / f"{name}.py")
        files[f"notebooks/{name}.ipynb"] = reader_page(nb)
    return files


def sync_tree(files: Mapping[str, Path | bytes], dest: Path) -> None:
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
    check_profile(profile)
    root = resolve_root(root)
    build_dir = Path(build_dir).resolve()
    staging = build_dir / "src" / profile
    jb_out = build_dir / "jb" / profile
    if force and jb_out.exists():
        shutil.rmtree(jb_out)
    sync_tree(staging_files(root, profile, build_dir / "executed" / profile), staging)

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
