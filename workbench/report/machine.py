"""The load machine's hiccups in reports: a table for the markdown formats, a dict for
json, and the chart the html and svg reports draw (`workbench.results.hiccups` is what they
read)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.report.model import RunData, StepData, all_steps
from workbench.results.hiccups import Hiccups, meter_text
from workbench.results.metrics import format_us


def measured(step: StepData) -> Hiccups | None:
    """The step's hiccups, when a meter ran for it."""
    h = step.totals.hiccups
    return h if h is not None and h.hist.get_total_count() else None


def hiccup_table(runs: Sequence[RunData]) -> list[str]:
    """One row per step a meter ran for: its hiccups beside its latency."""
    steps = [s for s in all_steps(runs) if measured(s)]
    if not steps:
        return []
    several = len(runs) > 1
    first = measured(steps[0])
    assert first is not None
    threshold = format_us(first.threshold_ns / 1000)
    lines = [
        "### The load machine's hiccups",
        "",
        f"How late a thread pinned to each CPU woke ({meter_text(first)}), beside the step's "
        f"latency: a CPU taken from everyone shows here. Hiccups are wake-ups {threshold} "
        "late or more.",
        "",
        "| step | latency p99 | latency max | hiccup p99 | hiccup p99.9 | hiccup max "
        f"| over {threshold} | longest |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for step in steps:
        h = measured(step)
        assert h is not None
        at = h.percentiles_us()
        longest = h.longest.text() if h.longest else "none"
        if h.remote_server:
            longest += " (the server's machine is not measured)"
        lines.append(
            f"| {step.name(with_run=several)} | {format_us(step.summary.p(99.0))} | "
            f"{format_us(step.summary.max_us)} | {format_us(at[99.0])} | "
            f"{format_us(at[99.9])} | {format_us(h.max_us)} | {h.count:,} | {longest} |"
        )
    return [*lines, ""]


def hiccup_dict(h: Hiccups | None) -> dict[str, Any] | None:
    """The figures of a step's hiccups for json (their full record is in its stats)."""
    if h is None or not h.hist.get_total_count():
        return None
    at = h.percentiles_us((50.0, 99.0, 99.9))
    return {
        "meter": h.meter,
        "tick_us": h.tick_ns / 1000,
        "threshold_us": h.threshold_ns / 1000,
        "p50_us": at[50.0],
        "p99_us": at[99.0],
        "p999_us": at[99.9],
        "max_us": h.max_us,
        "over_threshold": h.count,
        "lost_us": h.lost_ns / 1000,
        "longest": h.longest.text() if h.longest else None,
        "server_machine_measured": not h.remote_server,
        "intervals": h.intervals,
        "clean_intervals": h.clean_intervals,
    }


def chart_steps(steps: Sequence[StepData]) -> list[StepData]:
    """The steps whose intervals carry hiccups (the chart is drawn when there are any)."""
    return [s for s in steps if any(p.hiccup_max_us is not None for p in s.points)]
