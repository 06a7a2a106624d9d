"""bindcore.book.colab: the repository address in one place (_config.yml), the badges and
install cells made from it."""

from __future__ import annotations

import textwrap

import pytest

from bindcore.book import colab

SOURCE = textwrap.dedent('''\
    # %% [markdown]
    # # A chapter
    #
    # [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/old/name/blob/main/notebooks/ch.ipynb)

    # %% tags=["hide-input"]
    import subprocess
    import sys

    if "google.colab" in sys.modules:
        subprocess.run([sys.executable, "-m", "pip", "install", "bindcore[encoders,ml] @ git+https://github.com/old/name"])

    # %% tags=["parameters"]
    profile = "quick"
    ''')


def _repo(tmp_path, url="https://github.com/fork/book", branch="dev"):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "_config.yml").write_text(f"title: t\nrepository:\n  url: {url}\n  branch: {branch}\n")
    (tmp_path / "notebooks" / "ch.py").write_text(SOURCE)
    return tmp_path


def test_a_fork_changes_one_line_and_every_address_follows(tmp_path):
    root = _repo(tmp_path)
    assert colab.repository(root) == ("https://github.com/fork/book", "dev")
    assert colab.stamp_notebooks(root, check=True) == [root / "notebooks" / "ch.py"]
    assert (root / "notebooks" / "ch.py").read_text() == SOURCE  # check writes nothing
    assert colab.stamp_notebooks(root) == [root / "notebooks" / "ch.py"]
    text = (root / "notebooks" / "ch.py").read_text()
    assert "github/fork/book/blob/dev/notebooks/ch.ipynb" in text and "old/name" not in text
    assert '"bindcore[encoders,ml] @ git+https://github.com/fork/book@dev"' in text  # the chapter's extras kept
    assert 'for p in ("torch", "torchvision")' in text  # Colab's own torch pinned as installed
    assert text.endswith('# %% tags=["parameters"]\nprofile = "quick"\n')
    assert colab.stamp_notebooks(root) == []  # idempotent
    compile(text.split("# %%")[2].split("\n", 1)[1], "cell", "exec")


def test_install_cell_without_extras():
    cell = colab.install_cell("https://github.com/a/b", "main")
    assert '"bindcore @ git+https://github.com/a/b@main"' in cell
    assert colab.cell_extras(cell) == ()
    assert colab.cell_extras(colab.install_cell("https://github.com/a/b", "main", ("ml",))) == ("ml",)


def test_bad_repository_url(tmp_path):
    root = _repo(tmp_path, url="git@github.com:x/y")
    with pytest.raises(ValueError, match="repository.url"):
        colab.repository(root)
    (root / "_config.yml").write_text("title: no repository\n")
    assert colab.repository(root) is None and colab.stamp_notebooks(root) == []
