"""The result store: one cache truth. Records carry the fingerprint of the code that made
them; a record made by other code is computed again (cheap kinds) or reused marked stale
(expensive kinds, published records)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bindcore.io import atomic_write, atomic_write_json, config_hash, digest
from bindcore.store import PACKAGE_DIR, Kind, ResultStore, code_fingerprint, code_version, module_closure

TRAINING = "bindcore.controlled.training"


@pytest.fixture
def package_copy(tmp_path) -> Path:
    dest = tmp_path / "bindcore"
    shutil.copytree(PACKAGE_DIR, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_closure_follows_imports_and_nothing_else():
    names = module_closure([TRAINING])
    for needed in (TRAINING, "bindcore.controlled.models", "bindcore.controlled.scenes", "bindcore.analysis.metrics",
                   "bindcore.ids", "bindcore", "bindcore.controlled"):
        assert needed in names
    assert not [n for n in names if n.startswith(("bindcore.book", "bindcore.encoders", "bindcore.data"))]


def test_fingerprint_changes_when_a_dependency_changes(package_copy):
    before = code_fingerprint([TRAINING], package_copy)
    assert before == code_fingerprint([TRAINING], PACKAGE_DIR)  # a copy of the same code
    models = package_copy / "controlled" / "models.py"
    models.write_text(models.read_text() + "\n# a change to a module training imports\n")
    after = code_fingerprint([TRAINING], package_copy)
    assert after != before
    # code it does not import, and the store's own record keeping, leave it alone
    for unrelated in ("book/profiles.py", "data/text.py", "store.py", "io.py"):
        path = package_copy / unrelated
        path.write_text(path.read_text() + "\n# unrelated\n")
    assert code_fingerprint([TRAINING], package_copy) == after


def _write_record(store: ResultStore, kind: Kind, config: dict, value: int, fingerprint: str | None) -> Path:
    entry = store.prepare(kind, config)
    store.finish(entry, {"value": value})
    record = json.loads((entry.path / "result.json").read_text())
    if fingerprint is not None:
        record["code"]["fingerprint"] = fingerprint
    atomic_write_json(entry.path / "result.json", record)
    return entry.path


def test_records_made_by_other_code_are_recomputed_or_reused_with_a_mark(tmp_path):
    cheap = Kind("cheap", ("bindcore.analysis.metrics",))
    expensive = Kind("dear", ("bindcore.analysis.metrics",), expensive=True)
    store = ResultStore(tmp_path / "results", published=tmp_path / "published")
    cfg = {"a": 1}

    _write_record(store, cheap, cfg, 1, None)
    assert store.find(cheap, cfg).stale is False  # made by this code
    assert store.find(cheap, cfg).result["code"]["fingerprint"] == cheap.fingerprint()

    _write_record(store, cheap, cfg, 1, "other code")
    assert store.find(cheap, cfg) is None  # cheap: never reused ...
    assert store.cached(cheap, cfg, lambda: {"value": 2})["value"] == 2  # ... computed again
    assert store.find(cheap, cfg).stale is False

    path = _write_record(store, expensive, cfg, 3, "other code")
    found = store.find(expensive, cfg)  # expensive: reused, marked
    assert found.stale and found.path == path and found.result["value"] == 3
    assert found.record()["stale"] is True
    assert store.cached(expensive, cfg, lambda: {"value": 4})["value"] == 3

    # a published record made by other code is reused with the mark even for a cheap kind
    pub = ResultStore(tmp_path / "published", published=None)
    _write_record(pub, cheap, {"b": 2}, 5, "published code")
    found = store.find(cheap, {"b": 2})
    assert found.source == "published" and found.stale
    # a fresh local record wins over a stale published one
    _write_record(store, cheap, {"b": 2}, 6, None)
    assert store.find(cheap, {"b": 2}).source == "local"


def test_code_version_in_words():
    assert code_version(None) == "code of unknown version"
    words = code_version({"fingerprint": "0123456789abcdef", "bindcore": "0.1.0", "git": "2816db3"})
    assert words == "code 0123456789ab (bindcore 0.1.0, git 2816db3)"


def test_one_hash_and_atomic_writes(tmp_path):
    assert config_hash({"b": 1, "a": 2}) == config_hash({"a": 2, "b": 1})
    assert digest("ab", "c") != digest("a", "bc")
    target = tmp_path / "x.json"
    atomic_write_json(target, {"a": 1})

    def fail(f):
        f.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, fail)
    assert json.loads(target.read_text()) == {"a": 1}  # the old content survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]  # no temporary file left


def test_a_training_run_made_by_other_code_is_reused_and_the_chapter_names_its_code(tmp_path, capsys):
    from bindcore.controlled.recipes import recipe
    from bindcore.controlled.runs import train
    from bindcore.controlled.training import STORE_KIND
    from bindcore.experiments.generalization import note_stored

    store = ResultStore(tmp_path, published=None)
    cfg = recipe("smoke", steps=4, eval_every=2, eval_scenes=16)
    first = train(cfg, store=store, device="cpu", progress=False)
    assert first["stale"] is False and first["code"]["fingerprint"] == STORE_KIND.fingerprint()
    note_stored([first])
    assert code_version(first["code"]) in capsys.readouterr().out

    result = Path(first["path"]) / "result.json"
    record = json.loads(result.read_text())
    record["code"] = {"fingerprint": "f" * 64, "bindcore": "0.0.1", "git": "abc1234", "modules": []}
    atomic_write_json(result, record)
    again = train(cfg, store=store, device="cpu", progress=False)  # not retrained: the same record
    assert again["stale"] is True and again["finished_at"] == first["finished_at"]
    note_stored([again])
    note = capsys.readouterr().out
    assert "code ffffffffffff (bindcore 0.0.1, git abc1234)" in note and STORE_KIND.fingerprint()[:12] in note


def test_the_report_reads_the_parameters_a_chapter_ran_with(tmp_path, monkeypatch):
    import nbformat

    from bindcore.book.chapter import ran_with
    from bindcore.book.profiles import chapter_parameters

    nb = nbformat.v4.new_notebook()
    ran = {**chapter_parameters("geometry", "smoke"), "max_edits": 7}
    nb.metadata["bindcore"] = {"run_parameters": ran}
    nbformat.write(nb, tmp_path / "04_1_geometry.ipynb")
    monkeypatch.setenv("BINDCORE_EXECUTED_DIR", str(tmp_path))
    assert ran_with("04_1_geometry", "geometry", "smoke")[0] == ran
    # another profile, or no executed copy: the profile's defaults
    assert ran_with("04_1_geometry", "geometry", "quick")[0] == chapter_parameters("geometry", "quick")
    assert ran_with("04_2_component_attribution", "geometry", "smoke")[0] == chapter_parameters("geometry", "smoke")


def test_publish_copies_config_and_result_only_and_the_store_reads_it_back(tmp_path):
    kind = Kind("dear", ("bindcore.analysis.metrics",), expensive=True)
    store = ResultStore(tmp_path / "results", published=tmp_path / "published")
    cfg = {"a": 1}
    entry = store.prepare(kind, cfg)
    (entry.path / "model.pt").write_bytes(b"weights")
    with pytest.raises(ValueError, match="finished local entry"):
        store.publish(entry)  # not finished yet
    store.finish(entry, {"value": 7})
    dest = store.publish(entry)
    assert sorted(p.name for p in dest.iterdir()) == ["config.json", "result.json"]
    assert dest == tmp_path / "published" / "dear" / config_hash(cfg)
    shutil.rmtree(entry.path)
    found = store.find(kind, cfg)
    assert found.source == "published" and not found.stale and found.result["value"] == 7
    with pytest.raises(ValueError, match="finished local entry"):
        store.publish(found)


# --------------------------------------------------------------------------- published records without a checkout


def test_published_records_found_in_a_checkout_and_in_an_installed_package(tmp_path):
    """A checkout reads its published/; a pip-installed package (no pyproject.toml beside
    it, e.g. on Colab) reads the copy shipped inside it as bindcore/published."""
    from bindcore.store import published_root

    checkout = tmp_path / "checkout"
    (checkout / "bindcore").mkdir(parents=True)
    (checkout / "published").mkdir()
    (checkout / "pyproject.toml").write_text("")
    assert published_root(checkout / "bindcore") == checkout / "published"

    site = tmp_path / "site-packages"
    (site / "published").mkdir(parents=True)  # somebody else's folder: never read
    assert published_root(site / "bindcore") is None
    installed = site / "bindcore" / "published" / "train-2" / "abc"
    installed.mkdir(parents=True)
    atomic_write_json(installed / "config.json", {"n": 1})
    atomic_write_json(installed / "result.json", {"metrics": {"x": 1.0}})
    root = published_root(site / "bindcore")
    assert root == site / "bindcore" / "published"
    entries = ResultStore(tmp_path / "results", published=root).entries(Kind("train-2", (TRAINING,), expensive=True))
    assert [e.source for e in entries] == ["published"]


def test_package_list_names_every_package():
    """pyproject lists bindcore's packages (published/ and notebooks/profiles/ are mapped into it): a new subpackage
    must be listed there or a pip install would leave it out."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    listed = set(tomllib.loads((PACKAGE_DIR.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(PACKAGE_DIR.parent).parts) for p in PACKAGE_DIR.rglob("__init__.py")}
    assert listed == found | {"bindcore.published", "bindcore.profiles"}


def test_the_published_records_are_never_a_result_store_of_their_own(tmp_path):
    """Published records carry no weights: opened as a local store they would read as
    corrupt and be moved aside, so that folder is refused as a store's root."""
    from bindcore.store import REPO_ROOT

    with pytest.raises(ValueError, match="read-only"):
        ResultStore(REPO_ROOT / "published", published=None)
    with pytest.raises(ValueError, match="read-only"):
        ResultStore(tmp_path / "pub", published=tmp_path / "pub")
    assert ResultStore(tmp_path / "mine", published=tmp_path / "pub").root == tmp_path / "mine"


def test_a_store_in_stored_only_mode_serves_what_it_holds_and_computes_nothing_new(tmp_path, monkeypatch):
    from bindcore.store import STORED_ONLY_ENV, NotStored

    store, kind = ResultStore(tmp_path / "results", published=None), Kind("cheap", ("bindcore.analysis.metrics",))
    assert store.cached(kind, {"a": 1}, lambda: {"x": 1})["x"] == 1
    monkeypatch.setenv(STORED_ONLY_ENV, "1")
    calls = []
    assert store.cached(kind, {"a": 1}, lambda: calls.append(1) or {"x": 2})["x"] == 1
    with pytest.raises(NotStored, match="nothing new is computed"):
        store.cached(kind, {"a": 2}, lambda: calls.append(1) or {"x": 2})
    assert calls == [] and not store.local_dir(kind, {"a": 2}).exists()
    monkeypatch.setenv(STORED_ONLY_ENV, "0")
    assert store.cached(kind, {"a": 2}, lambda: {"x": 2})["x"] == 2


def test_a_record_names_the_code_as_it_was_when_its_computation_started(tmp_path, monkeypatch):
    """A run that trains while its source files are edited records the code it started
    with, not the edited one."""
    store, kind = ResultStore(tmp_path / "results", published=None), Kind("cheap", ("bindcore.analysis.metrics",))
    source = {"now": "at the start"}  # what the module files hold
    monkeypatch.setattr(Kind, "fingerprint", lambda self: source["now"])
    entry = store.prepare(kind, {"a": 1})
    source["now"] = "after an edit"  # edited while the computation runs
    store.finish(entry, {"x": 1})
    assert json.loads((entry.path / "result.json").read_text())["code"]["fingerprint"] == "at the start"
