"""The shape of the library (bindcore/__init__ and shared/DESIGN.md): the science and the
experiments never import the book (bindcore/book/, the verdicts in bindcore/verdicts/ and
the figures in bindcore/figures.py); the book neither trains nor fits; the paper's numbers
and claims live in bindcore/paper.py, the book and bindcore/experiments/ (the paper's
experiments, with the paper's numbers beside theirs) only; chapters collect their
parameters from their own namespace; every module imports first (the packages' __init__
re-export their modules), and the command line starts without torch."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bindcore.book.chapter import start_chapter
from bindcore.parameters import chapter_parameters, parameter_names, profile_tables
from bindcore.runtime import PROFILES

PACKAGE = Path(__file__).resolve().parents[1] / "bindcore"
ENTRY_POINTS = {"cli.py", "__main__.py"}  # the command line builds the book: it may import it


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _is_book(rel: str) -> bool:
    """The book's layer: its build machinery (book/), the verdicts on the paper's claims
    (verdicts/) and the figures (figures.py)."""
    return rel.startswith(("book/", "verdicts/")) or rel == "figures.py"


def _is_experiments(rel: str) -> bool:
    return rel.startswith("experiments/")


# the book's layer as modules (:func:`_is_book`)
BOOK_MODULES = ("bindcore.book", "bindcore.verdicts", "bindcore.figures")

# everything below the book: the science, the paper's numbers and the experiments
NOT_BOOK = [p for p in sorted(PACKAGE.rglob("*.py")) if not _is_book(_rel(p)) and _rel(p) not in ENTRY_POINTS]
SCIENCE = [p for p in NOT_BOOK if not _is_experiments(_rel(p)) and _rel(p) != "paper.py"]
BOOK = [p for p in sorted(PACKAGE.rglob("*.py")) if _is_book(_rel(p))]

# what trains a model, runs a sweep or fits a probe or an approximator: the experiments'
# (bindcore/experiments/) to call, never the book's
TRAINS_OR_FITS = (
    "bindcore.experiments",
    "bindcore.sweep.run_sweep",
    "bindcore.controlled.training",
    "bindcore.controlled.runs",
    "bindcore.controlled.stacked",
    "bindcore.analysis.complexity.stored_sweeps",
    "bindcore.analysis.complexity.own_split_fit",
    "bindcore.analysis.complexity.tree_components",
    "bindcore.analysis.geometry_sets.decomposition",
    "bindcore.analysis.geometry_sets.editing",
    "bindcore.analysis.geometry_sets.attribution",
    "bindcore.analysis.geometry_sets.three_object_analysis",
    "bindcore.analysis.geometry_sets.mds_analysis",
    "bindcore.analysis.embedding_sets.pretrained_binding",
    "bindcore.analysis.probes.controlled_binding_data",
)


def _module(path: Path) -> str:
    parts = ["bindcore", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it, as an absolute name."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out |= {f"{name}.{a.name}" for a in node.names}
    return out


def _strings(path: Path) -> list[tuple[int, str]]:
    """String constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_there_is_science_and_a_book():
    names = {_rel(p) for p in SCIENCE}
    assert {"controlled/training.py", "analysis/metrics.py", "encoders/base.py", "data/core.py", "store.py"} <= names
    assert (PACKAGE / "book" / "build.py").is_file() and (PACKAGE / "paper.py").is_file()
    assert {"experiments/geometry.py", "experiments/report.py"} <= {_rel(p) for p in NOT_BOOK} - names


@pytest.mark.parametrize("path", NOT_BOOK, ids=_rel)
def test_science_never_imports_the_book(path):
    book = sorted(m for m in _imports(path) if any(m == b or m.startswith(b + ".") for b in BOOK_MODULES))
    assert not book, f"bindcore/{_rel(path)} imports {book}: science modules import nothing from bindcore.book"


@pytest.mark.parametrize("path", BOOK, ids=_rel)
def test_the_book_neither_trains_nor_fits(path):
    """The book formats and judges what the experiments return; it imports nothing that
    trains, sweeps or fits (:data:`TRAINS_OR_FITS`)."""
    found = sorted(m for m in _imports(path) if any(m == t or m.startswith(t + ".") for t in TRAINS_OR_FITS))
    assert not found, f"bindcore/{_rel(path)} imports {found}: the book neither trains nor fits"


def test_paper_numbers_are_defined_once_in_paper_py():
    owners = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign) else []
            for t in targets:
                # PAPER_DATA (book/tables.py) names our datasets standing for the paper's
                if isinstance(t, ast.Name) and t.id.startswith("PAPER_") and t.id != "PAPER_DATA":
                    owners.setdefault(t.id, []).append(_rel(path))
    assert owners, "bindcore/paper.py defines no PAPER_* table"
    assert {name: where for name, where in owners.items() if where != ["paper.py"]} == {}


@pytest.mark.parametrize("path", SCIENCE, ids=_rel)
def test_science_holds_no_claim_or_paper_statement(path):
    """A string of a science module that speaks of the paper (beyond the profile or
    protocol named "paper") is a claim or a paper number: it belongs in paper.py or the
    book (book/, verdicts/, figures.py)."""
    found = [(line, s[:80]) for line, s in _strings(path) if re.search(r"\bpaper\b", s, re.I) and s != "paper"]
    assert not found, f"bindcore/{_rel(path)}: {found}"


def test_every_chapter_has_the_same_parameters_in_every_profile():
    for chapter, table in profile_tables().items():
        assert set(table) == set(PROFILES), chapter
        for profile in PROFILES:
            assert list(table[profile]) == parameter_names(chapter), (chapter, profile)


def test_start_chapter_collects_the_parameters_cell(monkeypatch, tmp_path):
    recorded = tmp_path / "parameters.json"
    monkeypatch.setenv("BINDCORE_CONTEXT", json.dumps({"record": str(recorded)}))
    namespace = {"profile": "smoke", "fractions": [0.3], "steps": 7, "workers": 2,
                 "tree_grid": lambda: None,  # a function of the same name is no parameter
                 "In": [], "np": object()}
    P = start_chapter("controlled_complexity", namespace)
    defaults = chapter_parameters("controlled_complexity", "smoke")
    assert P == {**defaults, "fractions": [0.3], "steps": 7}

    assert json.loads(recorded.read_text()) == P  # what the book build puts in the executed notebook


def test_the_build_talks_to_what_it_starts_through_two_environment_variables_at_most():
    """The result store's root (the user's) and the context a bindcore process gives the processes
    it starts (bindcore.runtime.CONTEXT_ENV); there were nine."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        names |= set(re.findall(r"BINDCORE_[A-Z_]+", path.read_text(encoding="utf-8")))
    assert names == {"BINDCORE_RESULTS", "BINDCORE_CONTEXT"}


def test_no_module_or_class_is_looked_up_by_its_name():
    """Plain imports or a dict of classes, never ``importlib.import_module`` (a config's scene input,
    the code a page shows)."""
    for path in PACKAGE.rglob("*.py"):
        calls = [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Call)
                 and ast.unparse(n.func) in ("importlib.import_module", "import_module", "__import__")]
        assert not calls, f"bindcore/{_rel(path)} imports a module named by a string"


def _python(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a fresh Python that imports this checkout's bindcore."""
    setup = f"import sys; sys.path.insert(0, {str(PACKAGE.parent)!r})\n"
    return subprocess.run([sys.executable, "-c", setup + code], capture_output=True, text=True, timeout=600)


def test_every_module_imports_first_and_each_package_has_what_it_lists():
    """The packages' __init__ re-export their modules for the chapters, and bindcore.analysis and
    bindcore.controlled import each other's modules: each module of bindcore must import when it
    is the first one imported (a cycle fails for some first module); each name of a package's
    ``__all__`` exists (bindcore.book's tables load on first use)."""
    modules = sorted(_module(p) for p in PACKAGE.rglob("*.py") if p.name != "__main__.py")
    run = _python(textwrap.dedent(f"""
        import importlib, json
        failed = {{}}
        for name in {modules!r}:
            for loaded in [m for m in sys.modules if m == "bindcore" or m.startswith("bindcore.")]:
                del sys.modules[loaded]
            try:
                module = importlib.import_module(name)
                missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
                if missing:
                    failed[name] = f"__all__ lists {{missing}}, which it lacks"
            except Exception as e:
                failed[name] = repr(e)
        print(json.dumps(failed))
        """))
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.splitlines()[-1]) == {}


def test_the_command_line_and_the_book_build_start_without_torch():
    """``bindcore``, the command line and what its quick commands import (the book build, sync,
    the datasets) load neither torch nor pandas; bindcore.book's tables (pandas, the science)
    load only when a chapter asks for one."""
    run = _python(textwrap.dedent("""
        import bindcore, bindcore.cli, bindcore.book.build, bindcore.book.pairs, bindcore.data
        from bindcore.book import glue, show_source, start_chapter
        print(sorted(m for m in ("torch", "pandas", "matplotlib", "bindcore.book.tables") if m in sys.modules))
        """))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-1] == "[]"
