"""What a reader would trip on, checked by the tests: figures read at the page's width
(:func:`readability_problems`), numbers in prose that no code glued (:func:`unquoted_numbers`,
:func:`unglued_names`: a markdown cell shows a number only through a glue role; section and
figure references, names such as ``ViT-B/32``, math without typed values and inline code are
exempt, :func:`strip_allowed`), and result tables of a built page (:func:`page_table_problems`)."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path
from typing import Any

import matplotlib as mpl

from bindcore.book.tables import FOLD_ROWS, breakable_groups, numbers_only
from bindcore.figures import MAX_PANELS_PER_ROW, _overlap

PAGE_WIDTH_PX = 790  # the content width of a book page in the HTML, in pixels
MIN_TEXT_PT = 8.0  # the smallest text a figure may show, in points as displayed on the page


def displayed_scale(fig: Any) -> float:
    """How much the page shrinks ``fig``: page width over the figure's displayed width, at most one."""
    fig.canvas.draw()
    bbox = fig.get_tightbbox(fig.canvas.get_renderer())
    width_px = (bbox.width + 2 * mpl.rcParams["savefig.pad_inches"]) * fig.dpi
    return min(1.0, PAGE_WIDTH_PX / width_px)


def _shown_texts(fig: Any) -> list[Any]:
    texts = []
    for t in fig.findobj(mpl.text.Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        ax = t.axes
        if ax is not None and (not ax.get_visible() or (not ax.axison and t in ax.get_xticklabels()
                                                        + ax.get_yticklabels())):
            continue
        texts.append(t)
    return texts


def smallest_text_pt(fig: Any) -> float:
    """The smallest font of ``fig``'s visible text in points as displayed on the page."""
    sizes = [t.get_fontsize() for t in _shown_texts(fig)]
    return min(sizes, default=float("inf")) * displayed_scale(fig)


def panels_per_row(fig: Any) -> int:
    """The most visible axes side by side (overlapping in height) in ``fig``."""
    boxes = [ax.get_position() for ax in fig.axes if ax.get_visible()]
    return max((sum(1 for o in boxes if o.y0 < b.y1 - 1e-6 and b.y0 < o.y1 - 1e-6) for b in boxes), default=0)


def readability_problems(fig: Any) -> list[str]:
    """What keeps ``fig`` from being read at page width: too many panels in a row, text under
    :data:`MIN_TEXT_PT` as displayed, a legend over its axes' data, labels or tick labels that overlap."""
    out = []
    if (n := panels_per_row(fig)) > MAX_PANELS_PER_ROW:
        out.append(f"{n} panels in a row (at most {MAX_PANELS_PER_ROW})")
    if (pt := smallest_text_pt(fig)) < MIN_TEXT_PT - 1e-6:
        out.append(f"text of {pt:.1f} pt as displayed (at least {MIN_TEXT_PT:g})")
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is not None and leg.get_visible() and ax.get_visible():
            if ax.get_window_extent(renderer).overlaps(leg.get_window_extent(renderer)):
                out.append(f"a legend over the data of the panel {ax.get_title()!r}")
        groups = [("labels", ax.texts)]
        if ax.get_visible() and ax.axison:
            groups += [("x tick labels", ax.get_xticklabels(which="both")),
                       ("y tick labels", ax.get_yticklabels(which="both"))]
        for what, texts in groups:
            boxes = [(t.get_text(), _text_box(t, renderer)) for t in texts if t.get_visible() and t.get_text()]
            for i, (a, box) in enumerate(boxes):
                hit = next((b for b, other in boxes[i + 1:] if _overlap(box, other) > 1.0), None)
                if hit is not None:
                    out.append(f"{what} {a!r} and {hit!r} overlap in the panel {ax.get_title()!r}")
    return out


def _text_box(text: Any, renderer: Any) -> Any:
    """The bounding box of a label's text alone (an annotation's line to its point left out)."""
    if isinstance(text, mpl.text.Annotation):
        text.update_positions(renderer)
    return mpl.text.Text.get_window_extent(text, renderer)


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


def page_table_problems(page: str) -> list[str]:
    """What a reader trips on in the result tables of a built page (its HTML), read as
    :func:`page_table` writes them: a cell of numbers that may wrap (no ``num`` class), a text
    cell whose number group may break (outside a ``nowrap`` span), a table over :data:`FOLD_ROWS` rows shown
    unfolded (neither in a details block nor in a ``hide-output`` cell), a column cut ("..."),
    a header that is an identifier rather than words, a row whose "reason" cell is empty. Empty when
    there is none."""
    problems = []
    for cell in re.split(r'<div class="cell ', page)[1:]:
        hidden = "tag_hide-output" in cell[:300]
        for m in re.finditer(r'<table[^>]*class="dataframe[^"]*"[^>]*>(.*?)</table>', cell, re.S):
            table, before = m.group(1), cell[:m.start()]
            head = re.search(r"<thead>(.*?)</thead>", table, re.S)
            headers = [htmllib.unescape(re.sub(r"<.*?>", "", h)).strip()
                       for h in re.findall(r"<th[^>]*>(.*?)</th>", head.group(1) if head else "", re.S)]
            body = table[table.find("<tbody>"):]
            rows = len(re.findall(r"<tr[ >]", body))
            first = next((h for h in headers if h), "")
            if rows > FOLD_ROWS and not hidden and before.count("<details") <= before.count("</details>"):
                problems.append(f"a table of {rows} rows shown unfolded (first column {first!r})")
            if "..." in headers or "…" in headers:
                problems.append(f"a table cut to some of its columns ('...'; first column {first!r})")
            problems += [f"a header that is not words: {h!r}" for h in headers if re.fullmatch(r"\w+(?:_\w+)+", h)]
            for col in [i for i, h in enumerate(headers) if h.startswith("reason")]:
                for row in re.findall(r"<tr[ >](.*?)</tr>", body, re.S):
                    cells = re.findall(r"<(?:td|th)[^>]*>(.*?)</(?:td|th)>", row, re.S)
                    if len(cells) == len(headers) and not re.sub(r"<.*?>", "", cells[col]).strip():
                        problems.append(f"a row without its {headers[col]!r} ({re.sub(r'<.*?>', '', cells[0]).strip()!r})")
            for tag, attrs, inner in re.findall(r"<(td|th)((?:\s[^>]*)?)>(.*?)</\1>", table, re.S):
                text = htmllib.unescape(re.sub(r"<.*?>", "\n", inner)).strip()
                if tag == "td" and numbers_only(text):
                    if "num" not in attrs:
                        problems.append(f"a cell of numbers that may wrap: {text!r}")
                    continue
                loose = re.sub(r'<span class="nowrap">.*?</span>', " # ", inner)
                problems += [f"a number that may wrap inside the text {text!r}: {g!r}"
                             for g in breakable_groups(htmllib.unescape(re.sub(r"<.*?>", "\n", loose)))]
    return list(dict.fromkeys(problems))
