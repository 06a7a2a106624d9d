"""Stable content hashes and atomic writes (a temporary file in the target folder, locked while it is
written, then one ``os.replace``, with the mode other new files get; the temporaries of a killed write
are removed by the next write into that folder). Nothing is pickled."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

def canonical_numbers(obj: Any) -> Any:
    """``obj`` with every ``-0.0`` (in dicts, lists, tuples) as ``0.0``, all else unchanged."""
    if isinstance(obj, float):
        return obj + 0.0 if obj == 0 else obj
    if isinstance(obj, dict):
        return {k: canonical_numbers(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [canonical_numbers(v) for v in obj]
    return obj


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys, no spaces and ``-0.0`` as ``0.0``: equal configs, equal text."""
    return json.dumps(canonical_numbers(obj), sort_keys=True, separators=(",", ":"), default=str)


def _encode(part: Any) -> bytes:
    if isinstance(part, bytes):
        return part
    if isinstance(part, str):
        return part.encode()
    if type(part).__module__ == "numpy" and hasattr(part, "tobytes"):
        import numpy as np

        a = np.ascontiguousarray(part)
        return str((a.shape, a.dtype.str)).encode() + a.tobytes()
    return canonical_json(part).encode()


def digest(*parts: Any, length: int | None = 16) -> str:
    """The first ``length`` hex digits (None: all 64) of the sha256 of ``parts``, separated:
    bytes and str as they are, arrays by shape, dtype and contents, None skipped, else canonical JSON."""
    h = hashlib.sha256()
    first = True
    for part in parts:
        if part is None:
            continue
        if not first:
            h.update(b"\0")
        h.update(_encode(part))
        first = False
    out = h.hexdigest()
    return out if length is None else out[:length]


def config_hash(config: dict[str, Any]) -> str:
    """Stable short hash of a JSON-serialisable config (key order does not matter)."""
    return digest(canonical_json(config))


def arrays_hash(*arrays: Any) -> str:
    """Stable short hash of the shapes, dtypes and contents of ``arrays`` (None skipped)."""
    import numpy as np

    return digest(*(None if a is None else np.asarray(a) for a in arrays))


def sha256_file(path: str | Path, chunk: int = 1 << 22) -> str:
    """sha256 (64 hex digits) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """This process's umask, from ``/proc`` where there is one (setting and restoring it is
    unsafe while other threads create files)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        old = os.umask(0o022)
        os.umask(old)
    return old



def file_mode(directory: bool = False) -> int:
    """The mode a new file (``0o666``) or folder (``0o777``) gets under the umask."""
    return (0o777 if directory else 0o666) & ~umask()


# the temporary file of an atomic write of NAME: ".NAME.<8 characters of tempfile.mkstemp>.tmp"
TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[A-Za-z0-9_]{8}\.tmp$")


def is_temporary(name: str) -> bool:
    """Whether a file name is that of an :func:`atomic_write`'s temporary file."""
    return TEMPORARY.match(name) is not None


def _remove_if_unlocked(path: Path) -> bool:
    """Remove the temporary ``path`` unless its writer still holds it locked; whether it was removed."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)  # read-write: on NFS an exclusive lock needs it
    except OSError:
        return False  # gone, a link, or not ours to remove
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its write is running
        try:
            if os.stat(path).st_ino != os.fstat(fd).st_ino:
                return False
            path.unlink()
        except OSError:
            return False
        return True
    finally:
        os.close(fd)


def remove_stale_temporaries(folder: str | Path, name: str | None = None) -> list[Path]:
    """Remove the temporary files that killed :func:`atomic_write` calls left in ``folder`` (those of
    ``name`` only, if given): each one no running write holds locked. The removed paths, each logged."""
    folder = Path(folder)
    try:
        with os.scandir(folder) as entries:
            found = [Path(e.path) for e in entries if (m := TEMPORARY.match(e.name)) is not None
                     and (name is None or m["name"] == name) and e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    removed = [p for p in found if _remove_if_unlocked(p)]
    for p in removed:
        log.warning("removed %s, the temporary file of a write that was cut short", p)
    return removed


def _locked_temporary(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path`` (descriptor, name), locked (``flock``) so that
    :func:`remove_stale_temporaries` leaves it while this process writes it."""
    while True:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                return fd, tmp
        except FileNotFoundError:
            pass  # taken for a stale one between its creation and the lock
        os.close(fd)


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], None], backup: str | Path | None = None) -> Path:
    """``write(f)`` into a temporary file moved onto ``path`` in one step (on error ``path`` is
    unchanged); ``backup``: first move the old ``path`` there, so a good copy always exists. The
    temporary file is locked until it is moved; those of ``path``'s earlier writes that a kill cut
    short are removed first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, path.name)
    fd, tmp = _locked_temporary(path)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb", closefd=False) as f:
            write(f)
        if backup is not None and path.exists():
            os.replace(path, backup)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)  # the lock goes with it, once the file has its name
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    return atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o)}")


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def atomic_torch_save(path: str | Path, obj: Any, backup: str | Path | None = None) -> Path:
    """``torch.save`` of state dicts and plain containers (read with ``weights_only=True``)."""
    import torch

    return atomic_write(path, lambda f: torch.save(obj, f), backup=backup)


def atomic_savez(path: str | Path, **arrays: Any) -> Path:
    """An uncompressed ``.npz`` of ``arrays`` (read back with ``allow_pickle=False``)."""
    import numpy as np

    return atomic_write(path, lambda f: np.savez(f, **arrays))


def check_writable_folder(path: str | Path) -> Path:
    """``path`` if this process can create files in it (or create it), else
    ``NotADirectoryError`` or ``PermissionError``; leaves nothing behind."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} exists and is not a folder")
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(f"cannot create {path}: {existing} is not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".write-test."))
    except OSError as exc:
        target = "" if existing == path else f" (to create {path})"
        raise PermissionError(f"cannot write to {existing}{target}: {exc.strerror or exc}") from None
    return path


def flock(path: Path, block: bool) -> int | None:
    """A descriptor of ``path`` (created if need be) under an exclusive ``flock`` (closing it releases the
    lock), or None while another holds it and not ``block``; taken again on the new file if the holder
    removed it meanwhile."""
    while True:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except BlockingIOError:
            os.close(fd)
            return None
        except FileNotFoundError:
            pass
        os.close(fd)


@contextlib.contextmanager
def signals_deferred(signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[list[int]]:
    """Hold back ``signums`` during the block (recorded in the yielded list) and deliver the
    first afterwards, so quick steps that must not be cut in half end together; main thread only."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    before = {s: signal.getsignal(s) for s in signums}

    def hold(signum: int, frame: Any) -> None:
        got.append(signum)

    for s in signums:
        signal.signal(s, hold)
    try:
        yield got
    finally:
        for s, handler in before.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        if got:
            signal.raise_signal(got[0])
