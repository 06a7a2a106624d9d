"""A record is what it says: a record copied into another config's folder, an edited
record whose config no longer matches, and a field of the wrong type read as corrupt
(moved aside locally with a one-line note, skipped with a warning when published), never
served as the config asked for nor raised as a traceback."""

from __future__ import annotations

import json
import logging
import shutil

from bindcore.cli import main
from bindcore.controlled.recipes import recipe
from bindcore.controlled.runs import train
from bindcore.controlled.training import STORE_KIND
from bindcore.store import ResultStore

ARGS = ["--profile", "smoke", "--threads", "1", "--quiet", "--set", "steps=4", "--set", "eval_every=2",
        "--set", "eval_scenes=16"]


def tiny(**kw):
    return recipe("smoke", **{"steps": 4, "eval_every": 2, "eval_scenes": 16, **kw})


def test_a_record_copied_into_another_configs_folder_is_not_served(tmp_path, capsys):
    store = ResultStore(tmp_path, published=None)
    zero = train(tiny(seed=0), store=store, device="cpu", progress=False)
    seven = store.local_dir(STORE_KIND, tiny(seed=7).to_dict())
    seven.mkdir(parents=True)
    for name in ("config.json", "result.json", "model.pt"):
        shutil.copy2(f"{zero['path']}/{name}", seven / name)
    assert main(["train", *ARGS, "--set", "seed=7", "--results", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hash"] == seven.name and out["hash"] != zero["hash"]
    assert json.loads((seven / "result.json").read_text())["config"]["seed"] == 7  # trained, not copied
    assert list(seven.glob("config.json.*")), "the copied config was not moved aside"


def test_an_edited_published_record_is_skipped_with_a_warning(tmp_path, caplog):
    store = ResultStore(tmp_path / "results", published=tmp_path / "published")
    train(tiny(), store=store, device="cpu", progress=False)
    dest = store.publish(store.find(STORE_KIND, tiny().to_dict()))
    record = json.loads((dest / "result.json").read_text())
    record["config"]["coverage"], record["metrics"]["test_swap_pair"] = 0.15, 0.988
    (dest / "result.json").write_text(json.dumps(record))
    reader = ResultStore(tmp_path / "elsewhere", published=tmp_path / "published")
    with caplog.at_level(logging.WARNING):
        assert reader.find(STORE_KIND, tiny().to_dict()) is None
        assert list(reader.entries(STORE_KIND)) == []
    assert "differs from config.json" in caplog.text


def test_a_field_of_the_wrong_type_is_a_corrupt_record_not_a_traceback(tmp_path, caplog):
    store = ResultStore(tmp_path, published=None)
    rec = train(tiny(), store=store, device="cpu", progress=False)
    path = tmp_path / STORE_KIND / rec["hash"] / "result.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "code": "abc"}))
    with caplog.at_level(logging.WARNING):
        assert store.find(STORE_KIND, tiny().to_dict()) is None
    assert "'code' is a JSON str, not an object" in caplog.text and not path.exists()  # moved aside
    again = train(tiny(), store=store, device="cpu", progress=False)  # computed again
    assert again["metrics"] == rec["metrics"]
