"""Numbers in the chapters' prose come from code: a markdown cell shows a number only
through a glue role (``{glue:text}`name```), glued by the chapter's code (:func:`glue`) or
from :mod:`bindcore.paper`; ``tests/test_prose.py`` finds any other number."""

from __future__ import annotations

from typing import Any

GLUE_PREFIX = "application/papermill.record/"


def glue(name: str, value: Any, fmt: str = "") -> str:
    """Make ``value`` (formatted with ``fmt``, e.g. ``".2f"``) available to the page's
    prose as ``{glue:text}`name```: the output myst-nb's ``glue`` writes (a hidden
    display record), written with IPython alone so that it also runs where myst-nb is
    not installed (Colab). Returns the text. The record holds the text quoted, as
    IPython shows a string: myst-nb reads it back with ``ast.literal_eval``, which would
    turn an unquoted ``2,500`` into the tuple ``(2, 500)``."""
    text = format(value, fmt) if fmt else str(value)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return text
    if get_ipython() is not None:
        display({GLUE_PREFIX + "text/plain": repr(text)}, raw=True,
                metadata={"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})
    return text
