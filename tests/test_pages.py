"""The chapters as pages for readers (bindcore.book.render): each chapter defines or shows
the library source its claims rest on (export cells, ``show_source`` of objects that
exist), glue calls and other bookkeeping stay off the page, no cell
ends in a stray return value, and notes name paths relative to the project."""

from __future__ import annotations

import ast
import importlib
import os
import shutil
from pathlib import Path

import jupytext
import pytest

from bindcore.book import render
from bindcore.book.toc import toc_notebooks

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = toc_notebooks(ROOT)
# The report sets every chapter's numbers beside the paper's; it computes no claim of its own.
NO_CLAIM_OF_ITS_OWN = {"reproduction_report"}
HIDDEN = {"remove-cell", "remove-input"}  # tags that keep a cell's code off the page


def _notebook(name: str):
    return jupytext.read(ROOT / "notebooks" / f"{name}.py", fmt="py:percent")


def shown_sources(name: str) -> list[str]:
    """The ``"module:qualname"`` of each object a chapter's cells pass to ``show_source`` (its module:
    where the chapter imports the name from)."""
    imported, shown = {}, []
    for cell in _notebook(name).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom):
                imported.update({a.asname or a.name: f"{node.module}:{a.name}" for a in node.names})
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "show_source":
                shown += [ast.unparse(arg) for arg in node.args]
    out = []
    for dotted in shown:  # the object itself names the module that defines it
        module, _, first = imported[dotted.split(".")[0]].partition(":")
        obj = getattr(importlib.import_module(module), first)
        for part in dotted.split(".")[1:]:
            obj = getattr(obj, part)
        out.append(f"{obj.__module__}:{obj.__qualname__}")
    return out


def _defined(path: Path, dotted: str) -> bool:
    """Whether ``dotted`` (``f`` or ``Class.method``) is defined at the top of ``path``."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for part in dotted.split("."):
        found = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                 and n.name == part]
        if not found:
            return False
        body = found[0].body
    return True


def test_show_source_shows_a_function_or_method_under_its_file():
    from bindcore.analysis.geometry import edit_embeddings
    from bindcore.book.chapter import show_source
    from bindcore.store import ResultStore

    text = show_source(edit_embeddings, ResultStore.find).data
    assert "`bindcore/analysis/geometry.py`: `edit_embeddings`" in text and "def edit_embeddings(" in text
    assert "`bindcore/store.py`: `ResultStore.find`" in text and "\ndef find(" in text  # dedented
    assert text.count("```python") == 2


@pytest.mark.parametrize("name", sorted(set(CHAPTERS) - NO_CLAIM_OF_ITS_OWN))
def test_every_chapter_shows_library_code_that_exists(name):
    """A chapter shows the code its claims rest on: it defines it in cells tagged export
    (which `bindcore sync` writes into the library), or includes library code that exists."""
    shown = shown_sources(name)
    exports = [c for c in _notebook(name).cells if c.cell_type == "code" and "export" in c.metadata.get("tags", [])]
    assert shown or exports, (f"notebooks/{name}.py shows no library code: define it in a cell tagged export "
                              'or show it with show_source(<function imported from bindcore>)')
    for cell in exports:
        assert (ROOT / cell.source.split("\n", 1)[0].removeprefix("# export: ").strip()).is_file(), name
    for dotted in shown:
        module, _, qualname = dotted.partition(":")
        target = ROOT / (module.replace(".", "/") + ".py")
        assert module.startswith("bindcore.") and target.is_file(), f"{name}: shows {dotted}, no such module"
        assert _defined(target, qualname), f"{name}: {target.relative_to(ROOT)} defines no {qualname}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_glue_calls_stay_off_the_page(name):
    for i, cell in enumerate(_notebook(name).cells):
        if cell.cell_type == "code" and "glue(" in cell.source:
            assert HIDDEN & set(cell.metadata.get("tags", [])), (
                f"notebooks/{name}.py cell {i} glues a value on the page; move the glue calls into a cell "
                "tagged remove-cell")


@pytest.mark.parametrize("name", CHAPTERS)
def test_import_cells_are_folded_away(name):
    for i, cell in enumerate(_notebook(name).cells):
        if cell.cell_type == "code" and any(isinstance(n, (ast.Import, ast.ImportFrom))
                                            for n in ast.parse(cell.source).body):
            # a cell that defines a library module shows its imports: they are part of the definition
            assert (HIDDEN | {"hide-input", "export"}) & set(cell.metadata.get("tags", [])), (
                f"notebooks/{name}.py cell {i} imports on the page; tag it hide-input (or remove-cell)")


# bindcore modules a chapter may import from: the packages' public APIs (their __init__) and a few
# modules (bindcore.figures, bindcore.paper), not the library module by module
MAX_MODULES = 8


def _is_module(name: str) -> bool:
    path = ROOT / name.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def bindcore_modules(sources) -> set[str]:
    """The bindcore modules code imports from: ``bindcore.x`` for ``import bindcore.x`` and
    ``from bindcore.x import y``, ``bindcore.x.y`` where ``y`` is itself a module
    (``from bindcore.analysis import complexity``)."""
    found = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "bindcore"}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] == "bindcore":
                found |= {f"{node.module}.{a.name}" if _is_module(f"{node.module}.{a.name}") else node.module
                          for a in node.names}
    return found


def chapter_modules(name: str) -> set[str]:
    """The bindcore modules a chapter's cells import from; its cells tagged export are library
    modules (written to bindcore/ by `bindcore sync`) and import what their module needs."""
    return bindcore_modules(c.source for c in _notebook(name).cells
                            if c.cell_type == "code" and "export" not in c.metadata.get("tags", []))


def check_few_modules(where: str, modules: set[str]) -> None:
    assert len(modules) <= MAX_MODULES, (
        f"{where} imports from {len(modules)} bindcore modules (at most {MAX_MODULES}): {sorted(modules)}; "
        "import from the packages (bindcore.analysis, bindcore.book, bindcore.controlled, ...)")


@pytest.mark.parametrize("name", CHAPTERS)
def test_a_chapter_imports_from_few_bindcore_modules(name):
    check_few_modules(f"notebooks/{name}.py", chapter_modules(name))


def test_a_chapter_importing_from_nine_bindcore_modules_is_refused():
    eight = ["import bindcore", "from bindcore.analysis import bag_ceiling", "from bindcore.book import glue",
             "from bindcore.controlled import TrainConfig", "from bindcore.data import caption",
             "from bindcore.experiments import run_sweep", "from bindcore.figures import PALETTE",
             "def f():\n    from bindcore.paper import PAPER_PIXELS",  # an import inside a function counts
             "from bindcore.book import show_claims"]  # a module imported from twice counts once
    assert len(bindcore_modules(eight)) == 8
    check_few_modules("eight", bindcore_modules(eight))
    for ninth in ("from bindcore.verdicts import gather", "import bindcore.store",
                  "from bindcore.analysis import complexity as CX"):  # a module, not a name of bindcore.analysis
        with pytest.raises(AssertionError, match="imports from 9 bindcore modules"):
            check_few_modules("nine", bindcore_modules([*eight, ninth]))


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_cell_ends_in_a_call_whose_value_is_not_for_the_reader(name):
    """A cell's last expression is shown as its output; a glue call, an axis setter or a
    figure title there prints a stray value (a lone '1', a tuple of limits)."""
    stray = ("glue", "set_title", "set_xlabel", "set_ylabel", "set_xlim", "set_ylim", "suptitle", "legend",
             "tight_layout", "savefig")
    for i, cell in enumerate(_notebook(name).cells):
        if cell.cell_type != "code" or {"remove-cell", "remove-output"} & set(cell.metadata.get("tags", [])):
            continue
        body = ast.parse(cell.source).body
        last = body[-1] if body else None
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
            func = last.value.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            assert called not in stray, f"notebooks/{name}.py cell {i} ends in {called}(...), shown as output"


def test_the_stored_records_note_names_a_folder_relative_to_the_project(monkeypatch, tmp_path, capsys):
    from bindcore.experiments.generalization import note_stored
    from bindcore.store import shown_path

    assert shown_path(ROOT / "results" / "train-2" / "abc") == "results/train-2/abc"
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "store"))
    record = {"path": str(tmp_path / "store" / "train-2" / "abc"), "hash": "abc",
              "code": {"bindcore": "0.0.1", "git": "abc1234"}}
    note_stored([record])
    out = capsys.readouterr().out
    assert "(local, $BINDCORE_RESULTS/train-2) made by git abc1234 (bindcore 0.0.1)" in out
    assert str(tmp_path) not in out
    monkeypatch.delenv("BINDCORE_RESULTS")
    monkeypatch.chdir(ROOT)
    assert shown_path("/elsewhere/store/train-2/abc") == "train-2/abc"


@pytest.mark.slow
def test_a_rendered_chapter_shows_the_code_it_defines(tmp_path, monkeypatch):
    """§3 executed on smoke and rendered alone (a copy of the book with that chapter
    only): the page holds the source of the functions it defines, and no glue call."""
    from bindcore.book import build

    name = "03_formalisation"
    root = tmp_path / "book"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")  # a checkout: its notebooks/profiles are read
    shutil.copytree(ROOT / "book", root / "book")
    shutil.copytree(ROOT / "bindcore", root / "bindcore", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "notebooks" / f"{name}.py", root / "notebooks" / f"{name}.py")
    shutil.copytree(ROOT / "notebooks" / "profiles", root / "notebooks" / "profiles")  # the profiles' parameter files
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                   f"  - file: notebooks/{name}\n")
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    build.execute_notebook(name, "smoke", tmp_path / "build" / "executed" / "smoke", root=root)
    index = render.build_html("smoke", tmp_path / "build", root=root)
    page = (index.parent / "notebooks" / f"{name}.html").read_text(encoding="utf-8")
    import re

    text = re.sub(r"<[^>]+>", "", page).replace("&quot;", '"').replace("&#39;", "'").replace("&gt;", ">")
    for function in ("strict_correct", "swap_twins", "bag_ceiling"):  # its export cells
        assert f"def {function}(" in text, f"{name}: the page does not show {function}"
    assert "glue(" not in text, f"{name}: a glue call is on the page"


def test_tables_scroll_sideways_rather_than_being_cut():
    import pandas as pd

    from bindcore.book.chapter import table_html

    html = table_html(pd.DataFrame({f"column {i}": [0.5] for i in range(20)}))
    assert html.startswith('<div class="bindcore-table-scroll"><table') and html.endswith("</table></div>")
    assert 'class="dataframe bindcore-table"' in html
    css = (ROOT / "book" / "_static" / "bindcore.css").read_text()
    rule = css[css.index("div.bindcore-table-scroll {"):]
    assert "overflow-x: auto" in rule[:rule.index("}")]
    # full-width cells (136 % of the column, into the right margin) keep the column's width where the
    # theme shows no right margin (below 1200 px), so that their text is not cut at the page's edge
    narrow = css[css.index("@media (min-width: 992px) and (max-width: 1199.98px)"):]
    assert "div.cell.tag_full-width" in narrow and "width: 100%" in narrow[:narrow.index("}")]


def _page(cell_html: str, tags: str = "") -> str:
    """A built page's cell holding ``cell_html`` as its output, as Jupyter Book writes it."""
    return (f'<div class="cell {tags} docutils container"><div class="cell_output docutils container">'
            f'<div class="output text_html">{cell_html}</div></div></div>')


def test_numbers_in_table_cells_never_wrap():
    """A cell of numbers is marked to stay on one line ("10,00 / 0" and "1000 / 0" were wrapped),
    a number group inside text ("0.12-0.38", "<= 0.2") is kept whole, and words break only where a
    word alone is wider than its cell ("coverag e" was broken mid-word)."""
    import pandas as pd
    from pagecheck import page_table_problems

    from bindcore.book.chapter import table_html

    df = pd.DataFrame({"steps": ["10,000 / 0", "1000 / 0"], "CPU min": [12.5, 3.0], "fitted": ["3 of 3", "1 of 3"],
                       "chosen on": ["coverage 0.1, swap pairs <= 0.2", "3 seeds, range 0.12-0.38"]})
    html = table_html(df)
    assert html.count('<td class="num">') == 6, html
    assert 'swap pairs <span class="nowrap">&lt;= 0.2</span>' in html  # the comparison stays with its number
    assert 'range <span class="nowrap">0.12-0.38</span>' in html
    assert page_table_problems(_page(html)) == []
    plain = df.to_html(classes="bindcore-table")  # what a page showed before: every number may wrap
    found = page_table_problems(_page(plain))
    assert any("10,000 / 0" in p for p in found) and any("'0.12-0.38'" in p for p in found), found
    css = (ROOT / "book" / "_static" / "bindcore.css").read_text()
    rule = css[css.index("table.bindcore-table td.num,"):]
    assert "white-space: nowrap" in rule[:rule.index("}")]
    assert "anywhere" not in css[css.index("table.bindcore-table"):], "table cells may break a word anywhere"


def test_an_outcome_row_without_its_reason_is_found_on_the_page():
    """The report's outcome table as a page shows it: a row whose reason cell is empty is named;
    its null, the same table with every reason given, has no problem."""
    import pandas as pd
    from pagecheck import page_table_problems

    from bindcore.book.chapter import table_html
    from bindcore.verdicts.outcomes import COLUMNS

    row = dict(zip(COLUMNS, ["§5.2 binding generalizes", "0.8", "0.7", "quick", "not reproduced",
                             "2 of 5 claims not shown (rises with coverage: 0.14 at 0.1)"]))
    full = pd.DataFrame([row, {**row, "finding": "§5.3 small MLPs"}])
    assert page_table_problems(_page(table_html(full))) == []
    empty = full.assign(**{"reason, command": ["", "budget 50x below the paper's"]})
    assert page_table_problems(_page(table_html(empty))) == [
        "a row without its 'reason, command' ('§5.2 binding generalizes')"]


def test_a_file_path_in_a_text_cell_may_break_after_its_slashes():
    """A command in a reason cell names a profile file; held whole, as a name holding a digit is,
    it widened the report's table past the page. It may break after each slash; a number group
    beside it stays whole, and the page check finds nothing."""
    import pandas as pd
    from pagecheck import page_table_problems

    from bindcore.book.chapter import table_html

    cmd = "run `papermill notebooks/05_1_x.ipynb out.ipynb -f notebooks/profiles/paper/05_1_pretrained.yaml` (0.12-0.38)"
    html = table_html(pd.DataFrame({"reason, command": [cmd]}))
    assert "notebooks/<wbr>profiles/<wbr>paper/<wbr>05_1_pretrained.yaml" in html
    assert '<span class="nowrap">(0.12-0.38)</span>' in html
    assert page_table_problems(_page(html)) == []


def test_a_table_over_fifteen_rows_is_folded_under_a_summary():
    import nbformat
    import pandas as pd
    from pagecheck import page_table_problems

    from bindcore.book.chapter import table_html
    from bindcore.book.tables import FOLD_ROWS

    assert FOLD_ROWS == 15
    short, long = table_html(pd.DataFrame({"x": range(15)})), table_html(pd.DataFrame({"x": range(62)}))
    assert "<details" not in short
    assert long.startswith('<details class="bindcore-fold"><summary>The table: 62 rows × 1 column (x)</summary>')
    assert long.count("<tr") == 63, "a folded table shows every row once opened"
    assert page_table_problems(_page(short)) == [] and page_table_problems(_page(long)) == []
    unfolded = long[long.index("<div class"):long.rindex("</details>")]
    assert page_table_problems(_page(unfolded)) == ["a table of 62 rows shown unfolded (first column 'x')"]
    assert page_table_problems(_page(unfolded, "tag_hide-output")) == []  # the cell's own toggle folds it
    # in a cell whose output is folded already, the table is not folded a second time
    cell = nbformat.v4.new_code_cell("table", outputs=[nbformat.v4.new_output(
        "display_data", {"text/html": long, "text/plain": "table"})], metadata={"tags": ["hide-output"]})
    page = nbformat.reads(render.reader_page(nbformat.v4.new_notebook(cells=[cell])).decode(), as_version=4)
    html = page.cells[0].outputs[0]["data"]["text/html"]
    assert "<details" not in html and html.count("<tr") == 63


def test_table_headers_are_words_and_no_column_is_cut():
    import pandas as pd
    from pagecheck import page_table_problems

    from bindcore.book.chapter import table_html
    from bindcore.book.tables import column_label

    assert column_label("boc_ceiling_test_object_2") == "bag ceiling: test objects, strict, 2-object scenes"
    assert column_label("boc_test_object_2") == "bag floor: test objects, strict, 2-object scenes"
    assert column_label("release_test_pooled") == "release protocol, test objects, pooled"
    assert column_label("test_swap_pair_heldout") == "test objects, swap pairs (held-out twins)"
    assert column_label("heldout_object") == "held-out objects"
    assert column_label("n_components") == "n components"
    assert column_label("held-out objects, strict") == "held-out objects, strict"
    wide = pd.DataFrame({f"metric_{i}": [0.5] for i in range(30)})
    html = table_html(wide)
    assert html.count("<th>") == 30 and "<th>...</th>" not in html and "<th>metric 29</th>" in html
    assert page_table_problems(_page(html)) == []
    assert page_table_problems(_page(wide.to_html(max_cols=20))) [:2] == [
        "a table cut to some of its columns ('...'; first column 'metric_0')", "a header that is not words: 'metric_0'"]
    # a pivot's headers, at every level, in words too (the values' names and the pivoted column's)
    long = pd.DataFrame({"family": ["a", "a"], "init": ["one_plus", "normal"], "train_r2": [0.1, 0.2],
                         "heldout_object": [0.3, 0.4]})
    pivot = long.pivot_table(index="family", columns="init", values=["train_r2", "heldout_object"])
    assert page_table_problems(_page(table_html(pivot))) == []
    assert "a header that is not words: 'train_r2'" in page_table_problems(_page(pivot.to_html()))


# the chapters whose closing paragraph states what the build shows: generated from their claims
CLOSINGS = {"04_1_geometry": "geometry_closing", "05_2_binding_generalization": "generalization_closing",
            "e_pixel_encoders": "pixel_closing"}


@pytest.mark.parametrize("name", sorted(CLOSINGS))
def test_a_closing_is_generated_from_the_chapter_verdicts(name):
    """"The quick profile shows the qualitative pattern" outran the verdicts (none shown on
    05_2, 1 of 9 on appendix E); the closing is now the verdicts' own sentence, glued."""
    glued = CLOSINGS[name]
    cells = _notebook(name).cells
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    assert f'glue("{glued}", closing_sentence(' in code, f"{name}: its closing is not made from its claims"
    closing = [c.source for c in cells if c.cell_type == "markdown" and f"{{glue:text}}`{glued}`" in c.source]
    assert closing, f"{name}: no paragraph states the glued closing"
    prose = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    for phrase in ("qualitative pattern", "object-sized parts"):
        assert phrase not in prose, f"{name}: a closing says {phrase!r}, which no verdict of it says"
