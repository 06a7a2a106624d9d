"""Published records (bindcore.store.ResultStore.publish, `bindcore publish`): a record
published with its weights is reused by a store that has nothing local, down to its
model; weights too large, cut short or left out; every committed record of published/ is
current and found through the store."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bindcore.cli import main
from bindcore.controlled.recipes import recipe
from bindcore.controlled.runs import load_model, train
from bindcore.controlled.training import STORE_KIND
from bindcore.store import ResultStore


def tiny(**kw):
    return recipe("smoke", **{"steps": 4, "eval_every": 2, "eval_scenes": 16, **kw})


def trained(root: Path, **kw) -> tuple[ResultStore, dict]:
    store = ResultStore(root / "results", published=root / "published")
    return store, train(tiny(**kw), store=store, device="cpu", progress=False)


def test_a_record_published_with_its_weights_gives_the_same_model_to_a_store_with_nothing_local(tmp_path):
    import torch

    store, rec = trained(tmp_path)
    entry = store.find(STORE_KIND, tiny().to_dict())
    dest = store.publish(entry, weights=True)
    assert sorted(p.name for p in dest.iterdir()) == ["config.json", "model.pt", "result.json"]

    fresh = ResultStore(tmp_path / "elsewhere", published=tmp_path / "published")
    again = train(tiny(), store=fresh, device="cpu", progress=False)  # found, not trained
    assert again["source"] == "published" and again["metrics"] == rec["metrics"]
    assert not (tmp_path / "elsewhere" / STORE_KIND).exists()
    a, b = load_model(rec), load_model(again)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


def test_a_record_published_without_weights_is_found_and_says_so_when_its_model_is_asked_for(tmp_path):
    store, _ = trained(tmp_path)
    dest = store.publish(store.find(STORE_KIND, tiny().to_dict()))
    assert "model.pt" not in {p.name for p in dest.iterdir()}
    again = train(tiny(), store=ResultStore(tmp_path / "elsewhere", published=tmp_path / "published"),
                  device="cpu", progress=False)
    assert again["source"] == "published"  # its result lists weights that were not shipped: not corrupt
    with pytest.raises(FileNotFoundError, match="published without its weights"):
        load_model(again)


def test_publishing_weights_larger_than_the_limit_is_refused_before_anything_is_copied(tmp_path, monkeypatch):
    import bindcore.store as store_mod

    store, _ = trained(tmp_path)
    entry = store.find(STORE_KIND, tiny().to_dict())
    monkeypatch.setattr(store_mod, "PUBLISHED_WEIGHTS_LIMIT", 100)
    with pytest.raises(ValueError, match="more than a published record carries"):
        store.publish(entry, weights=True)
    assert not (tmp_path / "published").exists()
    (row,) = store.publish_all([STORE_KIND], weights="all")  # the whole store: published without them
    assert row[1] is not None and "without its weights" in row[2]
    assert not (row[1] / "model.pt").exists()


def test_published_weights_cut_short_are_reported_and_the_record_skipped(tmp_path, caplog):
    store, _ = trained(tmp_path)
    dest = store.publish(store.find(STORE_KIND, tiny().to_dict()), weights=True)
    weights = dest / "model.pt"
    weights.write_bytes(weights.read_bytes()[:100])
    fresh = ResultStore(tmp_path / "elsewhere", published=tmp_path / "published")
    with caplog.at_level(logging.WARNING):
        assert fresh.find(STORE_KIND, tiny().to_dict()) is None
    assert str(weights) in caplog.text and weights.exists()  # read-only: reported, left as it is


def test_publish_command_copies_every_record_and_the_weights_an_analysis_read(tmp_path, monkeypatch, capsys):
    import bindcore.store as store_mod

    monkeypatch.setattr(store_mod.ResultStore.__init__, "__defaults__", (None, tmp_path / "published"))
    store, read = trained(tmp_path, seed=0)
    _, unread = trained(tmp_path, seed=2)
    _, other = trained(tmp_path, seed=1)
    load_model(read)  # an analysis loads this run's model: --weights ships it
    result = Path(other["path"]) / "result.json"
    record = json.loads(result.read_text())
    result.write_text(json.dumps({**record, "code": {"bindcore": "0.0.1", "git": "abc1234"}}))  # another commit's

    assert main(["publish", "--results", str(tmp_path / "results"), "--weights"]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 records" in out and "with its weights" in out
    published = tmp_path / "published" / STORE_KIND
    assert sorted(p.name for p in published.iterdir()) == sorted(Path(r["path"]).name for r in (read, unread, other))
    assert (published / Path(read["path"]).name / "model.pt").exists()
    assert not (published / Path(unread["path"]).name / "model.pt").exists()

    assert main(["publish", "--results", str(tmp_path / "results"), "--all-weights"]) == 0
    assert (published / Path(unread["path"]).name / "model.pt").exists()
    assert main(["publish", "--results", str(tmp_path / "results")]) == 0  # again without: the weights stay
    assert len(list(published.glob("*/model.pt"))) == 3

    assert main(["publish", "--results", str(tmp_path / "results"), "--kind", "bogus"]) == 2
    assert "--kind" in capsys.readouterr().err


def test_a_page_that_loads_models_trains_again_a_run_published_without_its_weights(tmp_path, monkeypatch, capsys):
    """bindcore.experiments.generalization.with_weights: the run comes back with weights in
    the local store, with the same metrics; a run published with them is used as it is."""
    from bindcore.experiments.generalization import with_weights

    store, rec = trained(tmp_path)
    store.publish(store.find(STORE_KIND, tiny().to_dict()))  # without weights
    monkeypatch.setenv("BINDCORE_RESULTS", str(tmp_path / "fresh"))
    fresh = ResultStore(published=tmp_path / "published")
    (found,) = [train(tiny(), store=fresh, device="cpu", progress=False)]
    assert found["source"] == "published" and not (Path(found["path"]) / "model.pt").exists()
    (again,) = with_weights([found], workers=1, device="cpu")
    assert again["source"] == "local" and Path(again["path"]).is_relative_to(tmp_path / "fresh")
    assert (Path(again["path"]) / "model.pt").exists() and again["metrics"] == rec["metrics"]
    assert "published without the weights" in capsys.readouterr().out

    dest = store.publish(store.find(STORE_KIND, tiny().to_dict()), weights=True)
    published = {**found, "path": str(dest)}
    assert with_weights([published]) == [published]  # nothing trained


def test_republishing_without_weights_keeps_the_weights_published_before(tmp_path, capsys):
    """Publishing a record again without its weights (``sweep --publish``, ``publish``
    without ``--weights``) keeps the weights published with that same run; the weights
    of another run of the config are neither removed nor left beside the new record."""
    store, rec = trained(tmp_path)
    entry = store.find(STORE_KIND, tiny().to_dict())
    dest = store.publish(entry, weights=True)
    weights = (dest / "model.pt").read_bytes()
    assert store.publish(entry) == dest and (dest / "model.pt").read_bytes() == weights
    rows = store.publish_all([STORE_KIND])
    assert [r[1] for r in rows] == [dest] and (dest / "model.pt").read_bytes() == weights

    # another run of the same config (a retrained record): refused without its weights, kept as published
    result = Path(rec["path"]) / "result.json"
    other = {**json.loads(result.read_text()), "finished_at": "another run"}
    result.write_text(json.dumps(other))
    entry = store.find(STORE_KIND, tiny().to_dict())
    with pytest.raises(ValueError, match="weights of another run"):
        store.publish(entry)
    (row,) = store.publish_all([STORE_KIND])
    assert row[1] is None and "weights of another run" in row[2]
    assert (dest / "model.pt").read_bytes() == weights and json.loads((dest / "result.json").read_text()) != other
    assert store.publish(entry, weights=True) == dest  # with its weights: both replaced
    assert json.loads((dest / "result.json").read_text()) == other


def test_every_committed_published_record_is_current_and_found_through_the_store(tmp_path, monkeypatch):
    """Every record under published/, of every kind, is found by the store from its own
    config (a run through ``train``, embeddings through their cache), as the published
    record in its folder: current, nothing computed (in stored-only mode a miss would
    raise), nothing written locally. A folder of published/ that is no kind's current
    version (a bumped version left behind) fails here too."""
    from bindcore.cli import publishable_kinds
    from bindcore.controlled.training import TrainConfig
    from bindcore.encoders.cache import EmbeddingCache
    from bindcore.runtime import CONTEXT_ENV
    from bindcore.store import PUBLISHED_ROOT

    kinds = publishable_kinds()
    assert {p.name for p in PUBLISHED_ROOT.iterdir() if p.is_dir()} - {"book-times"} == set(kinds)
    monkeypatch.setenv(CONTEXT_ENV, '{"stored_only": true}')
    store = ResultStore(tmp_path / "results", published=PUBLISHED_ROOT)
    cache = EmbeddingCache(tmp_path / "results" / "embeddings", published=PUBLISHED_ROOT)
    seen = 0
    for name, kind in kinds.items():
        for folder in sorted((PUBLISHED_ROOT / name).iterdir()):
            config = json.loads((folder / "config.json").read_text())
            found = store.find(kind, config)
            assert found is not None and found.source == "published" and found.path == folder, folder
            if name.startswith("train"):
                cfg = TrainConfig.from_dict(config)
                assert cfg.store_kind == kind and cfg.to_dict() == config, folder  # the config reads back the same
                rec = train(cfg, store=store, device="cpu", progress=False)
                assert rec["path"] == str(folder) and rec["source"] == "published"
            elif name == "embeddings":
                assert cache.load(config) is not None, folder
            else:
                assert store.cached(kind, config, lambda f=folder: pytest.fail(f"{f} computed again")) == found.result
            seen += 1
    assert seen == sum(1 for k in kinds for p in (PUBLISHED_ROOT / k).iterdir())
    assert not (tmp_path / "results").exists()
