"""Files and hashes: atomic writes and stable content hashes, used by everything that
stores or keys results (the result store, the embedding cache, the book build).

Atomic writes go to a uniquely named temporary file in the target folder
(``tempfile.mkstemp``) that replaces the target in one ``os.replace``: a reader never
sees a half-written file, two writers never share a temporary name, and a failed
write leaves nothing behind. ``mkstemp`` creates its file readable by its owner alone;
the file is given the mode any other new file gets (``0o666`` less the umask,
:func:`file_mode`), so that a group shares results as it shares other output. Nothing
is pickled: JSON, text, ``.npz`` (read with
``allow_pickle=False``) and torch state dicts (read with ``weights_only=True``).

A change made of several renames (a dataset's files swapped for another's,
:mod:`bindcore.data.core`) runs under :func:`signals_deferred`: a Ctrl-C or SIGTERM that
arrives meanwhile takes effect when the change is complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


# ---------------------------------------------------------------------------------
# hashes
# ---------------------------------------------------------------------------------
def canonical_numbers(obj: Any) -> Any:
    """``obj`` with every ``-0.0`` (in dicts, lists and tuples) as ``0.0``: equal values,
    one text. Every other value is left as it is, so the text of any config without a
    ``-0.0`` does not change. (Typed configs make ``0`` and ``0.0`` alike before they are
    hashed: :func:`bindcore.settings.coerce`.)"""
    if isinstance(obj, float):
        return obj + 0.0 if obj == 0 else obj
    if isinstance(obj, dict):
        return {k: canonical_numbers(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [canonical_numbers(v) for v in obj]
    return obj


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no spaces, ``-0.0`` written as ``0.0``
    (:func:`canonical_numbers`): equal configs give equal text."""
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
    """sha256 of ``parts`` as hex (its first ``length`` digits; None: all 64), the one hash
    of bindcore. ``bytes`` and ``str`` count as they are, numpy arrays by shape, dtype and
    contents, ``None`` is skipped, anything else as canonical JSON. Parts are separated,
    so ``("ab", "c")`` and ``("a", "bc")`` differ; a single part hashes as its bytes."""
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
    """Stable short hash of the shapes, dtypes and contents of ``arrays`` (None skipped):
    the key under which an analysis of those arrays is stored."""
    import numpy as np

    return digest(*(None if a is None else np.asarray(a) for a in arrays))


def sha256_file(path: str | Path, chunk: int = 1 << 22) -> str:
    """sha256 (64 hex digits) of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------------
# atomic writes
# ---------------------------------------------------------------------------------
_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """This process's umask (read from ``/proc`` where there is one: setting and
    restoring it, the portable way, is not safe while other threads create files)."""
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


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], None], backup: str | Path | None = None) -> Path:
    """Call ``write(f)`` on a new temporary file in ``path``'s folder, then move it onto
    ``path`` in one step. On any error the temporary file is removed and ``path`` keeps
    its old content. ``backup``: first move the old ``path`` (if any) there, so that a
    good copy exists at every moment (``path``, else ``backup``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") as f:
            write(f)
        if backup is not None and path.exists():
            os.replace(path, backup)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
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
    """``torch.save`` of state dicts and plain containers (read back with
    ``weights_only=True``); ``backup`` as in :func:`atomic_write`."""
    import torch

    return atomic_write(path, lambda f: torch.save(obj, f), backup=backup)


def atomic_savez(path: str | Path, **arrays: Any) -> Path:
    """An uncompressed ``.npz`` of ``arrays`` (read back with ``allow_pickle=False``)."""
    import numpy as np

    return atomic_write(path, lambda f: np.savez(f, **arrays))


def check_writable_folder(path: str | Path) -> Path:
    """``path`` if it is a folder this process can create files in, or a missing one it
    can create (its nearest existing parent is a writable folder); otherwise
    ``NotADirectoryError`` or ``PermissionError`` naming the path. Creates nothing
    (a probe folder is made and removed)."""
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


@contextlib.contextmanager
def signals_deferred(signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[list[int]]:
    """Hold back ``signums`` (Ctrl-C, SIGTERM) for the ``with`` block: one that arrives is
    recorded (the list yielded) and delivered again, to the handler that was in place,
    once the block has ended, so that a few quick steps that must not be cut in half
    (renames that swap one dataset for another) end together. Outside the main thread
    (where Python cannot set handlers) nothing is held back."""
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
