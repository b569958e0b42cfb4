"""A broken plugin is a row with its error in `workbench plugins`; the others still work."""

from __future__ import annotations

import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from workbench.sdk import discovery as plugins
from workbench.sdk.errors import PluginError

ENTRY_POINTS = """\
[workbench.plugins]
importfails = wbfake_importfails:plugin
baddecl = wbfake_baddecl:plugin
notasystem = wbfake_baddecl:something
"""

BAD_DECLARATION = """\
from workbench.sdk.adapter import CacheSystem, Strategy


async def connect(system, strategy):
    raise AssertionError("never connected")


plugin = CacheSystem(
    name="baddecl",
    description="declares a default strategy it does not have",
    strategies=(Strategy("one", "the only one", connect),),
    default_strategy="missing",
)
something = 42
"""


@pytest.fixture
def broken_site(tmp_path: Path) -> Path:
    """A directory with an installed-looking distribution holding three broken plugins."""
    site = tmp_path / "site"
    info = site / "wbfake_broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wbfake-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (site / "wbfake_importfails.py").write_text("import wbfake_no_such_module  # noqa\n")
    (site / "wbfake_baddecl.py").write_text(textwrap.dedent(BAD_DECLARATION))
    return site


def test_workbench_plugins_lists_broken_ones_with_their_error(
    broken_site: Path, workbench_cli: Any
) -> None:
    done = workbench_cli("plugins", env={"PYTHONPATH": str(broken_site)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()

    def row(name: str) -> str:
        return next(line for line in lines if line.startswith(f"{name}:"))

    assert "BROKEN" in row("importfails")
    assert "ModuleNotFoundError" in row("importfails") and "wbfake_no_such_module" in row(
        "importfails"
    )
    assert "BROKEN" in row("baddecl") and "default strategy 'missing'" in row("baddecl")
    assert "BROKEN" in row("notasystem") and "must name a CacheSystem, got int" in row("notasystem")
    # The others are listed in full, as without the broken ones.
    assert "BROKEN" not in row("embedded")
    assert any("strategy direct (default)" in line for line in lines)


def test_checking_or_running_a_broken_plugin_is_one_line(
    broken_site: Path, workbench_cli: Any
) -> None:
    env = {"PYTHONPATH": str(broken_site)}
    done = workbench_cli("plugins", "check", "importfails", env=env)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "failed to import" in done.stderr
    assert "Traceback" not in done.stderr
    done = workbench_cli(
        "run", "--set", "target.system=baddecl", "--set", "load.ops=10", env=env, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "default strategy 'missing'" in done.stderr and "Traceback" not in done.stderr
    # And a good plugin still checks fine next to them.
    done = workbench_cli("plugins", "check", "embedded", "--only", "miss", env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_plugin_statuses_survive_any_exception_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = {
        "embedded": EntryPoint("embedded", "workbench_embedded:plugin", plugins.GROUP),
        "raises": EntryPoint("raises", "wbfake_nowhere.deep:plugin", plugins.GROUP),
        "noattr": EntryPoint("noattr", "workbench_embedded:nothing_here", plugins.GROUP),
    }
    monkeypatch.setattr(plugins, "_entry_points", lambda: fake)
    plugins.load_plugin.cache_clear()
    try:
        rows = {r.name: r for r in plugins.plugin_statuses()}
        assert rows["embedded"].system is not None and rows["embedded"].error is None
        assert rows["raises"].system is None and "ModuleNotFoundError" in rows["raises"].error
        assert rows["noattr"].system is None and "AttributeError" in rows["noattr"].error
        with pytest.raises(PluginError, match="failed to import"):
            plugins.load_plugin("raises")
    finally:
        plugins.load_plugin.cache_clear()
