"""What a recipe search may read of a run (the §5.2 protocol).

A run's evaluations report three object sets: training objects (``train_*``,
``task_*``), validation objects (``val_*``: held out, for any choice: recipe, steps,
reading a curve early) and test objects (``test_*``: held out, read once for the
record, never by a choice). ``train_object_*`` recognises training objects among the
whole vocabulary, held-out objects included, so no choice reads it either. A recipe
search sees a run only through :func:`search_view`, which drops those keys; reading
one through the view is a ``KeyError`` naming the rule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# held-out swap-pair recognition (0 for a bag of concepts) at which a controlled model binds:
# the §5.2 transition (binding is shown from the coverage where it reaches this), the
# precondition of the claims about models that generalize (§5.3, §5.4, figure 9, appendix E),
# and the level at which the scale sweep's models are chosen on validation objects. The one
# definition of that threshold.
BINDS_AT = 0.5


def is_test_key(key: str) -> bool:
    """Whether ``key`` reports test objects (never read by a choice): one of its
    underscore-separated words is ``test`` (``test_object_2``, ``ceiling_test_object_2``,
    ``release_test_pooled``, ``ceiling_release_test_object_2``)."""
    return "test" in key.split("_")


def hidden_from_choices(key: str) -> bool:
    """Whether a choice may not read ``key``: a test key, or ``train_object_*`` (whose
    candidates include the held-out objects)."""
    return is_test_key(key) or key.startswith("train_object")


class SearchView(Mapping):
    """A read-only view of a metrics dict without the keys no choice reads."""

    def __init__(self, metrics: Mapping[str, Any]) -> None:
        self._m = {k: metrics[k] for k in list(metrics.keys()) if not hidden_from_choices(k)}

    def __getitem__(self, key: str) -> Any:
        if hidden_from_choices(key):
            raise KeyError(f"{key!r}: a recipe search reads training-task and validation metrics only, "
                           "never test objects nor train_object_* (bindcore.controlled.search)")
        return self._m[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._m)

    def __len__(self) -> int:
        return len(self._m)


def search_view(metrics: Mapping[str, Any]) -> SearchView:
    """``metrics`` as a recipe search may read them: training-task and validation keys only."""
    return SearchView(metrics)


def log_attempt(log: str | Path, row: dict[str, Any], about: str) -> None:
    """Add one attempt to a search log (``{"about": ..., "attempts": [...]}``, JSON),
    replacing an earlier attempt of the same name, stamped with this machine's name;
    written atomically, and under an exclusive lock of ``<log>.lock`` so that two
    searches logging to one file at once both keep their rows."""
    import fcntl

    from bindcore.io import atomic_write_json
    from bindcore.store import machine_info

    log = Path(log)
    with open(log.with_name(log.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = [r for r in read_attempts(log) if r["name"] != row["name"]]
        atomic_write_json(log, {"about": about, "attempts": rows + [{**row, "machine": machine_info()["hostname"]}]})


def read_attempts(log: str | Path | None, name: str | None = None) -> list[dict[str, Any]]:
    """The attempts of a search log: ``log``, else ``published/<name>`` (the store's
    published root); none when there is no such file."""
    if log is None:
        from bindcore.store import PUBLISHED_ROOT

        if PUBLISHED_ROOT is None or name is None:
            return []
        log = PUBLISHED_ROOT / name
    log = Path(log)
    return json.loads(log.read_text())["attempts"] if log.exists() else []
