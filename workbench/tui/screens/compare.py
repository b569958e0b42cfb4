"""Compare mode: stored runs side by side: percentile curves, throughput, and each figure's
change against a baseline row with its verdict (`workbench compare`'s numbers), coloured."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import DataTable, Static

from workbench.report.change_lines import change_number, estimate_cell
from workbench.report.changes import Figure as ChangedFigure
from workbench.report.changes import StepChange, compare_groups
from workbench.report.model import read_run
from workbench.report.repeats import RepeatGroup, groups
from workbench.results.live import StepView
from workbench.results.metrics import Summary
from workbench.results.store import Store
from workbench.sdk.errors import StoreError
from workbench.stats.change import IMPROVED, NO_CHANGE, REGRESSED
from workbench.tui.context import ScreenContext
from workbench.tui.figures import axis_us, format_pct, format_rate, format_us
from workbench.tui.layout import key_footer
from workbench.tui.messages import ExportRuns
from workbench.tui.widgets.chart import Axis, Chart, Series
from workbench.tui.widgets.fitted import FittedTable
from workbench.tui.widgets.modebar import ModeBar
from workbench.tui.widgets.step_series import curve_series, percentile_axis, stepped, time_axis

MAX_LINES = 6  # series on one chart before it stops being readable
# Left out in this order where the differences do not fit (80x24).
DIFF_DROP_ORDER = ("MiB/s", "max", "p99.9", "errors", "p50", "hit rate")


@dataclass(frozen=True)
class Entry:
    """One measured step of one run (a step's repeats together): a line on the charts (its
    median repeat's), a row in the table."""

    label: str
    run_id: str
    step: StepView
    group: RepeatGroup | None = None  # the step's repeats, as the comparison reads them

    @property
    def summary(self) -> Summary:
        assert self.step.summary is not None
        return self.step.summary

    @property
    def title(self) -> str:
        """The swept values (without the repeat)."""
        return self.group.title if self.group is not None else self.step.title


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
        labels = [_settings(e.title) for e in group]
        keys = list(dict.fromkeys(k for label in labels for k in label))
        varying = [k for k in keys if len({label.get(k) for label in labels}) > 1]
        # Only a number makes an axis: categories (two strategies) are not joined by a line.
        varying = [k for k in varying if all(_number(label.get(k)) for label in labels)]
        swept = "concurrency" if "concurrency" in varying else (varying[0] if varying else "")
        if not swept:
            continue
        series: dict[str, list[Entry]] = {}
        for e, label in zip(group, labels, strict=True):
            rest = ", ".join(f"{k}={v}" for k, v in label.items() if k != swept)
            series.setdefault(rest, []).append(e)
        run_name = group[0].label.split(" ", 1)[0] if len(by_run) > 1 else ""
        for rest, members in series.items():
            name = " ".join(p for p in (run_name, rest) if p) or swept or "steps"
            lines.append((name, members))
    return lines


def _number(text: str | None) -> bool:
    try:
        float(text or "")
    except ValueError:
        return False
    return True


def _settings(title: str) -> dict[str, str]:
    """A step title ("concurrency=16, name=direct") as its settings."""
    pairs = (part.partition("=") for part in title.split(", "))
    return {k.strip(): v.strip() for k, sep, v in pairs if sep}


def entries_of(store: Store, run_ids: tuple[str, ...]) -> tuple[list[Entry], list[str]]:
    """Every measured step of the runs (its repeats as one entry, shown by its median
    repeat), and a line for each run that could not be read."""
    entries: list[Entry] = []
    problems: list[str] = []
    runs = []
    for rid in run_ids:
        try:
            runs.append(read_run(store.load(rid)))
        except StoreError as exc:
            problems.append(str(exc))
    names = [r.name for r in runs]
    for run in runs:
        name = run.name if names.count(run.name) == 1 else f"{run.name} {run.id[-4:]}"
        measured = [g for g in groups(run, every=True) if g.measured]
        for group in measured:
            middle = sorted(group.measured, key=lambda s: s.summary.ops_per_s)
            step = middle[(len(middle) - 1) // 2].view
            label = name if len(measured) == 1 else f"{name} {group.title}"
            if len(group.steps) > 1:
                label += f" ({len(group.measured)} repeats)"
            entries.append(Entry(label, run.id, step, group))
    return entries, problems


def changes_against(entries: list[Entry], base: int) -> dict[int, StepChange]:
    """Each entry's figures against the base entry's (`workbench compare`'s numbers), by
    row; computed off the UI loop, a bootstrap each."""
    ref = entries[base].group if entries else None
    if ref is None:
        return {}
    return {
        i: compare_groups(e.label, ref, e.group)
        for i, e in enumerate(entries)
        if i != base and e.group is not None
    }


# (column, figure, the compared metric's key: "" for none)
FIGURES: tuple[tuple[str, Callable[[Summary], float | None], str], ...] = (
    ("ops/s", lambda s: s.ops_per_s, "ops_per_s"),
    ("MiB/s", lambda s: s.mib_per_s, ""),
    ("p50", lambda s: s.p(50.0), "p50"),
    ("p99", lambda s: s.p(99.0), "p99"),
    ("p99.9", lambda s: s.p(99.9), "p99.9"),
    ("max", lambda s: s.max_us, ""),
    ("hit rate", lambda s: s.hit_rate, "hit_rate"),
    ("errors", lambda s: s.errors, "error_share"),
)
# A colour per verdict: better, worse, no change; a figure without a verdict is dim.
VERDICT_STYLES = {IMPROVED: "bold green", REGRESSED: "bold red", NO_CHANGE: "dim"}


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


def change_text(figure: ChangedFigure) -> Text:
    """A figure's change, coloured by its verdict ("?" when it has none)."""
    c = figure.change
    if c is None:
        return Text(" ?", style="dim")
    digits = 1 if c.points or abs(c.mid) < 0.1 else 0
    shown = round(c.mid * 100, digits) or 0.0  # never "-0%"
    mid = f"{shown:+.{digits}f}" + ("pt" if c.points else "%")
    return Text(f" {mid}", style=VERDICT_STYLES.get(c.verdict, "dim"))


def difference_cells(entry: Entry, change: StepChange | None) -> list[Text]:
    """Each figure, and against the baseline its change coloured by verdict."""
    cells = []
    for column, get, key in FIGURES:
        text = Text(_show(column, get(entry.summary)))
        if change is not None and key:
            text.append_text(change_text(change.figure(key)))
        cells.append(text)
    return cells


def change_detail(entry: Entry, change: StepChange | None, base: Entry | None) -> Text:
    """The highlighted row against the baseline: how it was estimated, then each figure's
    change [lo hi] in its verdict's colour."""
    if change is None or base is None:
        return Text("the baseline: the other rows' changes are against it", style="dim")
    if not change.estimate.method:
        return Text(f"against row {base.label}: {change.estimate.refused}", style="dim")
    out = Text(f"against the base, 95% intervals ({estimate_cell(change)}): ", style="dim")
    for figure in change.figures:
        c = figure.change
        if c is None:
            out.append(f"{figure.metric.label} ? ({figure.refused or 'no verdict'})  ", "dim")
            continue
        lo, mid, hi = (change_number(v, points=c.points) for v in (c.lo, c.mid, c.hi))
        word = f" {c.verdict}" if c.verdict != NO_CHANGE else ""
        out.append(f"{figure.metric.label} {mid} [{lo} {hi}]{word}",
                   style=VERDICT_STYLES.get(c.verdict, "dim"))  # fmt: skip
        out.append("  ")
    if change.machine:
        out.append(f"\nnote: {change.machine}", style="yellow")
    return out


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
        self.changes: dict[int, StepChange] = {}  # by row, against the base row

    def compose(self) -> ComposeResult:
        yield ModeBar("compare")
        yield Static(id="compare-head")
        with Grid(id="compare-charts"):
            yield Chart(
                "Latency percentiles",
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
                "p99 by throughput",  # a point per step; short enough for 80 columns
                id="cmp-sweep",
                x=Axis(fmt=format_rate),
                y=Axis(log=True, fmt=axis_us),
                empty="",
            )
        yield FittedTable(DIFF_DROP_ORDER, id="diff", cursor_type="row")
        yield Static(id="change-detail")
        yield key_footer()

    def on_mount(self) -> None:
        self.query_one("#diff").border_title = "Differences"
        self.watch(self.app, "compare_ids", self._compare_ids_changed)

    def _compare_ids_changed(self, run_ids: tuple[str, ...]) -> None:
        self._load(run_ids)

    @work(group="compare-changes", exclusive=True, exit_on_error=False)
    async def _judge(self) -> None:
        """Every row against the base row, off the UI loop; then the table says it."""
        entries, base = self.entries, self.base
        found = await asyncio.to_thread(changes_against, entries, base)
        if entries is self.entries and base == self.base:
            self.changes = found
            self._fill_table()

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
                + Text("  b: the highlighted row is the base; ", style="dim")
                + Text("better", style="bold green")
                + Text(" worse", style="bold red")
                + Text(" no change, ? too few samples", style="dim")
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
        pct.border_title = "Latency percentiles" + (f" (first {MAX_LINES})" if more > 0 else "")
        self.changes = {}
        self._fill_table()
        if len(self.entries) > 1:
            self._judge()

    def _fill_table(self) -> None:
        """A row per entry: its figures and, once judged, each change in its verdict's
        colour; the highlighted row's detail under the table."""
        colors = self.query_one("#cmp-percentiles", Chart).palette()
        table = self.query_one("#diff", FittedTable)
        rows = []
        for i, e in enumerate(self.entries):
            mark = Text()
            if i < MAX_LINES:
                mark.append("━ ", style=colors[i % len(colors)])
            mark.append(str(i + 1), style="bold" if i == self.base else "")
            label = Text(e.label)
            if i == self.base:
                label.append(" (base)", style="bold")
            cells = difference_cells(e, self.changes.get(i))
            rows.append((str(i), (mark, label, *cells)))
        columns = ("#", "result", *(column for column, _, _ in FIGURES))
        table.show_rows(columns, rows)
        self._show_detail(table.cursor_row)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def _show_detail(self, row: int) -> None:
        detail = self.query_one("#change-detail", Static)
        if not self.entries or not 0 <= row < len(self.entries):
            detail.update("")
            return
        pending = len(self.entries) > 1 and not self.changes and row != self.base
        if pending:
            detail.update(Text("judging the changes (a bootstrap per row)...", style="dim"))
            return
        base = self.entries[self.base]
        detail.update(change_detail(self.entries[row], self.changes.get(row), base))

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
