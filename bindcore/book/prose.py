"""Numbers in the chapters' prose come from code: a markdown cell shows a number only
through a glue role (``{glue:text}`name```, glued by the chapter's code or from
:mod:`bindcore.paper`). :func:`unquoted_numbers` finds any other number and
:func:`unglued_names` any role never glued (``tests/test_prose.py``); section and figure
references, names such as ``ViT-B/32``, math without typed values and inline code are
exempt (:func:`strip_allowed`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

GLUE_PREFIX = "application/papermill.record/"

_ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_LINK = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_CODE = re.compile(r"`([^`]*)`")
_SECTION = re.compile(r"§\s*\d+(?:\.\d+)*(?:\s*[–-]\s*§?\d+(?:\.\d+)*)?")
_APPENDIX = re.compile(r"\b[A-E]\.\d+(?:\s*[–-]\s*[A-E]?\.?\d+)?\b|\b[Aa]ppendix\s+[A-E](?:\.\d+)?\b")
_REFERENCE = re.compile(r"\b(?:[Ff]igures?|[Tt]ables?|[Ii]ssues?|[Ss]ections?)\s+\d+(?:\s*(?:,|and|–|-)\s*\d+)*")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_NAME = re.compile(r"(?<!\de)(?<=[A-Za-z])[-/]?\d+(?:\.\d+)?|\d+(?!e-?\d)(?=-?[A-Za-z])")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e-?\d+)?")
_BARE_NUMBER = re.compile(r"^\s*[-+]?\d[\d,]*(?:\.\d+)?(?:e-?\d+)?\s*%?\s*$")


def strip_allowed(text: str) -> str:
    """``text`` without everything the allow-list (module docstring) exempts."""
    text = _ROLE.sub(" ", text)
    text = _MATH.sub(" ", text)
    text = _LINK.sub("] ", text)
    text = _URL.sub(" ", text)
    text = _CODE.sub(lambda m: m.group(1) if _BARE_NUMBER.match(m.group(1)) else " ", text)
    for pattern in (_SECTION, _APPENDIX, _REFERENCE, _YEAR, _NAME):
        text = pattern.sub(" ", text)
    return text


def _value(token: str) -> float:
    return float(token.replace(",", ""))


# a value typed inside math: a decimal, or a number of two or more digits after a relation
# (``$V = 50$``, ``$6.5 \times 10^6$``); single digits and exponents are notation
# (``$C = 2$``, ``$V^2$``, ``$O_{max} + 1$``)
_MATH_VALUE = re.compile(r"(?:=|\\approx|\\le|\\ge|<|>)\s*(\d[\d,]*(?:\.\d+)?)|(\d+\.\d+)")


def math_numbers(text: str) -> list[str]:
    """Values typed inside the math of ``text`` (see ``_MATH_VALUE``)."""
    out = []
    for m in _MATH.finditer(text):
        for v in _MATH_VALUE.finditer(m.group(0)):
            token = (v.group(1) or v.group(2)).rstrip(",")
            if "." in token or len(token.replace(",", "")) >= 2:
                out.append(token)
    return out


def numbers_in(text: str) -> list[tuple[str, float]]:
    """Every number left in ``text`` after :func:`strip_allowed`, then every value typed
    inside its math (:func:`math_numbers`): (as written, value)."""
    out = []
    for m in _NUMBER.finditer(strip_allowed(text)):
        token = m.group(0).rstrip(",")
        out.append((token, _value(token)))
    return out + [(t, _value(t)) for t in math_numbers(text)]


def markdown_cells(path: Path) -> list[tuple[int, str]]:
    """(index, source) of every markdown cell of a jupytext py:percent notebook."""
    import jupytext

    nb = jupytext.reads(Path(path).read_text(encoding="utf-8"), fmt="py:percent")
    return [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]


def code_cells(path: Path) -> str:
    """The code cells of a jupytext py:percent notebook, joined."""
    import jupytext

    nb = jupytext.reads(Path(path).read_text(encoding="utf-8"), fmt="py:percent")
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def unquoted_numbers(path: Path) -> list[dict[str, Any]]:
    """Numbers of a chapter's markdown cells that are neither glued nor exempt by the
    allow-list: one dict per number with the cell, the number and its line."""
    out = []
    for i, source in markdown_cells(path):
        for line in source.splitlines():
            for token, _ in numbers_in(line):
                out.append({"cell": i, "number": token, "line": line.strip()})
    return out


_GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)(?::[^`]*)?`")


def unglued_names(path: Path) -> list[str]:
    """Names of glue roles in a chapter's markdown that no code cell of it glues (the
    name must appear there as a string literal)."""
    code = code_cells(path)
    names = {m.group(1) for _, source in markdown_cells(path) for m in _GLUE_ROLE.finditer(source)}
    return sorted(n for n in names if f'"{n}"' not in code and f"'{n}'" not in code)


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
