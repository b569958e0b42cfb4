"""Keys and marks that must work without colour: q quits where no text field has focus, a
checkbox reads ✓ / ☐, and at 80x24 Tab brings the steps table into sight."""

from __future__ import annotations

from textual.widgets import Input
from tui_data import synthetic_events, view_of

from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.dashboard import RunDashboard
from workbench.tui.widgets.fields import TickBox


async def test_q_types_into_a_text_field_and_quits_elsewhere(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        name = app.screen.query_one("#f-name Input", Input)
        name.focus()
        name.value = ""
        await pilot.press("q")
        await pilot.pause()
        assert name.value == "q" and app.is_running  # a letter in the field
        await app.switch_mode("history")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0 or app.return_code is None
    assert not app.is_running


async def test_a_checkbox_reads_tick_or_box_without_colour(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        box = app.screen.query_one(TickBox)
        box.value = False
        await pilot.pause()
        assert box.render().plain.startswith("☐ ")
        box.value = True
        await pilot.pause()
        assert box.render().plain.startswith("✓ ")


async def test_tab_reaches_the_counters_then_the_steps_at_80x24(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    events = synthetic_events("20231114-222000-bbbb", "sweep", concurrency=(1, 4, 16))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.live = view_of(events)
        await app.switch_mode("run")
        await pilot.pause()
        dash = app.screen.query_one(RunDashboard)
        assert app.focused is None and dash.scroll_y == 0  # charts and counters first
        assert dash.max_scroll_y > 0
        await pilot.press("tab")  # the counters: taller than their box at 80x24, they scroll
        await pilot.pause()
        counters = app.screen.query_one("#counters")
        assert app.focused is counters and counters.max_scroll_y > 0
        await pilot.press("down", "down")
        await pilot.pause()
        assert counters.scroll_y > 0
        await pilot.press("tab")
        await pilot.pause()
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "steps"
        assert dash.scroll_y == dash.max_scroll_y
