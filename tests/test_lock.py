"""requirements.lock, the versions `make venv` installs (pip install -c requirements.lock): the
environment running the tests has them, and the lock pins every dependency the project names.

Published records are keyed on library versions (the MiniLM embeddings on transformers and
sentence-transformers, the CLIP ones on open_clip and torch), so an environment with other versions
than the lock's recomputes records instead of reading the committed ones."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
MAKEFILE = ROOT / "Makefile"

# the libraries the records and the book build depend on: these must be installed and locked
CORE = ("torch", "transformers", "sentence-transformers", "numpy", "pandas", "jupyter-book", "papermill")


def _lock_pins() -> list[Requirement]:
    """Every `name==version [; marker]` line of the lock (comment and annotation lines skipped)."""
    lines = [line.split(" #")[0].strip() for line in LOCK.read_text().splitlines()]
    return [Requirement(line) for line in lines if line and not line.startswith(("#", "-"))]


def _pinned_version(req: Requirement) -> str:
    (spec,) = req.specifier
    assert spec.operator == "==", f"{req} is not pinned with =="
    return spec.version


def _locked_here() -> dict[str, str]:
    """name -> locked version, for the pins whose marker holds on this interpreter and platform."""
    pins = {}
    for req in _lock_pins():
        if req.marker is None or req.marker.evaluate():
            name = canonicalize_name(req.name)
            assert name not in pins, f"{name} is locked twice for this platform"
            pins[name] = _pinned_version(req)
    return pins


def _makefile_var(name: str) -> str:
    match = re.search(rf"^{name}\s*\??:?=\s*(.+)$", MAKEFILE.read_text(), re.MULTILINE)
    assert match, f"the Makefile sets no {name}"
    return match.group(1).strip()


def test_installed_versions_are_the_locked_ones_so_published_records_are_reused():
    locked = _locked_here()
    assert set(CORE) <= set(locked), f"not locked: {sorted(set(CORE) - set(locked))}"
    wrong, missing = {}, []
    for name, version in sorted(locked.items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        # ==2.14.1 also accepts a local build such as 2.14.1+cu130
        if not SpecifierSet(f"=={version}").contains(installed, prereleases=True):
            wrong[name] = f"installed {installed}, locked {version}"
    assert not wrong, (
        f"this environment differs from requirements.lock: {wrong}; reinstall with `make venv` "
        "(or move the lock deliberately with `make lock`, see its header)"
    )
    assert not [name for name in CORE if name in missing], f"not installed: {missing}"


def test_lock_pins_every_dependency_of_pyproject_and_the_makefile_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = _makefile_var("EXTRAS").split(",")
    assert set(extras) <= set(project["optional-dependencies"]), extras
    direct = [Requirement(r) for r in project["dependencies"]]
    direct += [Requirement(r) for extra in extras for r in project["optional-dependencies"][extra]]
    locked: dict[str, list[str]] = {}
    for req in _lock_pins():
        locked.setdefault(canonicalize_name(req.name), []).append(_pinned_version(req))
    unpinned = [str(r) for r in direct if canonicalize_name(r.name) not in locked]
    assert not unpinned, f"in pyproject.toml but not in requirements.lock (run `make lock`): {unpinned}"
    outside = {
        str(r): locked[canonicalize_name(r.name)]
        for r in direct
        if not any(r.specifier.contains(v, prereleases=True) for v in locked[canonicalize_name(r.name)])
    }
    assert not outside, f"the lock's versions are outside pyproject.toml's ranges: {outside}"
    # torch and torchvision are installed first, unconstrained, from TORCH_SPEC: the same pins as the lock
    for spec in _makefile_var("TORCH_SPEC").split():
        req = Requirement(spec)
        assert locked[canonicalize_name(req.name)] == [_pinned_version(req)], (spec, "TORCH_SPEC vs lock")


def test_make_venv_and_environment_yml_install_under_the_lock():
    makefile = MAKEFILE.read_text()
    assert _makefile_var("LOCK") == LOCK.name
    assert re.search(r"^\$\(VENV\)/\.installed:.*\$\(LOCK\)", makefile, re.MULTILINE), "venv not rebuilt on a new lock"
    assert 'pip install -q -c $(LOCK) -e ".[$(EXTRAS)]"' in makefile
    env = (ROOT / "environment.yml").read_text()
    assert f"- -c {LOCK.name}" in env
    assert f"-e .[{_makefile_var('EXTRAS')}]" in env
    assert all(f"- {spec}" in env for spec in _makefile_var("TORCH_SPEC").split())
