"""CSV: one row per measured interval and one per step (``row`` says which), for every run.

Latencies are in microseconds, from the same `summarise` as every other figure; the
``ops_<kind>`` columns count each operation kind present in any of the runs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from workbench.report.model import RunData
from workbench.results.metrics import Stats, Summary, summarise

TICKS = (50.0, 75.0, 90.0, 99.0, 99.9, 99.99)
COLUMNS = [
    "run_id", "run_name", "run_status", "step", "step_title", "step_status", "row", "interval",
    "elapsed_s", "duration_s", "clients", "workers", "ops", "ops_per_s", "mib_per_s", "hits",
    "misses", "hit_rate", "hot_gets", "hot_hits", "errors", "mean_us", "stdev_us", "min_us",
    *(f"p{t:g}_us".replace(".", "_") for t in TICKS), "max_us", "bytes_in", "bytes_out",
]  # fmt: skip


def _num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return ""
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _figures(s: Summary, stats: Stats, kinds: list[str]) -> list[str]:
    row = [
        _num(s.duration, 6), "", "", str(s.ops), _num(s.ops_per_s), _num(s.mib_per_s, 6),
        str(s.hits), str(s.misses), _num(s.hit_rate, 6), str(stats.hot_gets),
        str(stats.hot_hits), str(s.errors), _num(s.mean_us), _num(s.stdev_us), _num(s.min_us),
        *(_num(s.p(t)) for t in TICKS), _num(s.max_us), str(stats.bytes_in),
        str(stats.bytes_out),
    ]  # fmt: skip
    row += [str(s.per_op[k][0]) if k in s.per_op else "0" for k in kinds]
    return row


def render(runs: Sequence[RunData], **options: Any) -> str:
    kinds = sorted({k for r in runs for s in r.started_steps for k in s.totals.hist})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*COLUMNS, *(f"ops_{k}" for k in kinds)])
    for run in runs:
        for step in run.started_steps:
            ident = [run.id, run.name, run.status, str(step.index), step.title, step.status]
            for interval in step.intervals:
                s = summarise(interval.stats)
                figures = _figures(s, interval.stats, kinds)
                figures[1:3] = [str(step.clients), str(step.workers)]
                w.writerow([*ident, "interval", str(interval.index), _num(interval.elapsed, 6),
                            *figures])  # fmt: skip
            figures = _figures(step.summary, step.totals, kinds)
            figures[1:3] = [str(step.clients), str(step.workers)]
            w.writerow([*ident, "step", "", "", *figures])
    return buf.getvalue()
