"""History mode: every stored run; open, rename, delete, select several to compare, export."""

from __future__ import annotations

import asyncio

from rich.console import Group, JustifyMethod
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Static

from workbench.results.live import RunView
from workbench.results.store import RunRow, StoredRun
from workbench.sdk.errors import StoreError
from workbench.tui.context import ScreenContext
from workbench.tui.figures import format_pct, format_rate, format_us, format_when
from workbench.tui.layout import key_footer
from workbench.tui.messages import CompareRuns, DeleteRun, ExportRuns, RenameRun
from workbench.tui.screens.dialogs import AskText, Confirm
from workbench.tui.widgets.dashboard import (
    STATUS_STYLE,
    DashboardKeys,
    RunDashboard,
    step_row,
    verdict_badge,
)
from workbench.tui.widgets.fitted import FittedTable
from workbench.tui.widgets.modebar import ModeBar

RUN_COLUMNS = (
    "✓",
    "name",
    "when",
    "status",
    "target",
    "steps",
    "best ops/s",
    "p50",
    "p99",
    "hit rate",
    "errors",
)
# Left out in this order where the table is too narrow (80x24): the run's name, status and
# best figures stay.
RUN_DROP_ORDER = ("steps", "p50", "when", "target", "errors", "hit rate")


def run_cells(row: RunRow, selected: bool) -> tuple[str | Text, ...]:
    return (
        Text("✓", style="bold green") if selected else "",
        row.name,
        format_when(row.created_at),
        Text(row.status, style=STATUS_STYLE.get(row.status, "")),
        f"{row.system}/{row.strategy}",
        str(row.steps),
        format_rate(row.ops_per_s) if row.ops_per_s else "-",
        format_us(row.p50_us) if row.p50_us else "-",
        format_us(row.p99_us) if row.p99_us else "-",
        format_pct(row.hit_rate),
        Text(f"{row.errors:,}", style="red" if row.errors else ""),
    )


def describe(run: StoredRun) -> Group:
    """A stored run: what ran where, then a row per step with its key figures."""
    spec, env = run.spec, run.environment
    wl, ld = spec.get("workload", {}), spec.get("load", {})
    text = Text()
    text.append(f"{run.name}", style="bold")
    text.append(f"  {run.status}", style=STATUS_STYLE.get(run.status, ""))
    text.append(f"  {format_when(run.created_at)}  {run.id}\n", style="dim")
    if run.error:
        text.append(f"{run.error}\n", style="red")
    mix = ", ".join(f"{k} {v:g}" for k, v in wl.get("mix", {}).items())
    how = f"{ld.get('ops'):,} ops" if ld.get("ops") else f"{ld.get('duration', 0):g} s"
    swept = {a.get("path") for a in spec.get("sweep", [])}
    systems, strategies = run.target()
    clients = "swept" if "load.concurrency" in swept else ld.get("concurrency")
    text.append(
        f"{systems}/{strategies} · {clients} clients · {how} · mix {mix} · "
        f"{wl.get('keys', 0):,} keys "
        f"{wl.get('key_distribution', '')} · values {wl.get('value_size', '')} · ttl "
        f"{wl.get('ttl', '')}\n"
    )
    for axis in spec.get("sweep", []):
        values = ", ".join(str(v) for v in axis.get("values", []))
        text.append(f"sweep {axis.get('path')}: {values}\n", style="dim")
    text.append(
        f"{env.get('host', '?')}: {env.get('cpus', '?')} CPUs {env.get('cpu_model', '')}, "
        f"Python {env.get('python', '?')}",
        style="dim",
    )
    view = run.view()
    table = Table(box=None, padding=(0, 1), show_edge=False)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("step", "left"),
        ("ops/s", "right"),
        ("p50", "right"),
        ("p99", "right"),
        ("p99.9", "right"),
        ("hit", "right"),
        ("err", "right"),
    )
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=name != "step")
    for step in view.steps:
        cells = step_row(step)
        title = Text(f"{cells[0]}. {step.title}")
        if step.status != "completed":
            title.append(f" {step.status}", style=STATUS_STYLE.get(step.status, ""))
        if (badge := verdict_badge(step)).plain:
            title.append(" ").append(badge)
        table.add_row(title, cells[3], cells[5], cells[6], cells[7], cells[9], cells[10])
    notices = Text("\n".join(view.notices), style="yellow")
    return Group(text, Text(""), table, notices)


class HistoryScreen(Screen[None]):
    """The stored runs, newest first."""

    HELP = (
        "Every stored run, newest first, with its best figures; the highlighted run's "
        "detail below. Select runs with space to compare or export them together."
    )
    MORE_KEYS = (("Enter", "open the highlighted run"),)

    BINDINGS = [
        Binding("o", "open", "Open"),
        # Out of the footer: the table's border says "space selects", and at 80 columns the
        # footer then keeps ^r Start whole. F1 and the palette still list it.
        Binding("space", "toggle_selected", "Select", show=False),
        Binding("c", "compare", "Compare"),
        Binding("r", "rename", "Rename"),
        Binding("d,delete", "delete", "Delete"),
        Binding("e", "export", "Export"),
        Binding("f9", "refresh", "Refresh", show=False),
    ]

    def __init__(self, context: ScreenContext) -> None:
        super().__init__()
        self.context = context
        self.rows: list[RunRow] = []
        self.selected: list[str] = []  # in the order they were picked: the first is the baseline
        self._last_status = ""

    def compose(self) -> ComposeResult:
        yield ModeBar("history")
        with Horizontal(id="history-body"):
            yield FittedTable(RUN_DROP_ORDER, id="runs", cursor_type="row")
            yield Static(id="run-detail")
        yield key_footer()

    def on_mount(self) -> None:
        self.query_one("#runs").border_title = "Runs"
        self.query_one("#run-detail").border_title = "Run"
        self.watch(self.app, "live", self._live_changed, init=False)
        self.watch(self.app, "stored_changes", self._stored_changed, init=False)
        self.refresh_runs()

    def _stored_changed(self, _changes: object) -> None:
        self.refresh_runs()

    def on_screen_resume(self) -> None:
        self.refresh_runs()

    def _live_changed(self, view: RunView) -> None:
        if view.status != self._last_status:
            self._last_status = view.status
            self.refresh_runs()

    @work(group="history-runs", exclusive=True, exit_on_error=False)
    async def refresh_runs(self) -> None:
        """The stored runs, read off the UI loop, into the table."""
        try:
            rows = await asyncio.to_thread(self.context.store.list_runs)
        except StoreError as exc:
            self.query_one("#run-detail", Static).update(Text(str(exc), style="red"))
            return
        self._show_runs(rows)

    def _show_runs(self, rows: list[RunRow]) -> None:
        table = self.query_one("#runs", FittedTable)
        current = self.current_id()
        self.rows = rows
        known = {r.id for r in self.rows}
        self.selected = [i for i in self.selected if i in known]
        self._fill_runs()
        if current in known:
            table.move_cursor(row=table.get_row_index(current), animate=False)
        n = len(self.rows)
        table.border_title = f"Runs ({n})" if n else "Runs"
        if not self.rows:
            self.query_one("#run-detail", Static).update(
                Text("No runs stored yet. Set one up in Setup (F2), Ctrl+R starts it.", style="dim")
            )
        else:
            self._show_detail()

    def _fill_runs(self) -> None:
        table = self.query_one("#runs", FittedTable)
        table.note = (
            f"{len(self.selected)} selected: c compares" if self.selected else "space selects"
        )
        table.show_rows(
            RUN_COLUMNS, [(row.id, run_cells(row, row.id in self.selected)) for row in self.rows]
        )

    def current_id(self) -> str | None:
        table = self.query_one("#runs", DataTable)
        if not self.rows or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        return self.rows[table.cursor_row].id

    @on(DataTable.RowHighlighted, "#runs")
    def _highlighted(self) -> None:
        self._show_detail()

    @on(DataTable.RowSelected, "#runs")
    def _selected(self) -> None:
        self.action_open()

    @work(group="history-detail", exclusive=True, exit_on_error=False)
    async def _show_detail(self) -> None:
        run_id = self.current_id()
        if run_id is None:
            return
        detail = self.query_one("#run-detail", Static)
        try:
            run = await asyncio.to_thread(self.context.store.load, run_id)
        except StoreError as exc:
            detail.update(Text(str(exc), style="red"))
            return
        detail.update(await asyncio.to_thread(describe, run))

    # Not `action_toggle`: DOMNode has one (it flips a boolean attribute by name).
    def action_toggle_selected(self) -> None:
        run_id = self.current_id()
        if run_id is None:
            return
        if run_id in self.selected:
            self.selected.remove(run_id)
        else:
            self.selected.append(run_id)
        table = self.query_one("#runs", FittedTable)
        self._fill_runs()
        if table.cursor_row < len(self.rows) - 1:
            table.move_cursor(row=table.cursor_row + 1)

    def action_compare(self) -> None:
        ids = list(self.selected)
        if len(ids) < 2:
            current = self.current_id()
            if current and current not in ids:
                ids.append(current)
        steps = {r.id: r.steps for r in self.rows}
        if not ids or (len(ids) == 1 and steps.get(ids[0], 0) < 2):  # one run: its steps
            self.notify(
                "Select two or more runs with space (or one that swept), then press c.",
                severity="warning",
            )
            return
        self.post_message(CompareRuns(ids))

    def action_open(self) -> None:
        run_id = self.current_id()
        if run_id is None:
            return
        self.app.push_screen(RunDetailScreen(self.context, run_id))

    def action_rename(self) -> None:
        run_id = self.current_id()
        if run_id is None:
            return
        row = self.rows[self.query_one("#runs", DataTable).cursor_row]

        def done(name: str | None) -> None:
            if name:
                self.post_message(RenameRun(run_id, name))

        self.app.push_screen(AskText(f"New name for {row.name} ({run_id})", row.name), done)

    def action_delete(self) -> None:
        run_id = self.current_id()
        if run_id is None:
            return
        row = self.rows[self.query_one("#runs", DataTable).cursor_row]

        def done(yes: bool | None) -> None:
            if yes:
                self.post_message(DeleteRun(run_id, f"{row.name} ({run_id})"))

        self.app.push_screen(
            Confirm(f"Delete run {row.name} ({run_id}) and everything measured in it?"), done
        )

    def action_export(self) -> None:
        current = self.current_id()
        ids = list(self.selected) or ([current] if current else [])
        if not ids:
            self.notify("No runs to export yet.", severity="warning")
            return
        self.post_message(ExportRuns([i for i in ids if i]))

    def action_refresh(self) -> None:
        self.refresh_runs()


class RunDetailScreen(DashboardKeys, Screen[None]):
    """A stored run on the same dashboard as a live one."""

    HELP = "A stored run on the same dashboard as a live one."

    BINDINGS = [
        *DashboardKeys.KEYS,
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("e", "export", "Export"),
    ]

    def __init__(self, context: ScreenContext, run_id: str) -> None:
        super().__init__()
        self.context = context
        self.run_id = run_id

    def compose(self) -> ComposeResult:
        yield ModeBar("history")
        yield RunDashboard(id="stored")
        yield key_footer()

    def on_mount(self) -> None:
        self._load()

    @work(group="run-detail", exclusive=True, exit_on_error=False)
    async def _load(self) -> None:
        try:
            run = await asyncio.to_thread(self.context.store.load, self.run_id)
        except StoreError as exc:
            self.notify(str(exc), severity="error")
            return
        self.query_one(RunDashboard).view = await asyncio.to_thread(run.view)

    def action_export(self) -> None:
        self.post_message(ExportRuns([self.run_id]))
