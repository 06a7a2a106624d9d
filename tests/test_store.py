"""The result store: one cache truth. A record is current while it lies in the folder of
its kind's version, whatever commit made it; what made it is provenance."""

from __future__ import annotations

import json
import shutil

import pytest

from bindcore.io import atomic_write, atomic_write_json, config_hash, digest
from bindcore.store import PACKAGE_DIR, Kind, ResultStore, code_version, provenance


def test_a_record_is_current_in_its_versions_folder_whatever_commit_made_it(tmp_path):
    v1, v2 = Kind("thing-1"), Kind("thing-2")
    store = ResultStore(tmp_path / "results", published=tmp_path / "published")
    cfg = {"a": 1}
    entry = store.prepare(v1, cfg)
    store.finish(entry, {"value": 1})
    assert json.loads((entry.path / "result.json").read_text())["code"] == provenance()
    record = json.loads((entry.path / "result.json").read_text())
    atomic_write_json(entry.path / "result.json", {**record, "code": {"bindcore": "0.0.1", "git": "abc1234"}})
    assert store.cached(v1, cfg, lambda: {"value": 2})["value"] == 1  # another commit: still current
    assert store.find(v2, cfg) is None  # a new version: computed anew
    assert store.cached(v2, cfg, lambda: {"value": 3})["value"] == 3
    # a published record is read after the local ones
    pub = ResultStore(tmp_path / "published", published=None)
    pub.cached(v1, {"b": 2}, lambda: {"value": 5})
    assert store.find(v1, {"b": 2}).source == "published"
    store.cached(v1, {"b": 2}, lambda: {"value": 6})  # found: nothing computed, nothing written locally
    assert not store.local_dir(v1, {"b": 2}).exists()


def test_code_version_in_words():
    assert code_version(None) == "code of unknown version"
    assert code_version({"bindcore": "0.1.0", "git": "2816db3"}) == "git 2816db3 (bindcore 0.1.0)"
    assert code_version({"fingerprint": "0123", "bindcore": "0.1.0", "git": None}) == "bindcore 0.1.0"


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


def test_a_training_run_is_stored_once_and_the_chapter_names_its_commit(tmp_path, capsys):
    from bindcore.controlled.recipes import recipe
    from bindcore.controlled.runs import train
    from bindcore.experiments.generalization import note_stored

    store = ResultStore(tmp_path, published=None)
    cfg = recipe("smoke", steps=4, eval_every=2, eval_scenes=16)
    first = train(cfg, store=store, device="cpu", progress=False)
    again = train(cfg, store=store, device="cpu", progress=False)  # not retrained: the same record
    assert again["finished_at"] == first["finished_at"] and again["code"] == provenance()
    note_stored([first, again])
    out = capsys.readouterr().out
    assert out.startswith("2 training runs (local, ") and code_version(first["code"]) in out


def test_the_report_reads_the_parameters_a_chapter_ran_with(tmp_path, monkeypatch):
    import nbformat

    from bindcore.book.chapter import ran_with
    from bindcore.parameters import chapter_parameters

    nb = nbformat.v4.new_notebook()
    ran = {**chapter_parameters("geometry", "smoke"), "max_edits": 7}
    nb.metadata["bindcore"] = {"run_parameters": ran}
    nbformat.write(nb, tmp_path / "04_1_geometry.ipynb")
    monkeypatch.setenv("BINDCORE_CONTEXT", json.dumps({"executed": str(tmp_path)}))
    assert ran_with("04_1_geometry", "geometry", "smoke")[0] == ran
    # another profile, or no executed copy: the profile's defaults
    assert ran_with("04_1_geometry", "geometry", "quick")[0] == chapter_parameters("geometry", "quick")
    assert ran_with("04_2_component_attribution", "geometry", "smoke")[0] == chapter_parameters("geometry", "smoke")


def test_publish_copies_config_and_result_only_and_the_store_reads_it_back(tmp_path):
    kind = Kind("dear")
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
    assert found.source == "published" and found.result["value"] == 7
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
    installed = site / "bindcore" / "published" / "train-2" / config_hash({"n": 1})
    installed.mkdir(parents=True)
    atomic_write_json(installed / "config.json", {"n": 1})
    atomic_write_json(installed / "result.json", {"metrics": {"x": 1.0}})
    root = published_root(site / "bindcore")
    assert root == site / "bindcore" / "published"
    entries = ResultStore(tmp_path / "results", published=root).entries(Kind("train-2"))
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
    from bindcore.runtime import CONTEXT_ENV
    from bindcore.store import NotStored

    store, kind = ResultStore(tmp_path / "results", published=None), Kind("cheap")
    assert store.cached(kind, {"a": 1}, lambda: {"x": 1})["x"] == 1
    monkeypatch.setenv(CONTEXT_ENV, '{"stored_only": true}')
    calls = []
    assert store.cached(kind, {"a": 1}, lambda: calls.append(1) or {"x": 2})["x"] == 1
    with pytest.raises(NotStored, match="nothing new is computed"):
        store.cached(kind, {"a": 2}, lambda: calls.append(1) or {"x": 2})
    assert calls == [] and not store.local_dir(kind, {"a": 2}).exists()
    monkeypatch.setenv(CONTEXT_ENV, '{"stored_only": false}')
    assert store.cached(kind, {"a": 2}, lambda: {"x": 2})["x"] == 2


def test_the_tally_lists_each_record_once_by_where_it_came_from(tmp_path, monkeypatch):
    from bindcore.runtime import CONTEXT_ENV
    from bindcore.store import tally_counts

    kind, tally = Kind("toy-1"), tmp_path / "tally.jsonl"
    ResultStore(tmp_path / "published", published=None).cached(kind, {"a": 1}, lambda: {"x": 1})
    ResultStore(tmp_path / "results", published=None).cached(kind, {"a": 3}, lambda: {"x": 3})
    monkeypatch.setenv(CONTEXT_ENV, json.dumps({"tally": str(tally)}))
    store = ResultStore(tmp_path / "results", published=tmp_path / "published")
    for _ in range(2):
        store.cached(kind, {"a": 1}, lambda: {"x": 0})
        store.cached(kind, {"a": 2}, lambda: {"x": 2})
    assert tally_counts(tally) == {"published": 1, "local": 0, "computed": 1}
    assert len(list(store.entries(kind))) == 3  # every record served: the local one is counted too
    assert tally_counts(tally) == {"published": 1, "local": 1, "computed": 1}
    monkeypatch.delenv(CONTEXT_ENV)
    store.cached(kind, {"a": 4}, lambda: {"x": 4})  # no file named: nothing listed
    assert tally_counts(tally) == {"published": 1, "local": 1, "computed": 1}
    assert tally_counts(tmp_path / "none.jsonl") == {"published": 0, "local": 0, "computed": 0}


def test_two_asking_at_once_for_one_record_compute_it_once(tmp_path):
    import time

    from conftest import asked_at_once

    store, kind, calls = ResultStore(tmp_path, published=None), Kind("slow"), []

    def compute():
        calls.append(1)
        time.sleep(0.5)  # the second asker arrives while the first computes
        return {"x": len(calls)}

    got = asked_at_once(lambda: store.cached(kind, {"a": 1}, compute)["x"])
    assert calls == [1] and got == [1, 1]
