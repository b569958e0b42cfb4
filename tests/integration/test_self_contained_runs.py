"""Issue 16 section 1: a stored run is self-contained; reading it never imports a plugin.

A throwaway plugin is written and registered (a package with its entry point on the path
of this process and of the workers it starts), a run is measured with it, and the plugin
is then removed. Every report renders exactly as before, and nothing imported it again.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest
from support import collect, finished

from workbench.report import FORMATS, render
from workbench.results.store import SCHEMA, Store
from workbench.sdk.discovery import load_plugin
from workbench.sdk.errors import PluginError
from workbench.spec.model import Spec, spec_to_dict
from workbench.tui.screens.history import describe

PLUGIN = textwrap.dedent(
    '''
    """A throwaway cache system: the embedded cache under another name and defaults."""
    import dataclasses

    from workbench.sdk.options import Option, OptionSet
    from workbench_embedded import plugin as _embedded

    plugin = dataclasses.replace(
        _embedded,
        name="gone",
        description="a plugin that will be uninstalled",
        options=OptionSet((
            Option("max_entries", "int", 300, "entries", minimum=1),
            Option("max_bytes", "size", 64 * 1024**2, "bytes", minimum=1),
        )),
        strategies=tuple(
            dataclasses.replace(s, name="quick" if s.name == "direct" else s.name)
            for s in _embedded.strategies
        ),
        default_strategy="quick",
    )
    '''
)


def install(site: Path) -> None:
    package = site / "wb_gone_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN)
    info = site / "wb_gone_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wb-gone-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[workbench.plugins]\ngone = wb_gone_plugin:plugin\n")


def forget() -> None:
    load_plugin.cache_clear()
    importlib.invalidate_caches()
    sys.modules.pop("wb_gone_plugin", None)


async def test_a_run_renders_the_same_after_its_plugin_is_uninstalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    install(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    forget()
    path = tmp_path / "runs.sqlite3"
    try:
        events = await collect(
            [
                "target.system=gone",
                "workload.mix={cache_aside=1}",
                "workload.keys=1000",
                "load.ops=4000",
                "load.workers=1",
            ],
            Store(path),
        )
        assert finished(events)[0].status == "completed"
        before = {fmt: render(Store(path).load("last"), fmt) for fmt in FORMATS}
    finally:
        shutil.rmtree(site)
        forget()
    with pytest.raises(PluginError):
        load_plugin("gone")
    forget()

    st = Store(path)
    run = st.load("last")
    step = run.steps[0]
    assert step.system == "gone" and step.strategy == "quick"
    assert step.resolved["system_options"] == {"max_entries": 300, "max_bytes": 64 * 1024**2}
    assert step.resolved["engine"]["name"] == "python"
    (row,) = st.list_runs()
    assert (row.system, row.strategy) == ("gone", "quick")
    after = {fmt: render(run, fmt) for fmt in FORMATS}
    for fmt in FORMATS:
        assert after[fmt] == before[fmt], fmt
    assert "quick" in after["table"] and "64m" in after["hitrate"] and "300" in after["hitrate"]
    assert "wb_gone_plugin" not in sys.modules  # nothing tried to import it


def test_runs_stored_before_the_resolved_facts_still_load(tmp_path: Path) -> None:
    """A store written by the previous release: no runner, no resolved facts."""
    path = tmp_path / "old.sqlite3"
    plan = '[{"index": 0, "label": {}, "title": "run"}]'
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    old = spec_to_dict(Spec())
    old["target"].pop("allow_remote")  # not a field then
    spec = json.dumps(old)
    db.execute(
        "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
        ("20200101-000000-0001", "old", 1.0, 2.0, "running", None, spec, "{}", plan),
    )
    db.execute(
        "INSERT INTO steps (run_id, idx, title, label, spec, workers, clients, server, "
        "status, started_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
        ("20200101-000000-0001", 0, "run", "{}", spec, 1, 1, "{}", "running", 1.0),
    )
    db.commit()
    db.close()
    st = Store(path)
    run = st.load("old")
    assert run.status == "running"  # no runner recorded: never judged abandoned
    assert run.steps[0].strategy == "" and run.steps[0].resolved == {}
    assert run.view().steps[0].status == "running"
    (row,) = st.list_runs()
    assert (row.system, row.strategy) == ("embedded", "default")
    render(run, "table")


async def test_every_face_names_the_systems_and_strategies_a_swept_target_ran(
    tmp_path: Path,
) -> None:
    # A sweep over whole targets names no strategy: the list, `runs show` and History all
    # name the ones the steps ran (it used to read "embedded/default" in two of them).
    path = tmp_path / "runs.sqlite3"
    profile = tmp_path / "targets.toml"
    profile.write_text(
        "[[sweep]]\n"
        'path = "target"\n'
        "values = [\n"
        '  {system = "embedded", options = {max_entries = 100}},\n'
        '  {system = "embedded", options = {max_entries = 200}},\n'
        "]\n"
    )
    events = await collect(["load.ops=500", "load.workers=1"], Store(path), profile=profile)
    assert [s.status for s in finished(events)] == ["completed", "completed"]
    st = Store(path)
    run = st.load("last")
    (row,) = st.list_runs()
    assert run.target() == (row.system, row.strategy) == ("embedded", "direct")
    assert "embedded/direct · " in describe(run).renderables[0].plain  # History's detail
