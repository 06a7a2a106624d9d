"""Installs of a dataset into a folder (bindcore.data.core: staging folder, swap by
renames): a second install into the same folder while one runs is refused and removes
nothing of it; staging folders are matched by their literal names."""

from __future__ import annotations

import pytest

from bindcore.data import core
from bindcore.data.text import make_text_space


def test_a_second_install_into_a_folder_is_refused_while_the_first_runs_and_leaves_it_whole(tmp_path):
    out = tmp_path / "ds"
    staging = core._staging_folder(out)  # the first install, mid-way: its staging folder, locked
    owner = core._own(staging)
    (staging / "new").mkdir()
    with pytest.raises(FileExistsError, match="another install into it is running"):
        make_text_space(seed=0).write(out)
    assert staging.is_dir() and (staging / "new").is_dir()  # nothing of the first install removed
    owner.close()  # the first install ends (or dies): its leftovers are cleaned by the next install
    make_text_space(seed=0).write(out)
    assert (out / "labels.csv").is_file() and not staging.exists()


def test_staging_folders_are_matched_by_name_not_as_a_pattern(tmp_path):
    other = tmp_path / f".data{core.STAGING}abc"  # an install into tmp_path/data, killed
    other.mkdir()
    starred = tmp_path / "d*"
    assert core._staging_folders(starred) == []
    make_text_space(seed=0).write(starred)
    assert other.is_dir()  # not taken for a staging folder of d*
    assert core._staging_folders(tmp_path / "data") == [other]
