"""Reports: pure functions from stored runs to text, one module per format.

``render(runs, fmt, **options)`` takes one `StoredRun` or several (several give one
comparison) and returns the whole report as a string. Every figure is read through the
reducer the faces use (`workbench.results.live.RunView`) and
`workbench.results.metrics.summarise`, so a report, `workbench runs show` and the live
screens never disagree.

Markdown formats (they start with what was measured where, and end with the command that
measures it again): ``table`` (default), ``criterion``, ``wrk``, ``gobench``, ``hitrate``,
``search`` (a rate search's probes and conclusion).
Data formats: ``json`` (the full stored runs), ``csv`` (one row per interval and per step),
``hlog`` (an HdrHistogram interval log, one line per interval per op kind).
Charts: ``html`` (one self-contained page with the figures and inline SVG charts) and
``svg`` (the charts alone), drawn by matplotlib.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from workbench.report.model import read_runs
from workbench.results.store import StoredRun
from workbench.sdk.errors import WorkbenchError

# format name -> (module, one-line description)
FORMATS: dict[str, tuple[str, str]] = {
    "table": ("table", "markdown comparison table per step, with the percentile ticks"),
    "criterion": ("criterion", "criterion-like blocks per step: time, thrpt, percentiles"),
    "wrk": ("wrk", "wrk-like blocks per step: thread stats, latency distribution, req/s"),
    "gobench": ("gobench", "Go benchmark lines per step and op: N, ns/op, B/op, extras"),
    "hitrate": ("hitrate", "hit-rate tables per step: overall, hot and cold keys, memory"),
    "search": ("search", "a rate search: highest passing rate, knee, latency vs throughput"),
    "json": ("json_report", "the full stored runs as JSON"),
    "csv": ("csv_report", "one CSV row per interval and per step"),
    "hlog": ("hlog", "HdrHistogram interval log, one line per interval per op kind"),
    "html": ("html", "one self-contained HTML page: figures and SVG charts"),
    "svg": ("svg_report", "the charts alone, stacked in one SVG"),
}
MARKDOWN = ("table", "criterion", "wrk", "gobench", "hitrate", "search")
CHARTS = ("html", "svg")  # drawn by matplotlib: their bytes follow its version


class ReportError(WorkbenchError):
    """A report cannot be made: an unknown format, no runs."""


def unknown_format(fmt: str) -> ReportError:
    return ReportError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", "--format")


def render(runs: StoredRun | Iterable[StoredRun], fmt: str = "table", **options: object) -> str:
    """The report of `runs` in format `fmt`, as text ending with a newline."""
    if fmt not in FORMATS:
        raise unknown_format(fmt)
    data = read_runs(runs)
    if not data:
        raise ReportError("no runs to report on")
    module = importlib.import_module(f"workbench.report.{FORMATS[fmt][0]}")
    rendered: str = module.render(data, **options)  # every format module's render gives text
    return rendered


__all__ = ["CHARTS", "FORMATS", "MARKDOWN", "ReportError", "render"]
