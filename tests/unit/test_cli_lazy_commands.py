"""A command line that names a command builds that one only; anything else builds all."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workbench.cli.main import COMMANDS, named_command


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["run", "--test-time", "1s"], "run"),
        (["--store", "runs.sqlite", "runs", "list"], "runs"),
        (["--store=runs.sqlite", "--debug", "trace", "info", "t.csv"], "trace"),
        ([], None),  # the TUI
        (["--help"], None),
        (["--version"], None),
        (["rnu"], None),  # a mistyped name: typer names the near one among all
    ],
)
def test_the_named_command_is_found_past_the_top_level_options(
    argv: list[str], named: str | None
) -> None:
    assert named_command(argv) == named


def test_a_named_command_imports_no_other_command_module(tmp_path) -> None:  # type: ignore[no-untyped-def]
    probe = (
        "import sys; sys.argv = ['workbench', 'runs', 'list'];"
        "import workbench.cli.main as m\n"
        "try:\n    m.main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(n for n in sys.modules if n.startswith('workbench.cli.')))"
    )
    res = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
        check=False, env={**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite")},
    )  # fmt: skip
    loaded = res.stdout.strip().splitlines()[-1]
    assert "workbench.cli.runs" in loaded, res.stdout + res.stderr
    others = [module for name, (module, _, _) in COMMANDS.items() if name != "runs"]
    assert not [m for m in others if f"'{m}'" in loaded], loaded


def test_the_whole_app_has_every_command() -> None:
    from workbench.cli.main import app

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert names == set(COMMANDS)
