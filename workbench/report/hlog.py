"""An HdrHistogram interval log (``.hlog``), the format of HdrHistogram's HistogramLogWriter
(log format 1.3), readable by HistogramLogReader, HistogramLogProcessor and the plotters.

One line per measured interval per operation kind, tagged with the kind (``Tag=get``); a
sweep's steps are tagged ``step2.get`` and so on, several runs ``run2.step1.get``. Values
are nanoseconds; ``Interval_Max`` is in milliseconds, as the reference writer scales it.
Timestamps are seconds from the run's start (``#[BaseTime]``) on the measured time axis:
each step's intervals follow the previous step's, warmup and set-up left out.

The header lines are written here: hdrhistogram 0.10.8's `output_start_time` is broken.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from workbench.report.model import RunData
from workbench.results.metrics import encode

LOG_FORMAT_VERSION = "1.3"
LEGEND = '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
MAX_VALUE_UNIT_RATIO = 1_000_000.0  # ns -> ms, as the reference writer's default


def _stamp(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")


def tag(run_no: int, step_no: int, kind: str, runs: int, steps: int) -> str:
    parts = []
    if runs > 1:
        parts.append(f"run{run_no}")
    if steps > 1:
        parts.append(f"step{step_no}")
    return ".".join([*parts, kind])


def render(runs: Sequence[RunData], **options: Any) -> str:
    lines: list[str] = [f"#[Histogram log format version {LOG_FORMAT_VERSION}]"]
    for run_no, run in enumerate(runs, 1):
        start = run.stored.created_at
        lines.append(f"#[Cache Workbench run {run.id} '{run.name}' ({run.status})]")
        lines.append(f"#[StartTime: {start:.3f} (seconds since epoch), {_stamp(start)}]")
        lines.append(f"#[BaseTime: {start:.3f} (seconds since epoch)]")
        steps = run.started_steps
        for step in steps:
            lines.append(
                f"#[step {step.index + 1}: {step.name(with_run=False)} ({step.status}); "
                f"values in nanoseconds]"
            )
        lines.append(LEGEND)
        offset = 0.0
        for step in steps:
            end = offset
            for interval in step.intervals:
                begin = offset + max(interval.elapsed - interval.stats.duration, 0.0)
                for kind in sorted(interval.stats.hist):
                    hist = interval.stats.hist[kind]
                    if not hist.get_total_count():
                        continue
                    name = tag(run_no, step.index + 1, kind, len(runs), len(run.steps))
                    lines.append(
                        f"Tag={name},{begin:.3f},{interval.stats.duration:.3f},"
                        f"{hist.get_max_value() / MAX_VALUE_UNIT_RATIO:.3f},{encode(hist)}"
                    )
                end = max(end, offset + interval.elapsed)
            offset = end
    return "\n".join(lines) + "\n"
