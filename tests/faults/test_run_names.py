"""Issue 39 item 12: a run name is printed in lists and headings, so it holds no control
character (a newline split `runs list` rows, an ESC recoloured the terminal), and a name
given by hand names something: `runs rename` to "" was accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

from workbench.results.store import Store


@pytest.mark.parametrize("name", ["a\nb", "a\x1b[31mred", "tab\there"], ids=["LF", "ESC", "TAB"])
def test_a_name_with_a_control_character_is_refused(tmp_path: Path, name: str) -> None:
    res = cli(["run", "--test-time", "0.2s", "--name", name], tmp_path / "runs.sqlite", timeout=60)
    assert res.returncode == 2, res.stdout[-1000:] + res.stderr[-1000:]
    assert "--name" in res.stderr and "control characters" in res.stderr
    assert not (tmp_path / "runs.sqlite").exists()


def test_renaming_to_nothing_or_a_newline_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    made = cli(["run", "--test-time", "0.2s", "--name", "kept"], store, timeout=60)
    assert made.returncode == 0, made.stderr[-2000:]
    for bad in ("", "   ", "x\ny"):
        res = cli(["runs", "rename", "last", bad], store, timeout=60)
        assert res.returncode == 2, (bad, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert Store(store).load("last").name == "kept"
