"""The paper-path dry run: every chapter executed by papermill on `profile=paper` with its
loop counts, step counts and data sizes cut to seconds (notebooks/profiles/dry-run/),
so that every branch the paper profile takes runs on a CPU. Not the numbers: the code."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from conftest import side_by_side_jobs

from bindcore.book import build as book
from bindcore.book.toc import toc_notebooks
from bindcore.parameters import NOTEBOOK_TABLES, check_parameters, dry_run_parameters

DRY_RUN = dry_run_parameters()


def test_dry_run_covers_every_chapter_with_valid_parameters():
    assert set(DRY_RUN) == set(toc_notebooks())
    for name, params in DRY_RUN.items():
        # the report has none: it reads the chapters' (ran_with)
        assert check_parameters(NOTEBOOK_TABLES.get(name), params) == params


@pytest.mark.slow
def test_paper_path_dry_run(tmp_path, monkeypatch):
    """Executes the whole book on `paper` with DRY_RUN (prints each chapter's time), two
    chapters side by side where two cores are free (a third of the suite's time when run
    one after another)."""
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "results"))
    start = time.perf_counter()
    runs = book.execute_book("paper", tmp_path, parameters=DRY_RUN, jobs=side_by_side_jobs())
    print(f"\npaper-path dry run: {time.perf_counter() - start:.0f} s in all")
    for run in runs:
        print(f"  {run.name:<40} {run.seconds:7.1f} s")
        nb = nbformat.read(run.path, as_version=4)
        assert nb.metadata["bindcore"]["run_parameters"]["profile"] == "paper"
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if o.output_type == "error"]
        assert not errors, f"{run.name}: error outputs"


def test_each_notebook_starts_with_the_table_named_for_it():
    """NOTEBOOK_TABLES (read by the dry run and the report) says what each chapter's
    start_chapter call says."""
    root = Path(__file__).resolve().parents[1] / "notebooks"
    for name, table in NOTEBOOK_TABLES.items():
        assert f'start_chapter("{table}", globals())' in (root / f"{name}.py").read_text(), name
