"""The notebooks/ jupytext pairs: .py is the source of truth, .ipynb is what Colab opens."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest

from bindcore.book import colab

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
URL, BRANCH = colab.repository(ROOT)  # _config.yml: the one setting

PY = sorted(NOTEBOOKS.glob("*.py"))
IPYNB = sorted(NOTEBOOKS.glob("*.ipynb"))
NAMES = sorted({p.stem for p in PY + IPYNB})


def _normalize(source: str) -> str:
    lines = source.replace("\r\n", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def _cells(nb) -> list[tuple[str, str, tuple[str, ...]]]:
    return [
        (cell.cell_type, _normalize(cell.source), tuple(cell.get("metadata", {}).get("tags", [])))
        for cell in nb.cells
    ]


def test_there_are_notebooks():
    assert PY, "notebooks/ holds no .py notebooks"


@pytest.mark.parametrize("name", NAMES)
def test_pair_exists(name):
    assert (NOTEBOOKS / f"{name}.py").is_file(), f"notebooks/{name}.ipynb has no .py source"
    assert (NOTEBOOKS / f"{name}.ipynb").is_file(), (
        f"notebooks/{name}.py has no .ipynb; run `bindcore sync`"
    )


@pytest.mark.parametrize("name", [p.stem for p in PY if p.with_suffix(".ipynb").is_file()])
def test_pair_in_sync(name):
    py = jupytext.read(NOTEBOOKS / f"{name}.py", fmt="py:percent")
    ipynb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert _cells(ipynb) == _cells(py), f"notebooks/{name}.ipynb is out of sync with its .py; run `bindcore sync`"


@pytest.mark.parametrize("path", IPYNB, ids=[p.name for p in IPYNB])
def test_committed_ipynb_has_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert not cell.get("outputs"), f"{path.name} cell {index} has outputs"
        assert cell.get("execution_count") is None, f"{path.name} cell {index} has an execution count"


@pytest.mark.parametrize("path", PY, ids=[p.name for p in PY])
def test_parameters_cell_follows_colab_install(path):
    nb = jupytext.read(path, fmt="py:percent")
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    install = [i for i, cell in enumerate(code) if "google.colab" in cell.source]
    assert install, f"{path.name} has no Colab install cell (`if \"google.colab\" in sys.modules: ...`)"
    assert install[0] + 1 < len(code), f"{path.name} has no code cell after the Colab install cell"
    params = code[install[0] + 1]
    assert "parameters" in params.metadata.get("tags", []), (
        f"{path.name}: the first code cell after the Colab install cell must be tagged `parameters`"
    )
    assert params.source.lstrip().startswith("profile = "), (
        f"{path.name}: the parameters cell must start with `profile = `"
    )


@pytest.mark.parametrize("path", PY, ids=[p.name for p in PY])
def test_colab_badge_points_at_own_ipynb(path):
    nb = jupytext.read(path, fmt="py:percent")
    url = colab.colab_link(path.stem, URL, BRANCH)
    markdown = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    assert any(url in source for source in markdown), f"{path.name} has no Colab badge linking to {url}"


@pytest.mark.parametrize("path", PY, ids=[p.name for p in PY])
def test_badge_and_install_cell_follow_config(path):
    """The badge and the Colab install cell carry _config.yml's repository address (a fork
    changes that one line and runs `bindcore sync`)."""
    text = path.read_text(encoding="utf-8")
    assert colab.stamped(text, path.stem, URL, BRANCH) == text, (
        f"{path.name}: its Colab badge or install cell differs from _config.yml's repository "
        f"({URL}@{BRANCH}); run `bindcore sync`")
    assert f"@ git+{URL}@{BRANCH}" in text
