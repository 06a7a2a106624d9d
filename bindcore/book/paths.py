"""Where the book's sources are: the repository checkout bindcore runs from."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # bindcore/


def repo_root() -> Path:
    """The source checkout that holds ``_toc.yml``, ``notebooks/`` and ``bindcore/``."""
    root = PACKAGE_DIR.parent
    if not (root / "_toc.yml").is_file():
        raise FileNotFoundError(
            f"no _toc.yml next to the bindcore package ({root}); building the book needs a source "
            "checkout of the repository with bindcore installed from it (pip install -e .)"
        )
    return root


def resolve_root(root: Path | str | None) -> Path:
    """``root`` as an absolute path, or the repository checkout."""
    return Path(root).resolve() if root is not None else repo_root()
