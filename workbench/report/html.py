"""One self-contained HTML page: what was measured, the figures of every step, and the charts.

Everything is inline (styles, SVG charts): the file can be mailed, attached to a CI job or
opened offline. Facts and figures come from the same functions as the markdown reports
(`markdown.describe_*`, `table.COLUMNS`), so the page and a `table` report never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from workbench.report import html_changes, repeats, simulated
from workbench.report.changes import comparisons_for
from workbench.report.charts import charts, svg
from workbench.report.markdown import (
    describe_environment,
    describe_load,
    describe_strategy,
    describe_target,
    describe_workload,
    when,
)
from workbench.report.model import STATUS_WORDS, RunData, StepData, all_steps
from workbench.report.table import COLUMNS

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
dt { font-weight: 600; } dd { margin: 0; }
figure { margin: 1.5em 0; } figcaption { color: #555; font-size: 0.9em; overflow-wrap: anywhere; }
figure svg { max-width: 100%; height: auto; }
td.verdict { text-align: left; white-space: nowrap; }
th.simulated, td.simulated { color: #555; font-style: italic; }
td.simulated:first-child, td:first-child b { white-space: nowrap; }
.warn { background: #fff4e0; border-left: 4px solid #e8a100; padding: 0.4em 0.8em; }
"""


def render(runs: Sequence[RunData], **options: Any) -> str:
    title = str(options.get("title") or "Cache Workbench report")
    names = ", ".join(f"'{r.name}'" for r in runs)
    body = [f"<h1>{escape(title)}: {escape(names)}</h1>"]
    for run in runs:
        body += _run_facts(run)
    body += _figures_table(runs)
    body += html_changes.repeats_table(runs)
    compared = comparisons_for(runs)
    body += html_changes.changes_tables(compared)
    body += _simulated_table(runs)
    drawn = charts(runs, compared)
    if drawn:
        body.append("<h2>Charts</h2>")
    for chart in drawn:
        body.append(
            f'<figure id="{chart.id}" class="chart">{svg(chart)}'
            f"<figcaption>{escape(chart.caption)}</figcaption></figure>"
        )
    if not drawn:
        body.append('<p class="warn">No step measured any operation: nothing to chart.</p>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}{html_changes.STYLE}</style></head>\n"
        "<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _run_facts(run: RunData) -> list[str]:
    out = [f"<h2>Run <code>{escape(run.id)}</code> '{escape(run.name)}'</h2>"]
    if run.status != "completed":
        out.append(f'<p class="warn">{escape(STATUS_WORDS.get(run.status, run.status))}</p>')
    facts = [
        ("status", run.status),
        ("started", when(run.stored.created_at)),
        ("target", describe_target(run)),
        ("strategy", describe_strategy(run)),
        ("workload", describe_workload(run)),
        ("load", describe_load(run)),
        ("environment", describe_environment(run)),
    ]
    out.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{escape(v)}</dd>" for k, v in facts) + "</dl>")
    return out


def _simulated_table(runs: Sequence[RunData]) -> list[str]:
    """Measured and simulated hit rates: a column per step, the measured row first, then a
    row per policy, each row saying whether it was measured or simulated."""
    steps = simulated.steps_with(runs)
    if not steps:
        return []
    names = simulated.policies(steps)
    several = len(runs) > 1
    head = "<th>hit rate (hot, cold)</th>" + "".join(
        f"<th>{escape(s.name(with_run=several))}<br><small>limit "
        f"{escape(simulated.limit_text(s.simulated))}</small></th>"
        for s in steps
    )

    def cell(figures: dict[str, Any] | None, css: str) -> str:
        if figures is None:
            return f'<td class="{css}">-</td>'
        text = simulated.rates(figures)
        main, _, rest = text.partition(" (")
        extra = f"<br><small>({escape(rest)}</small>" if rest else ""
        return f'<td class="{css}">{escape(main)}{extra}</td>'

    rows = ["<tr><td><b>measured</b></td>"]
    rows[0] += "".join(
        cell(simulated.measured(s), "measured")
        if "error" not in s.simulated
        else f"<td>{escape(simulated.measured_text(s))}</td>"
        for s in steps
    )
    rows[0] += "</tr>"
    for name in names:
        cells = "".join(
            cell(s.simulated.get("policies", {}).get(name), "simulated")
            if "error" not in s.simulated
            else f'<td class="simulated">not simulated: {escape(s.simulated["error"])}</td>'
            for s in steps
        )
        rows.append(f'<tr><td class="simulated">simulated: {escape(name)}</td>{cells}</tr>')
    return [
        "<h2>Measured and simulated hit rates</h2>",
        f"<p>{escape(simulated.EXPLAIN)}</p>",
        f"<table><tr>{head}</tr>",
        *rows,
        "</table>",
    ]


def _hot_cold(steps: Sequence[StepData]) -> list[tuple[str, Any, Any]]:
    """The hot and cold keys' hit rates, once any step told its hot keys' gets apart."""
    if not any(s.started and s.totals.hot_gets for s in steps):
        return []
    return [(f"{name} keys", get, fmt) for name, get, fmt in repeats.HIT_FIGURES[1:]]


def _figures_table(runs: Sequence[RunData]) -> list[str]:
    steps = all_steps(runs)
    if not steps:
        return []
    several = len(runs) > 1
    # As in the table report: the verdict column once any step was judged.
    verdicts = any(s.started and s.view.verdict.known for s in steps)
    columns = [*((name, get, fmt) for name, get, fmt, _ in COLUMNS), *_hot_cold(steps)]
    head = "".join(f"<th>{escape(name)}</th>" for name, *_ in columns)
    head += "<th>verdict</th>" if verdicts else ""
    rows = []
    for step in steps:
        cells = "".join(
            f"<td>{escape(fmt(value)) if (value := get(step)) is not None else 'n/a'}</td>"
            for _, get, fmt in columns
        )
        if verdicts:
            verdict = step.view.verdict if step.started else None
            badge = verdict.badge if verdict and verdict.known else "-"
            cells += f'<td class="verdict">{escape(badge)}</td>'
        status = "" if step.status == "completed" else f" ({escape(step.status)})"
        rows.append(f"<tr><td>{escape(step.name(with_run=several))}{status}</td>{cells}</tr>")
    out = ["<h2>Figures</h2>", f"<table><tr><th>step</th>{head}</tr>", *rows, "</table>"]
    judged = [
        f"<li><b>{escape(step.name(with_run=several))}</b>: {escape(verdict.line)}</li>"
        for step in steps
        if step.started and (verdict := step.view.verdict).known
    ]
    if judged:
        out += [
            "<h2>What limited each step</h2>",
            "<p>From the CPU the workers, the server and the machine used, and in open loop "
            "the schedule kept.</p>",
            '<ul class="verdicts">',
            *judged,
            "</ul>",
        ]
    return out
