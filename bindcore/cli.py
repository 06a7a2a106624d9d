"""Command line: ``bindcore <command> ...``.

Each command lives in its own ``register_<command>(subparsers)`` function that adds a
subparser and sets ``func`` (called with the parsed arguments, returns an exit code).
To add a command, write such a function and append it to ``REGISTRARS``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

PROFILES = ("smoke", "quick", "paper")


def _default_build_dir() -> Path:
    from bindcore.book import repo_root

    return repo_root() / "_build"


def register_book(subparsers) -> None:
    p = subparsers.add_parser(
        "book",
        help="execute the notebooks (papermill) and build the HTML book (Jupyter Book)",
        description="Execute every notebook of _toc.yml with papermill on a profile, then render "
        "the book with Jupyter Book into <build-dir>/html. Notebooks whose source, parameters "
        "and bindcore code are unchanged are not re-executed.",
    )
    p.add_argument("--profile", choices=PROFILES, default="quick",
                   help="workload size: smoke (CI), quick (laptop CPU, default), paper (GPU)")
    p.add_argument("--build-dir", type=Path, default=None,
                   help="output folder (default: _build in the repository)")
    p.add_argument("--force", action="store_true",
                   help="re-execute every notebook and re-render every page")
    p.add_argument("--only", action="append", metavar="NAME", default=None,
                   help="execute only this notebook (name without suffix); repeatable")
    p.add_argument("--no-html", action="store_true", help="execute the notebooks, skip the HTML build")
    p.add_argument("--strict", action="store_true",
                   help="fail the HTML build on any Sphinx warning (-W --keep-going)")
    p.set_defaults(func=_run_book)


def _run_book(args: argparse.Namespace) -> int:
    from bindcore import book

    build_dir = args.build_dir if args.build_dir is not None else _default_build_dir()
    try:
        if args.no_html:
            book.execute_book(args.profile, build_dir, force=args.force, only=args.only)
        else:
            book.build_book(args.profile, build_dir, force=args.force, only=args.only, strict=args.strict)
    except (book.NotebookExecutionError, book.BookBuildError, ValueError, FileNotFoundError) as exc:
        print(f"bindcore book: error: {exc}", file=sys.stderr)
        return 1
    return 0


def register_sync(subparsers) -> None:
    p = subparsers.add_parser(
        "sync",
        help="regenerate notebooks/*.ipynb from their .py sources (outputs stripped)",
        description="The jupytext py:percent files are the source of truth; this rewrites each "
        "paired .ipynb from its .py, without outputs or execution counts.",
    )
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if any .ipynb is out of sync")
    p.set_defaults(func=_run_sync)


def _run_sync(args: argparse.Namespace) -> int:
    from bindcore.book import sync_pairs

    changed = sync_pairs(check=args.check)
    verb = "out of sync" if args.check else "rewritten"
    for path in changed:
        print(f"{verb}: {path}")
    if not changed:
        print("all notebook pairs in sync")
    return 1 if (args.check and changed) else 0


REGISTRARS: list[Callable[..., None]] = [register_book, register_sync]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bindcore",
        description="bindcore: the library behind the book 'How can embedding models bind concepts?'",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in REGISTRARS:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
