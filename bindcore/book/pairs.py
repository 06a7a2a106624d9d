"""The notebooks' jupytext pairs: ``notebooks/<name>.py`` (py:percent, what you edit) and
``notebooks/<name>.ipynb`` (what Colab opens; committed without outputs), kept in sync
by jupytext's own ``--sync`` (inputs from the most recently modified file of the pair)."""

from __future__ import annotations

import logging
from pathlib import Path

from bindcore.io import atomic_write_text

from .paths import resolve_root

logger = logging.getLogger(__name__)


def _cells(nb) -> list[tuple[str, str, tuple[str, ...]]]:
    def norm(source: str) -> str:
        return "\n".join(line.rstrip() for line in source.replace("\r\n", "\n").split("\n")).strip("\n")

    return [(c.cell_type, norm(c.source), tuple(c.get("metadata", {}).get("tags", []))) for c in nb.cells]


def in_sync(py_path: Path, ipynb_path: Path) -> bool:
    """Whether the .ipynb holds the .py's cells (type, source, tags) and no outputs."""
    import jupytext
    import nbformat

    if not ipynb_path.is_file():
        return False
    ipynb = nbformat.read(ipynb_path, as_version=4)
    clean = all(not c.get("outputs") and c.get("execution_count") is None for c in ipynb.cells
                if c.cell_type == "code")
    return clean and _cells(ipynb) == _cells(jupytext.read(py_path, fmt="py:percent"))


def _strip_outputs(ipynb_path: Path) -> None:
    import nbformat

    nb = nbformat.read(ipynb_path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if any(c.get("outputs") or c.get("execution_count") is not None for c in code):
        for cell in code:
            cell["outputs"], cell["execution_count"] = [], None
        atomic_write_text(ipynb_path, nbformat.writes(nb) + "\n")


def sync_pairs(root: Path | str | None = None, check: bool = False) -> list[Path]:
    """``jupytext --sync`` every ``notebooks/*.py`` with its .ipynb, outputs stripped,
    after the .py's Colab badge and install cell are made from ``_config.yml``'s
    repository address (:func:`bindcore.book.colab.stamp_notebooks`).

    Also copies each parameters cell's values (the quick profile) to
    ``notebooks/profiles/quick/<name>.yaml`` for every notebook with profile files
    (:func:`bindcore.book.profiles.write_quick_files`).

    Returns the files that changed: the .ipynb, the quick profile files and any .py
    whose address was rewritten (with ``check=True``: those out of sync or with another
    address; nothing is written). An .ipynb without a .py is reported, never deleted."""
    from jupytext.cli import jupytext

    from .colab import stamp_notebooks

    root = resolve_root(root)
    notebooks = root / "notebooks"
    changed = stamp_notebooks(root, check=check)
    for py_path in sorted(notebooks.glob("*.py")):
        ipynb = py_path.with_suffix(".ipynb")
        if check:
            if not in_sync(py_path, ipynb):
                changed.append(ipynb)
            continue
        before = ipynb.read_bytes() if ipynb.is_file() else None
        jupytext(["--sync", "--quiet", str(py_path)])
        _strip_outputs(ipynb)
        if ipynb.read_bytes() != before:
            changed.append(ipynb)
    from .profiles import profile_file, write_quick_files

    with_files = [p.stem for p in sorted(notebooks.glob("*.py")) if profile_file(p.stem, "smoke", root).is_file()]
    changed += write_quick_files(root, with_files, check=check)
    for ipynb in sorted(notebooks.glob("*.ipynb")):
        if not ipynb.with_suffix(".py").is_file():
            logger.warning("%s has no paired .py source (the .py is the source of truth)", ipynb)
            print(f"[sync] warning: {ipynb.relative_to(root)} has no paired .py", flush=True)
    return changed
