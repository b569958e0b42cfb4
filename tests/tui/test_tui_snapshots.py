"""Screenshots of the main screens at 80x24 and 160x48, with fixed content.

Few on purpose (they change with Textual releases; Textual is pinned). Update with
``pytest tests/tui --snapshot-update`` after looking at the new pictures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input
from tui_data import synthetic_events, view_of

from workbench.results.events import RunFinished, StepFinished
from workbench.results.metrics import Stats
from workbench.tui.messages import ExportRuns
from workbench.tui.screens.setup import SetupScreen

NARROW, WIDE = (80, 24), (160, 48)


async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
    await pilot.pause()
    for _ in range(3):  # a worker's result may start another (the runs list, then a run)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    pilot.app.clear_notifications()
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False  # a blinking cursor is a coin toss in a picture
    await pilot.pause()


def setup_before(profile: Path):  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, SetupScreen)
        screen.load_profile(profile)
        await settle(pilot)
        screen.query_one("#save-path", Input).value = "profiles/fixed.toml"  # not the temp path
        screen.query_one("#f-load-concurrency Input", Input).focus()
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_setup(snap_compare, make, profiles: Path, size) -> None:  # type: ignore[no-untyped-def]
    app = make()
    assert snap_compare(app, terminal_size=size, run_before=setup_before(profiles / "fixed.toml"))


def test_setup_with_errors(snap_compare, make, profiles: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await setup_before(profiles / "fixed.toml")(pilot)
        screen = pilot.app.screen
        screen.query_one("#f-load-concurrency Input", Input).value = "many"
        screen.query_one("#f-load-duration Input", Input).value = "0"
        await settle(pilot)

    assert snap_compare(make(), terminal_size=NARROW, run_before=run_before)


def run_before_with(view_events: list, mode: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()
        pilot.app.live = view_of(view_events)
        await pilot.app.switch_mode(mode)
        await settle(pilot)

    return run_before


SWEEP = synthetic_events("20231114-222000-bbbb", "sweep", concurrency=(1, 4, 16), intervals=5)
LIVE = synthetic_events("20231114-221320-aaaa", "quick", intervals=3, finish=False)
FAILED = [
    *synthetic_events("20231114-221320-dddd", "unreachable", intervals=0, finish=False),
    StepFinished(
        "20231114-221320-dddd", 0, "failed", Stats(), "cannot connect to redis at 127.0.0.1:1"
    ),
    RunFinished("20231114-221320-dddd", "failed", "every step failed"),
]


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_run_sweep(snap_compare, make, size) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make(), terminal_size=size, run_before=run_before_with(SWEEP, "run"))


def test_run_steps_reached_with_tab_at_80x24(snap_compare, make) -> None:  # type: ignore[no-untyped-def]
    """At 80x24 the dashboard scrolls: Tab (the counters, then the steps) brings the steps
    table into sight, its columns fitted to the width."""

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await run_before_with(SWEEP, "run")(pilot)
        await pilot.press("tab", "tab")
        await settle(pilot)

    assert snap_compare(make(), terminal_size=NARROW, run_before=run_before)


def test_run_failed_says_why_at_80x24(snap_compare, make) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make(), terminal_size=NARROW, run_before=run_before_with(FAILED, "run"))


def test_run_live_light_theme(snap_compare, make) -> None:  # type: ignore[no-untyped-def]
    app = make(theme="textual-light")
    assert snap_compare(app, terminal_size=WIDE, run_before=run_before_with(LIVE, "run"))


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_history(snap_compare, make, seeded, size) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make(), terminal_size=size, run_before=run_before_with([], "history"))


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_compare(snap_compare, make, seeded, size) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()
        pilot.app.compare_ids = ("20231114-223000-cccc", "20231114-222000-bbbb")
        await pilot.app.switch_mode("compare")
        await settle(pilot)

    assert snap_compare(make(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [NARROW, WIDE], ids=["80x24", "160x48"])
def test_help(snap_compare, make, size) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()
        await pilot.press("f1")
        await settle(pilot)

    assert snap_compare(make(), terminal_size=size, run_before=run_before)


def test_export_at_80x24(snap_compare, make, seeded, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir("/")  # the full path shown: the same on every machine (nothing is saved)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()
        pilot.app.post_message(ExportRuns(["20231114-221320-aaaa"]))
        await settle(pilot)

    assert snap_compare(make(), terminal_size=NARROW, run_before=run_before)
