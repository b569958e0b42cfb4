"""Issue 39 item 12 (names): a run name with a control character that a store holds from
before names were checked (or was written by another tool) is printed escaped: a newline
split `runs list` rows and an ESC recoloured the terminal that printed it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from support import collect
from typer.testing import CliRunner

from workbench.cli.main import build_app
from workbench.results.store import Store

RAW = "old\nrun\x1b[31m"


async def test_a_stored_control_character_is_printed_escaped(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    await collect(["load.duration=0.1", "load.interval=0.05"], Store(path))
    with sqlite3.connect(path) as db:  # as a store from before the check holds it
        db.execute("UPDATE runs SET name=?", (RAW,))
    env = {"WORKBENCH_STORE": str(path)}
    app = build_app(["runs"])
    listed = CliRunner().invoke(app, ["runs", "list"], env=env)
    shown = CliRunner().invoke(app, ["runs", "show", "last"], env=env)
    for res in (listed, shown):
        assert res.exit_code == 0, res.output
        assert "\x1b" not in res.output and "old\nrun" not in res.output, res.output
        assert "old\\nrun\\x1b[31m" in res.output, res.output
