"""Compare mode: stored runs side by side: percentile curves, throughput, differences."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from workbench.errors import StoreError
from workbench.live import StepView
from workbench.metrics import Summary
from workbench.store import Store
from workbench.tui.context import ScreenContext
from workbench.tui.figures import axis_us, format_pct, format_rate, format_us
from workbench.tui.messages import ExportRuns
from workbench.tui.widgets.chart import Axis, Chart, Series
from workbench.tui.widgets.dashboard import (
    curve_series,
    percentile_axis,
    stepped,
    time_axis,
)
from workbench.tui.widgets.fitted import FittedTable
from workbench.tui.widgets.modebar import ModeBar

MAX_LINES = 6  # series on one chart before it stops being readable
# Left out in this order where the differences do not fit (80x24).
DIFF_DROP_ORDER = ("MiB/s", "max", "p99.9", "errors", "p50", "hit rate")


@dataclass(frozen=True)
class Entry:
    """One measured step of one run: a line on the charts, a row in the table."""

    label: str
    run_id: str
    step: StepView

    @property
    def summary(self) -> Summary:
        assert self.step.summary is not None
        return self.step.summary


def sweep_lines(entries: list[Entry]) -> list[tuple[str, list[Entry]]]:
    """Entries grouped into latency-against-throughput lines, one per run and series.

    A line joins the steps of one run that differ only in the swept value that moves the
    load (the concurrency when it is swept, else the first setting that varies), in step
    order, so each line is one curve as the load rises. Runs of a single step make no line.
    """
    by_run: dict[str, list[Entry]] = {}
    for e in entries:
        by_run.setdefault(e.run_id, []).append(e)
    lines: list[tuple[str, list[Entry]]] = []
    for group in by_run.values():
        if len(group) < 2:
            continue
        labels = [_settings(e.step.title) for e in group]
        keys = list(dict.fromkeys(k for label in labels for k in label))
        varying = [k for k in keys if len({label.get(k) for label in labels}) > 1]
        swept = "concurrency" if "concurrency" in varying else (varying[0] if varying else "")
        series: dict[str, list[Entry]] = {}
        for e, label in zip(group, labels, strict=True):
            rest = ", ".join(f"{k}={v}" for k, v in label.items() if k != swept)
            series.setdefault(rest, []).append(e)
        run_name = group[0].label.split(" ", 1)[0] if len(by_run) > 1 else ""
        for rest, members in series.items():
            name = " ".join(p for p in (run_name, rest) if p) or swept or "steps"
            lines.append((name, members))
    return lines


def _settings(title: str) -> dict[str, str]:
    """A step title ("concurrency=16, name=direct") as its settings."""
    pairs = (part.partition("=") for part in title.split(", "))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}


def entries_of(store: Store, run_ids: tuple[str, ...]) -> tuple[list[Entry], list[str]]:
    """Every measured step of the runs, and a line for each run that could not be read."""
    entries: list[Entry] = []
    problems: list[str] = []
    runs = []
    for rid in run_ids:
        try:
            runs.append(store.load(rid))
        except StoreError as exc:
            problems.append(str(exc))
    names = [r.name for r in runs]
    for run in runs:
        view = run.view()
        name = run.name if names.count(run.name) == 1 else f"{run.name} {run.id[-4:]}"
        measured = [s for s in view.steps if s.summary is not None and s.summary.ops]
        for s in measured:
            label = name if len(measured) == 1 else f"{name} {s.title}"
            entries.append(Entry(label, run.id, s))
    return entries, problems


# (column, figure, higher is better)
FIGURES: tuple[tuple[str, object, bool], ...] = (
    ("ops/s", lambda s: s.ops_per_s, True),
    ("MiB/s", lambda s: s.mib_per_s, True),
    ("p50", lambda s: s.p(50.0), False),
    ("p99", lambda s: s.p(99.0), False),
    ("p99.9", lambda s: s.p(99.9), False),
    ("max", lambda s: s.max_us, False),
    ("hit rate", lambda s: s.hit_rate, True),
    ("errors", lambda s: s.errors, False),
)


def _show(column: str, value: float | None) -> str:
    if value is None:
        return "-"
    if column == "ops/s":
        return format_rate(value)
    if column == "MiB/s":
        return f"{value:.2f}"
    if column == "hit rate":
        return format_pct(value)
    if column == "errors":
        return f"{int(value):,}"
    return format_us(value)


def difference_cells(entry: Entry, base: Entry | None) -> list[Text]:
    """Each figure, and against the baseline its change (green when better)."""
    cells = []
    for column, get, higher_better in FIGURES:
        value = get(entry.summary)  # type: ignore[operator]
        text = Text(_show(column, value))
        if base is not None and value is not None:
            ref = get(base.summary)  # type: ignore[operator]
            if ref:
                change = (value - ref) / ref
                if abs(change) >= 0.005:
                    better = (change > 0) == higher_better
                    text.append(f" {change:+.0%}", style="green" if better else "red")
        cells.append(text)
    return cells


class CompareScreen(Screen[None]):
    """Overlaid percentile curves and throughput, and a table of differences."""

    HELP = (
        "The runs selected in History side by side: their percentile curves and "
        "throughput overlaid, and each figure's difference from the baseline (the first "
        "run selected, or the row you make it), green where it is better."
    )

    BINDINGS = [
        Binding("b", "baseline", "Baseline"),
        Binding("e", "export", "Export"),
    ]

    def __init__(self, context: ScreenContext) -> None:
        super().__init__()
        self.context = context
        self.entries: list[Entry] = []
        self.base = 0

    def compose(self) -> ComposeResult:
        yield ModeBar("compare")
        yield Static(id="compare-head")
        with Grid(id="compare-charts"):
            yield Chart(
                "Latency by percentile",
                id="cmp-percentiles",
                y=Axis(log=True, fmt=axis_us),
                empty="select runs in History (space), then c",
            )
            yield Chart(
                "Throughput ops/s",
                id="cmp-throughput",
                x=time_axis(),
                y=Axis(fmt=format_rate),
                empty="",
            )
            yield Chart(
                "p99 against throughput (one point per step)",
                id="cmp-sweep",
                x=Axis(fmt=format_rate),
                y=Axis(log=True, fmt=axis_us),
                empty="",
            )
        yield FittedTable(DIFF_DROP_ORDER, id="diff", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#diff").border_title = "Differences"
        self.watch(self.app, "compare_ids", self._load)

    @work(group="compare", exclusive=True, exit_on_error=False)
    async def _load(self, run_ids: tuple[str, ...]) -> None:
        """The runs read and replayed off the UI loop, then shown."""
        self.entries, problems = await asyncio.to_thread(entries_of, self.context.store, run_ids)
        self.base = 0
        head = self.query_one("#compare-head", Static)
        if not self.entries:
            head.update(
                Text(
                    "Nothing to compare yet: in History (F4) select runs with space, then press c.",
                    style="dim",
                )
            )
        else:
            runs = len({e.run_id for e in self.entries})
            head.update(
                Text(f"Comparing {len(self.entries)} result(s) from {runs} run(s)")
                + Text("  b makes the highlighted row the baseline", style="dim")
            )
        for p in problems:
            self.notify(p, severity="warning")
        self.show()

    def show(self) -> None:
        """Lines are numbered as the table's rows, whose first cell carries the colour."""
        shown = self.entries[:MAX_LINES]
        curves = tuple(curve_series(str(i + 1), e.step.curve()) for i, e in enumerate(shown))
        pct = self.query_one("#cmp-percentiles", Chart)
        pct.x_axis = percentile_axis(curves)
        pct.series = curves
        tp = self.query_one("#cmp-throughput", Chart)
        tp.series = tuple(
            Series(str(i + 1), stepped([(p.elapsed, p.ops_per_s) for p in e.step.points]))
            for i, e in enumerate(shown)
        )
        self._show_sweeps()
        more = len(self.entries) - MAX_LINES
        pct.border_title = "Latency by percentile" + (f" (first {MAX_LINES})" if more > 0 else "")
        colors = pct.colors()
        base = self.entries[self.base] if self.entries else None
        rows = []
        for i, e in enumerate(self.entries):
            mark = Text()
            if i < MAX_LINES:
                mark.append("━ ", style=colors[i % len(colors)])
            mark.append(str(i + 1), style="bold" if i == self.base else "")
            label = Text(e.label)
            if i == self.base:
                label.append(" (base)", style="bold")
            cells = difference_cells(e, None if i == self.base else base)
            rows.append((str(i), (mark, label, *cells)))
        columns = ("#", "result", *(column for column, _, _ in FIGURES))
        self.query_one("#diff", FittedTable).show_rows(columns, rows)

    def _show_sweeps(self) -> None:
        """Latency against throughput, when a run swept its load (shown only then)."""
        lines = sweep_lines(self.entries)[:MAX_LINES]
        chart = self.query_one("#cmp-sweep", Chart)
        chart.display = bool(lines)
        self.query_one("#compare-charts").set_class(bool(lines), "-with-sweeps")
        chart.series = tuple(
            Series(name, tuple((e.summary.ops_per_s, e.summary.p(99.0)) for e in members))
            for name, members in lines
        )

    def action_baseline(self) -> None:
        table = self.query_one("#diff", DataTable)
        if self.entries and 0 <= table.cursor_row < len(self.entries):
            self.base = table.cursor_row
            self.show()

    def action_export(self) -> None:
        ids = list(dict.fromkeys(e.run_id for e in self.entries))
        if not ids:
            self.notify("Nothing to export: select runs in History first.", severity="warning")
            return
        self.post_message(ExportRuns(ids))
