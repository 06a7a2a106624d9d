"""Dataset folders written and read back: ``bindcore data make`` never overwrites or mixes
datasets silently and checks its output folder before generating; a dataset write that
fails leaves nothing half written; the folder loader finds truncated images and empty
labels files up front and names the file (and the labels line).

New APIs are imported inside the tests, so that each test fails on its own on code
without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bindcore.cli import main


def corrupt(path: Path, keep: int = 40) -> None:
    path.write_bytes(path.read_bytes()[:keep])


# ---------------------------------------------------------------------------------
# bindcore data make
# ---------------------------------------------------------------------------------
def test_data_make_refuses_a_folder_that_is_not_empty_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "ds"
    assert main(["data", "make", "clevr2d-singles", "--out", str(out), "--size", "32"]) == 0
    (out / "0000999.png").write_bytes(b"an image of another dataset")
    (out / "notes.txt").write_text("mine")
    before = sorted(p.name for p in out.iterdir())
    capsys.readouterr()
    assert main(["data", "make", "text", "--out", str(out), "--scenes", "5"]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in out.iterdir()) == before  # untouched
    # an image that bindcore did not write is deleted only with --force
    assert main(["data", "make", "text", "--out", str(out), "--scenes", "5", "--overwrite"]) == 2
    assert "0000999.png" in capsys.readouterr().err and sorted(p.name for p in out.iterdir()) == before
    assert main(["data", "make", "text", "--out", str(out), "--scenes", "5", "--overwrite", "--force"]) == 0
    # the old dataset's files are gone (no stale images beside the new labels), other files stay
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "captions.csv", "labels.csv", "metadata.json", "notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name != "ds"]  # no temporary folder left


def test_data_make_checks_the_output_before_generating(tmp_path, capsys, monkeypatch):
    import bindcore.cli as cli

    def never(*a, **k):
        raise AssertionError("generated before checking --out")

    monkeypatch.setattr(cli, "make_dataset", never)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["data", "make", "clevr2d", "--out", str(blocker / "sub")]) == 2
    assert "--out" in capsys.readouterr().err
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        assert main(["data", "make", "clevr2d", "--out", str(ro / "sub")]) == 2
        assert "cannot write" in capsys.readouterr().err


def test_a_failed_write_leaves_nothing_half_written(tmp_path, monkeypatch):
    from PIL import Image

    from bindcore.data import make_clevr2d_singles

    ds = make_clevr2d_singles(size=32)
    calls = {"n": 0}
    save = Image.Image.save

    def failing_save(self, *a, **k):
        calls["n"] += 1
        if calls["n"] > 5:
            raise OSError(28, "No space left on device")
        return save(self, *a, **k)

    monkeypatch.setattr(Image.Image, "save", failing_save)
    with pytest.raises(OSError, match="No space"):
        ds.write(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []  # neither the target nor a temporary folder


# ---------------------------------------------------------------------------------
# the folder loader
# ---------------------------------------------------------------------------------
@pytest.fixture
def clevr_folder(tmp_path) -> Path:
    from bindcore.data import make_clevr2d_singles

    make_clevr2d_singles(size=32).write(tmp_path / "clevr")
    return tmp_path / "clevr"


def test_a_truncated_image_is_found_when_loading_with_its_labels_line(clevr_folder):
    from bindcore.data import load_folder

    img = clevr_folder / "0000003.png"
    corrupt(img, 60)
    with pytest.raises(ValueError, match=r"0000003.png is a broken PNG.*labels.csv, line 5"):
        load_folder(clevr_folder, "clevr2d")  # loaded, then failed at first access without context


def test_a_truncated_jpeg_is_found(clevr_folder):
    from PIL import Image

    from bindcore.data import load_folder

    img = clevr_folder / "0000002.png"
    with Image.open(img) as im:
        im.convert("RGB").save(img, format="JPEG")
    load_folder(clevr_folder, "clevr2d")  # a whole JPEG under a .png name is fine
    corrupt(img, img.stat().st_size - 2)  # PIL's verify passes a truncated JPEG
    with pytest.raises(ValueError, match="0000002.png is a truncated JPEG.*line 4"):
        load_folder(clevr_folder, "clevr2d")


@pytest.mark.parametrize("content,words", [("", "is empty"), (None, "no scenes")])
def test_empty_or_header_only_labels_are_errors_naming_the_file(clevr_folder, content, words):
    from bindcore.data import load_folder, read_labels_csv

    labels = clevr_folder / "labels.csv"
    header = labels.read_text().splitlines()[0] + "\n"
    labels.write_text(header if content is None else content)
    with pytest.raises(ValueError, match=f"{labels}.*{words}"):
        load_folder(clevr_folder, "clevr2d")  # pandas' error without a path / a dataset of 0 scenes
    with pytest.raises(ValueError, match=words):
        read_labels_csv(labels)
