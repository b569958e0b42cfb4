"""Charts of stored runs as SVG, drawn by matplotlib: what `html` and `svg` reports embed.

Each chart is built from the figures every other report reads (`StepData.summary`,
`StepData.points`, `metrics.percentile_curve`), so a chart never disagrees with a table.
matplotlib is used through its object API (`Figure`, no pyplot): no global state, no
display, safe in any thread. SVG output is made reproducible (no date, fixed hash salt), so
a chart regenerated from the same run is the same file.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.report import group_charts
from workbench.report.changes import Comparison, comparisons_for
from workbench.report.machine import chart_steps
from workbench.report.model import CONCURRENCY, REPEAT, RunData, StepData, all_steps
from workbench.results.metrics import percentile_curve

if TYPE_CHECKING:  # matplotlib is imported only when a chart is drawn (see `figure`)
    from matplotlib.typing import RcKeyType

# Percentiles marked on the 1/(1-p) axis of the distribution chart.
PERCENTILE_TICKS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)
WIDTH_IN, HEIGHT_IN = 7.5, 3.6
TITLE_WIDTH, LEGEND_WIDTH = 70, 28  # characters before a title or a legend entry wraps
_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # text stays text: smaller files, searchable, selectable
    "svg.hashsalt": "cache-workbench",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


@dataclass(frozen=True)
class Chart:
    """One chart: a stable id, a caption for people, and the drawing of its axes."""

    id: str
    title: str
    caption: str
    draw: Callable[[Any], None]  # fills a matplotlib Axes
    height: float = 1.0  # in chart heights


def charts(runs: Sequence[RunData], comparisons: Sequence[Comparison] | None = None) -> list[Chart]:
    """The charts that have data for these runs, in reading order (`comparisons`: what the
    runs' reports compare, when the caller has them already)."""
    steps = [s for s in all_steps(runs) if s.has_data]
    if not steps:
        return []
    several = len(runs) > 1
    out = _step_charts(steps, several)
    if group_charts.has_misses(steps):
        out.append(
            Chart(
                "hit-rate",
                "Hit rate: all gets, hot keys, cold keys",
                "Share of gets that hit, per step (its repeats as one bar: the median, "
                "whiskers to the lowest and highest), overall and on the hottest keys and the "
                "rest.",
                lambda ax: group_charts.draw_hit_rates(ax, steps, several),
            )
        )
    compared = comparisons_for(runs) if comparisons is None else comparisons
    if group_charts.judged(compared):
        rows = sum(1 for c in compared for s in c.steps for f in s.figures if f.change)
        out.append(
            Chart(
                "changes",
                "Did it change? Each figure with its 95% interval",
                "New against base: the change of each figure (shares in points) with its 95% "
                "interval; green improved, red regressed, grey no change within the noise "
                "threshold.",
                lambda ax: group_charts.draw_changes(ax, compared),
                height=max(1.0, rows / 12),
            )
        )
    return out


def _step_charts(steps: Sequence[StepData], several: bool) -> list[Chart]:
    """The charts of every step: percentiles, over time, and along the sweep."""
    out = [
        Chart(
            "percentiles",
            "Latency by percentile",
            "Latency at each percentile of all operations, on a 1/(1-p) axis "
            "(HdrHistogram style): the tail widens to the right.",
            lambda ax: _draw_percentiles(ax, steps, several),
        ),
        Chart(
            "throughput-over-time",
            "Throughput over time",
            "Operations per second in each interval of each step.",
            lambda ax: _draw_over_time(ax, steps, several, lambda p: [p.ops_per_s], ["ops/s"]),
        ),
        Chart(
            "latency-over-time",
            "p50 and p99 over time",
            "Median (solid) and 99th percentile (dashed) latency in each interval.",
            lambda ax: _draw_over_time(
                ax, steps, several, lambda p: [p.p50_us, p.p99_us], ["p50", "p99"]
            ),
        ),
    ]
    if measured := chart_steps(steps):
        out.append(_hiccup_chart(measured, several))
    if len(steps) > 1:
        out.append(
            Chart(
                "latency-vs-throughput",
                "Latency against throughput",
                "One point per step: p50 (circles) and p99 (squares) against the ops/s it "
                "reached, joined in step order within each series.",
                lambda ax: _draw_latency_vs_throughput(ax, steps, several),
            )
        )
        swept = swept_path(steps)
        if swept is not None:
            out.append(
                Chart(
                    "throughput-vs-swept",
                    f"Throughput against {swept}",
                    f"ops/s of each step against the swept value of {swept}.",
                    lambda ax: _draw_against_swept(ax, steps, several, swept),
                )
            )
    return out


def svg(chart: Chart) -> str:
    """One chart as a standalone SVG document."""
    return _render([chart], ncols=1)


def svg_all(charts_: Sequence[Chart]) -> str:
    """Several charts stacked in one SVG document."""
    return _render(charts_, ncols=1)


def _render(charts_: Sequence[Chart], *, ncols: int) -> str:
    import matplotlib

    with matplotlib.rc_context(_RC):
        fig = figure(charts_, ncols=ncols)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    # Drop the XML prolog and DOCTYPE so the document can also be inlined in HTML.
    return text[text.index("<svg") :]


def figure(charts_: Sequence[Chart], *, ncols: int = 1) -> Any:
    """The charts drawn on one matplotlib Figure, laid out, point labels placed."""
    # Imported here, not at the top: matplotlib takes about half a second to import, and
    # every other report (and the TUI, which imports the report package) does without it.
    import matplotlib
    from matplotlib.figure import Figure

    rows = math.ceil(len(charts_) / ncols)
    with matplotlib.rc_context(_RC):
        heights = [c.height for c in charts_] if ncols == 1 else [1.0] * rows
        fig = Figure(figsize=(WIDTH_IN * ncols, HEIGHT_IN * sum(heights)), layout="constrained")
        axes = fig.subplots(
            rows, ncols, squeeze=False, gridspec_kw={"height_ratios": heights}
        ).ravel()
        for ax, chart in zip(axes, charts_, strict=False):
            ax.set_title(textwrap.fill(chart.title, TITLE_WIDTH), loc="left", fontweight="bold")
            chart.draw(ax)
            ax.set_gid(chart.id)  # the <g id=...> of this chart in the SVG
            for n, line in enumerate(ax.get_lines()):  # its data lines: <g id="ID-data-N">
                line.set_gid(f"{chart.id}-data-{n}")
        for ax in axes[len(charts_) :]:
            ax.set_visible(False)
        fig.draw_without_rendering()  # the final layout: where each label would land
        for ax in axes:
            _place_labels(ax, getattr(ax, "_workbench_labels", []))
        # The layout is final: saving the figure would solve it again, about a quarter of
        # the time a chart takes to draw.
        fig.set_layout_engine("none")
    return fig


def _percentile_x(p: float) -> float:
    return 1.0 / (1.0 - p / 100.0)


def _colors(steps: Sequence[StepData], several: bool) -> list[tuple[str, str | None]]:
    """Each step's colour and legend label: a step's repeats share one colour and one
    entry (the first), so that two swept values read as two groups, not six lines."""
    names = [group_charts.group_name(s, several) for s in steps]
    order = list(dict.fromkeys(names))
    counts = {n: names.count(n) for n in order}
    out: list[tuple[str, str | None]] = []
    for i, name in enumerate(names):
        first = names.index(name) == i
        label = name + (f" ({counts[name]} repeats)" if counts[name] > 1 else "")
        out.append((f"C{order.index(name) % 10}", label if first else None))
    return out


def _draw_percentiles(ax: Any, steps: Sequence[StepData], several: bool) -> None:
    top = 0.0
    for step, (color, label) in zip(steps, _colors(steps, several), strict=True):
        # Past 1 - 1/N of N samples a percentile only repeats the maximum: stop there.
        last = 100.0 * (1.0 - 1.0 / max(step.histogram.get_total_count(), 2))
        curve = [(p, us) for p, us in percentile_curve(step.histogram) if p <= max(last, 99.0)]
        if not curve:
            continue
        top = max(top, curve[-1][0])
        ax.plot(
            [_percentile_x(p) for p, _ in curve],
            [us for _, us in curve],
            label=label,
            color=color,
            linewidth=1.4,
        )
    ax.set_xscale("log")
    ticks = [p for p in PERCENTILE_TICKS if p <= max(top, 99.0)]
    ax.set_xticks([_percentile_x(p) for p in ticks])
    ax.set_xticklabels([f"{p:g}%" for p in ticks])
    ax.minorticks_off()
    ax.set_xlabel("percentile")
    _latency_axis(ax)
    _legend(ax, len(steps))


def _draw_over_time(
    ax: Any,
    steps: Sequence[StepData],
    several: bool,
    values: Callable[[Any], list[float]],
    names: list[str],
) -> None:
    styles = ("-", "--", ":")
    for step, (color, name) in zip(steps, _colors(steps, several), strict=True):
        xs = [p.elapsed for p in step.points]
        columns = list(zip(*(values(p) for p in step.points), strict=True))
        for j, ys in enumerate(columns):
            label = name if j == 0 else None
            ax.plot(xs, ys, styles[j % 3], color=color, label=label, marker=".", linewidth=1.2)
    ax.set_xlabel("seconds into the step")
    if names == ["ops/s"]:
        ax.set_ylabel("ops/s")
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(_thousands())
    else:  # p99 is often ten times p50 and a stall a hundred: a log axis shows all three
        _latency_axis(ax, ratio=1.0)
    _legend(ax, len(steps))


def _hiccup_chart(steps: Sequence[StepData], several: bool) -> Chart:
    return Chart(
        "hiccups-over-time",
        "The machine's hiccups beside p99",
        "p99 latency (solid) and the load machine's longest hiccup (dashed: how late a "
        "thread pinned to a CPU woke) in each interval: where both rise together, the "
        "tail was the machine's, not the server's.",
        lambda ax: _draw_hiccups(ax, steps, several),
    )


def _draw_hiccups(ax: Any, steps: Sequence[StepData], several: bool) -> None:
    for step, (color, label) in zip(steps, _colors(steps, several), strict=True):
        points = [p for p in step.points if p.hiccup_max_us is not None]
        xs = [p.elapsed for p in points]
        ax.plot(xs, [p.p99_us for p in points], "-", color=color, label=label, marker=".")
        ax.plot(xs, [max(p.hiccup_max_us or 0.0, 1.0) for p in points], "--", color=color)
    ax.set_xlabel("seconds into the step")
    _latency_axis(ax)
    _legend(ax, len(steps))


def _series(steps: Sequence[StepData], several: bool) -> dict[str, list[StepData]]:
    groups: dict[str, list[StepData]] = {}
    for step in steps:
        groups.setdefault(step.series(with_run=several, with_repeat=False), []).append(step)
    return groups


def _draw_latency_vs_throughput(ax: Any, steps: Sequence[StepData], several: bool) -> None:
    from matplotlib.lines import Line2D

    swept = swept_path(steps)
    series = _series(steps, several)
    # Repeats of one step are points side by side: a line through them would be a walk.
    joined = not any(REPEAT in s.label for s in steps)
    labels: list[tuple[str, float, float]] = []
    for i, (_name, group) in enumerate(series.items()):
        color = f"C{i % 10}"
        xs = [s.summary.ops_per_s for s in group]
        p50s = [s.summary.p(50.0) for s in group]
        ax.plot(xs, p50s, "-o" if joined else "o", color=color)
        ax.plot(xs, [s.summary.p(99.0) for s in group], "--s" if joined else "s", color=color,
                alpha=0.8)  # fmt: skip
        if swept is not None:  # which step each point is (a step's repeats: once)
            name = swept.split(".")[-1]
            named = {text for text, _, _ in labels}
            for step, x, y in zip(group, xs, p50s, strict=True):
                text = f"{name}={step.label.get(swept, '')}"
                if text not in named:
                    named.add(text)
                    labels.append((text, x, y))
    ax.set_xlabel("ops/s")
    xs_all = [s.summary.ops_per_s for s in steps if s.summary.ops_per_s > 0]
    # Series far apart in throughput (a Python client and the native engine) would flatten
    # onto 0 on a linear axis: a log axis keeps each visible.
    if xs_all and max(xs_all) / min(xs_all) > 5:
        ax.set_xscale("log")
    else:
        ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(_thousands())
    _latency_axis(ax, ratio=10)
    ax._workbench_labels = labels  # placed by _render once the layout is final
    # One legend entry per series (its colour), and one per percentile (its mark).
    handles = [Line2D([], [], color=f"C{i % 10}", lw=2) for i in range(len(series))]
    names = list(series)
    handles += [
        Line2D([], [], color="0.3", marker="o", ls="-"),
        Line2D([], [], color="0.3", marker="s", ls="--"),
    ]
    names += ["p50", "p99"]
    _legend(ax, len(names), handles, names)


# Label placements tried in turn, in points from the point: right-below, right-above,
# left-above, left-below.
_OFFSETS = ((5, -11), (5, 5), (-5, 5), (-5, -11))
_LABEL_PT = 7.0


def _place_labels(ax: Any, labels: list[tuple[str, float, float]]) -> None:
    """Each point's label where it overlaps no other label nor the axes' edge; a label with
    no free place is left out (the table has every figure)."""
    if not labels:
        return
    fig = ax.figure
    to_px = fig.dpi / 72.0
    box = ax.get_window_extent()
    taken: list[tuple[float, float, float, float]] = []
    for text, x, y in labels:
        px, py = ax.transData.transform((x, y))
        w, h = len(text) * _LABEL_PT * 0.6 * to_px, _LABEL_PT * 1.2 * to_px
        for dx, dy in _OFFSETS:
            left = px + dx * to_px - (w if dx < 0 else 0)
            bottom = py + dy * to_px
            rect = (left, bottom, left + w, bottom + h)
            inside = box.x0 <= rect[0] and rect[2] <= box.x1 and box.y0 <= rect[1] <= box.y1 - h
            if inside and not any(_overlap(rect, t) for t in taken):
                taken.append(rect)
                ax.annotate(
                    text,
                    (x, y),
                    textcoords="offset points",
                    xytext=(dx, dy),
                    ha="right" if dx < 0 else "left",
                    fontsize=_LABEL_PT,
                )
                break


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def swept_path(steps: Sequence[StepData]) -> str | None:
    """The swept spec path whose value changes between steps (concurrency first)."""
    paths: list[str] = []
    for step in steps:
        for path in step.label:
            if path not in paths and path != REPEAT:  # a repeat is not a setting
                paths.append(path)
    varying = [p for p in paths if len({s.label.get(p) for s in steps}) > 1]
    if CONCURRENCY in varying:
        return CONCURRENCY
    return varying[0] if varying else None


def _draw_against_swept(ax: Any, steps: Sequence[StepData], several: bool, path: str) -> None:
    values = [s.label.get(path, "") for s in steps]
    numeric = all(_number(v) is not None for v in values)
    if not numeric:  # categories: bars, with nothing drawn between them
        group_charts.draw_swept_bars(ax, steps, several, path)
        ax.yaxis.set_major_formatter(_thousands())
        series = {group_charts.group_name(s, several, path) for s in steps}
        if len(series) > 1:
            _legend(ax, len(series))
        return
    categories = list(dict.fromkeys(values))
    groups: dict[str, list[StepData]] = {}
    for step in steps:
        rest = {k: v for k, v in step.label.items() if k != path}
        name = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in rest.items()) or "ops/s"
        if several:
            name = f"{step.run.name}: {name}"
        groups.setdefault(name, []).append(step)
    for i, (name, group) in enumerate(groups.items()):
        raw = [s.label.get(path, "") for s in group]
        xs = [_number(v) for v in raw] if numeric else [categories.index(v) for v in raw]
        ax.plot(xs, [s.summary.ops_per_s for s in group], "-o", color=f"C{i % 10}", label=name)
    if numeric:
        if max(_number(v) or 0 for v in values) / max(min(_number(v) or 1 for v in values), 1) > 20:
            ax.set_xscale("log")
    else:
        ax.set_xticks(range(len(categories)))
        ax.set_xticklabels(categories, rotation=20, ha="right")
    ax.set_xlabel(path)
    ax.set_ylabel("ops/s")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(_thousands())
    _legend(ax, len(groups))


def _number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _latency_axis(ax: Any, ratio: float = 100) -> None:
    """Latency in µs; logarithmic when the lines span more than `ratio` (two orders of
    magnitude unless told)."""
    ys = [y for line in ax.get_lines() for y in line.get_ydata() if y > 0]
    if ys and max(ys) / min(ys) > ratio:
        from matplotlib.ticker import LogLocator, NullFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(_latency_ticks())
        ax.yaxis.set_minor_formatter(NullFormatter())  # no "6 x 10^1" between them
        ax.set_ylabel("latency")  # the ticks carry their units
        return
    ax.set_ylim(bottom=0)
    ax.set_ylabel("latency (µs)")


def _latency_ticks() -> Any:
    """10µs, 100µs, 1ms... instead of powers of ten."""
    from matplotlib.ticker import FuncFormatter

    def tick(us: float, _: Any) -> str:
        for unit, scale in (("s", 1e6), ("ms", 1e3), ("µs", 1.0)):
            if us >= scale:
                return f"{us / scale:g}{unit}"
        return f"{us * 1000:g}ns" if us > 0 else ""

    return FuncFormatter(tick)


def _thousands() -> Any:
    # Lazily, as in _render: matplotlib is slow to import.
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: _short_count(v))


def _short_count(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    return f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}"


def _legend(
    ax: Any, entries: int, handles: list[Any] | None = None, names: list[str] | None = None
) -> None:
    """Inside the axes when short; beside them when it would hide lines, its long names
    wrapped so the legend does not squeeze the chart."""
    if handles is None:
        handles, names = ax.get_legend_handles_labels()
    if not names:
        return
    names = [textwrap.fill(n, LEGEND_WIDTH) for n in names]
    if entries <= 3:
        ax.legend(handles, names, fontsize=8, loc="best", frameon=False)
    else:
        ax.legend(
            handles,
            names,
            fontsize=8,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
        )
