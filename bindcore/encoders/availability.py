"""Can an encoder run here: library versions, the offline switch, a bounded Hub probe, the
local Hugging Face cache. Backends call these through the module, so a test can patch one."""

from __future__ import annotations

import importlib.metadata
import os
import socket
import threading
from urllib.parse import urlparse

from bindcore.runtime import env_flag

HUB_PROBE_TIMEOUT_S = 0.5


class EncoderUnavailable(RuntimeError):
    """An encoder's weights (or library) are not available here; the message says how to get them."""


def package_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def major_minor(version: str | None) -> str | None:
    return None if version is None else ".".join(version.split("+")[0].split(".")[:2])


def hf_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` is set, read at call time."""
    return env_flag("HF_HUB_OFFLINE") or env_flag("TRANSFORMERS_OFFLINE")


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def host_reachable(url: str, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """One TCP connect to ``url``'s host within ``timeout``, name resolution included (hence the thread)."""
    parsed = urlparse(url)
    host = parsed.hostname
    if not host:
        return False
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    ok: list[bool] = []

    def connect() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                ok.append(True)
        except OSError:
            pass

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(timeout)
    return bool(ok)


def hub_reachable(url: str | None = None, timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the Hub (or ``url``) answers within ``timeout`` s; False without a probe when offline."""
    if hf_offline():
        return False
    return host_reachable(url or hub_endpoint(), timeout)


def hf_cached_file(repo_id: str, filename: str, cache_dir: str | None = None) -> str | None:
    """Path of ``filename`` of ``repo_id`` in the local Hugging Face cache, or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    p = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
    return p if isinstance(p, str) and os.path.isfile(p) else None


def unavailable_message(what: str, where: str, reason: str, local_hint: str) -> str:
    return (
        f"{what} {where}, and {reason}. To use them: run where the Hugging Face Hub is reachable "
        f"(e.g. on Colab; the first load downloads and caches them), or copy a Hugging Face cache "
        f"that holds them to this machine (HF_HUB_CACHE), or pass a local weights file ({local_hint}). "
        f"Offline, bindcore.encoders.default_encoders() gives what runs here: a random-init model of the "
        f"same architecture and the pretrained MiniLM text encoder."
    )
