"""bindcore.book: the cache key, skipping cached notebooks, failures, and the whole book on smoke."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from conftest import side_by_side_jobs
from pagecheck import PAGE_WIDTH_PX, page_table_problems

from bindcore.book import build as book
from bindcore.book import render, toc
from bindcore.book.colab import colab_link, repository
from bindcore.book.toc import EVERY_CHAPTER
from bindcore.cli import main
from bindcore.controlled.training import STORE_KIND
from bindcore.runtime import CONTEXT_ENV, context

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOK = textwrap.dedent(
    """\
    # ---
    # jupyter:
    #   jupytext:
    #     formats: ipynb,py:percent
    #   kernelspec:
    #     display_name: Python 3 (ipykernel)
    #     language: python
    #     name: python3
    # ---

    # %% [markdown]
    # # A chapter

    # %% tags=["parameters"]
    profile = "quick"
    seed = 0

    # %%
    print(profile)
    """
)


# --------------------------------------------------------------------------- cache key


def test_cache_key_depends_on_source_parameters_and_library():
    base = book.cache_key("print(1)", {"profile": "smoke"}, "lib")
    assert base == book.cache_key("print(1)", {"profile": "smoke"}, "lib")
    assert base != book.cache_key("print(2)", {"profile": "smoke"}, "lib")
    assert base != book.cache_key("print(1)", {"profile": "quick"}, "lib")
    assert base != book.cache_key("print(1)", {"profile": "smoke", "seed": 1}, "lib")
    assert base != book.cache_key("print(1)", {"profile": "smoke"}, "lib2")


def test_cache_key_ignores_parameter_order():
    assert book.cache_key("s", {"a": 1, "b": 2}, "l") == book.cache_key("s", {"b": 2, "a": 1}, "l")


def test_library_hash_tracks_every_python_file(tmp_path):
    pkg = tmp_path / "bindcore"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "mod.py").write_text("x = 1\n")
    first = book.library_hash(pkg)
    assert first == book.library_hash(pkg)
    (pkg / "sub" / "mod.py").write_text("x = 2\n")
    second = book.library_hash(pkg)
    assert second != first
    (pkg / "new.py").write_text("")
    assert book.library_hash(pkg) != second
    (pkg / "notes.txt").write_text("not code")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "junk.py").write_text("ignored")
    (pkg / "new.py").unlink()
    assert book.library_hash(pkg) == second


# --------------------------------------------------------------------------- execution with a fake papermill


@pytest.fixture
def fake_repo(tmp_path):
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    (root / "bindcore").mkdir()
    (root / "book").mkdir()
    (root / "bindcore" / "__init__.py").write_text("")
    (root / "notebooks" / "ch1.py").write_text(NOTEBOOK)
    (root / "notebooks" / "ch2.py").write_text(NOTEBOOK.replace("A chapter", "Another chapter"))
    (root / "book" / "intro.md").write_text("# Intro\n")
    (root / "_config.yml").write_text("title: test\n")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: c\n    chapters:\n"
        "      - file: notebooks/ch1\n      - file: notebooks/ch2\n"
    )
    return root


class FakePapermill:
    """Stands in for papermill: records calls and the kernel's environment, writes an output."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[dict] = []
        self.fail_on = fail_on

    def __call__(self, input_path, output_path, parameters, cwd):
        nb = nbformat.read(input_path, as_version=4)
        env = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "HF_HUB_OFFLINE", "TQDM_DISABLE")}
        store = {"BINDCORE_RESULTS": os.environ.get("BINDCORE_RESULTS"), **context()}
        self.calls.append({"input": Path(input_path), "parameters": dict(parameters), "cwd": Path(cwd), "env": env,
                           "store": store})
        nb.metadata["papermill"] = {"input_path": str(input_path), "output_path": str(output_path)}
        code = [c for c in nb.cells if c.cell_type == "code"]
        Path(output_path).write_text("half-written")  # papermill saves after every cell
        if self.fail_on is not None:
            from papermill.exceptions import PapermillExecutionError

            failing = next(c for c in code if self.fail_on in c.source)
            raise PapermillExecutionError(
                cell_index=nb.cells.index(failing), exec_count=2, source=failing.source,
                ename="ZeroDivisionError", evalue="division by zero", traceback=["Traceback ..."],
            )
        for i, cell in enumerate(code, start=1):
            cell.execution_count = i
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=parameters["profile"] + "\n")]
        nbformat.write(nb, output_path)


@pytest.fixture
def fake_papermill(monkeypatch):
    fake = FakePapermill()
    monkeypatch.setattr(book, "_run_papermill", fake)
    return fake


def test_execute_book_skips_cached_notebooks(fake_repo, fake_papermill, tmp_path):
    build = tmp_path / "build"
    runs = book.execute_book("smoke", build, root=fake_repo)
    assert [r.cached for r in runs] == [False, False]
    assert len(fake_papermill.calls) == 2
    executed = build / "executed" / "smoke" / "ch1.ipynb"
    nb = nbformat.read(executed, as_version=4)
    assert nb.metadata["bindcore"]["parameters"] == {"profile": "smoke"}
    assert nb.metadata["papermill"]["input_path"] == "notebooks/ch1.py"

    runs = book.execute_book("smoke", build, root=fake_repo)
    assert [r.cached for r in runs] == [True, True]
    assert len(fake_papermill.calls) == 2

    # Another profile is another key (and another folder).
    book.execute_book("quick", build, root=fake_repo)
    assert len(fake_papermill.calls) == 4

    # A library change invalidates every notebook.
    (fake_repo / "bindcore" / "scenes.py").write_text("N = 3\n")
    runs = book.execute_book("smoke", build, root=fake_repo)
    assert [r.cached for r in runs] == [False, False]
    assert len(fake_papermill.calls) == 6

    # A newly published record, or a changed one, invalidates every notebook (a chapter
    # shows the committed records: after a pull that brings records it shows them).
    record = fake_repo / "published" / "train-2" / "abc" / "result.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"metrics": {"test_object_2": 0.5}}')
    runs = book.execute_book("smoke", build, root=fake_repo)
    assert [r.cached for r in runs] == [False, False]
    record.write_text('{"metrics": {"test_object_2": 0.6}}')
    assert not any(r.cached for r in book.execute_book("smoke", build, root=fake_repo))
    assert all(r.cached for r in book.execute_book("smoke", build, root=fake_repo))
    assert len(fake_papermill.calls) == 10

    # A source change invalidates that notebook only.
    (fake_repo / "notebooks" / "ch2.py").write_text(NOTEBOOK + "\n# %%\nprint('more')\n")
    runs = book.execute_book("smoke", build, root=fake_repo)
    assert [r.cached for r in runs] == [True, False]
    assert len(fake_papermill.calls) == 11

    # --force re-executes; --only restricts.
    runs = book.execute_book("smoke", build, force=True, only=["ch1"], root=fake_repo)
    assert [(r.name, r.cached) for r in runs] == [("ch1", False)]
    assert len(fake_papermill.calls) == 12


def test_execute_notebook_parameters_are_part_of_the_key(fake_repo, fake_papermill, tmp_path):
    out = tmp_path / "out"
    book.execute_notebook("ch1", "smoke", out, root=fake_repo)
    book.execute_notebook("ch1", "smoke", out, parameters={"seed": 3}, root=fake_repo)
    book.execute_notebook("ch1", "smoke", out, parameters={"seed": 3}, root=fake_repo)
    assert [c["parameters"] for c in fake_papermill.calls] == [{"profile": "smoke"}, {"profile": "smoke", "seed": 3}]


def test_kernel_environment_and_cwd(fake_repo, fake_papermill, tmp_path, monkeypatch):
    monkeypatch.delenv(CONTEXT_ENV, raising=False)
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    book.execute_notebook("ch1", "smoke", tmp_path / "out", root=fake_repo)
    call = fake_papermill.calls[0]
    assert call["env"] == {"OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE"),
                           "TQDM_DISABLE": "1"}
    assert call["store"]["executed"] == str(tmp_path / "out")  # where the other chapters' executions are
    assert {"record", "tally"} <= set(call["store"]) and "stored_only" not in call["store"]
    assert call["cwd"] == fake_repo / "notebooks"
    assert CONTEXT_ENV not in os.environ  # restored afterwards
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_a_page_that_reads_a_named_chapter_is_cached_in_the_second_build(fake_repo, fake_papermill, tmp_path,
                                                                          monkeypatch):
    """A page reading one chapter's run parameters (declared in READS) is keyed on that
    chapter alone: a chapter after it in the book, which the first build executes after
    it, does not make it stale in the second; a page that reads every chapter is keyed on
    every other one."""
    monkeypatch.setattr(book, "READS", {"ch3": ("ch1",), "ch4": EVERY_CHAPTER})
    monkeypatch.setattr(toc, "READS", book.READS)
    assert toc.chapters_read("ch3") == {"ch1"} and toc.chapters_read("ch4") is None
    assert toc.chapters_read("ch1") == set()
    (fake_repo / "notebooks" / "ch3.py").write_text(NOTEBOOK.replace("A chapter", "A reading chapter"))
    (fake_repo / "notebooks" / "ch4.py").write_text(NOTEBOOK.replace("A chapter", "A last chapter"))
    toc_text = (fake_repo / "_toc.yml").read_text() + "      - file: notebooks/ch3\n      - file: notebooks/ch4\n"
    (fake_repo / "_toc.yml").write_text(toc_text)
    build = tmp_path / "build"
    assert not any(r.cached for r in book.execute_book("smoke", build, root=fake_repo))
    assert all(r.cached for r in book.execute_book("smoke", build, root=fake_repo))
    # what it reads still keys it: ch1's record, and no other
    assert set(book._run_records(build / "executed" / "smoke", "ch3", toc.chapters_read("ch3"))) == {"ch1"}


def test_every_page_declares_what_it_reads_of_other_chapters():
    """The declarations of READS and READS_STORE match the pages: a page that calls
    ran_with("<chapter>") lists that chapter (or reads every chapter), the page that gathers
    every chapter's results says so, and a page that reads every stored training run
    (figure 9) is in READS_STORE; no page declares what it does not read."""
    for name in book.toc_notebooks():
        source = (ROOT / "notebooks" / f"{name}.py").read_text(encoding="utf-8")
        named = set(re.findall(r'ran_with\(\s*"([^"]+)"', source))
        gathers = "gather_results(" in source
        declared = toc.READS.get(name, ())
        if gathers:
            assert declared == EVERY_CHAPTER, name
        elif declared == EVERY_CHAPTER:
            raise AssertionError(f"{name} declares every chapter but gathers none")
        else:
            assert set(declared) == named, name
        assert (name in toc.READS_STORE) == ("figure9_table(" in source), name


def test_build_book_skips_cached_notebooks(fake_repo, fake_papermill, tmp_path, monkeypatch):
    html_calls = []

    def fake_build_html(profile, build_dir, force=False, strict=False, *, root=None):
        html_calls.append(profile)
        return Path(build_dir) / "html" / "index.html"

    monkeypatch.setattr(book, "build_html", fake_build_html)
    first = book.build_book("smoke", tmp_path / "build", root=fake_repo)
    book.build_book("smoke", tmp_path / "build", root=fake_repo)
    assert first == tmp_path / "build" / "html" / "index.html"
    assert len(fake_papermill.calls) == 2  # two notebooks, executed once each
    assert html_calls == ["smoke", "smoke"]
    times = json.loads((tmp_path / "build" / "html" / book.BUILD_TIMES).read_text())
    assert [(c["chapter"], c["cached"]) for c in times["chapters"]] == [("ch1", True), ("ch2", True)]
    assert times["profile"] == "smoke" and times["total_seconds"] >= times["html_seconds"] >= 0


def test_a_build_without_html_measures_itself_too(fake_repo, fake_papermill, tmp_path, capsys):
    """`bindcore book --no-html` writes <build-dir>/build-times.json, as a full build writes
    it beside the HTML: what benchmarks/book_times.py reads."""
    runs = book.execute_and_time("smoke", tmp_path / "build", root=fake_repo)
    times = json.loads((tmp_path / "build" / book.BUILD_TIMES).read_text())
    assert [c["chapter"] for c in times["chapters"]] == [r.name for r in runs] == ["ch1", "ch2"]
    assert times["html_seconds"] == 0.0 and times["total_seconds"] >= 0 and not any(c["cached"] for c in times["chapters"])
    assert "[book]   ch1" in capsys.readouterr().out


def test_failure_names_notebook_and_cell_and_leaves_nothing_half_written(fake_repo, monkeypatch, tmp_path):
    out = tmp_path / "out"
    monkeypatch.setattr(book, "_run_papermill", FakePapermill())
    good = book.execute_notebook("ch1", "smoke", out, root=fake_repo)
    before = good.read_bytes()

    (fake_repo / "notebooks" / "ch1.py").write_text(NOTEBOOK + "\n# %%\n1 / 0\n")
    monkeypatch.setattr(book, "_run_papermill", FakePapermill(fail_on="1 / 0"))
    with pytest.raises(book.NotebookExecutionError) as info:
        book.execute_notebook("ch1", "smoke", out, root=fake_repo)
    message = str(info.value)
    assert "ch1" in message and "cell 4 of 4" in message and "1 / 0" in message
    assert "ZeroDivisionError" in message
    assert good.read_bytes() == before  # the previous good copy is untouched
    assert sorted(p.name for p in out.iterdir()) == ["ch1.ipynb"]  # no temp files left


def test_unknown_profile_and_notebook(fake_repo, fake_papermill, tmp_path):
    with pytest.raises(ValueError, match="profile"):
        book.execute_book("huge", tmp_path, root=fake_repo)
    with pytest.raises(ValueError, match="ch9"):
        book.execute_book("smoke", tmp_path, only=["ch9"], root=fake_repo)
    with pytest.raises(FileNotFoundError, match="nope"):
        book.execute_notebook("nope", "smoke", tmp_path, root=fake_repo)


def test_toc_notebooks(fake_repo):
    assert book.toc_files(fake_repo) == ["book/intro", "notebooks/ch1", "notebooks/ch2"]
    assert book.toc_notebooks(fake_repo) == ["ch1", "ch2"]


def test_staging_holds_only_executed_ipynb(fake_repo, fake_papermill, tmp_path):
    build = tmp_path / "build"
    book.execute_book("smoke", build, root=fake_repo)
    staging = tmp_path / "staging"
    (staging / "notebooks").mkdir(parents=True)
    (staging / "notebooks" / "stale.ipynb").write_text("{}")
    render.sync_tree(render.staging_files(fake_repo, "smoke", build / "executed" / "smoke"), staging)
    files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    assert files == ["_config.yml", "_toc.yml", "book/intro.md", "notebooks/ch1.ipynb", "notebooks/ch2.ipynb"]
    assert nbformat.read(staging / "notebooks" / "ch1.ipynb", as_version=4).metadata["bindcore"]


def test_cli_book_arguments(monkeypatch, tmp_path, capsys):
    seen = []
    monkeypatch.setattr(book, "execute_and_time", lambda profile, build_dir, **kw: seen.append((profile, kw)))
    assert main(["book", "--profile", "smoke", "--only", "a", "--only", "b", "--no-html",
                 "--build-dir", str(tmp_path)]) == 0
    assert seen == [("smoke", {"force": False, "only": ["a", "b"], "recompute": False, "jobs": 1})]
    assert main(["book", "--profile", "huge"]) == 2
    err = capsys.readouterr().err
    assert "--profile" in err and "'quick'" in err and len(err.strip().splitlines()) == 1


def test_sync_pairs_is_idempotent(fake_repo):
    changed = book.sync_pairs(fake_repo)
    assert sorted(p.name for p in changed) == ["ch1.ipynb", "ch2.ipynb"]
    assert book.sync_pairs(fake_repo) == []
    nb = nbformat.read(fake_repo / "notebooks" / "ch1.ipynb", as_version=4)
    assert all(c.get("outputs") == [] and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")
    (fake_repo / "notebooks" / "ch1.py").write_text(NOTEBOOK.replace("A chapter", "Renamed"))
    assert [p.name for p in book.sync_pairs(fake_repo, check=True)] == ["ch1.ipynb"]
    assert [p.name for p in book.sync_pairs(fake_repo)] == ["ch1.ipynb"]
    assert book.sync_pairs(fake_repo, check=True) == []


# --------------------------------------------------------------------------- end to end


def _tracked_status() -> str | None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    result = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    return result.stdout


@pytest.mark.slow
def test_build_book_smoke_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "results"))  # keep the repository's results/ clean
    before = _tracked_status()
    # side by side, each chapter runs _execute in its own process, as a one-at-a-time build runs it here
    index = book.build_book("smoke", build_dir=tmp_path, jobs=side_by_side_jobs())
    assert index == tmp_path / "html" / "index.html"
    assert index.is_file()
    times = json.loads((tmp_path / "html" / book.BUILD_TIMES).read_text())  # the build's measurement of itself
    assert [c["chapter"] for c in times["chapters"]] == book.toc_notebooks()
    assert all(1 <= len(c["slowest_cells"]) <= 3 and c["seconds"] > 0 for c in times["chapters"])

    html = tmp_path / "html"
    for entry in book.toc_files():
        assert (html / f"{entry}.html").is_file(), f"no HTML page for {entry}"
    intro = (html / "book" / "intro.html").read_text(encoding="utf-8")
    assert "headline findings" in intro, "the introduction does not open with the report's outcome"

    for name in book.toc_notebooks():
        executed = tmp_path / "executed" / "smoke" / f"{name}.ipynb"
        nb = nbformat.read(executed, as_version=4)
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        assert outputs, f"{name}: executed notebook has no outputs"
        errors = [o for o in outputs if o.output_type == "error"]
        assert not errors, f"{name}: error outputs {json.dumps(errors)[:500]}"
        page = (html / "notebooks" / f"{name}.html").read_text(encoding="utf-8")
        for glued in re.findall(r'<span class="pasted-text">(.*?)</span>', page):
            assert not re.fullmatch(r"\(.*,.*\)", glued), f"{name}: a glued number rendered as a tuple: {glued}"
        for o in outputs:  # a figure wider than the page is shown scaled down, its text with it
            if "image/png" in o.get("data", {}):
                width = struct.unpack(">I", base64.b64decode(o["data"]["image/png"][:44])[16:20])[0]
                assert width <= 1.1 * PAGE_WIDTH_PX, f"{name}: a figure {width} px wide, shown at {PAGE_WIDTH_PX}"
        colab = colab_link(name, *repository(ROOT)).removeprefix("https://")
        assert colab in page, f"{name}: no Colab launch link in the HTML page"

    for name in book.toc_notebooks():  # the definitions a chapter exports ran on its page, as Colab shows them
        nb = nbformat.read(tmp_path / "executed" / "smoke" / f"{name}.ipynb", as_version=4)
        exported = [c for c in nb.cells if c.cell_type == "code" and "export" in c.metadata.get("tags", [])]
        source = (ROOT / "notebooks" / f"{name}.py").read_text(encoding="utf-8")
        assert len(exported) == source.count("\n# export: "), f"{name}: an export cell is missing from the page"
        assert all(c.execution_count for c in exported), f"{name}: an export cell did not run"
        shown = "".join(o.get("data", {}).get("text/markdown", "") for c in nb.cells if c.cell_type == "code"
                        and "show_source(" in c.source for o in c.get("outputs", []))
        for args in re.findall(r"show_source\(([^)]*)\)", "".join(c.source for c in nb.cells)):
            for shown_name in re.findall(r"[\w.]+", args):
                assert f"def {shown_name.split('.')[-1]}(" in shown, f"{name}: {shown_name} not shown"
        if name == "05_2_binding_generalization":
            text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
            assert "fast == reference" in text, "05_2: the fast encoder was not checked against the page's reference"

    assert _tracked_status() == before, "building the book modified tracked files of the repository"
    assert list((tmp_path / "results" / STORE_KIND).glob("*/result.json")), "the chapters stored no training run"

    assert "pre-wrap" in (html / "_static" / "bindcore.css").read_text(), "the book's CSS does not wrap output lines"
    for name in book.toc_notebooks():
        _check_reader_page(name, (html / "notebooks" / f"{name}.html").read_text(encoding="utf-8"))
        run = nbformat.read(tmp_path / "executed" / "smoke" / f"{name}.ipynb", as_version=4).metadata["bindcore"]
        assert run["run_parameters"]["profile"] == "smoke", f"{name}: no record of the parameters it ran with"


def _check_reader_page(name: str, page: str) -> None:
    """A chapter's page as a reader meets it: one "Parameters of this run" toggle
    holding the parameters cell and papermill's injected parameters; no library log lines;
    the book's CSS (output lines wrap); tables without pandas' 0..n index; a table wider
    than 10 columns only in a full-width cell; no number in a table cell that may wrap, no table
    over 15 rows unfolded, no column cut, headers in words (bindcore.book.tables.page_table_problems)."""
    import re


    assert page.count('collapsed admonition-title">Parameters of this run<') == 1, f"{name}: no parameters toggle"
    toggle = page[page.index("Parameters of this run"):]
    toggle = toggle[:toggle.index("</details>")]
    assert "profile" in toggle and "given to papermill" in toggle, f"{name}: the injected parameters are not in it"
    assert "tag_injected-parameters" not in page, f"{name}: papermill's parameters cell shown on its own"
    for line in ("WARNING:root", "No pretrained weights loaded", "INFO:"):
        assert line not in page, f"{name}: library logging ({line!r}) printed into the page"
    assert "_static/bindcore.css" in page, f"{name}: the page does not load the book's CSS"
    assert "{glue" not in page, f"{name}: a glue role was not resolved (its value not glued by the chapter)"
    cells = re.split(r'<div class="cell ', page)[1:]
    for cell in cells:
        for table in re.findall(r'<table class="dataframe[^"]*">(.*?)</table>', cell, re.S):
            body = re.search(r"<tbody>(.*?)</tbody>", table, re.S).group(1)
            first = [re.sub(r"<.*?>", "", row).split() for row in re.findall(r"<tr>\s*<th>(.*?)</th>", body, re.S)]
            assert first != [[str(i)] for i in range(len(first))] or not first, f"{name}: a table shows a 0..n index"
            head = re.search(r"<thead>(.*?)</thead>", table, re.S).group(1)
            n_columns = len(re.findall(r"<th", head.split("</tr>")[0]))
            assert n_columns <= 10 or "tag_full-width" in cell[:200], (
                f"{name}: a table of {n_columns} columns in the narrow text column")
    problems = page_table_problems(page)
    assert not problems, f"{name}: " + "; ".join(problems[:5])


def test_cells_time_out_on_smoke_and_quick_but_not_on_paper(monkeypatch, tmp_path):
    seen = {}

    class Fake:
        @staticmethod
        def execute_notebook(*args, **kwargs):
            seen.update(kwargs)

    monkeypatch.setitem(sys.modules, "papermill", Fake)
    for profile, limit in (("smoke", 900), ("quick", 3 * 3600), ("colab", None), ("paper", None)):
        book._run_papermill(tmp_path / "in.ipynb", tmp_path / "out.ipynb", {"profile": profile}, tmp_path)
        assert seen["execution_timeout"] == limit


def test_only_the_page_that_gathers_every_chapter_runs_with_a_store_that_computes_nothing_new(
        fake_repo, fake_papermill, tmp_path, monkeypatch):
    monkeypatch.setattr(book, "READS", {"ch2": EVERY_CHAPTER})
    book.execute_book("smoke", tmp_path / "build", root=fake_repo)
    assert [c["store"].get("stored_only") for c in fake_papermill.calls] == [None, True]
    assert "stored_only" not in context()  # restored afterwards


def test_recompute_executes_every_chapter_again_without_published_records_in_an_empty_store(
        fake_repo, fake_papermill, tmp_path, monkeypatch):
    monkeypatch.delenv(CONTEXT_ENV, raising=False)
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "my-results"))
    build = tmp_path / "build"
    book.execute_book("smoke", build, root=fake_repo)
    assert [c["store"].get("published") for c in fake_papermill.calls] == [None, None]
    left_over = build / "recomputed-results" / "train-2" / "old"
    left_over.mkdir(parents=True)
    runs = book.execute_book("smoke", build, root=fake_repo, recompute=True)
    assert [r.cached for r in runs] == [False, False]  # cached chapters run again
    for call in fake_papermill.calls[2:]:
        assert call["store"]["published"] is False
        assert call["store"]["BINDCORE_RESULTS"] == str(build / "recomputed-results")
    assert not left_over.exists()  # nothing computed before is reused
    assert os.environ["BINDCORE_RESULTS"] == str(tmp_path / "my-results")  # restored afterwards
    assert CONTEXT_ENV not in os.environ


def test_no_published_records_in_a_context_without_them():
    import subprocess
    import sys

    code = "from bindcore.store import PUBLISHED_ROOT, ResultStore; print(PUBLISHED_ROOT, ResultStore().published)"
    env = {**os.environ, CONTEXT_ENV: '{"published": false}'}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "None"]


def test_the_build_times_of_two_builds_read_side_by_side_per_chapter():
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_times", Path(book.__file__).parents[2] / "benchmarks" /
                                                  "book_times.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    machine = {"hostname": "vm", "cpu_threads": 2}
    before = {"profile": "quick", "machine": machine, "html_seconds": 30.0, "total_seconds": 600.0, "chapters": [
        {"chapter": "a", "cached": False, "seconds": 500.0, "slowest_cells": [{"seconds": 400.0, "source": "train()"}]},
        {"chapter": "b", "cached": False, "seconds": 70.0, "slowest_cells": []}]}
    after = {**before, "total_seconds": 90.0, "chapters": [
        {"chapter": "a", "cached": True, "seconds": 500.0, "slowest_cells": []},
        {"chapter": "c", "cached": False, "seconds": 60.0, "slowest_cells": []}]}
    rows = mod.times_table({"before": before, "after": after}, slowest=True)
    assert rows[0] == ["chapter", "before", "after"]
    assert rows[1] == ["a", "500 s [slowest 400 s: train()]", "500 s (cached)"]
    assert rows[2] == ["b", "70 s", "-"] and rows[3] == ["c", "-", "60 s"]
    assert rows[5] == ["total", "600 s (10.0 min)", "90 s (1.5 min)"]


def test_chapters_side_by_side_each_in_its_own_process_with_its_share_of_the_cores(fake_repo, tmp_path,
                                                                                   monkeypatch):
    """``jobs=2`` with the real papermill: two chapters run at once, each kernel told its
    share of the cores; the page declared to read other chapters (READS) starts after
    every chapter before it has finished; a second build reuses all three."""
    monkeypatch.setattr(book, "READS", {"ch3": ("ch1", "ch2")})
    monkeypatch.setattr(toc, "READS", book.READS)
    code = ('import os\nimport json\n'
            'print(profile, json.loads(os.environ["BINDCORE_CONTEXT"])["cpus"], os.environ.get("OMP_NUM_THREADS"))')
    for name in ("ch1", "ch2"):
        src = (fake_repo / "notebooks" / f"{name}.py").read_text()
        (fake_repo / "notebooks" / f"{name}.py").write_text(src.replace("print(profile)", code))
    ch1 = fake_repo / "notebooks" / "ch1.py"  # the slower one: ch3 could start beside it but must not
    ch1.write_text(ch1.read_text().replace("import os\n", "import os, time\ntime.sleep(3)\n"))
    (fake_repo / "notebooks" / "ch3.py").write_text(NOTEBOOK.replace("print(profile)", "print('reads')"))
    toc_text = (fake_repo / "_toc.yml").read_text() + "      - file: notebooks/ch3\n"
    (fake_repo / "_toc.yml").write_text(toc_text)
    build = tmp_path / "build"
    runs = book.execute_book("smoke", build, root=fake_repo, jobs=2)
    assert [r.name for r in runs] == ["ch1", "ch2", "ch3"] and not any(r.cached for r in runs)
    times = {}
    for r in runs:
        nb = nbformat.read(r.path, as_version=4)
        times[r.name] = (nb.metadata["papermill"]["start_time"], nb.metadata["papermill"]["end_time"])
        if r.name != "ch3":
            share = str(max(1, (os.cpu_count() or 1) // 2))
            assert nb.cells[-1].outputs[0]["text"].split() == ["smoke", share, share]
    assert times["ch3"][0] >= max(times["ch1"][1], times["ch2"][1])  # it read what they ran
    assert all(r.cached for r in book.execute_book("smoke", build, root=fake_repo, jobs=2))


def test_a_chapter_failing_beside_others_names_itself_and_the_rest_still_finish(fake_repo, tmp_path):
    (fake_repo / "notebooks" / "ch1.py").write_text(NOTEBOOK.replace("print(profile)", "1 / 0"))
    with pytest.raises(book.NotebookExecutionError, match="ch1") as err:
        book.execute_book("smoke", tmp_path / "build", root=fake_repo, jobs=2)
    assert "ZeroDivisionError" in str(err.value)
    assert (tmp_path / "build" / "executed" / "smoke" / "ch2.ipynb").is_file()


def test_an_interrupted_side_by_side_build_leaves_no_chapter_process(fake_repo, tmp_path, monkeypatch, ctrl_c):
    import signal
    import subprocess
    import threading
    import time

    for name in ("ch1", "ch2"):
        (fake_repo / "notebooks" / f"{name}.py").write_text(NOTEBOOK.replace("print(profile)", "import time\ntime.sleep(60)"))
    started, real_popen, pressed = [], subprocess.Popen, []

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    executed = tmp_path / "build" / "executed" / "smoke"
    other = executed / ".ch1.1.another-build"  # the work folder of another build in the same folder
    other.mkdir(parents=True)

    def ctrl_c_once_both_chapters_execute():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if executed.is_dir() and len(list(executed.glob(".ch*"))) == 3:
                pressed.append(time.monotonic())
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.05)

    monkeypatch.setattr(subprocess, "Popen", popen)
    presser = threading.Thread(target=ctrl_c_once_both_chapters_execute)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            book.execute_book("smoke", tmp_path / "build", root=fake_repo, jobs=2)
    finally:
        presser.join()
    assert pressed and len(started) == 2 and all(p.poll() is not None for p in started)
    assert not list(executed.glob("*.ipynb"))  # stopped, not left to finish
    # no work folder of this build's chapters left, and the other build's kept
    assert [p.name for p in executed.iterdir() if p.name.startswith(".ch")] == [other.name]


def test_a_second_recomputing_build_in_one_folder_is_refused_while_the_first_runs(fake_repo, fake_papermill,
                                                                                   tmp_path):
    build = tmp_path / "build"
    with book.recomputing(build) as store:
        (store / "train-2").mkdir()  # what the first build computed so far
        with pytest.raises(ValueError, match="another `bindcore book --recompute` is running in"):
            book.execute_book("smoke", build, root=fake_repo, recompute=True)
        assert (store / "train-2").is_dir() and not fake_papermill.calls  # its store kept, nothing executed
    assert [r.cached for r in book.execute_book("smoke", build, root=fake_repo, recompute=True)] == [False, False]


def test_pages_that_read_other_chapters_wait_for_them_side_by_side():
    """Under --jobs, the report (gathers every chapter), a page that reads the parameters other
    chapters ran with, and §5.4 (figure 9 over every stored training run) start only after the
    chapters before them; a chapter that reads only its own work does not wait."""
    waits = {name: toc.waits_for_earlier(name) for name in book.toc_notebooks()}
    assert waits["reproduction_report"] and waits["05_4_functional_form"] and waits["d_additional"]
    assert not waits["05_2_binding_generalization"] and not waits["03_formalisation"]


def test_the_cache_key_depends_on_the_result_store_a_chapter_reads(tmp_path, monkeypatch):
    """A chapter executed against one result store is executed again against another
    (its numbers come from there), not served from the book's cache."""
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "one"))
    one = book.inputs_hash(ROOT)
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "two"))
    assert book.inputs_hash(ROOT) != one
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "one"))
    assert book.inputs_hash(ROOT) == one


def test_a_garbled_executed_notebook_is_rendered_without_outputs_and_named(tmp_path, capsys):
    """An executed notebook that cannot be read (cut short, edited) no longer fails every
    later HTML build with a traceback naming no file: its page is rendered from the
    source, and the build says which file and how to execute it again."""
    name = book.toc_notebooks(ROOT)[0]
    (tmp_path / f"{name}.ipynb").write_text('{"cells": [')
    files = render.staging_files(ROOT, "smoke", tmp_path)
    assert f"notebooks/{name}.ipynb" in files
    out = capsys.readouterr().out
    assert f"{tmp_path / name}.ipynb cannot be read" in out and f"--only {name}" in out


def test_a_build_of_some_chapters_names_the_other_pages_that_are_out_of_date(fake_repo, fake_papermill, tmp_path,
                                                                             capsys):
    build = tmp_path / "build"
    book.execute_book("smoke", build, root=fake_repo)
    (fake_repo / "notebooks" / "ch2.py").write_text(NOTEBOOK.replace("A chapter", "Another chapter, edited"))
    capsys.readouterr()
    book.execute_book("smoke", build, only=["ch1"], root=fake_repo)
    out = capsys.readouterr().out
    assert "the page of ch2 shows an earlier execution" in out and "the page of ch1" not in out
    book.execute_book("smoke", build, root=fake_repo)  # brought up to date: no note
    book.execute_book("smoke", build, only=["ch1"], root=fake_repo)
    assert "shows an earlier execution" not in capsys.readouterr().out


def test_the_build_counts_per_chapter_the_records_it_reused_and_computed(fake_repo, monkeypatch, tmp_path, capsys):
    from bindcore.store import Kind, ResultStore

    kind, published, local = Kind("toy-1"), tmp_path / "published", tmp_path / "results"
    ResultStore(published, published=None).cached(kind, {"a": 1}, lambda: {"x": 1})  # a published record

    def chapter(*args):  # the kernel: reads the published record, computes one and reads it again
        store = ResultStore(local, published=published)
        store.cached(kind, {"a": 1}, lambda: pytest.fail("the published record is there"))
        store.cached(kind, {"a": 2}, lambda: {"x": 2})
        store.cached(kind, {"a": 2}, lambda: pytest.fail("computed above"))
        FakePapermill()(*args)

    monkeypatch.setattr(book, "_run_papermill", chapter)
    build = tmp_path / "build"
    book.execute_and_time("smoke", build, root=fake_repo, only=["ch1"])
    meta = nbformat.read(build / "executed" / "smoke" / "ch1.ipynb", as_version=4).metadata["bindcore"]
    assert meta["records"] == {"published": 1, "local": 0, "computed": 1}
    assert "records of the 1 executed chapter(s): 1 reused (1 published, 0 local), 1 computed" in capsys.readouterr().out
    book.execute_and_time("smoke", build, root=fake_repo, only=["ch1"])  # cached: nothing executed, no count
    assert "records of the" not in capsys.readouterr().out
