"""The run dashboard: charts, counters and the steps table for one `RunView`.

Used for the live run and for a stored run opened from History. It takes a view (attributes
down) and never fetches anything; every figure comes from `live` and `metrics`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Grid, VerticalScroll
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from workbench.results.live import RunView, StepView
from workbench.results.metrics import Stats, Summary
from workbench.sdk.adapter import NODE_CPU
from workbench.tui.figures import (
    format_bytes,
    format_count,
    format_pct,
    format_rate,
    format_us,
    hiccup_rows,
    hot_cold_rates,
)
from workbench.tui.layout import mark_narrow
from workbench.tui.widgets.chart import Axis, Chart
from workbench.tui.widgets.fitted import FittedTable, fit_parts
from workbench.tui.widgets.step_series import (
    curve_series,
    latency_series,
    percentile_axis,
    seconds_label,
    throughput_series,
    time_axis,
    us_axis,
)

STEP_COLUMNS = (
    "#",
    "step",
    "status",
    "ops/s",
    "MiB/s",
    "p50",
    "p99",
    "p99.9",
    "max",
    "hit rate",
    "errors",
)
# Left out in this order where the steps do not fit (80x24): the rate, p99 and hit rate stay.
STEP_DROP_ORDER = ("MiB/s", "max", "#", "p99.9", "errors", "p50")
# The verdict's badge on a step (workbench.results.verdict): warm colours where the figure is
# not the server's, calm ones where it is.
VERDICT_STYLE = {
    "server-bound": "cyan",
    "machine-bound": "magenta",
    "generator-bound": "yellow",
    "fell behind": "red",
    "sent late": "yellow",
    "server stalled": "red",
    "machine stalled": "magenta",
    "too few clients": "yellow",
    "on schedule": "green",
    "latency-bound": "blue",
}
STATUS_STYLE = {
    "completed": "green",
    "running": "bold",
    "interrupted": "yellow",
    "degraded": "yellow",
    "failed": "red",
    "abandoned": "red",
    "pending": "dim",
}


Row = tuple[str | Text, str | Text]


def _server_figure(key: str, value: object) -> Row:
    memory = "memory" in key or "bytes" in key
    if key == "host_busy" and isinstance(value, int | float):  # a share of the machine
        shown = format_pct(value)
    elif key == "hosts" and isinstance(value, dict):  # each Ray node's machine: busy share
        shown = ", ".join(
            f"{host} {format_pct(f['busy'])}"
            for host, f in value.items()
            if isinstance(f, dict) and isinstance(f.get("busy"), int | float)
        )
        key = "hosts busy"
    elif key == "idle_poll" and isinstance(value, dict):  # native workers' polling, seconds
        shown = ", ".join(
            f"worker {w} {v:.2f} s" for w, v in value.items() if isinstance(v, int | float)
        )
    elif key == "node_cpu" and isinstance(value, dict):  # a cluster: each node's CPU seconds
        shown = ", ".join(f"{node} {seconds:.2f}s" for node, seconds in value.items())
        key = "nodes cpu"
    elif isinstance(value, int | float) and memory:
        shown = format_bytes(value)
    elif isinstance(value, int):
        shown = format_count(value)
    elif isinstance(value, float):  # a server's seconds or ratios: a few figures
        shown = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    else:
        shown = str(value)
    return key.replace("_", " "), shown


def simulated_rows(results: dict[str, Any]) -> list[Row]:
    """The step's simulated hit rates (libCacheSim), each labelled as simulated, dimmed."""
    if not results:
        return []
    if "error" in results:
        return [("simulated", Text(f"not simulated: {results['error']}", style="dim"))]
    rows: list[Row] = []
    for name, figures in results.get("policies", {}).items():
        # The hit rate alone: hot and cold are in the reports (the column is narrow).
        text = format_pct(figures.get("hit_rate"))
        rows.append((f"simulated {name}", Text(text, style="dim italic")))
    return rows


def skipped_rows(t: Stats) -> list[Row]:
    """A trace replay's requests this target does not do, by op (not errors: never tried),
    the most first so that they stay in sight; none when nothing was skipped."""
    if not t.skipped:
        return []
    most = sorted(t.skipped.items(), key=lambda kind: (-kind[1], kind[0]))
    kinds = ", ".join(f"{what} {format_count(n)}" for what, n in most)
    return [("skipped", Text(f"{format_count(t.skipped_count)}: {kinds}", overflow="ellipsis"))]


def counter_rows(step: StepView | None) -> list[Row]:
    """Label and value of every counter of a step (dashes before it has figures)."""
    s = step.summary if step else None
    if step is None or s is None:
        return [("ops", "-"), ("ops/s", "-"), ("hits", "-"), ("misses", "-"), ("errors", "-")]
    t = step.totals
    hot, cold = hot_cold_rates(t)
    rows: list[Row] = [  # what a person looks for first: ops, hits and errors
        ("ops", format_count(s.ops)),
        ("ops/s", format_rate(s.ops_per_s)),
        ("hits", format_count(s.hits)),
        ("misses", format_count(s.misses)),
        ("hit rate", format_pct(s.hit_rate)),
        ("errors", Text(format_count(s.errors), style="red" if s.errors else "")),
        *skipped_rows(t),
        ("measured", seconds_label(s.duration)),
        ("MiB/s", f"{s.mib_per_s:.2f}"),
        ("hot / cold", f"{format_pct(hot)} / {format_pct(cold)}"),
        *simulated_rows(step.simulated),
        ("bytes in", format_bytes(t.bytes_in)),
        ("bytes out", format_bytes(t.bytes_out)),
        ("clients", f"{step.clients} on {step.workers} worker(s)"),
        *hiccup_rows(t.hiccups),
    ]
    if t.published:
        rows += [("published", format_count(t.published)), ("lost", format_count(s.lost))]
    if t.moved or t.ask:  # a Redis Cluster's redirections, each op counted once
        rows += [("MOVED", format_count(t.moved)), ("ASK", format_count(t.ask))]
    # A cluster node's raw CPU counter is shown as "nodes cpu" (per interval) instead.
    figures = sorted((k, v) for k, v in t.server.items() if not k.startswith(NODE_CPU))
    rows += [_server_figure(key, value) for key, value in figures]
    return rows


def _per_op_table(s: Summary) -> Table:
    per_op = Table(box=None, padding=(0, 1), expand=True, header_style="dim")
    for name in ("op", "count", "ops/s", "p50", "p99"):
        per_op.add_column(name, justify="left" if name == "op" else "right", no_wrap=True)
    for kind, (count, rate, p50, p99) in s.per_op.items():
        per_op.add_row(kind, format_count(count), format_rate(rate), format_us(p50), format_us(p99))
    return per_op


def counters_table(view: RunView, step: StepView | None, wide: bool = True) -> Group | Table:
    """Hits, misses, bytes, errors (with the first message), server figures, per-op rates."""
    rows = counter_rows(step)
    grid = Table.grid(padding=(0, 1), expand=True)
    pairs = 2 if wide else 1  # label/value pairs side by side
    for _ in range(pairs):
        grid.add_column(style="dim", no_wrap=True)
        # Figures keep their room: a long label wraps before a value is cut.
        grid.add_column(no_wrap=True, overflow="ellipsis", min_width=14)
    for i in range(0, len(rows), pairs):
        cells: list[str | Text] = [c for pair in rows[i : i + pairs] for c in pair]
        grid.add_row(*cells, *([""] * (2 * pairs - len(cells))))
    if step is not None:
        for kind, n in sorted(step.totals.errors.items()):
            first = step.totals.first_errors.get(kind, "")
            grid.add_row(
                Text(f"! {kind}", style="red"),
                Text(f"{format_count(n)}: {first}", style="red", overflow="ellipsis"),
                *([""] * (2 * pairs - 2)),
            )
    # Notices under the grid, one line each: in a grid row a long one (a search's probe
    # result) widened the label column and squeezed every counter to an ellipsis.
    notices = [
        Text(n, style="yellow", no_wrap=True, overflow="ellipsis") for n in view.notices[-3:]
    ]
    parts: list[Table | Text] = [grid, *notices]
    if step is not None and step.points and (verdict := step.verdict).known:
        # What limited the figure: a badge and its evidence and advice, wrapped at words
        # (the box scrolls at 80x24; the report and `workbench runs show` have it too).
        line = Text.assemble(
            verdict_badge(step), " ", (f"{verdict.evidence} — {verdict.advice}", "dim")
        )
        parts.insert(0, line)
    failure = failure_line(view, step)
    if failure.plain:
        parts.insert(0, failure)
    s = step.summary if step else None
    if s is None or len(s.per_op) < 1:
        return Group(*parts) if len(parts) > 1 else grid
    return Group(*parts, Text(""), _per_op_table(s))


def failure_line(view: RunView, step: StepView | None) -> Text:
    """Why the run or the shown step failed, wrapped, first in the Counters box ("" if not)."""
    reason = ""
    if step is not None and step.status == "failed":
        reason = f"step failed: {step.reason or 'see the notices'}"
    elif view.status == "failed":
        reason = f"run failed: {view.error or 'see the notices'}"
    return Text(reason, style="bold red")


def verdict_badge(step: StepView) -> Text:
    """The step's verdict as a short coloured badge ("" while nothing says what limited it)."""
    verdict = step.verdict
    if not verdict.known or not step.points:
        return Text("")
    return Text(f"[{verdict.badge}]", style=VERDICT_STYLE.get(verdict.kind, ""))


def step_row(step: StepView) -> tuple[Text | str, ...]:
    s = step.summary
    status = Text(step.status, style=STATUS_STYLE.get(step.status, ""))
    badge = verdict_badge(step)
    if badge.plain:
        status = Text.assemble(status, " ", badge)
    if s is None or not s.ops:
        return (str(step.index + 1), step.title, status, *(["-"] * 8))
    return (
        str(step.index + 1),
        step.title,
        status,
        format_rate(s.ops_per_s),
        f"{s.mib_per_s:.2f}",
        format_us(s.p(50.0)),
        format_us(s.p(99.0)),
        format_us(s.p(99.9)),
        format_us(s.max_us),
        format_pct(s.hit_rate),
        format_count(s.errors),
    )


class DashboardKeys:
    """Keys of a screen showing a `RunDashboard`: MiB/s toggle and paging through steps."""

    KEYS = [
        Binding("m", "toggle_mib", "ops/MiB"),
        Binding("left_square_bracket", "page(-1)", "prev step", key_display="["),
        Binding("right_square_bracket", "page(1)", "next step", key_display="]"),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "page":
            return len(self.query_one(RunDashboard).view.steps) > 1  # type: ignore[attr-defined]
        return True

    def action_toggle_mib(self) -> None:
        self.query_one(RunDashboard).toggle_mib()  # type: ignore[attr-defined]

    def action_page(self, delta: int) -> None:
        self.query_one(RunDashboard).page(delta)  # type: ignore[attr-defined]


class RunDashboard(Container):
    """Charts and figures of one run; `view` is the run, `shown` the step on the charts."""

    view: reactive[RunView] = reactive(RunView, always_update=True, init=False)
    pinned: reactive[int | None] = reactive(None, init=False)
    mib: reactive[bool] = reactive(False, init=False)

    _placed_row: int | None = None  # the row `_fill_steps` last highlighted

    def compose(self) -> ComposeResult:
        yield Static(id="run-head")
        with Grid(id="charts"):
            yield Chart("Throughput", id="throughput", x=time_axis(), y=Axis(fmt=format_rate))
            yield Chart("Latency over time", id="latency", x=time_axis(), y=us_axis())
            yield Chart("Latency by percentile", id="percentiles", y=us_axis())
            with VerticalScroll(id="counters", can_focus=True):
                yield Static(id="counters-body")
        yield FittedTable(STEP_DROP_ORDER, id="steps", cursor_type="row", zebra_stripes=False)

    def on_mount(self) -> None:
        self.query_one("#counters").border_title = "Counters"
        self.query_one("#steps").border_title = "Steps"
        self.refresh_view()

    def watch_view(self, old: RunView, new: RunView) -> None:
        if len(old.steps) != len(new.steps):
            self.screen.refresh_bindings()
        self.refresh_view()

    def watch_pinned(self) -> None:
        self.refresh_view()

    def watch_mib(self) -> None:
        self.refresh_view()

    def toggle_mib(self) -> None:
        self.mib = not self.mib

    def page(self, delta: int) -> None:
        """Show the step `delta` away from the one shown."""
        current = self.shown_index()
        if current is None or not self.view.steps:
            return
        self.pinned = min(max(current + delta, 0), len(self.view.steps) - 1)

    def shown_index(self) -> int | None:
        """The pinned step, else the running one, else the last that measured anything."""
        v = self.view
        if self.pinned is not None and self.pinned < len(v.steps):
            return self.pinned
        if v.status == "running" and v.current is not None:
            return v.current
        measured = [s.index for s in v.steps if s.points or s.summary]
        if measured:
            return measured[-1]
        return v.current

    @on(DataTable.RowSelected, "#steps")
    def _pick_step(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            index = int(event.row_key.value)
            self.pinned = None if index == self.pinned else index

    def refresh_view(self) -> None:
        if not self.is_mounted:
            return
        v = self.view
        index = self.shown_index()
        step = v.steps[index] if index is not None and index < len(v.steps) else None
        self.query_one("#run-head", Static).update(self.head(v, step))
        with self.app.batch_update():
            tp = self.query_one("#throughput", Chart)
            tp.border_title = "Throughput MiB/s" if self.mib else "Throughput ops/s"
            tp.y_axis = Axis(fmt=(lambda x: f"{x:.3g}") if self.mib else format_rate)
            lat = self.query_one("#latency", Chart)
            pct = self.query_one("#percentiles", Chart)
            axis = self._time_axis(v, step)
            tp.x_axis = lat.x_axis = axis
            if step is None:
                tp.series = lat.series = pct.series = ()
            else:
                tp.series = throughput_series(step, self.mib)
                lat.series = latency_series(step)
                curve = curve_series(step.title, step.curve())
                pct.x_axis = percentile_axis((curve,))
                pct.series = (curve,) if curve.points else ()
                s = step.summary
                if s is not None and s.ops:
                    ticks = (("p50", s.p(50.0)), ("p99", s.p(99.0)), ("p99.9", s.p(99.9)))
                    figures = [f"{name} {format_us(us)}" for name, us in ticks]
                    pct.border_subtitle = fit_parts(pct, *figures, f"max {format_us(s.max_us)}")
                if step.latest is not None:
                    latest = step.latest
                    lat.border_subtitle = fit_parts(
                        lat, lat.legend(), f"now {format_us(latest.p(99.0))}"
                    )
                    rate = f"now {format_rate(latest.ops_per_s)}/s"
                    mib = f"{latest.mib_per_s:.1f} MiB/s"
                    tp.border_subtitle = fit_parts(tp, tp.legend(), rate, mib)
            box = self.query_one("#counters", VerticalScroll)
            # two label/value pairs a line where they fit (not at 80x24)
            wide = box.content_size.width >= 60 or not box.is_mounted
            self.query_one("#counters-body", Static).update(counters_table(v, step, wide))
            self._fill_steps(v, index)

    def _fill_steps(self, v: RunView, shown: int | None) -> None:
        """The steps, the highlighted row on the step the charts show; a row the person
        moved to (without pinning it) stays highlighted while they look."""
        table = self.query_one("#steps", FittedTable)
        cursor = table.cursor_row
        table.show_rows(STEP_COLUMNS, [(str(s.index), step_row(s)) for s in v.steps])
        if v.steps:
            moved = self._placed_row is not None and cursor != self._placed_row
            last = len(v.steps) - 1
            if shown is None or (moved and self.pinned is None):
                table.move_cursor(row=min(max(cursor, 0), last), animate=False)
            else:  # only a row placed here is followed: the person's stays until they pin
                self._placed_row = min(max(shown, 0), last)
                table.move_cursor(row=self._placed_row, animate=False)
        self.set_class(len(v.steps) <= 1, "-single-step")

    def head(self, v: RunView, step: StepView | None) -> Text:
        if not v.run_id:
            return Text(
                "No run yet. Set one up in Setup (F2) and start it with Ctrl+R.", style="dim"
            )
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{v.name} ", style="bold")
        text.append(f"{v.status}", style=STATUS_STYLE.get(v.status, ""))
        if v.error:
            text.append(f": {v.error}", style="red")
        if step is not None:
            text.append(f"  step {step.index + 1}/{len(v.steps)} ", style="dim")
            text.append(step.title)
            if step.connections:
                text.append(f"  {step.connections}", style="dim")
            elif step.clients:
                text.append(f"  {step.clients} clients, {step.workers} worker(s)", style="dim")
            if step.server:
                text.append(f"  server pid {step.server.get('pid', '?')}", style="dim")
            text.append("  " + self._progress(v, step))
            badge = verdict_badge(step)
            if badge.plain:
                text.append("  ")
                text.append(badge)
            if step.status == "running" and not step.points:
                text.append("  warming up…", style="yellow")
        if v.status == "running" and v.remaining:
            text.append(f"  {v.remaining} step(s) to go", style="dim")
        return text

    @staticmethod
    def _time_axis(v: RunView, step: StepView | None) -> Axis:
        """Seconds from 0 to the planned duration, so a live chart fills from the left."""
        load = v.spec.get("load", {})
        duration = load.get("duration") if not load.get("ops") else None
        last = step.points[-1].elapsed if step and step.points else 0.0
        hi = float(duration) if duration and last <= duration * 1.05 else None
        return Axis(lo=0.0, hi=hi, fmt=seconds_label)

    def on_resize(self) -> None:
        mark_narrow(self, self.size.width)
        self.refresh_view()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        # At 80x24 the dashboard scrolls: Tab to the steps table brings it into sight.
        self.call_after_refresh(event.widget.scroll_visible, animate=False)

    @staticmethod
    def _progress(v: RunView, step: StepView) -> str:
        load = v.spec.get("load", {})
        ops_target, duration = load.get("ops"), load.get("duration")
        done_ops = step.summary.ops if step.summary else 0
        elapsed = step.points[-1].elapsed if step.points else 0.0
        if ops_target:
            frac: float = done_ops / ops_target
            label = f"{format_count(done_ops)}/{format_count(ops_target)} ops"
        elif duration:
            frac = elapsed / duration
            label = f"{elapsed:.1f}/{duration:g}s"
        else:
            return ""
        if step.status != "running":
            frac = 1.0 if step.status == "completed" else min(frac, 1.0)
        filled = round(min(max(frac, 0.0), 1.0) * 10)
        return "▰" * filled + "▱" * (10 - filled) + " " + label
