"""The book build's own measurements side by side, printed (not asserted).

Each ``make book`` writes ``<build>/html/build-times.json`` (:func:`bindcore.book.build.build_times`:
per chapter its execution time, whether it was reused, its three slowest cells; the
HTML build; the total; the machine). This prints one row per chapter and one column per
build given, so a change to the book's cost reads as a before / after table:

    python benchmarks/book_times.py before=_build-a/html/build-times.json after=_build/html/build-times.json

A chapter reused from an earlier execution is marked ``(cached)``; ``--slowest`` adds each
build's slowest cell per chapter.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def read_builds(specs: list[str]) -> dict[str, dict[str, Any]]:
    """{label: build-times record} from ``label=path`` (or a bare path, labelled by itself)."""
    builds = {}
    for spec in specs:
        label, _, path = spec.rpartition("=") if "=" in spec else (spec, "", spec)
        builds[label] = json.loads(Path(path).read_text(encoding="utf-8"))
    return builds


def times_table(builds: dict[str, dict[str, Any]], slowest: bool = False) -> list[list[str]]:
    """Rows (header first): each chapter in the order the builds ran them, its seconds per
    build, then the HTML build and the total; ``slowest``: each chapter's slowest cell."""
    labels = list(builds)
    chapters: list[str] = []
    for b in builds.values():
        chapters += [c["chapter"] for c in b["chapters"] if c["chapter"] not in chapters]
    rows = [["chapter", *labels]]
    for name in chapters:
        row = [name]
        for b in builds.values():
            c = next((c for c in b["chapters"] if c["chapter"] == name), None)
            if c is None:
                row.append("-")
                continue
            cell = f"{c['seconds']:.0f} s" + (" (cached)" if c["cached"] else "")
            if slowest and c.get("slowest_cells"):
                top = c["slowest_cells"][0]
                cell += f" [slowest {top['seconds']:.0f} s: {top['source'][:40]}]"
            row.append(cell)
        rows.append(row)
    rows.append(["HTML build", *(f"{b['html_seconds']:.0f} s" for b in builds.values())])
    rows.append(["total", *(f"{b['total_seconds']:.0f} s ({b['total_seconds'] / 60:.1f} min)" for b in builds.values())])
    rows.append(["profile", *(b["profile"] for b in builds.values())])
    rows.append(["machine", *(f"{b['machine'].get('hostname', '?')}, {b['machine'].get('cpu_threads', '?')} CPU threads"
                              for b in builds.values())])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="label=path/to/build-times.json (or a path)")
    ap.add_argument("--slowest", action="store_true", help="each chapter's slowest cell too")
    args = ap.parse_args(argv)
    rows = times_table(read_builds(args.builds), args.slowest)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
