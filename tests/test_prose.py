"""Numbers in the chapters' prose come from code (bindcore.book.prose.glue; the checks: pagecheck): every number in a
markdown cell is glued from a value the chapter computed or from bindcore.paper, or is
generated markdown; the allow-list exempts references and names."""

from __future__ import annotations

from pathlib import Path

import pagecheck
import pytest

from bindcore.book import prose

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.py"))
# notebooks whose prose may still type numbers, with the reason (none today)
NOT_YET: dict[str, str] = {}


@pytest.mark.parametrize("text", [
    "§5.2 and §5.2–5.4, appendix D, C.3, D.2–D.5, figure 9, Table 9, issue 12, in 2026, (appendix B.1)",
    "CLIP ViT-B/32, all-MiniLM-L6-v2, DINOv2, CLEVR-2D, 3-D scenes, the 2-D picture",
    "R² of {glue:text}`r2_objects` and {glue:text}`paper_r2:.2f` {cite:p}`uselis2026binding`",
    "math $L_{max} = (C+2)\\,O_{max} + 1$ and $$V^2$$; `results/train-2/<hash>/`, `-p steps 20000`",
    "[![Open In Colab](https://colab.research.google.com/x/04_1.ipynb)](https://example.org/2)",
])
def test_the_allow_list_leaves_no_number(text):
    assert pagecheck.numbers_in(text) == []


@pytest.mark.parametrize("text,numbers", [
    ("ours ~0.97 on 9,900 captions", ["0.97", "9,900"]),
    ("lr 0.1 for 500 epochs, 84 % of the variance", ["0.1", "500", "84"]),
    ("retrieval 0.76 -> 0.65, probing 0.91–0.93", ["0.76", "0.65", "0.91", "0.93"]),
    ("a bare number in code: `0.97`; lr 1e-2", ["0.97", "1e-2"]),
    ("7 + 2 neighbours", ["7", "2"]),
    # values typed inside math, but not notation such as $C = 2$ or $V^2$
    ("objects with $V = 50$ values, up to $6.5 \\times 10^6$ of them, $C = 2$, $V^2$", ["50", "6.5"]),
])
def test_numbers_are_found(text, numbers):
    assert [t for t, _ in pagecheck.numbers_in(text)] == numbers


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_prose_numbers_are_glued_or_generated(path):
    if path.name in NOT_YET:
        pytest.xfail(NOT_YET[path.name])
    found = pagecheck.unquoted_numbers(path)
    assert not found, f"{path.name}: numbers typed in markdown (glue them or generate the markdown): " + "; ".join(
        f"cell {f['cell']}: {f['number']!r} in {f['line'][:90]!r}" for f in found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_glue_role_is_glued_by_the_chapter(path):
    assert pagecheck.unglued_names(path) == []


def test_glue_returns_the_text_outside_a_kernel():
    assert prose.glue("x", 0.12345, ".2f") == "0.12"
    assert prose.glue("y", 9900, ",") == "9,900"


def test_a_glued_number_with_thousands_separators_reaches_the_page_as_written(monkeypatch):
    """myst-nb reads a glued text back with ast.literal_eval: the record must hold it
    quoted, or ``2,500`` reaches the page as the tuple ``(2, 500)``."""
    import IPython
    from myst_nb.core.variables import format_plain_text

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr("IPython.display.display", lambda data, **kw: shown.append(data))
    for value, fmt, page in ((2500, ",", "2,500"), ((7, 392), "", "(7, 392)"), (0.5, "g", "0.5"), ("a, b", "", "a, b")):
        shown.clear()
        assert prose.glue("n", value, fmt) == page
        (record,) = shown
        assert format_plain_text(record[prose.GLUE_PREFIX + "text/plain"], "") == page
