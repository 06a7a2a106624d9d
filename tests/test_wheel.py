"""The wheel (what `pip install` and so Colab get) ships every file of published/: the
records, the weights the chapters load and the embeddings, so that a chapter run from an
installed package reuses them instead of training and fitting again."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_holds_every_published_file(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    source = tmp_path / "source"
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("bindcore-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    published = [p.relative_to(source / "published").as_posix() for p in (source / "published").rglob("*")
                 if p.is_file()]
    assert any(p.endswith("model.pt") for p in published) and any(p.endswith(".npz") for p in published)
    missing = [p for p in published if f"bindcore/published/{p}" not in shipped]
    assert not missing, f"{len(missing)} published files not in the wheel, e.g. {missing[:3]}"
