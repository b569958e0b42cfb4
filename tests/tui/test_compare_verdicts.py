"""Compare mode judges each row against the baseline row as `workbench compare` does, and
colours each change by its verdict; `b` moves the baseline and the verdicts follow."""

from __future__ import annotations

from test_tui_app import shown, until
from textual.widgets import DataTable
from tui_data import record, synthetic_events

from workbench.results.store import Store
from workbench.tui.app import WorkbenchApp
from workbench.tui.screens.compare import VERDICT_STYLES, CompareScreen


async def test_each_change_has_its_verdict_colour(make, store: Store) -> None:  # type: ignore[no-untyped-def]
    record(store, synthetic_events("20231114-221320-aaaa", "fast", intervals=12))
    record(store, synthetic_events("20231114-222000-bbbb", "slow", intervals=12, scale=2.0))
    app: WorkbenchApp = make()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.compare_ids = ("20231114-221320-aaaa", "20231114-222000-bbbb")
        await app.switch_mode("compare")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        await until(pilot, lambda: bool(screen.changes))  # type: ignore[attr-defined]
        diff = screen.query_one("#diff", DataTable)
        p50 = diff.get_row_at(1)[4]  # slow's p50: twice the base's
        assert str(p50).endswith("+100%")
        assert any(span.style == VERDICT_STYLES["regressed"] for span in p50.spans)
        ops = diff.get_row_at(1)[2]  # the same ops per interval: no change, dim
        assert any(span.style == VERDICT_STYLES["no change"] for span in ops.spans)
        diff.move_cursor(row=1)
        await pilot.pause()
        detail = shown(screen.query_one("#change-detail"))
        assert "intervals 12/12" in detail and "p50 +100.0" in detail and "regressed" in detail

        await pilot.press("b")  # slow is the base now: fast improved
        await until(pilot, lambda: 0 in screen.changes)  # type: ignore[attr-defined]
        p50 = diff.get_row_at(0)[4]
        assert str(p50).endswith("-50%")
        assert any(span.style == VERDICT_STYLES["improved"] for span in p50.spans)
