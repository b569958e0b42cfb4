"""Charts that read a run by its swept values: bars for a categorical sweep (a step's
repeats as one bar, the median with the lowest and highest as whiskers), hit rates per
swept value (overall, hot and cold keys), and each compared figure's change with its 95%
interval, coloured by verdict. Drawn on the axes `charts.figure` gives, like the others."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from workbench.report.changes import Comparison
from workbench.report.model import REPEAT, StepData
from workbench.results.metrics import hot_cold_rates
from workbench.stats.change import IMPROVED, REGRESSED

# Verdict colours, as the TUI's: green better, red worse, grey no change.
VERDICT_COLORS = {IMPROVED: "#2e7d32", REGRESSED: "#c62828"}
NO_CHANGE_COLOR = "#9e9e9e"
HIT_FIGURES: tuple[tuple[str, Callable[[StepData], float | None]], ...] = (
    ("all gets", lambda s: s.summary.hit_rate),
    ("hot keys", lambda s: hot_cold_rates(s.totals)[0]),
    ("cold keys", lambda s: hot_cold_rates(s.totals)[1]),
)


def group_name(step: StepData, several: bool, leave_out: str = "") -> str:
    """A step's name without its repeat (and without `leave_out`): what its repeats share."""
    parts = [
        f"{k.split('.')[-1]}={v}" for k, v in step.label.items() if k not in (REPEAT, leave_out)
    ]
    # Nothing else swept: the system (and, unless it is what is swept, the strategy).
    whole = step.system if leave_out.startswith("strategy") else f"{step.system}/{step.strategy}"
    name = ", ".join(parts) or whole
    return f"{step.run.name}: {name}" if several else name


def grouped(steps: Sequence[StepData], key: Callable[[StepData], str]) -> dict[str, list[StepData]]:
    out: dict[str, list[StepData]] = {}
    for step in steps:
        out.setdefault(key(step), []).append(step)
    return out


def _spread(values: Sequence[float]) -> tuple[float, float, float]:
    """Median, and how far below and above it the lowest and highest lie (whiskers)."""
    mid = statistics.median(values)
    return mid, mid - min(values), max(values) - mid


def _bars(ax: Any, clusters: dict[str, dict[str, list[float]]], scale: float = 1.0) -> None:
    """Grouped bars: one cluster per key of `clusters`, one bar per series in it, each the
    median of its values with whiskers to the lowest and highest."""
    names = list(dict.fromkeys(n for bars in clusters.values() for n in bars))
    width = 0.8 / max(len(names), 1)
    if len(names) == 1:  # one series: a colour per category, as the other charts give them
        singles = [values.get(names[0], []) for values in clusters.values()]
        for x, values in enumerate(singles):
            if values:
                mid, lo, hi = _spread([v * scale for v in values])
                ax.bar([x], [mid], 0.6, color=f"C{x % 10}", yerr=[[lo], [hi]], capsize=3,
                       error_kw={"elinewidth": 1, "ecolor": "0.25"})  # fmt: skip
        names = []
    for i, name in enumerate(names):
        xs, heights, below, above = [], [], [], []
        for x, bars in enumerate(clusters.values()):
            if bars.get(name):
                mid, lo, hi = _spread([v * scale for v in bars[name]])
                xs.append(x + (i - (len(names) - 1) / 2) * width)
                heights.append(mid)
                below.append(lo)
                above.append(hi)
        ax.bar(xs, heights, width * 0.9, color=f"C{i % 10}", label=name, yerr=[below, above],
               capsize=3, error_kw={"elinewidth": 1, "ecolor": "0.25"})  # fmt: skip
    ax.set_xticks(range(len(clusters)))
    ax.set_xticklabels(list(clusters), rotation=15 if len(clusters) > 3 else 0, ha="right"
                       if len(clusters) > 3 else "center")  # fmt: skip


def draw_swept_bars(ax: Any, steps: Sequence[StepData], several: bool, path: str) -> None:
    """ops/s against a categorical swept value: a bar per value (and series), not a line
    between categories that have nothing in between."""
    clusters: dict[str, dict[str, list[float]]] = {}
    for step in steps:
        bars = clusters.setdefault(step.label.get(path, ""), {})
        series = group_name(step, several, leave_out=path)
        bars.setdefault(series, []).append(step.summary.ops_per_s)
    _bars(ax, clusters)
    ax.set_xlabel(path)
    ax.set_ylabel("ops/s (median, whiskers: lowest and highest repeat)")


def has_misses(steps: Sequence[StepData]) -> bool:
    """Gets that missed: a hit rate worth a chart."""
    return any(s.summary.misses for s in steps)


def draw_hit_rates(ax: Any, steps: Sequence[StepData], several: bool) -> None:
    """Hit rate of all gets, of the hot keys and of the cold, per step (its repeats as one
    bar: the median, whiskers to the lowest and highest)."""
    clusters: dict[str, dict[str, list[float]]] = {}
    for name, members in grouped(steps, lambda s: group_name(s, several)).items():
        bars: dict[str, list[float]] = {}
        for label, get in HIT_FIGURES:
            values = [v for s in members if (v := get(s)) is not None]
            if values:
                bars[label] = values
        clusters[name] = bars
    _bars(ax, clusters, scale=100.0)
    ax.set_ylim(0, 100)
    ax.set_ylabel("hit rate (%)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def judged(comparisons: Sequence[Comparison]) -> bool:
    return any(f.change is not None for c in comparisons for s in c.steps for f in s.figures)


def draw_changes(ax: Any, comparisons: Sequence[Comparison]) -> None:
    """Each compared figure's change as a point with its 95% interval, coloured by verdict
    (a share's in points, the rest in percent), one row per figure of each step."""
    rows: list[tuple[str, float, float, float, str]] = []
    steps = [s for c in comparisons for s in c.steps]
    for step in steps:
        for f in step.figures:
            if f.change is not None:
                c = f.change
                unit = " (points)" if c.points else ""
                where = f"{step.title}: " if len(steps) > 1 else ""
                label = f"{where}{f.metric.label}{unit}"
                rows.append((label, c.lo * 100, c.mid * 100, c.hi * 100, c.verdict))
    if len(steps) == 1:
        ax.set_title(steps[0].title, loc="right", fontsize=8)
    for y, (_, lo, mid, hi, verdict) in enumerate(reversed(rows)):
        color = VERDICT_COLORS.get(verdict, NO_CHANGE_COLOR)
        ax.errorbar([mid], [y], xerr=[[mid - lo], [hi - mid]], fmt="o", color=color, capsize=3)
    ax.axvline(0, color="0.4", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in reversed(rows)], fontsize=7)
    ax.set_xlabel("change, new against base (%; shares in points)")
    ax.grid(axis="y", visible=False)
