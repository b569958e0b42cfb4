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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.metrics import percentile_curve
from workbench.report.model import CONCURRENCY, RunData, StepData, all_steps

# Percentiles marked on the 1/(1-p) axis of the distribution chart.
PERCENTILE_TICKS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)
WIDTH_IN, HEIGHT_IN = 7.5, 3.6
_RC = {
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


def charts(runs: Sequence[RunData]) -> list[Chart]:
    """The charts that have data for these runs, in reading order."""
    steps = [s for s in all_steps(runs) if s.has_data]
    if not steps:
        return []
    several = len(runs) > 1
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
    # Imported here, not at the top: matplotlib takes about half a second to import, and
    # every other report (and the TUI, which imports the report package) does without it.
    import matplotlib
    from matplotlib.figure import Figure

    rows = math.ceil(len(charts_) / ncols)
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(WIDTH_IN * ncols, HEIGHT_IN * rows), layout="constrained")
        axes = fig.subplots(rows, ncols, squeeze=False).ravel()
        for ax, chart in zip(axes, charts_, strict=False):
            ax.set_title(chart.title, loc="left", fontweight="bold")
            chart.draw(ax)
            ax.set_gid(chart.id)  # the <g id=...> of this chart in the SVG
            for n, line in enumerate(ax.get_lines()):  # its data lines: <g id="ID-data-N">
                line.set_gid(f"{chart.id}-data-{n}")
        for ax in axes[len(charts_) :]:
            ax.set_visible(False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    # Drop the XML prolog and DOCTYPE so the document can also be inlined in HTML.
    return text[text.index("<svg") :]


def _label(step: StepData, several: bool) -> str:
    return step.name(with_run=several)


def _percentile_x(p: float) -> float:
    return 1.0 / (1.0 - p / 100.0)


def _draw_percentiles(ax: Any, steps: Sequence[StepData], several: bool) -> None:
    top = 0.0
    for step in steps:
        # Past 1 - 1/N of N samples a percentile only repeats the maximum: stop there.
        last = 100.0 * (1.0 - 1.0 / max(step.histogram.get_total_count(), 2))
        curve = [(p, us) for p, us in percentile_curve(step.histogram) if p <= max(last, 99.0)]
        if not curve:
            continue
        top = max(top, curve[-1][0])
        ax.plot(
            [_percentile_x(p) for p, _ in curve],
            [us for _, us in curve],
            label=_label(step, several),
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
    for i, step in enumerate(steps):
        color = f"C{i % 10}"
        xs = [p.elapsed for p in step.points]
        columns = list(zip(*(values(p) for p in step.points), strict=True))
        for j, ys in enumerate(columns):
            label = _label(step, several) if j == 0 else None
            ax.plot(xs, ys, styles[j % 3], color=color, label=label, marker=".", linewidth=1.2)
    ax.set_xlabel("seconds into the step")
    if names == ["ops/s"]:
        ax.set_ylabel("ops/s")
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(_thousands())
    else:
        _latency_axis(ax)
    _legend(ax, len(steps))


def _series(steps: Sequence[StepData], several: bool) -> dict[str, list[StepData]]:
    groups: dict[str, list[StepData]] = {}
    for step in steps:
        groups.setdefault(step.series(with_run=several), []).append(step)
    return groups


def _draw_latency_vs_throughput(ax: Any, steps: Sequence[StepData], several: bool) -> None:
    swept = swept_path(steps)
    for i, (name, group) in enumerate(_series(steps, several).items()):
        color = f"C{i % 10}"
        xs = [s.summary.ops_per_s for s in group]
        p50s = [s.summary.p(50.0) for s in group]
        ax.plot(xs, p50s, "-o", color=color, label=f"{name} p50")
        ax.plot(xs, [s.summary.p(99.0) for s in group], "--s", color=color, label=f"{name} p99")
        if swept is None:
            continue
        for step, x, y in zip(group, xs, p50s, strict=True):  # which step each point is
            text = f"{swept.split('.')[-1]}={step.label.get(swept, '')}"
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, -11), fontsize=7)
    ax.set_xlabel("ops/s")
    ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(_thousands())
    _latency_axis(ax)
    _legend(ax, 2 * len(_series(steps, several)))


def swept_path(steps: Sequence[StepData]) -> str | None:
    """The swept spec path whose value changes between steps (concurrency first)."""
    paths: list[str] = []
    for step in steps:
        for path in step.label:
            if path not in paths:
                paths.append(path)
    varying = [p for p in paths if len({s.label.get(p) for s in steps}) > 1]
    if CONCURRENCY in varying:
        return CONCURRENCY
    return varying[0] if varying else None


def _draw_against_swept(ax: Any, steps: Sequence[StepData], several: bool, path: str) -> None:
    values = [s.label.get(path, "") for s in steps]
    numeric = all(_number(v) is not None for v in values)
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


def _latency_axis(ax: Any) -> None:
    """Latency in µs; logarithmic when the lines span more than two orders of magnitude."""
    ys = [y for line in ax.get_lines() for y in line.get_ydata() if y > 0]
    if ys and max(ys) / min(ys) > 100:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_ylabel("latency (µs)")


def _thousands() -> Any:
    # Lazily, as in _render: matplotlib is slow to import.
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: _short_count(v))


def _short_count(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    return f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}"


def _legend(ax: Any, entries: int) -> None:
    """Inside the axes when short; beside them when it would hide lines."""
    if not ax.get_legend_handles_labels()[1]:
        return
    if entries <= 3:
        ax.legend(fontsize=7, loc="best", frameon=False)
    else:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
