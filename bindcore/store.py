"""Results keyed by a hash of their config, written atomically, resumable.

Layout of one entry: ``<root>/<kind>/<hash>/`` (kind e.g. ``train-2``) holding ``config.json`` and
``result.json`` (small records: metrics, history, machine, time), and optionally
``checkpoint.pt`` (state dicts while a run is in progress) and ``model.pt`` (final
weights). A second, read-only root (``published/`` in the repository) holds committed
records of runs a CPU cannot redo (paper profile on a GPU); it is consulted after the
local root. Only JSON and torch state dicts (loaded with ``weights_only=True``) are
stored; nothing is pickled.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from .io import atomic_write_json, config_hash

REPO_ROOT = Path(__file__).resolve().parent.parent
PUBLISHED_ROOT = REPO_ROOT / "published"


def default_root() -> Path:
    """``$BINDCORE_RESULTS``, else ``results/`` of the repository checkout bindcore runs
    from, else (an installed package, e.g. on Colab) ``results/`` in the working folder."""
    env = os.environ.get("BINDCORE_RESULTS")
    if env:
        return Path(env)
    if (REPO_ROOT / "pyproject.toml").exists():
        return REPO_ROOT / "results"
    return Path.cwd() / "results"


def machine_info() -> dict[str, Any]:
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
    """One stored result: its directory and where it came from."""

    path: Path
    source: str  # "local" or "published"

    @property
    def config(self) -> dict[str, Any]:
        return json.loads((self.path / "config.json").read_text())

    @property
    def result(self) -> dict[str, Any]:
        return json.loads((self.path / "result.json").read_text())

    @property
    def done(self) -> bool:
        return (self.path / "result.json").exists()

    def load_state(self, name: str = "model.pt", map_location: str | torch.device = "cpu") -> dict[str, Any]:
        p = self.path / name
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist (published records carry no weights)")
        return torch.load(p, map_location=map_location, weights_only=True)


class ResultStore:
    """Results of ``kind`` (e.g. training runs) keyed by config hash."""

    def __init__(self, root: str | Path | None = None, published: str | Path | None = PUBLISHED_ROOT) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.published = Path(published) if published is not None else None

    def local_dir(self, kind: str, config: dict[str, Any]) -> Path:
        return self.root / kind / config_hash(config)

    def find(self, kind: str, config: dict[str, Any]) -> Entry | None:
        """The finished entry for this config, local first, then published."""
        h = config_hash(config)
        for base, source in ((self.root, "local"), (self.published, "published")):
            if base is None:
                continue
            e = Entry(base / kind / h, source)
            if e.done:
                return e
        return None

    def prepare(self, kind: str, config: dict[str, Any]) -> Entry:
        """Create (or reuse) the local directory of an entry and write its config."""
        d = self.local_dir(kind, config)
        d.mkdir(parents=True, exist_ok=True)
        if not (d / "config.json").exists():
            atomic_write_json(d / "config.json", config)
        return Entry(d, "local")

    def finish(self, entry: Entry, result: dict[str, Any]) -> None:
        record = {**result, "machine": machine_info(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        atomic_write_json(entry.path / "result.json", record)

    def cached(self, kind: str, config: dict[str, Any], compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The stored result of ``config``, or ``compute()`` (a JSON-able dict) stored
        atomically and returned; how chapters reuse expensive analyses across builds."""
        found = self.find(kind, config)
        if found is not None:
            return found.result
        entry = self.prepare(kind, config)
        self.finish(entry, compute())
        return entry.result

    def entries(self, kind: str) -> Iterator[Entry]:
        seen = set()
        for base, source in ((self.root, "local"), (self.published, "published")):
            if base is None or not (base / kind).is_dir():
                continue
            for d in sorted((base / kind).iterdir()):
                if d.name not in seen and (d / "result.json").exists():
                    seen.add(d.name)
                    yield Entry(d, source)
