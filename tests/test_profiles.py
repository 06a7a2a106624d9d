"""bindcore.parameters: a chapter's parameters cell holds the quick profile's values;
every other profile, and the paper-path dry run's cuts, is a papermill parameters file
(notebooks/profiles/<profile>/<notebook>.yaml) that `bindcore book --profile` passes as
`papermill -f` would, once one reader has checked it (names of the parameters cell, declared
types and ranges) before any kernel starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from bindcore import parameters as pr
from bindcore.book import build as book
from bindcore.book.chapter import start_chapter
from bindcore.book.toc import toc_notebooks
from bindcore.runtime import CONTEXT_ENV, PROFILES

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = toc_notebooks(ROOT)
FILE_PROFILES = [p for p in PROFILES if p != "quick"]


def _cell(nb: str) -> dict:
    return pr.parameters_cell((ROOT / "notebooks" / f"{nb}.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_notebook_has_a_file_per_profile_with_its_own_parameters(nb):
    """Each profile file names its profile and the same parameters in the same order, each
    a parameter of the notebook's parameters cell that follows its rule."""
    cell = _cell(nb)
    assert cell["profile"] == "quick"
    names = None
    for profile in PROFILES:
        params = pr.read_profile(nb, profile, ROOT)
        assert params["profile"] == profile, (nb, profile)
        these = [k for k in params if k != "profile"]
        assert names is None or these == names, (nb, profile)
        names = these
        assert set(these) <= set(cell), (nb, profile, set(these) - set(cell))
        chapter = pr.NOTEBOOK_TABLES.get(nb)
        assert chapter is not None or not these
        for k in these:
            assert pr.check_parameters(chapter, {k: params[k]}) == {k: params[k]}, (nb, profile, k)
    assert (nb in pr.NOTEBOOK_TABLES) == bool(names)


@pytest.mark.parametrize("nb", [nb for nb in NOTEBOOKS if nb in pr.NOTEBOOK_TABLES])
def test_parameters_cell_holds_the_quick_values_literally(nb):
    """What a reader sees is what runs by default: the cell's values are the quick
    profile's, concrete and valid; the quick file is their copy (bindcore sync)."""
    cell, quick = _cell(nb), pr.notebook_parameters(nb, "quick", ROOT)
    assert {k: cell[k] for k in quick} == quick
    from bindcore.book.pairs import write_quick_files

    assert write_quick_files(ROOT, [nb], check=True) == [], "run `bindcore sync`"


def test_notebooks_that_share_a_chapter_agree_on_its_parameters():
    for nb, chapter in pr.NOTEBOOK_TABLES.items():
        for profile in PROFILES:
            mine = pr.notebook_parameters(nb, profile, ROOT)
            assert mine == {k: v for k, v in pr.chapter_parameters(chapter, profile).items() if k in mine}, (nb, profile)


def test_dry_run_cuts_are_parameters_of_their_notebook():
    dry = pr.dry_run_parameters(ROOT)
    assert set(dry) == set(NOTEBOOKS)
    for nb, cuts in dry.items():
        assert "profile" not in cuts  # read on top of a profile's file
        assert set(cuts) <= set(pr.read_profile(nb, "paper", ROOT)), nb


def test_the_book_passes_a_profile_file_as_papermill_reads_it():
    from papermill.iorw import read_yaml_file

    for nb in NOTEBOOKS:
        assert book.papermill_parameters(nb, "quick", ROOT) == {"profile": "quick"}  # the cell holds the rest
        for profile in FILE_PROFILES:
            path = pr.profile_file(nb, profile, ROOT)
            assert book.papermill_parameters(nb, profile, ROOT) == read_yaml_file(str(path)), (nb, profile)


def test_a_run_takes_the_notebook_values_as_they_are(monkeypatch, tmp_path):
    """None is a value (where the rule allows it), not "the profile's"; a value missing from
    the notebook (04_2 has no editing) is its profile file's; a file of another profile
    than the run's is named with what differs."""
    monkeypatch.delenv(CONTEXT_ENV, raising=False)
    quick = pr.chapter_parameters("pretrained_complexity", "quick")
    assert quick["batch_size"] == 512
    p = start_chapter("pretrained_complexity", {**quick, "batch_size": None})
    assert p == {**quick, "batch_size": None}
    with pytest.raises(ValueError, match="probe_epochs"):
        start_chapter("pretrained_complexity", {**quick, "probe_epochs": None})
    cell = {k: v for k, v in pr.chapter_parameters("geometry", "smoke").items() if k not in ("ks", "max_edits")}
    assert start_chapter("geometry", cell) == pr.chapter_parameters("geometry", "smoke")


def test_a_run_on_another_profile_without_its_file_says_what_differs(capsys, monkeypatch):
    monkeypatch.delenv(CONTEXT_ENV, raising=False)
    start_chapter("formalisation", {**pr.chapter_parameters("formalisation", "quick"), "profile": "smoke"})
    out = capsys.readouterr().out
    assert "differ from the 'smoke' profile's file" in out and "n_sample_scenes: 20000 (smoke: 2000)" in out


def test_profiles_root_in_a_checkout_and_in_an_installed_package(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "bindcore").mkdir(parents=True)
    (checkout / "notebooks" / "profiles").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    assert pr.profiles_root(checkout / "bindcore") == checkout / "notebooks" / "profiles"
    site = tmp_path / "site-packages"
    (site / "bindcore").mkdir(parents=True)
    assert pr.profiles_root(site / "bindcore") == site / "bindcore" / "profiles"


def test_a_parameters_cell_must_hold_literals():
    assert pr.parameters_cell('# %% tags=["parameters"]\nprofile = "quick"\nn = [1, None]  # x\n\n# %%\ny = 2\n') == {
        "profile": "quick", "n": [1, None]}
    with pytest.raises(ValueError, match="n is not a literal"):
        pr.parameters_cell('# %% tags=["parameters"]\nn = f(1)\n')
    with pytest.raises(ValueError, match="no cell tagged parameters"):
        pr.parameters_cell("# %%\nn = 1\n")


def _outputs(nb) -> list:
    """Each code cell's source and its outputs without execution counts or timing (consecutive
    chunks of one stream joined)."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for o in cell.get("outputs", []):
            if o.output_type == "stream":  # one stream's chunks joined: a busy kernel may flush a print in parts
                if kept and isinstance(kept[-1], tuple) and kept[-1][0] == o.name:
                    kept[-1] = (o.name, kept[-1][1] + o.text)
                else:
                    kept.append((o.name, o.text))
            elif o.output_type in ("execute_result", "display_data"):
                data = o.get("data", {})
                kept.append({k: (v if not k.startswith("image/") else "<image>") for k, v in data.items()})
            else:
                kept.append((o.output_type, o.get("ename"), o.get("evalue")))
        out.append((cell.source, kept))
    return out


@pytest.mark.slow
def test_papermill_with_the_smoke_file_runs_what_bindcore_book_runs(tmp_path, monkeypatch):
    """`papermill -f notebooks/profiles/smoke/03_formalisation.yaml` records the same run
    parameters and gives the same outputs as `bindcore book --profile smoke` (03)."""
    nb = "03_formalisation"
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "results"))
    executed = book.execute_notebook(nb, "smoke", tmp_path / "book", force=True, root=ROOT)
    by_book = nbformat.read(executed, as_version=4)

    recorded = tmp_path / "parameters.json"
    context = {"record": str(recorded), "executed": str(tmp_path / "executed")}  # as in a book build
    env = {**os.environ, "TQDM_DISABLE": "1", CONTEXT_ENV: json.dumps(context),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    out = tmp_path / "papermill.ipynb"
    subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{nb}.ipynb"), str(out),
                    "-f", str(pr.profile_file(nb, "smoke", ROOT)), "--cwd", str(ROOT / "notebooks"),
                    "-k", book.KERNEL_NAME, "--no-progress-bar"], env=env, check=True)
    by_papermill = nbformat.read(out, as_version=4)

    ran = by_book.metadata["bindcore"]["run_parameters"]
    assert json.loads(recorded.read_text()) == ran == pr.chapter_parameters("formalisation", "smoke")
    assert sum(len(kept) for _, kept in _outputs(by_book)) >= 5  # the chapter's text, tables and figures
    assert _outputs(by_papermill) == _outputs(by_book)


# ---------------------------------------------------------------------------------
# one reader of the profile files, one check before any kernel starts
# ---------------------------------------------------------------------------------
CHAPTER = '''# %% [markdown]
# # A chapter

# %% tags=["parameters"]
profile = "quick"
n_sample_scenes = 20000

# %%
print(profile, n_sample_scenes)
'''


@pytest.fixture
def small_repo(tmp_path, monkeypatch):
    """A checkout of one chapter with a smoke profile file; the book built from it by `bindcore book`,
    with a papermill that fails the test if a kernel would start."""
    import bindcore.book.paths as paths

    root = tmp_path / "repo"
    (root / "notebooks" / "profiles" / "smoke").mkdir(parents=True)
    (root / "bindcore").mkdir()
    (root / "notebooks" / "ch1.py").write_text(CHAPTER)
    (root / "_toc.yml").write_text("format: jb-book\nroot: notebooks/ch1\n")
    monkeypatch.setattr(paths, "repo_root", lambda: root)
    monkeypatch.setattr(book, "_run_papermill", lambda *a, **k: pytest.fail("a kernel started"))
    return root


def _book(root: Path, capsys) -> str:
    from bindcore.cli import main

    assert main(["book", "--profile", "smoke", "--no-html", "--build-dir", str(root / "_build")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_yaml_error_in_a_profile_file_is_one_line_naming_the_file_and_line(small_repo, capsys):
    path = small_repo / "notebooks" / "profiles" / "smoke" / "ch1.yaml"
    path.write_text("profile: smoke\nn_sample_scenes: [1, 2\n")  # was a 20-line traceback naming <unicode string>
    assert f"{path}, line 3:" in _book(small_repo, capsys)
    path.write_bytes("profile: smoke\n# caf\xe9\n".encode("latin-1"))  # was one line naming no file
    assert f"{path}: not UTF-8 text" in _book(small_repo, capsys)


def test_a_profile_file_key_that_is_no_name_of_the_parameters_cell_never_reaches_a_kernel(small_repo, capsys):
    """The key becomes papermill's `NAME = VALUE` line: a name that is not one of the cell's
    ran as code in the kernel before the chapter refused it."""
    path = small_repo / "notebooks" / "profiles" / "smoke" / "ch1.yaml"
    mark = small_repo / "MARK"
    path.write_text(f"profile: smoke\n\"import os; os.system('touch {mark}'); n_sample_scenes\": 5\n")
    err = _book(small_repo, capsys)
    assert str(path) in err and "unknown parameter" in err and not mark.exists()
    path.write_text("profile: smoke\nn_sample_scenez: 5\n")
    assert "did you mean n_sample_scenes?" in _book(small_repo, capsys)
    path.write_text("profile: smoke\nn_sample_scenes: ten\n")
    assert "parameter n_sample_scenes = 'ten': must be an integer" in _book(small_repo, capsys)


def test_a_count_has_an_upper_bound_before_a_kernel_starts_and_in_the_chapter(small_repo, capsys, monkeypatch):
    """`-p n_sample_scenes 1000000000000` reached a cell and failed there on an allocation."""
    path = small_repo / "notebooks" / "profiles" / "smoke" / "ch1.yaml"
    path.write_text("profile: smoke\nn_sample_scenes: 1000000000000\n")
    assert "n_sample_scenes = 1000000000000: must be less than or equal to" in _book(small_repo, capsys)
    monkeypatch.delenv(CONTEXT_ENV, raising=False)
    injected = {"In": ['profile = "quick"\nn_sample_scenes = 20000', "# Parameters\nn_sample_scenes = 1000000000000"]}
    with pytest.raises(ValueError, match="n_sample_scenes = 1000000000000: must be less than or equal to"):
        start_chapter("formalisation", {**injected, "profile": "quick", "n_sample_scenes": 10**12})
    with pytest.raises(ValueError, match="must be less than or equal to"):
        pr.chapter_parameters("geometry", "smoke", max_edits=10**12)


def test_every_name_of_every_parameters_cell_has_a_declared_type():
    """So that the check before a kernel starts covers every name a profile file or the build may set."""
    for nb in NOTEBOOKS:
        untyped = set(_cell(nb)) - set(pr.TYPES)
        assert not untyped, (nb, untyped)
        pr.check_parameters(pr.NOTEBOOK_TABLES.get(nb), _cell(nb))  # and the cell's own values follow them
