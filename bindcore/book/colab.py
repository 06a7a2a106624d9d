"""The book's repository address (``repository.url`` and ``.branch`` of ``_config.yml``)
and what every chapter makes of it: the Colab badge and the install cell, which installs
bindcore from the repository and keeps Colab's own torch. ``bindcore sync`` rewrites
them after a fork changes the address."""

from __future__ import annotations

import re
from pathlib import Path

from bindcore.io import atomic_write_text

from .paths import resolve_root

COLAB = "https://colab.research.google.com"
BADGE_PREFIX = "[![Open In Colab]"
_CELL = re.compile(r"^# %%.*$", re.M)
_SPEC = re.compile(r'"bindcore(?:\[(?P<extras>[a-z0-9_,\-]*)\])? @ git\+[^"]*"')


def repository(root: Path | str | None = None) -> tuple[str, str] | None:
    """(url, branch) of ``_config.yml``'s ``repository`` section (the one setting); None
    when it has none."""
    import yaml

    path = resolve_root(root) / "_config.yml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    repo = (config or {}).get("repository")
    if repo is None:
        return None
    url, branch = repo.get("url"), repo.get("branch", "main")
    if not url or not str(url).startswith("https://github.com/"):
        raise ValueError(f"{path}: repository.url must be a https://github.com/<owner>/<name> address, got {url!r}")
    return str(url).rstrip("/"), str(branch)


def colab_link(name: str, url: str, branch: str) -> str:
    """The Colab address of ``notebooks/<name>.ipynb`` in the repository ``url`` at ``branch``."""
    return f"{COLAB}/github/{url.removeprefix('https://github.com/')}/blob/{branch}/notebooks/{name}.ipynb"


def badge(name: str, url: str, branch: str) -> str:
    """The markdown line of a chapter's "Open in Colab" badge."""
    return f"{BADGE_PREFIX}({COLAB}/assets/colab-badge.svg)]({colab_link(name, url, branch)})"


def install_spec(url: str, branch: str, extras: tuple[str, ...] = ()) -> str:
    """pip's requirement for bindcore with ``extras`` from the repository at ``branch``."""
    return f"bindcore{'[' + ','.join(extras) + ']' if extras else ''} @ git+{url}@{branch}"


def install_cell(url: str, branch: str, extras: tuple[str, ...] = ()) -> str:
    """The source of a chapter's Colab install cell (see the module docstring)."""
    return (
        "import subprocess\n"
        "import sys\n"
        "\n"
        "if \"google.colab\" in sys.modules:  # install bindcore on Colab only, keeping Colab's own torch\n"
        "    from importlib.metadata import version\n"
        "\n"
        f"    spec = \"{install_spec(url, branch, extras)}\"\n"
        "    keep = [f\"{p}=={version(p)}\" for p in (\"torch\", \"torchvision\")]  # as installed\n"
        "    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\", spec, *keep], check=True)\n"
    )


def cell_extras(source: str) -> tuple[str, ...]:
    """The extras named in an install cell's bindcore requirement (none: ``()``)."""
    m = _SPEC.search(source)
    if m is None:
        raise ValueError("no `\"bindcore[...] @ git+...\"` requirement in the install cell")
    return tuple(e for e in (m.group("extras") or "").split(",") if e)


def stamped(text: str, name: str, url: str, branch: str) -> str:
    """A notebook's py:percent ``text`` with its badge line and its install cell (a
    ``hide-input`` cell that tests for ``google.colab``) made from (``url``,
    ``branch``); everything else as it was."""
    lines = [f"# {badge(name, url, branch)}" if line.startswith(f"# {BADGE_PREFIX}") else line
             for line in text.split("\n")]
    text = "\n".join(lines)
    starts = [m.start() for m in _CELL.finditer(text)] + [len(text)]
    for a, b in zip(starts, starts[1:]):
        header, _, body = text[a:b].partition("\n")
        if "google.colab" in body and "hide-input" in header:
            trailing = body[len(body.rstrip("\n")):]
            cell = install_cell(url, branch, cell_extras(body)).rstrip("\n") + trailing
            return text[:a] + header + "\n" + cell + text[b:]
    return text  # no install cell (tests/test_notebook_pairs.py asks every chapter for one)


def stamp_notebooks(root: Path | str | None = None, check: bool = False) -> list[Path]:
    """Rewrite every ``notebooks/*.py``'s badge and install cell from ``_config.yml``;
    return the files that changed (``check=True``: that differ; nothing is written)."""
    root = resolve_root(root)
    repo = repository(root)
    if repo is None:
        return []
    url, branch = repo
    changed = []
    for path in sorted((root / "notebooks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        new = stamped(text, path.stem, url, branch)
        if new != text:
            changed.append(path)
            if not check:
                atomic_write_text(path, new)
    return changed
