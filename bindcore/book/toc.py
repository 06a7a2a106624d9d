"""The book's table of contents (``_toc.yml``), read with sphinx-external-toc, the parser
Jupyter Book 1.x itself uses for it."""

from __future__ import annotations

from pathlib import Path

from .paths import resolve_root

# What a page reads beyond its own work, declared here (tests/test_book.py checks the pages
# against it). READS: the chapters whose run parameters a page reads (``ran_with``), which
# key its cache; EVERY_CHAPTER for the report, which gathers every chapter's stored results
# and computes nothing new. READS_STORE: pages that read every training run in the store
# (§5.4's figure 9). Under ``--jobs`` these pages start after every chapter before them.
EVERY_CHAPTER = "*"
READS: dict[str, tuple[str, ...] | str] = {"d_additional": ("04_1_geometry",), "reproduction_report": EVERY_CHAPTER}
READS_STORE = frozenset({"05_4_functional_form"})


def chapters_read(name: str) -> set[str] | None:
    """The chapters whose run parameters key page ``name``'s cache (None: every other one)."""
    reads = READS.get(name, ())
    return None if reads == EVERY_CHAPTER else set(reads)


def waits_for_earlier(name: str) -> bool:
    """Under ``--jobs``, page ``name`` starts once every chapter before it has finished."""
    return name in READS or name in READS_STORE


def toc_files(root: Path | str | None = None) -> list[str]:
    """Every document of ``_toc.yml`` (the root first), in reading order."""
    from sphinx_external_toc.parsing import parse_toc_yaml

    site = parse_toc_yaml(resolve_root(root) / "_toc.yml")
    files: list[str] = []

    def walk(docname: str) -> None:
        files.append(docname)
        for tree in site[docname].subtrees:
            for item in tree.items:
                if isinstance(item, str):  # a document (globs and URLs are not files of the book)
                    walk(item)

    walk(site.root.docname)
    return files


def toc_notebooks(root: Path | str | None = None) -> list[str]:
    """Names of the notebooks (``notebooks/<name>``) listed in ``_toc.yml``."""
    root = resolve_root(root)
    names = []
    for entry in toc_files(root):
        path = Path(entry)
        if path.parts[:1] == ("notebooks",) and len(path.parts) == 2:
            name = path.with_suffix("").name if path.suffix in (".py", ".ipynb") else path.name
            if not (root / "notebooks" / f"{name}.py").is_file():
                raise FileNotFoundError(f"_toc.yml lists {entry} but notebooks/{name}.py does not exist")
            names.append(name)
    return names
