"""Installs of a dataset into a folder (bindcore.data.core: a staging folder, swapped in by
renames): a second install into the same folder while one runs is refused and removes
nothing of it; staging folders are matched by their literal names."""

from __future__ import annotations

import threading

import pytest

from bindcore.data import core
from bindcore.data.text import make_text_space


def test_a_second_install_into_a_folder_is_refused_while_the_first_runs_and_leaves_it_whole(tmp_path, monkeypatch):
    out, writing, go_on = tmp_path / "ds", threading.Event(), threading.Event()
    labels_frame = core.SceneDataset.labels_frame

    def slow(self):  # the first install, mid-way through writing its staging folder
        writing.set()
        go_on.wait(60)
        return labels_frame(self)

    monkeypatch.setattr(core.SceneDataset, "labels_frame", slow)
    first = threading.Thread(target=make_text_space(seed=0).write, args=(out,))
    first.start()
    try:
        assert writing.wait(60)
        (staging,) = core._staging_folders(out)
        with pytest.raises(FileExistsError, match="another install into it is running"):
            make_text_space(seed=1).write(out, overwrite=True)
        assert staging.is_dir() and (staging / "new").is_dir()  # nothing of the first install removed
    finally:
        go_on.set()
        first.join()
    assert (out / "labels.csv").read_text() == make_text_space(seed=0).labels_frame().to_csv(index=False)
    assert not staging.exists() and core._staging_folders(out) == []


def test_staging_folders_are_matched_by_name_not_as_a_pattern(tmp_path):
    other = tmp_path / f".data{core.STAGING}abc"  # an install into tmp_path/data, killed
    other.mkdir()
    starred = tmp_path / "d*"
    assert core._staging_folders(starred) == []
    make_text_space(seed=0).write(starred)
    assert other.is_dir()  # not taken for a staging folder of d*
    assert core._staging_folders(tmp_path / "data") == [other]
