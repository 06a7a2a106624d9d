"""Results keyed by a hash of their config and stamped with the code that made them;
written atomically, resumable.

Layout of one entry: ``<root>/<kind>/<config hash>/`` holding ``config.json`` and
``result.json`` (small records: metrics, history, machine, time, code), and optionally
``checkpoint.pt`` (state dicts while a run is in progress), ``model.pt`` (final
weights) or ``embeddings.npz``. A second, read-only root (``published/`` in the
repository) holds committed records of runs a CPU cannot redo (paper profile on a
GPU); it is consulted after the local root. Only JSON, ``.npz`` and torch state dicts
(loaded with ``weights_only=True``) are stored; nothing is pickled.

**Which code made a record.** A :class:`Kind` (a folder of the store) names the
modules that compute its records. Every record carries ``code``: the fingerprint of
those modules' source and of every bindcore module they import, transitively
(:func:`code_fingerprint`, read from the source with ``ast``; the store's own modules,
which keep records but compute nothing, are left out), with the package version and
the git commit when there is one. Lookup is by config hash alone; a record whose
fingerprint is not the current code's is *stale* and is never reused silently:

* a cheap kind (an analysis, embeddings) computes it again;
* an expensive kind (training runs), and any published record, is reused with
  ``stale=True`` on its :class:`Entry`; the chapter that shows it says so and names
  the code version that produced it (:func:`bindcore.book.chapter.note_stored`).

The folder names of the kinds (``train-2``, ``geometry-1``, ...) are fixed: they are
not bumped when code changes, the fingerprint tells.
"""

from __future__ import annotations

import ast
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .io import atomic_write_json, config_hash, digest

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
PUBLISHED_ROOT = REPO_ROOT / "published"

# Modules that keep records but compute none of their numbers: not part of a fingerprint.
RECORD_KEEPING = ("bindcore.store", "bindcore.io")


def default_root() -> Path:
    """``$BINDCORE_RESULTS``, else ``results/`` of the repository checkout bindcore runs
    from, else (an installed package, e.g. on Colab) ``results/`` in the working folder."""
    env = os.environ.get("BINDCORE_RESULTS")
    if env:
        return Path(env)
    if (REPO_ROOT / "pyproject.toml").exists():
        return REPO_ROOT / "results"
    return Path.cwd() / "results"


# ---------------------------------------------------------------------------------
# code fingerprints
# ---------------------------------------------------------------------------------
_PARSED: dict[tuple[str, int, int], list[str]] = {}


def _module_file(module: str, package_dir: Path) -> Path | None:
    """``bindcore.a.b`` -> ``<package_dir>/a/b.py`` or ``.../a/b/__init__.py`` (None if neither)."""
    parts = module.split(".")[1:]
    base = package_dir.joinpath(*parts)
    for path in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if path is not None and path.is_file():
            return path
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(module: str, path: Path) -> list[str]:
    """The bindcore modules that ``module`` (file ``path``) may import, anywhere in its
    source (function bodies too; not under ``if TYPE_CHECKING:``), as absolute names.
    ``from x import y`` counts ``x`` and, where it is a module, ``x.y``."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key in _PARSED:
        return _PARSED[key]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append(name)
            found.extend(f"{name}.{a.name}" for a in node.names if a.name != "*")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_bytes(), filename=str(path)))
    out = sorted({m for m in found if m == "bindcore" or m.startswith("bindcore.")})
    _PARSED[key] = out
    return out


def module_closure(modules: Iterable[str], package_dir: str | Path | None = None) -> list[str]:
    """``modules``, every bindcore module they import (transitively) and the packages
    that contain them, as sorted module names that exist under ``package_dir`` (default:
    this bindcore)."""
    pkg = Path(package_dir) if package_dir is not None else PACKAGE_DIR
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name, pkg)
        if path is None:
            continue  # a name imported from a module, not a module itself
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # the enclosing packages
        todo.extend(_imported(name, path))
    return sorted(seen)


def code_fingerprint(modules: Iterable[str], package_dir: str | Path | None = None) -> str:
    """Hash of the source of :func:`module_closure` of ``modules``, without the store's
    own modules (:data:`RECORD_KEEPING`): what a stored record's ``code`` names."""
    pkg = Path(package_dir) if package_dir is not None else PACKAGE_DIR
    names = [m for m in module_closure(modules, pkg) if m not in RECORD_KEEPING]
    return digest(*(part for m in names for part in (m, _module_file(m, pkg).read_bytes())))


def _git_commit() -> str | None:
    if not (REPO_ROOT / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def code_version(code: dict[str, Any] | None) -> str:
    """A record's ``code`` in words: ``code 1a2b3c4d5e6f (bindcore 0.1.0, git 2816db3)``,
    or ``code of unknown version`` for a record made before fingerprints."""
    if not code or not code.get("fingerprint"):
        return "code of unknown version"
    extra = ", ".join(x for x in (f"bindcore {code['bindcore']}" if code.get("bindcore") else "",
                                  f"git {code['git']}" if code.get("git") else "") if x)
    return f"code {code['fingerprint'][:12]}" + (f" ({extra})" if extra else "")


# ---------------------------------------------------------------------------------
# kinds, entries, the store
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """One folder of the store: records of one computation. ``code``: the modules whose
    source (with their imports) computes the records; ``expensive``: a record made by
    other code is reused (marked stale) instead of computed again. A ``Kind`` is
    path-like: ``root / kind`` is its folder."""

    name: str
    code: tuple[str, ...]
    expensive: bool = False

    def __fspath__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def fingerprint(self) -> str:
        return code_fingerprint(self.code)


def machine_info() -> dict[str, Any]:
    import torch

    info = {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


@dataclass(frozen=True)
class Entry:
    """One stored result: its directory, where it came from (``local`` or
    ``published``), its kind and whether another version of the code made it."""

    path: Path
    source: str
    kind: Kind | None = field(default=None, compare=False)
    stale: bool = False

    @property
    def config(self) -> dict[str, Any]:
        return json.loads((self.path / "config.json").read_text())

    @property
    def result(self) -> dict[str, Any]:
        return json.loads((self.path / "result.json").read_text())

    @property
    def done(self) -> bool:
        return (self.path / "result.json").exists()

    def load_state(self, name: str = "model.pt", map_location: Any = "cpu") -> dict[str, Any]:
        import torch

        p = self.path / name
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist (published records carry no weights)")
        return torch.load(p, map_location=map_location, weights_only=True)

    def record(self) -> dict[str, Any]:
        """The result with where it lies: ``source``, ``path`` and ``stale``."""
        return {**self.result, "source": self.source, "path": str(self.path), "stale": self.stale}


class ResultStore:
    """Results of each :class:`Kind` keyed by config hash (see the module docstring)."""

    def __init__(self, root: str | Path | None = None, published: str | Path | None = PUBLISHED_ROOT) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.published = Path(published) if published is not None else None

    def _bases(self) -> Iterator[tuple[Path, str]]:
        yield self.root, "local"
        if self.published is not None:
            yield self.published, "published"

    def local_dir(self, kind: Kind, config: dict[str, Any]) -> Path:
        return self.root / kind / config_hash(config)

    def find(self, kind: Kind, config: dict[str, Any]) -> Entry | None:
        """The finished entry of this config: one made by the current code, local first,
        then published; else, for an expensive kind, a local one made by other code;
        else a published one made by other code (both with ``stale=True``); else None."""
        h = config_hash(config)
        current = kind.fingerprint()
        stale: list[Entry] = []
        for base, source in self._bases():
            e = Entry(base / kind / h, source, kind)
            if not e.done:
                continue
            if (e.result.get("code") or {}).get("fingerprint") == current:
                return e
            if kind.expensive or source == "published":
                stale.append(Entry(e.path, source, kind, stale=True))
        return stale[0] if stale else None

    def prepare(self, kind: Kind, config: dict[str, Any]) -> Entry:
        """Create (or reuse) the local directory of an entry and write its config."""
        d = self.local_dir(kind, config)
        d.mkdir(parents=True, exist_ok=True)
        if not (d / "config.json").exists():
            atomic_write_json(d / "config.json", config)
        return Entry(d, "local", kind)

    def finish(self, entry: Entry, result: dict[str, Any]) -> None:
        """Write ``result.json``: ``result``, the machine, the time and the code."""
        from . import __version__

        code = None if entry.kind is None else {"fingerprint": entry.kind.fingerprint(),
                                                "modules": list(entry.kind.code), "bindcore": __version__,
                                                "git": _git_commit()}
        record = {**result, "machine": machine_info(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "code": code}
        atomic_write_json(entry.path / "result.json", record)

    def cached(self, kind: Kind, config: dict[str, Any], compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The stored result of ``config``, or ``compute()`` (a JSON-able dict) stored
        atomically and returned; how chapters reuse expensive analyses across builds."""
        found = self.find(kind, config)
        if found is not None:
            return found.result
        entry = self.prepare(kind, config)
        self.finish(entry, compute())
        return entry.result

    def entries(self, kind: Kind) -> Iterator[Entry]:
        """Every finished entry of ``kind`` (local before published), stale or not."""
        seen = set()
        current = kind.fingerprint()
        for base, source in self._bases():
            if not (base / kind).is_dir():
                continue
            for d in sorted((base / kind).iterdir()):
                if d.name not in seen and (d / "result.json").exists():
                    seen.add(d.name)
                    code = Entry(d, source, kind).result.get("code") or {}
                    yield Entry(d, source, kind, stale=code.get("fingerprint") != current)
