"""The TUI explains itself: help on F1 and ?, the palette's commands, the hint that follows
focus, tables that leave columns out and say so, swept fields, fresh distribution
parameters, and an export that says where it writes."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from textual.widgets import Input, Select, Static
from tui_data import interval_stats, synthetic_events, view_of

from workbench.results.events import Interval
from workbench.tui.app import WorkbenchApp
from workbench.tui.commands import WorkbenchCommands
from workbench.tui.messages import ExportRuns
from workbench.tui.screens.export import ExportScreen
from workbench.tui.screens.help import HelpScreen, section_table
from workbench.tui.screens.history import HistoryScreen
from workbench.tui.widgets.dashboard import RunDashboard, _server_figure, counters_table, fit_parts
from workbench.tui.widgets.fields import ChoiceField, DistributionField
from workbench.tui.widgets.fitted import FittedTable, fitting


async def until(pilot, condition, steps: int = 600) -> None:  # type: ignore[no-untyped-def]
    for _ in range(steps):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("the app never got there")


def help_text(screen: HelpScreen) -> str:
    console = Console(width=100, record=True)
    for section in screen.sections:
        console.print(section.title, section.about, section_table(section))
    return console.export_text()


async def test_f1_and_question_mark_open_the_help_of_every_screen(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        name = app.screen.query_one("#f-name Input", Input)
        name.focus()
        name.value = ""
        await pilot.press("question_mark")  # in a text field: typed
        await pilot.pause()
        assert name.value == "?" and not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")  # anywhere
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        shown = help_text(app.screen)  # type: ignore[arg-type]
        for words in (
            "Setup (F2)",
            "Run (F3)",
            "History (F4)",
            "Compare (F5)",
            "Export",
            "Save profile",
            "ops/MiB",
            "Baseline",
            "Rename",
            "Ctrl+R",
            "F8",
        ):
            assert words in shown, words  # fmt: skip
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        await app.switch_mode("history")
        await pilot.pause()
        await pilot.press("question_mark")  # outside a text field: the help
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_the_palette_lists_the_screens_commands_and_help_not_textuals_keys(
    make, seeded
) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.switch_mode("history")
        await pilot.pause()
        names = {name for name, _, _ in WorkbenchCommands(app.screen).commands()}
        assert {"Compare", "Rename", "Delete", "Export", "Help", "Start"} <= names
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Help" in titles and "Keys" not in titles


async def test_the_hint_names_the_focused_field_at_once(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.screen.query_one("#f-load-concurrency Input", Input).focus()
        await pilot.pause()
        hint = app.screen.query_one("#help-line", Static)
        assert "load.concurrency" in str(hint.render())
        await pilot.press("tab")  # the hint moves with the focus, before the form's checks
        assert "load.workers" in str(hint.render())


async def test_a_new_distribution_starts_with_its_own_parameters(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        field = app.screen.query_one("#f-workload-key_distribution", DistributionField)
        field.query_one(Select).value = "zipf"
        await pilot.pause()
        field.query_one(".p0", Input).value = "1.1"
        field.query_one(Select).value = "hotcold"
        await pilot.pause()
        params = [box.value for box in field.query(".dist-param").results(Input)]
        assert params == ["0.8", "0.2"]  # never zipf's 1.1 carried over
        await until(pilot, lambda: app.draft.spec is not None)
        assert app.draft.spec.workload.key_distribution == "hotcold(0.8,0.2)"


async def test_a_swept_option_shows_its_values_until_given_one(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    profile = tmp_path / "ab.toml"
    profile.write_text(
        '[target]\nsystem = "redis"\nmanaged = true\n\n[[sweep]]\n'
        'path = "target.server.maxmemory_policy"\nvalues = ["allkeys-lru", "allkeys-lfu"]\n'
    )
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen.load_profile(profile)  # type: ignore[attr-defined]
        await until(pilot, lambda: app.draft.spec is not None and app.draft.spec.sweep)
        field = app.screen.query_one("#f-target-server-maxmemory_policy", ChoiceField)
        assert field.still_swept() and field.swept == "sweep: allkeys-lru, allkeys-lfu"
        assert len(app.draft.spec.sweep) == 1
        field.query_one(Select).value = "allkeys-lfu"
        await until(pilot, lambda: app.draft.spec is not None and not app.draft.spec.sweep)
        assert app.draft.spec.target.server["maxmemory_policy"] == "allkeys-lfu"


def test_a_table_leaves_out_the_least_important_columns_first() -> None:
    columns = ("name", "ops/s", "p50", "p99", "max")
    rows = [("redis", "10.5k", "41µs", "120µs", "1.2ms")]
    assert fitting(columns, rows, ("max", "p50"), 100) == [0, 1, 2, 3, 4]
    assert fitting(columns, rows, ("max", "p50"), 30) == [0, 1, 2, 3]
    assert fitting(columns, rows, ("max", "p50"), 24) == [0, 1, 3]


async def test_history_at_80x24_says_which_columns_it_left_out(make, seeded) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.switch_mode("history")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.rows)
        await pilot.pause()
        table = app.screen.query_one("#runs", FittedTable)
        shown = [str(c.label) for c in table.ordered_columns]
        assert {"name", "status", "best ops/s", "p99"} <= set(shown)
        assert "left out" in str(table.border_subtitle) and "steps" in str(table.border_subtitle)
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert len(table.ordered_columns) == 11 and "left out" not in str(table.border_subtitle)


async def test_export_shows_the_full_path_and_saves_there(
    make, seeded, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    app: WorkbenchApp = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.post_message(ExportRuns(["20231114-221320-aaaa"]))
        await until(pilot, lambda: isinstance(app.screen, ExportScreen))
        screen = app.screen
        path_box = screen.query_one("#export-path", Input)
        await until(pilot, lambda: path_box.value.startswith(str(tmp_path)))
        assert app.focused is path_box  # it asks where
        path_box.value = "reports/run.md"
        await pilot.pause()
        assert str(tmp_path / "reports" / "run.md") in str(
            screen.query_one("#export-where").render()
        )
        await pilot.press("enter")
        await until(pilot, lambda: (tmp_path / "reports" / "run.md").is_file())
        assert any(str(tmp_path / "reports" / "run.md") in n.message for n in app._notifications)


def test_figures_are_formatted_and_legends_left_out_whole() -> None:
    assert _server_figure("used_cpu_sys", 1.316054) == ("used cpu sys", "1.32")
    assert _server_figure("used_memory", 1_048_576) == ("used memory", "1.0 MiB")

    class Narrow:
        size = type("Size", (), {"width": 30})()

    assert fit_parts(Narrow(), "p50 5.9µs", "p99 40.0µs", "p99.9 72.2µs") == "p50 5.9µs  p99 40.0µs"


async def test_a_run_at_80x24_keeps_its_verdict_whole(make) -> None:  # type: ignore[no-untyped-def]
    events = []
    for e in synthetic_events("20231114-222000-bbbb", "busy"):
        if isinstance(e, Interval):  # a worker at 97% of a core: a generator-bound verdict
            stats = interval_stats(e.index)
            stats.cpu = {"0": 0.97 * stats.duration}
            stats.server = {"host_busy": 0.3, "host_cpus": 8}
            e = Interval(e.run_id, e.step, e.index, e.elapsed, stats)
        events.append(e)
    app: WorkbenchApp = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.live = view_of(events)
        await app.switch_mode("run")
        await pilot.pause()
        box = app.screen.query_one("#counters")
        dash = app.screen.query_one(RunDashboard)
        step = dash.view.steps[0]
        console = Console(width=box.content_size.width, record=True)
        console.print(counters_table(dash.view, step, wide=False))
        shown = " ".join(line.strip() for line in console.export_text().splitlines())
        assert "[generator-bound]" in shown and "…" not in shown
        assert "add workers" in shown  # the advice, wrapped at words
