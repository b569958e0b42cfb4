"""Run mode: the live run, from the app's `live` view."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen

from workbench.results.live import RunView
from workbench.tui.layout import key_footer
from workbench.tui.messages import ExportRuns
from workbench.tui.widgets.dashboard import DashboardKeys, RunDashboard
from workbench.tui.widgets.modebar import ModeBar


class RunScreen(DashboardKeys, Screen[None]):
    """Throughput, latency over time, the percentile curve, counters and the steps."""

    # Nothing focused at first: at 80x24 the charts and counters fill the screen, and Tab
    # to the steps table scrolls it into sight.
    AUTO_FOCUS = ""
    HELP = (
        "The live run: throughput, latency over time, the latency by percentile, the "
        "counters (hits, misses, hot and cold hit rates, errors, the server's figures), the "
        "verdict on what limited the step, and the steps of a sweep. At 80x24 the screen "
        "scrolls: Tab reaches the counters and the steps."
    )
    MORE_KEYS = (("Enter", "in the steps: show that step (again: follow the running one)"),)

    BINDINGS = [
        *DashboardKeys.KEYS,
        Binding("s", "app.stop_run", "Stop", show=False),
        Binding("e", "export", "Export"),
    ]

    def compose(self) -> ComposeResult:
        yield ModeBar("run")
        yield RunDashboard(id="live")
        yield key_footer()

    def on_mount(self) -> None:
        self.watch(self.app, "live", self._show)

    def _show(self, view: RunView) -> None:
        dash = self.query_one(RunDashboard)
        if dash.view.run_id != view.run_id:
            dash.pinned = None
        dash.view = view

    def action_export(self) -> None:
        view = self.query_one(RunDashboard).view
        if not view.run_id:
            self.notify("No run to export yet.", severity="warning")
            return
        self.post_message(ExportRuns([view.run_id]))
