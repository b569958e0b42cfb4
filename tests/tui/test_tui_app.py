"""Driving the workbench like a user: set up, run, stop, find it in History, compare, export."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Checkbox, DataTable, Input, Select, Static
from tui_data import synthetic_events, view_of

from workbench.results.store import Store
from workbench.sdk.errors import SpecError
from workbench.spec.steps import load_spec
from workbench.tui.app import WorkbenchApp
from workbench.tui.commands import WorkbenchCommands
from workbench.tui.messages import ExportRuns
from workbench.tui.screens.compare import CompareScreen
from workbench.tui.screens.dialogs import AskText, Confirm
from workbench.tui.screens.export import ExportScreen
from workbench.tui.screens.help import key_name
from workbench.tui.screens.history import HistoryScreen, RunDetailScreen
from workbench.tui.screens.run import RunScreen
from workbench.tui.screens.setup import SetupScreen
from workbench.tui.widgets.chart import Chart
from workbench.tui.widgets.dashboard import RunDashboard

pytestmark = pytest.mark.timeout(120)


async def until(pilot, condition, steps: int = 600) -> None:  # type: ignore[no-untyped-def]
    """Let the app work until `condition()` holds (bounded by steps, not by the clock)."""
    for _ in range(steps):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("the app never got there")


async def set_field(pilot, app: WorkbenchApp, path: str, text: str) -> None:  # type: ignore[no-untyped-def]
    box = app.screen.query_one(f"#f-{path.replace('.', '-')} Input", Input)
    box.value = text
    await pilot.pause()


def field_error(app: WorkbenchApp, path: str) -> str:
    field = app.screen.query_one(f"#f-{path.replace('.', '-')}")
    if not field.has_class("-invalid"):
        return ""
    return str(field.query_one(".field-error", Static).render()).removeprefix("↳ ")


def shown(widget: Widget) -> str:
    """The text a widget shows on screen."""
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(line.text for line in lines)


def cli_error(*overrides: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_spec(None, list(overrides))
    return info.value


async def test_run_watch_stop_and_find_it_in_history(make, store: Store) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        assert str(app.screen.query_one("#system", Select).value) == "embedded"
        await set_field(pilot, app, "name", "pilot run")
        await set_field(pilot, app, "load.concurrency", "2")
        await set_field(pilot, app, "load.workers", "1")
        await set_field(pilot, app, "load.duration", "60")
        await set_field(pilot, app, "load.warmup", "0")
        await set_field(pilot, app, "load.interval", "0.1")
        assert app.draft.spec is not None, app.draft.errors
        assert app.draft.spec.load.workers == 1

        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, RunScreen) and app.running)
        dash = app.screen.query_one(RunDashboard)
        throughput = app.screen.query_one("#throughput", Chart)
        await until(pilot, lambda: dash.view.step is not None and len(dash.view.step.points) >= 2)
        seen = len(dash.view.step.points)  # type: ignore[union-attr]
        first_ops = dash.view.step.summary.ops  # type: ignore[union-attr]
        first_render = str(app.screen.query_one("#counters-body", Static).render())
        await until(pilot, lambda: len(dash.view.step.points) >= seen + 2)  # type: ignore[union-attr]
        assert dash.view.step.summary.ops > first_ops  # type: ignore[union-attr]
        assert throughput.series and throughput.series[0].points
        assert app.screen.query_one("#latency", Chart).series[0].points
        assert app.screen.query_one("#percentiles", Chart).series
        await pilot.pause()
        assert str(app.screen.query_one("#counters-body", Static).render()) != first_render

        await pilot.press("f8")  # stop: what was measured is kept
        await until(pilot, lambda: not app.running)
        assert app.live.status == "interrupted"
        kept = app.live.steps[0].summary.ops  # type: ignore[union-attr]
        assert kept >= first_ops

        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        table = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: table.row_count == 1)
        assert table.get_row_at(0)[1] == "pilot run"
        stored = store.load(app.live.run_id)
        assert stored.status == "interrupted"
        assert stored.steps[0].intervals


async def test_invalid_fields_show_the_cli_message(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await set_field(pilot, app, "load.concurrency", "abc")
        await set_field(pilot, app, "load.duration", "-2")
        assert field_error(app, "load.concurrency") == cli_error("load.concurrency=abc").message
        assert field_error(app, "load.duration") == cli_error("load.duration=-2").message
        assert app.draft.spec is None
        status = str(app.screen.query_one("#status-line", Static).render())
        assert "2 problems" in status

        # The key distribution, typed in its parts, is checked as the whole expression.
        dist = app.screen.query_one("#f-workload-key_distribution")
        dist.query_one(Select).value = "hotcold"
        await pilot.pause()
        params = list(dist.query(".dist-param").results(Input))
        params[0].value, params[1].value = "1.5", "0.2"
        await pilot.pause()
        expected = cli_error("workload.key_distribution=hotcold(1.5,0.2)").message
        assert field_error(app, "workload.key_distribution") == expected

        await set_field(pilot, app, "load.concurrency", "4")
        await set_field(pilot, app, "load.duration", "1")
        params[0].value = "0.8"
        await pilot.pause()
        assert field_error(app, "load.concurrency") == ""
        assert app.draft.spec is not None
        assert app.draft.spec.workload.key_distribution == "hotcold(0.8,0.2)"

        # Starting with a bad form is refused, and Setup says why.
        await set_field(pilot, app, "workload.keys", "0")
        assert field_error(app, "workload.keys") == cli_error("workload.keys=0").message
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not app.running
        assert isinstance(app.screen, SetupScreen)


async def test_unknown_system_option_and_strategy_support(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await set_field(pilot, app, "target.options.max_bytes", "lots")
        expected = cli_error("target.options.max_bytes=lots").message
        assert field_error(app, "target.options.max_bytes") == expected
        await set_field(pilot, app, "target.options.max_bytes", "")
        app.screen.query_one("#strategy", Select).value = "threads"
        await pilot.pause()
        mix = app.screen.query_one("#f-workload-mix")
        mix.query_one("#mix-publish", Input).value = "1"
        await pilot.pause()
        message = field_error(app, "workload.mix")
        assert "does not support" in message


async def test_save_profile_round_trip(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "saved" / "mine.toml"
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await set_field(pilot, app, "name", "mine")
        await set_field(pilot, app, "load.concurrency", "1, 4, 16")
        await set_field(pilot, app, "load.ops", "5000")
        await set_field(pilot, app, "workload.keys", "2000")
        app.screen.query_one("#f-workload-prefill Checkbox", Checkbox).value = True
        vs = app.screen.query_one("#f-workload-value_size")
        vs.query_one(Select).value = "uniform"
        await pilot.pause()
        p0, p1 = list(vs.query(".dist-param").results(Input))
        p0.value, p1.value = "8", "3000"
        app.screen.query_one("#strategy", Select).value = "direct,threads"
        await pilot.pause()
        spec = app.draft.spec
        assert spec is not None, app.draft.errors
        assert len(app.screen.checked.steps) == 6
        app.screen.query_one("#save-path", Input).value = str(target)
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert target.exists()
    assert load_spec(target) == spec  # the CLI runs it unchanged

    # Opening the saved profile shows the same set-up again.
    again: WorkbenchApp = make()
    async with again.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        again.screen.load_profile(target)  # type: ignore[attr-defined]
        await until(pilot, lambda: again.draft.spec == spec)
        conc = again.screen.query_one("#f-load-concurrency Input", Input)
        assert conc.value == "[1, 4, 16]"
        assert str(again.screen.query_one("#strategy", Select).value) == "direct,threads"


async def test_profile_from_the_list(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        select = app.screen.query_one("#profile", Select)
        select.value = str(app.profiles_dir / "fixed.toml")
        await until(pilot, lambda: app.draft.spec is not None and app.draft.spec.name == "fixed")
        assert app.draft.spec.workload.key_distribution == "hotcold(0.8,0.2)"  # type: ignore[union-attr]
        dist = app.screen.query_one("#f-workload-key_distribution")
        assert str(dist.query_one(Select).value) == "hotcold"
        assert len(app.screen.checked.steps) == 2


async def test_history_rename_delete_compare_export(make, seeded: Store) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        table = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: table.row_count == 3)
        assert [table.get_row_at(i)[1] for i in range(3)] == ["slow", "sweep", "quick"]
        await app.workers.wait_for_complete()
        await pilot.pause()
        detail = shown(app.screen.query_one("#run-detail", Static))
        assert "slow" in detail and "bench" in detail

        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, AskText))
        app.screen.query_one(Input).value = "slower"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await until(pilot, lambda: seeded.load("20231114-223000-cccc").name == "slower")

        await pilot.press("space", "space")  # select the first two
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        diff = app.screen.query_one("#diff", DataTable)
        await until(pilot, lambda: diff.row_count == 4)  # slower + 3 sweep steps
        labels = [str(diff.get_row_at(i)[1]) for i in range(4)]
        assert labels[0].startswith("slower")
        assert "(base)" in labels[0]
        assert app.screen.query_one("#cmp-percentiles", Chart).series
        # The sweep's steps as one curve of p99 against throughput; the single run adds none.
        sweeps = app.screen.query_one("#cmp-sweep", Chart)
        assert sweeps.display
        assert [(s.name, len(s.points)) for s in sweeps.series] == [("sweep", 3)]
        # p50 against the baseline: 3 intervals a side are too few for a verdict, said so.
        await until(pilot, lambda: bool(app.screen.changes))  # type: ignore[attr-defined]
        assert str(diff.get_row_at(1)[4]).endswith(" ?")
        diff.move_cursor(row=1)
        detail = app.screen.query_one("#change-detail")
        await until(pilot, lambda: "too few samples" in shown(detail))

        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, ExportScreen))
        export = app.screen
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert export.text  # type: ignore[attr-defined]
        assert "slower" in export.text  # type: ignore[attr-defined]
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))

        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        table = app.screen.query_one("#runs", DataTable)
        table.move_cursor(row=2)
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, lambda: table.row_count == 2)
        assert [r.name for r in seeded.list_runs()] == ["slower", "sweep"]

        table.move_cursor(row=1)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        dash = app.screen.query_one(RunDashboard)
        assert len(dash.view.steps) == 3
        assert app.screen.query_one("#throughput", Chart).series
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))


async def test_export_a_run_saves_the_file(make, seeded: Store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.post_message(ExportRuns(["20231114-221320-aaaa"]))
        await until(pilot, lambda: isinstance(app.screen, ExportScreen))
        screen = app.screen
        assert "table" in screen.formats and "html" in screen.formats  # type: ignore[attr-defined]
        await app.workers.wait_for_complete()
        await pilot.pause()
        out = tmp_path / "report.md"
        screen.query_one("#export-path", Input).value = str(out)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert out.read_text() == screen.text  # type: ignore[attr-defined]
        assert "quick" in out.read_text()


async def test_dashboard_follows_the_live_view_and_pins_steps(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    events = synthetic_events(concurrency=(1, 4), intervals=3, finish=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        for i in range(len(events)):
            app.live = view_of(events[: i + 1])
            await pilot.pause()
        dash = app.screen.query_one(RunDashboard)
        steps = dash.query_one("#steps", DataTable)
        assert dash.shown_index() == 1  # the running step
        assert steps.cursor_row == 1  # the Steps table highlights the step on the charts
        await pilot.press("left_square_bracket")
        assert dash.shown_index() == 0
        await pilot.pause()
        assert steps.cursor_row == 0
        head = str(app.screen.query_one("#run-head", Static).render())
        assert "step 1/2" in head
        await pilot.press("m")
        assert app.screen.query_one("#throughput", Chart).series[0].name == "MiB/s"
        dash.pinned = None  # following the running step again
        await pilot.pause()
        assert steps.cursor_row == 1
        steps.move_cursor(row=0)  # the person looks at another row, without pinning it
        for _ in range(2):  # and it stays there while intervals arrive
            app.live = view_of(events)
            await pilot.pause()
            assert steps.cursor_row == 0 and dash.shown_index() == 1


async def test_command_palette_switches_modes(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"History")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        dark = app.current_theme.dark
        await pilot.press("ctrl+t")
        assert app.current_theme.dark != dark


async def test_palette_is_built_from_the_bindings(make) -> None:  # type: ignore[no-untyped-def]
    """Every App key is a palette command named as its binding, with its key in the help."""
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        commands = {
            name: help_text for name, _, help_text in WorkbenchCommands(app.screen).commands()
        }
        for binding in WorkbenchApp.BINDINGS:
            assert isinstance(binding, Binding)
            assert key_name(binding.key) in commands[binding.description]
        assert "Search for the highest rate" in commands
        assert commands["Start"] == "run the set-up (Ctrl+R)" and "(F2)" in commands["Setup"]
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Compare")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))


REPO_PROFILES = sorted((Path(__file__).resolve().parents[2] / "profiles").glob("*.toml"))


async def test_every_repo_profile_opens_unchanged(make) -> None:  # type: ignore[no-untyped-def]
    """The form shows each profile without changing what it means: the CLI's spec."""
    app: WorkbenchApp = make()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert REPO_PROFILES
        for profile in REPO_PROFILES:
            expected = load_spec(profile)  # every built-in plugin is installed: all load
            app.screen.load_profile(profile)  # type: ignore[attr-defined]
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.draft.errors == (), profile
            assert app.draft.spec == expected, profile


async def test_save_over_a_hand_written_profile_keeps_its_comments(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "mine.toml"
    target.write_text(
        '# hand-written: keep me\nname = "mine"\n\n[load]\nconcurrency = 4  # four\n'
        'duration = "2s"  # short\n'
    )
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen.load_profile(target)  # type: ignore[attr-defined]
        await until(pilot, lambda: app.screen.query_one("#save-path", Input).value == str(target))
        await set_field(pilot, app, "load.concurrency", "8")
        await until(
            pilot, lambda: app.draft.spec is not None and app.draft.spec.load.concurrency == 8
        )
        spec = app.draft.spec
        await pilot.press("ctrl+s")
        await pilot.pause()
    text = target.read_text()
    assert text.startswith("# hand-written: keep me\n")
    assert "concurrency = 8  # four" in text
    assert 'duration = "2s"  # short' in text
    assert load_spec(target) == spec
