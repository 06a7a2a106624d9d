"""README.md and the book's page "Running and extending this book" (book/running.md):
every `bindcore` command line they show names a subcommand and options that the
command has, and every `make` target they name is one of the Makefile's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "book" / "running.md"]


def _command_lines(text: str) -> list[str]:
    """Each `bindcore ...` command in ``text``: to the end of its code span or line, with
    backslash continuations joined."""
    text = re.sub(r"\\\n\s*", " ", text)
    return [m.group(1) for m in re.finditer(r"\bbindcore ((?:book|sync|train|sweep|publish|data)\b[^`\n]*)", text)]


def _options() -> dict[str, set[str]]:
    import typer

    from bindcore.cli import app

    def of(command) -> set[str]:
        return {s for p in command.params for s in p.opts if s.startswith("-")}

    commands = typer.main.get_command(app).commands
    out = {name: of(c) for name, c in commands.items()}
    out["data"] = set().union(*(of(c) for c in commands["data"].commands.values()))
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_bindcore_option_shown_exists(doc):
    options = _options()
    lines = _command_lines(doc.read_text())
    assert lines or doc.name == "README.md"
    unknown = [(line, flag) for line in lines for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line.split("#")[0])
               if flag not in options[line.split()[0]]]
    assert not unknown, f"{doc.name} shows options the command lacks: {unknown}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_make_target_shown_exists(doc):
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), flags=re.M))
    shown = set(re.findall(r"\bmake ([a-z][a-z-]*)", doc.read_text()))
    assert shown and shown <= targets, f"{doc.name} names make targets the Makefile lacks: {shown - targets}"
