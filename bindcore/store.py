"""The result store: records keyed by their kind's version and a hash of their config, written
atomically, with a read-only ``published/`` root read after the local one (:class:`ResultStore`)."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import platform
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .io import (
    atomic_write_bytes,
    atomic_write_json,
    canonical_json,
    config_hash,
    flock,
    remove_stale_temporaries,
)
from .runtime import context

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent


RESULTS_ENV = "BINDCORE_RESULTS"
# the context (bindcore.runtime.context) tells the store: "published": false, read no published
# record; "stored_only": true, serve what it holds and start no new entry (:class:`NotStored`);
# "tally": a file to which every record served or written is appended as a JSON line (a book build
# counts per chapter what it reused and what it computed: :func:`tally_counts`)


def _tally(event: str, e: Entry) -> None:
    path = context().get("tally")
    if path:
        line = json.dumps({"event": event, "kind": str(e.kind), "name": e.path.name, "source": e.source})
        with open(path, "a", encoding="utf-8") as f:  # one short write: whole lines even from parallel workers
            f.write(line + "\n")


def tally_counts(path: str | Path) -> dict[str, int]:
    """{"published": records read from published/, "local": read from the local store, "computed":
    written} in a context's ``tally`` file, each record once (a record computed and then read counts as
    computed)."""
    seen: dict[tuple[str, str], str] = {}
    with contextlib.suppress(FileNotFoundError), open(path, encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)
            key = (t["kind"], t["name"])
            if t["event"] == "computed" or key not in seen:
                seen[key] = "computed" if t["event"] == "computed" else t["source"]
    return {k: sum(v == k for v in seen.values()) for k in ("published", "local", "computed")}


def published_root(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The read-only published root: the checkout's ``published/``, else the installed package's
    ``bindcore/published``; None when neither exists or the context says ``"published": false``."""
    if context().get("published") is False:
        return None
    checkout = package_dir.parent
    for path in ((checkout / "published") if (checkout / "pyproject.toml").is_file() else None,
                 package_dir / "published"):
        if path is not None and path.is_dir():
            return path
    return None


PUBLISHED_ROOT = published_root()

def default_root() -> Path:
    """``$BINDCORE_RESULTS``, else the checkout's ``results/``, else (installed) ``./results``."""
    env = os.environ.get(RESULTS_ENV)
    if env:
        return Path(env)
    if (REPO_ROOT / "pyproject.toml").exists():
        return REPO_ROOT / "results"
    return Path.cwd() / "results"


def shown_path(path: str | Path) -> str:
    """``path`` as a page shows it, never absolute: relative to the project, ``$BINDCORE_RESULTS`` or the
    working folder, else its last two levels (``<kind>/<hash>``)."""
    path = Path(path).absolute()
    env = os.environ.get(RESULTS_ENV)
    for base, prefix in ((REPO_ROOT, ""), (Path(env) if env else None, "$BINDCORE_RESULTS/"), (Path.cwd(), "")):
        if base is not None and path.is_relative_to(base.absolute()):
            return prefix + path.relative_to(base.absolute()).as_posix()
    return "/".join(path.parts[-2:])


@functools.cache
def provenance() -> dict[str, Any]:
    """A record's ``code``: package version and git commit as this process first saw them. Shown beside
    a record, never part of its identity."""
    from . import __version__

    commit = None
    if (REPO_ROOT / ".git").exists():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                                 text=True, timeout=5)
            commit = (out.stdout.strip() or None) if out.returncode == 0 else None
    return {"bindcore": __version__, "git": commit}


def code_version(code: dict[str, Any] | None) -> str:
    """A record's ``code`` in words: ``git 2816db3 (bindcore 0.1.0)``, or ``code of unknown version``."""
    code = code or {}
    if code.get("git"):
        return f"git {code['git']}" + (f" (bindcore {code['bindcore']})" if code.get("bindcore") else "")
    return f"bindcore {code['bindcore']}" if code.get("bindcore") else "code of unknown version"


# ---------------------------------------------------------------------------------
# corrupt files
# ---------------------------------------------------------------------------------
class CorruptRecord(ValueError):
    """A stored file that cannot be read as what it should be; ``path`` names it."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = Path(path)
        self.why = why


def read_record(path: str | Path) -> dict[str, Any]:
    """A stored JSON object; :class:`CorruptRecord` naming the file when it is not one."""
    path = Path(path)
    try:
        obj = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptRecord(path, f"not a JSON record ({type(exc).__name__}: {exc})") from None
    if not isinstance(obj, dict):
        raise CorruptRecord(path, f"holds a JSON {type(obj).__name__}, not a record (a JSON object)")
    return obj


def quarantine(path: str | Path, why: str) -> Path | None:
    """Move a corrupt file aside as ``<name>.corrupt-<YYYYmmdd-HHMMSS>[-i]`` and log a warning with
    ``why``; the new path, or None when it could not be moved."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(1000):
        target = path.with_name(f"{path.name}.corrupt-{stamp}" + (f"-{i}" if i else ""))
        if target.exists():
            continue
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return None  # another process moved it first
        except OSError as exc:
            log.warning("corrupt file %s (%s); it could not be moved aside (%s)", path, why, exc)
            return None
        log.warning("corrupt file %s (%s): moved to %s; what it held is computed again", path, why, target.name)
        return target
    return None


# ---------------------------------------------------------------------------------
# claims: one computation of a config at a time, across processes and machines
# ---------------------------------------------------------------------------------
CLAIM_FILE = "claim.json"
# the largest weights or data file a published record may carry
PUBLISHED_WEIGHTS_LIMIT = 2 * 2**20
# an empty ``<weights>.read`` beside a local entry's weights: an analysis loaded them (publish_all "read")
READ_MARK = ".read"


class NotStored(LookupError):
    """An entry not in the store, asked for while the context says ``"stored_only": true``."""


class NotStorable(ValueError):
    """A computed record that the store refuses to keep (its data file ``name`` is ``why``): it would be
    refused when read, so every later call would compute it again."""

    def __init__(self, entry: Entry, name: str, why: str) -> None:
        try:
            config = canonical_json(entry.config)
        except (OSError, ValueError):
            config = "(config.json unreadable)"
        config = config if len(config) <= 400 else config[:400] + "..."
        super().__init__(f"{entry.kind} record {entry.path.name} not stored ({name}: {why}; a record like that is "
                         f"never served, so it would be computed again on every call); config {config}")


class ClaimBusy(TimeoutError):
    """An entry's claim held by another process (``holder``: its owner record, {} if unreadable) that the
    caller did not wait for (longer)."""

    def __init__(self, path: Path, holder: dict[str, Any]) -> None:
        super().__init__(f"{path} is claimed by {_who(holder)}: that process is computing this entry")
        self.path, self.holder = Path(path), holder


def _who(holder: dict[str, Any]) -> str:
    return f"process {holder['pid']} on {holder.get('host')} (since {holder.get('started')})" if "pid" in holder \
        else "another process"


def _holder(path: Path) -> dict[str, Any]:
    try:
        return read_record(path)
    except (OSError, CorruptRecord):
        return {}


@dataclass
class Claim:
    """A held claim: its file and owner record (``host``, ``pid``, ``started``)."""

    path: Path
    owner: dict[str, Any]


# ---------------------------------------------------------------------------------
# kinds, entries, the store
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """One folder of the store (path-like: ``root / kind``): records of one computation at one version.

    ``name`` carries the version (``train-2``; bump it when results change). A result lacking a key of
    ``required`` is corrupt. ``weights``: files whose sizes are recorded at finish and checked on read.
    ``data``: files the result lies in, always published (each at most :data:`PUBLISHED_WEIGHTS_LIMIT`).
    """

    name: str
    required: tuple[str, ...] = ()
    weights: tuple[str, ...] = ()
    data: tuple[str, ...] = ()

    def __fspath__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


def _cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform says."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    import torch

    info = {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "cpu": _cpu_model(),  # float results of long runs differ between CPU kinds (their kernels differ)
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


@dataclass(frozen=True)
class Entry:
    """One stored result: its directory, ``source`` (``local`` or ``published``) and kind."""

    path: Path
    source: str
    kind: Kind | None = field(default=None, compare=False)

    @property
    def config(self) -> dict[str, Any]:
        """``config.json`` (:class:`CorruptRecord` naming it if it is not a record)."""
        return read_record(self.path / "config.json")

    @property
    def result(self) -> dict[str, Any]:
        """``result.json`` (:class:`CorruptRecord` naming it if it is not a record)."""
        return read_record(self.path / "result.json")

    @property
    def done(self) -> bool:
        return (self.path / "result.json").exists()

    def load_into(self, module: Any, name: str = "model.pt", map_location: Any = "cpu") -> Any:
        """``module`` with the state dict in ``name`` loaded (``weights_only``); :class:`CorruptRecord` naming the
        file when it is unreadable or not a state dict of ``module``."""
        import torch

        p = self.path / name
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist" + (" (this published record was published without its "
                                    "weights)" if self.source == "published" else ""))
        try:
            state = torch.load(p, map_location=map_location, weights_only=True)
        except Exception as exc:  # a truncated or foreign file: zip, unpickling or EOF errors
            raise CorruptRecord(p, f"unreadable weights ({type(exc).__name__}: {exc})" + (
                f"; delete {self.path} to compute this entry again" if self.source == "local" else "")) from None
        try:
            module.load_state_dict(state)
        except (TypeError, RuntimeError, AttributeError) as exc:  # a list, or a dict of other keys or shapes
            raise CorruptRecord(p, f"not the weights of a {type(module).__name__} ({type(exc).__name__}: "
                                   f"{str(exc)[:300]})") from None
        if self.source == "local":  # what `bindcore publish --weights` ships: the weights an analysis read
            with contextlib.suppress(OSError):
                (self.path / (name + READ_MARK)).touch()
        return module

    def record(self) -> dict[str, Any]:
        """The result with where it lies: ``source`` and ``path``."""
        return {**self.result, "source": self.source, "path": str(self.path)}


def _too_large(files: Iterable[Path]) -> list[Path]:
    """The files larger than :data:`PUBLISHED_WEIGHTS_LIMIT` bytes."""
    return [f for f in files if f.stat().st_size > PUBLISHED_WEIGHTS_LIMIT]


# the JSON type of each result field; a field of another type makes the record corrupt
RESULT_TYPES: dict[str, type | tuple[type, ...]] = {
    "hash": str, "config": dict, "metrics": dict, "history": list, "code": dict, "weights": dict,
    "bag_of_concepts": dict, "machine": dict, "finished_at": str, "trained_by": list,
}


def _check_identity(e: Entry, result: dict[str, Any]) -> None:
    """:class:`CorruptRecord` when a field's type differs from :data:`RESULT_TYPES`, ``config.json`` does
    not hash to the folder, or the result's config differs from it."""
    for key, tp in RESULT_TYPES.items():
        if key in result and not isinstance(result[key], tp):
            raise CorruptRecord(e.path / "result.json", f"its {key!r} is a JSON {type(result[key]).__name__}, "
                                f"not {'an object' if tp is dict else 'a list' if tp is list else 'text'}")
    path = e.path / "config.json"
    try:
        stored = read_record(path)
    except (FileNotFoundError, CorruptRecord):
        return  # missing or cut short: _config_readable writes it again from a config that hashes to the folder
    if config_hash(stored) != e.path.name:
        raise CorruptRecord(path, f"hashes to {config_hash(stored)}, not to its folder {e.path.name}: the record "
                            "of another config")
    if "config" in result and result["config"] != stored:
        raise CorruptRecord(e.path / "result.json", "its config differs from config.json (an edited record)")


def _published_result(dest: Path) -> dict[str, Any] | None:
    """The readable result at ``dest``, else None."""
    try:
        return read_record(dest / "result.json")
    except (FileNotFoundError, CorruptRecord):
        return None


def has_weights(record: dict[str, Any], name: str = "model.pt") -> bool:
    """Whether the run ``record`` (:meth:`Entry.record`) has its weights file here (a published one may
    not)."""
    return (Path(record["path"]) / name).exists()


def _check_weights(e: Entry, result: dict[str, Any], missing_ok: bool = False) -> None:
    """:class:`CorruptRecord` naming a weights file the record lists that is missing (unless
    ``missing_ok``) or of another size, or one present that is not a torch zip archive."""
    import zipfile

    sizes = result.get("weights") if isinstance(result.get("weights"), dict) else {}
    for name in e.kind.weights:
        path = e.path / name
        expected = sizes.get(name)
        if not path.exists():
            if expected is not None and not missing_ok:
                raise CorruptRecord(path, "missing (its record lists it)")
            continue
        size = path.stat().st_size
        if expected is not None and size != expected:
            raise CorruptRecord(path, f"cut short or changed: {size} bytes, its record says {expected}")
        if not zipfile.is_zipfile(path):
            raise CorruptRecord(path, "not a torch weights file (no zip archive end)")


def _check_data(e: Entry) -> None:
    """:class:`CorruptRecord` naming a data file of ``e``'s kind that is missing, not an ``.npz`` of arrays
    (read without unpickling) or holds NaN or infinite numbers."""
    import numpy as np

    for path in (e.path / name for name in e.kind.data):
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except FileNotFoundError:
            raise CorruptRecord(path, "missing (its record lies in it)") from None
        except Exception as exc:  # cut short or foreign: BadZipFile, EOFError, OSError, ValueError, AttributeError
            raise CorruptRecord(path, f"not an .npz of arrays ({type(exc).__name__}: {exc})") from None
        for k, a in arrays.items():
            if a.dtype.kind in "fc" and not np.isfinite(a).all():
                raise CorruptRecord(path, f"its {k!r} holds {int((~np.isfinite(a)).sum())} NaN or infinite numbers")


class ResultStore:
    """Results of each :class:`Kind` keyed by config hash.

    An entry is ``<root>/<kind>/<config hash>/``: ``config.json``, ``result.json`` and optional
    weights or arrays (JSON, ``.npz``, state dicts; nothing pickled). A record's identity is its
    kind's version and config, never its commit. Corrupt local files are moved aside and recomputed;
    a claim (``flock``) keeps one computation of a config at a time. ``published`` is read-only.
    """

    def __init__(self, root: str | Path | None = None, published: str | Path | None = PUBLISHED_ROOT) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.published = Path(published) if published is not None else None
        committed = {REPO_ROOT / "published", PACKAGE_DIR / "published", self.published}
        try:
            root_path = self.root.resolve()
        except (RuntimeError, OSError) as exc:  # a symbolic link loop, an unreadable parent
            raise ValueError(f"{self.root}: not a folder a result store can use ({exc})") from None
        if any(p is not None and root_path.is_relative_to(p.resolve()) for p in committed):
            # a published record may lack the weights its result lists: locally it would read as corrupt
            raise ValueError(f"{self.root} is in the published records' folder, which is read-only: give the "
                             f"result store (--results, ${RESULTS_ENV}) another folder")

    def _bases(self) -> Iterator[tuple[Path, str]]:
        yield self.root, "local"
        if self.published is not None:
            yield self.published, "published"

    def local_dir(self, kind: Kind, config: dict[str, Any]) -> Path:
        return self.root / kind / config_hash(config)

    def _readable(self, e: Entry, check: Callable[[Path], Any] | None = None) -> dict[str, Any] | None:
        """``e``'s result, or None when missing, corrupt or incomplete: its result, config, weights and data
        files, then ``check(e.path)`` (which raises :class:`CorruptRecord`). A bad local record is moved aside,
        a published one skipped (never moved); each is reported."""
        if not e.done:
            return None
        try:
            result = e.result
            missing = [k for k in (e.kind.required if e.kind is not None else ()) if k not in result]
            if missing:
                raise CorruptRecord(e.path / "result.json", "an incomplete record: no " + ", ".join(
                    repr(k) for k in missing))
            if e.kind is not None:
                _check_identity(e, result)
                _check_weights(e, result, missing_ok=e.source != "local")
                _check_data(e)
            if check is not None:
                check(e.path)
        except CorruptRecord as exc:
            if e.source == "local":
                if exc.path.name != "result.json":  # weights or data: the record goes too, so it is computed again
                    quarantine(exc.path, exc.why)
                    quarantine(e.path / "result.json", f"its {exc.path.name} is {exc.why}")
                else:
                    quarantine(exc.path, exc.why)
            else:
                log.warning("corrupt %s record %s (%s): skipped", e.source, exc.path, exc.why)
            return None
        return result

    def _config_readable(self, e: Entry, config: Any) -> bool:
        """Whether finished ``e`` has a readable ``config.json``; a bad local one is rewritten from
        ``config`` when that hashes to the folder, else the entry counts as not there."""
        path = e.path / "config.json"
        try:
            read_record(path)
            return True
        except FileNotFoundError:
            why = "missing"
        except (CorruptRecord, OSError) as exc:
            why = getattr(exc, "why", str(exc))
        if e.source != "local":
            log.warning("%s record %s has no readable config.json (%s): skipped", e.source, e.path, why)
            return False
        if path.exists():
            quarantine(path, why)
        if isinstance(config, dict) and config_hash(config) == e.path.name:
            atomic_write_json(path, config)
            log.warning("%s: config.json was %s; written again from the config of its result", e.path, why)
            return True
        quarantine(e.path / "result.json", "its config.json is " + why)
        return False

    def find(self, kind: Kind, config: dict[str, Any], check: Callable[[Path], Any] | None = None) -> Entry | None:
        """The finished entry of this config, local first, then published; else None (corrupt: none).
        ``check``: see :meth:`_readable`."""
        for base, source in self._bases():
            e = Entry(base / kind / config_hash(config), source, kind)
            if self._readable(e, check) is not None and self._config_readable(e, config):
                _tally("read", e)
                return e
        return None

    def prepare(self, kind: Kind, config: dict[str, Any]) -> Entry:
        """Create (or reuse) an entry's local directory and write its config (again if corrupt); raises
        :class:`NotStored` while the context says ``"stored_only": true``."""
        if context().get("stored_only"):
            raise NotStored(f"{kind}/{config_hash(config)} is not in the store ({shown_path(self.root)}) and "
                            f"nothing new is computed here (the "
                            "reproduction report of a book build reads what the chapters stored); execute the "
                            "chapter that computes it in the same build first")
        d = self.local_dir(kind, config)
        d.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(d)  # of a write into this entry that a kill cut short
        path = d / "config.json"
        if path.exists():
            try:
                read_record(path)
            except CorruptRecord as exc:
                quarantine(path, exc.why)
        if not path.exists():
            atomic_write_json(path, config)
        return Entry(d, "local", kind)

    def finish(self, entry: Entry, result: dict[str, Any]) -> None:
        """Write ``result.json``: ``result`` plus machine, time, :func:`provenance` and weights sizes.
        A record whose data files (``kind.data``) are missing, unreadable or hold NaN or infinite numbers
        is not stored: :class:`NotStorable`, naming the kind and the config (its data files removed)."""
        if entry.kind is not None and entry.kind.data:
            try:
                _check_data(entry)
            except CorruptRecord as exc:
                for name in entry.kind.data:
                    (entry.path / name).unlink(missing_ok=True)
                raise NotStorable(entry, exc.path.name, exc.why) from None
        record = {**result, "machine": machine_info(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "code": provenance()}
        weights = {name: (entry.path / name).stat().st_size for name in (entry.kind.weights if entry.kind else ())
                   if (entry.path / name).exists()}
        if weights:
            record["weights"] = weights
        atomic_write_json(entry.path / "result.json", record)
        _tally("computed", entry)

    def cached(self, kind: Kind, config: dict[str, Any], compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The stored result of ``config``, or ``compute()`` (JSON-able) stored atomically and returned; under
        the config's claim, so that two processes asking at once compute it once."""
        return self.cached_entry(kind, config, lambda _: compute()).result

    def cached_entry(self, kind: Kind, config: dict[str, Any], compute: Callable[[Path], dict[str, Any]],
                     check: Callable[[Path], Any] | None = None) -> Entry:
        """:meth:`cached`'s entry; ``compute`` gets the entry's folder, to write the kind's ``data`` files in;
        ``check`` reads them (:meth:`_readable`)."""
        found = self.find(kind, config, check)
        if found is not None:
            return found
        entry = self.prepare(kind, config)
        with self.claim(kind, config):
            found = self.find(kind, config, check)  # stored by the process this one waited for
            if found is None:
                self.finish(entry, compute(entry.path))
                found = entry
        return found

    def entries(self, kind: Kind) -> Iterator[Entry]:
        """Every finished entry of ``kind`` (local before published), corrupt ones left out."""
        seen = set()
        for base, source in self._bases():
            if not (base / kind).is_dir():
                continue
            for d in sorted((base / kind).iterdir()):
                if d.name in seen or not d.is_dir():
                    continue
                e = Entry(d, source, kind)
                result = self._readable(e)
                if result is not None and self._config_readable(e, result.get("config")):
                    seen.add(d.name)
                    _tally("read", e)
                    yield e

    def publish(self, entry: Entry, weights: bool = False) -> Path:
        """Copy a finished local entry to the published root atomically; returns its path there.

        Copies ``config.json``, ``result.json`` (last, so a cut-short publication reads as absent), its
        ``kind.data`` files and, with ``weights``, its ``kind.weights``; a file over
        :data:`PUBLISHED_WEIGHTS_LIMIT` bytes is a ``ValueError`` before anything is copied.
        """
        if self.published is None:
            raise ValueError("this store has no published root")
        if entry.source != "local" or not entry.done:
            raise ValueError(f"{entry.path}: only a finished local entry can be published")
        names = entry.kind.weights if entry.kind else ()
        data = [entry.path / n for n in (entry.kind.data if entry.kind else ())]
        missing = [f for f in data if not f.exists()]
        if missing:
            raise ValueError(f"{missing[0]}: missing; a {entry.kind} record is published with it")
        for f in _too_large(data):
            raise ValueError(f"{f}: {f.stat().st_size:,} bytes, more than a published record carries "
                             f"({PUBLISHED_WEIGHTS_LIMIT:,})")
        files = [entry.path / n for n in names if (entry.path / n).exists()] if weights else []
        for f in _too_large(files):
            raise ValueError(f"{f}: {f.stat().st_size:,} bytes, more than a published record carries "
                             f"({PUBLISHED_WEIGHTS_LIMIT:,}); publish it without weights")
        files += data
        dest = self.published / entry.path.parent.name / entry.path.name
        kept = [n for n in names if (dest / n).exists() and entry.path / n not in files]
        if kept and _published_result(dest) != entry.result:
            # weights published with another run of this config: neither removed nor left beside this one
            raise ValueError(f"{dest}: published with the weights of another run of this config ({kept[0]}); "
                             "publish this record with its weights to replace them")
        dest.mkdir(parents=True, exist_ok=True)
        for f in files:
            atomic_write_bytes(dest / f.name, f.read_bytes())
        atomic_write_json(dest / "config.json", entry.config)
        atomic_write_json(dest / "result.json", entry.result)
        return dest

    def publish_all(self, kinds: Iterable[Kind], weights: str | None = None) -> list[tuple[Entry, Path | None, str]]:
        """Publish every finished local record of ``kinds``; one row (entry, published path or None, what
        was done) per record. ``weights``: None; ``"read"`` (those :meth:`Entry.load_into` loaded); or
        ``"all"``; too-large weights are left out, a too-large data file leaves the record unpublished."""
        if weights not in (None, "read", "all"):
            raise ValueError(f"weights must be None, 'read' or 'all', got {weights!r}")
        rows: list[tuple[Entry, Path | None, str]] = []
        for kind in kinds:
            for e in self.entries(kind):
                if e.source != "local":
                    continue
                large = _too_large([e.path / n for n in kind.data if (e.path / n).exists()])
                if large:
                    rows.append((e, None, f"not published: {large[0].name} has {large[0].stat().st_size:,} bytes, "
                                 f"more than a published record carries ({PUBLISHED_WEIGHTS_LIMIT:,})"))
                    continue
                files = [e.path / n for n in kind.weights if (e.path / n).exists()
                         and (weights == "all" or (weights == "read" and (e.path / (n + READ_MARK)).exists()))]
                small = not _too_large(files)
                try:
                    dest = self.publish(e, weights=bool(files) and small)
                except ValueError as exc:
                    rows.append((e, None, f"not published: {exc}"))
                    continue
                what = ("with its weights" if files and small else
                        f"without its weights (larger than {PUBLISHED_WEIGHTS_LIMIT:,} bytes)" if files else "")
                rows.append((e, dest, what or "record only"))
        return rows

    # -- claims ---------------------------------------------------------------------
    def claim_path(self, kind: Kind, config: dict[str, Any]) -> Path:
        return self.local_dir(kind, config) / CLAIM_FILE

    def holder(self, kind: Kind, config: dict[str, Any]) -> dict[str, Any] | None:
        """The owner record of the claim on this config's entry ({} if unreadable), or None when nobody holds it."""
        path = self.claim_path(kind, config)
        if not path.exists():
            return None
        fd = flock(path, block=False)
        if fd is None:
            return _holder(path)
        path.unlink(missing_ok=True)
        os.close(fd)
        return None

    @contextlib.contextmanager
    def claim(self, kind: Kind, config: dict[str, Any], wait: bool | float = True) -> Iterator[Claim]:
        """Hold the exclusive claim on this config's local entry for the ``with`` block: a ``flock`` on its
        ``claim.json``, which names the owner. ``wait``: True waits while another process holds it, a number
        at most that many seconds, False not at all; then :class:`ClaimBusy`."""
        path = self.claim_path(kind, config)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = flock(path, block=False)
        if fd is None:
            limit = "" if wait is True else f"; gives up after {float(wait):.0f} s"
            log.info("waiting for %s, which holds %s, until it finishes%s", _who(_holder(path)), path, limit)
            if wait is True:
                fd = flock(path, block=True)
            else:
                deadline = time.monotonic() + float(wait)
                while (fd := flock(path, block=False)) is None and time.monotonic() < deadline:
                    time.sleep(0.1)
                if fd is None:
                    raise ClaimBusy(path, _holder(path))
        owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                 "kind": kind.name, "entry": path.parent.name}
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(owner).encode())
            os.fsync(fd)
            yield Claim(path, owner)
        finally:
            path.unlink(missing_ok=True)  # before the lock goes, so that a waiter locks a new file
            os.close(fd)
