"""Criterion-like blocks, as in the client-strategy document (000): one heading per
concurrency level, one block per strategy (step) under it, then conclusions from the data.

    embedded/direct/concurrency = 4
                            time:   [1.3815 us 1.5000 us 1.6075 us]
                            thrpt:  [13.905 MiB/s 14.901 MiB/s 16.180 MiB/s]
    Response times percentiles:
    0.02% < 0.905us
    50.04% < 1.526us
    ...

``time`` is wall time per operation across all clients (1 / throughput) and ``thrpt`` the
value bytes moved per second (operations per second when no value bytes moved): the middle
figure is the whole step, the outer ones the fastest and slowest measured interval. Each
percentile line gives the share of operations at or below the latency shown, at the
document's ticks (50, 75, 87.5, ... 99.22) plus 99.9 and the maximum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.report import repeats
from workbench.report.change_lines import StepKey, blocks_by_step, step_key
from workbench.report.change_lines import table as change_table
from workbench.report.changes import comparisons_for
from workbench.report.markdown import footer, header
from workbench.report.model import RunData, StepData, cumulative_share
from workbench.report.units import (
    block_unit,
    criterion_bytes_per_s,
    criterion_elements_per_s,
    criterion_time,
    latency,
)
from workbench.results.metrics import DOC_TICKS, format_us

INDENT = " " * 24
TICKS = (*DOC_TICKS, 99.9)


def _three(mid: float, samples: list[float]) -> tuple[float, float, float]:
    if not samples:
        return mid, mid, mid
    return min(min(samples), mid), mid, max(max(samples), mid)


def share_text(share: float) -> str:
    """A share of operations as 000 prints it; tiny shares keep two significant digits."""
    return f"{share:.2g}%" if 0 < share < 0.005 else f"{share:.2f}%"


def block(step: StepData, *, with_run: bool) -> list[str]:
    s = step.summary
    title = step.name(with_run=with_run)
    if step.status != "completed":
        title += f" ({step.status})"
    if not s.ops or s.ops_per_s <= 0:
        return [title, f"{INDENT}nothing measured", ""]
    points = [p for p in step.points if p.ops_per_s > 0]
    lo, mid, hi = _three(1e9 / s.ops_per_s, [1e9 / p.ops_per_s for p in points])
    times = " ".join(criterion_time(v).strip() for v in (lo, mid, hi))
    lines = [title, f"{INDENT}time:   [{times}]"]
    if s.mib_per_s > 0:
        rates = _three(s.mib_per_s * 1048576, [p.mib_per_s * 1048576 for p in points])
        text = " ".join(criterion_bytes_per_s(v).strip() for v in rates)
    else:
        rates = _three(s.ops_per_s, [p.ops_per_s for p in points])
        text = " ".join(criterion_elements_per_s(v).strip() for v in rates)
    lines.append(f"{INDENT}thrpt:  [{text}]")
    if s.errors:
        lines.append(f"Found {s.errors:,} errors among {s.ops + s.errors:,} operations")
    unit = block_unit(s.p(50.0))
    hist = step.histogram
    lines.append("Response times percentiles:")
    lines.append(
        f"{share_text(cumulative_share(hist, hist.get_min_value()))} < {latency(s.min_us, unit)}"
    )
    for tick in TICKS:
        value_us = s.p(tick)
        share = cumulative_share(hist, round(value_us * 1000))
        lines.append(f"{share_text(share)} < {latency(value_us, unit)}")
    lines.append(f"100.00% < {latency(s.max_us, unit)}")
    lines.append("")
    return lines


def with_change(lines: list[str], changes: dict[StepKey, list[str]], step: StepData) -> list[str]:
    """A step's block with its ``change:`` lines, as criterion ends a benchmark's block."""
    found = changes.get(step_key(step.run.id, [step.index]))
    if not found:
        return lines
    end = len(lines) - (1 if lines and lines[-1] == "" else 0)
    return [*lines[:end], *found, *lines[end:]]


def levels(
    runs: Sequence[RunData], steps: dict[str, list[StepData]] | None = None
) -> dict[int, list[StepData]]:
    """The started steps of every run by concurrency (or the given steps of each run id)."""
    by_level: dict[int, list[StepData]] = {}
    for run in runs:
        for step in steps[run.id] if steps is not None else run.started_steps:
            by_level.setdefault(step.clients, []).append(step)
    return dict(sorted(by_level.items()))


def level_conclusion(level: int, steps: list[StepData], several: bool) -> str | None:
    """At one concurrency: the fastest, how far ahead of the slowest, and the calmest p99."""
    measured = [s for s in steps if s.has_data]
    if len(measured) < 2:
        return None
    fast = max(measured, key=lambda s: s.summary.ops_per_s)
    slow = min(measured, key=lambda s: s.summary.ops_per_s)
    calm = min(measured, key=lambda s: s.summary.p(99.0))

    def name(step: StepData) -> str:
        return step.series(with_run=several, with_repeat=False)

    text = (
        f"Concurrency {level}: {name(fast)} is fastest at "
        f"{fast.summary.ops_per_s:,.0f} ops/s, "
        f"x{fast.summary.ops_per_s / slow.summary.ops_per_s:.2f} the slowest "
        f"({name(slow)})"
    )
    if calm is fast:
        text += f", and has the lowest p99 ({format_us(calm.summary.p(99.0))})"
    else:
        text += f"; {name(calm)} has the lowest p99 ({format_us(calm.summary.p(99.0))})"
    return text + "."


def series_conclusions(name: str, steps: list[StepData]) -> list[str]:
    """Along one series (a strategy over concurrency): the peak, the fall, p99 growth, errors."""
    if len(steps) < 2:
        return []
    peak = max(steps, key=lambda s: s.summary.ops_per_s)
    first, last = steps[0], steps[-1]
    text = (
        f"{name}: throughput peaks at concurrency {peak.clients} "
        f"({peak.summary.ops_per_s:,.0f} ops/s)"
    )
    if last is not peak and last.summary.ops_per_s < 0.95 * peak.summary.ops_per_s:
        drop = 1 - last.summary.ops_per_s / peak.summary.ops_per_s
        text += f" and falls {drop:.0%} by concurrency {last.clients}"
    if first.summary.p(99.0) > 0:
        growth = last.summary.p(99.0) / first.summary.p(99.0)
        text += (
            f"; p99 goes from {format_us(first.summary.p(99.0))} at concurrency "
            f"{first.clients} to {format_us(last.summary.p(99.0))} at {last.clients} "
            f"(x{growth:.1f})"
        )
    out = [text + "."]
    failing = [s for s in steps if s.summary.errors]
    if failing:
        s = failing[0]
        kinds = ", ".join(sorted(s.totals.errors))
        count = f"{s.summary.errors:,} {kinds}"
        out.append(f"{name}: errors from concurrency {s.clients} on ({count}).")
    return out


def conclusions(runs: Sequence[RunData]) -> list[str]:
    """What the data says: the fastest per level, where throughput peaks and latency grows.

    Of a run with repeats, each step is judged by its median repeat (`repeats.median_steps`),
    so the conclusions name each step once, as they would without repeats."""
    several = len(runs) > 1
    medians = {run.id: repeats.median_steps(run) for run in runs}
    chosen = {run.id: medians[run.id] or run.started_steps for run in runs}
    by_level = levels(runs, chosen)
    out = [
        text
        for level, steps in by_level.items()
        if (text := level_conclusion(level, steps, several)) is not None
    ]
    series: dict[str, list[StepData]] = {}
    for steps in by_level.values():
        for s in steps:
            if s.has_data:
                series.setdefault(s.series(with_run=several, with_repeat=False), []).append(s)
    for name, steps in series.items():
        out += series_conclusions(name, steps)
    if not out:  # nothing to compare: each step's own figures
        for step in (s for r in runs for s in r.started_steps if s.has_data):
            out.append(
                f"{step.name(with_run=several)}: {step.summary.ops_per_s:,.0f} ops/s, p50 "
                f"{format_us(step.summary.p(50.0))}, p99 {format_us(step.summary.p(99.0))}."
            )
    if any(medians.values()):
        out.append(
            "Each step is its median repeat by ops/s; the repeats' median [min max] close the "
            "report."
        )
    for run in runs:
        for step in run.steps:
            if step.status == "not run":
                out.append(f"{step.name(with_run=several)} was not run.")
            elif step.status != "completed":
                out.append(f"{step.name(with_run=several)} is {step.status}: partial data.")
    return [f"- {line}" for line in out]


def render(runs: Sequence[RunData], **options: Any) -> str:
    several = len(runs) > 1
    lines = header(runs, options.get("title") or "Benchmark comparison")
    lines += ["# Conclusions based on below data:", "", *conclusions(runs), ""]
    lines += [
        "`time`: wall time per operation across all clients [fastest interval, whole step, "
        "slowest interval]; `thrpt`: value bytes per second [slowest interval, whole step, "
        "fastest interval].",
        "",
    ]
    compared = comparisons_for(runs)
    changes = blocks_by_step(compared)
    for level, steps in levels(runs).items():
        lines += [f"### ========== CONCURRENCY == {level} ============", "", "```"]
        for step in steps:
            lines += with_change(block(step, with_run=several), changes, step)
            lines.append("")
        while lines[-1] == "":
            lines.pop()
        lines += ["```", ""]
    lines += repeats.criterion_blocks(runs, changes)
    lines += change_table(compared)
    lines += footer(runs)
    return "\n".join(lines).rstrip("\n") + "\n"
