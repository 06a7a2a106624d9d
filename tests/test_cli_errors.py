"""The command line (bindcore.cli) on bad options: an expected failure is one line on
stderr naming the option, with exit code 2 and nothing written; an unexpected one keeps
its traceback.

New APIs are imported inside the tests, so that each test fails on its own on code
without them."""

from __future__ import annotations

import pytest

from bindcore.cli import main
from bindcore.controlled.training import STORE_KIND

TINY = ["--profile", "smoke", "--set", "steps=4", "--set", "eval_every=2", "--set", "eval_scenes=16", "--quiet"]


# ---------------------------------------------------------------------------------
# the command line: one line, exit code 2, naming the option
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("extra,option", [
    (["--device", "cuda:7"], "--device"), (["--device", "gpu"], "--device"),
    (["--threads", "-1"], "--threads"), (["--threads", "0"], "--threads"),
    (["--results", "{file}"], "--results"), (["--config", "{missing}"], "--config"),
    (["--config", "{file}"], "--config"),
])
def test_expected_cli_failures_are_one_line_with_exit_code_2(tmp_path, capsys, extra, option):
    (tmp_path / "file").write_text("not json")
    extra = [x.format(file=tmp_path / "file", missing=tmp_path / "missing.json") for x in extra]
    assert main(["train", *TINY, "--results", str(tmp_path / "r"), *extra]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and "Traceback" not in captured.err, captured.err
    assert not (tmp_path / "r" / STORE_KIND).exists()


def test_unexpected_failures_keep_their_traceback(tmp_path, monkeypatch):
    import bindcore.controlled.runs as T

    def boom(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.setattr(T, "run_training", boom)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["train", *TINY, "--results", str(tmp_path)])
