"""The html report's grouped sections: the repeats of each step as one row (median [min
max], hit rates with hot and cold keys) and each comparison's table, a colour per verdict.
The text comes from the same functions as the markdown reports (`repeats`,
`change_lines`), so the page and a `table` report never disagree."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from workbench.report import change_lines, repeats
from workbench.report.changes import Comparison, Figure
from workbench.report.model import RunData

STYLE = """
.improved { background: #e3f4e4; color: #1b5e20; }
.regressed { background: #fde4e4; color: #b71c1c; }
td.nochange { color: #444; }
td.refused { color: #888; font-style: italic; }
td small { color: #666; }
.legend span { padding: 0.1em 0.5em; margin-right: 0.5em; }
"""


def repeats_table(runs: Sequence[RunData]) -> list[str]:
    """One row per step with repeats: the median of its repeats [lowest highest]."""
    several = len(runs) > 1
    found = [g for r in runs for g in repeats.groups(r)]
    if not found:
        return []
    figures = repeats.figures_for(found)
    head = "".join(f"<th>{escape(name)}</th>" for name, _, _ in figures)
    rows = []
    for group in found:
        cells = "".join(_spread_cell(group.spread(get), fmt) for _, get, fmt in figures)
        rows.append(
            f"<tr><td>{escape(group.name(with_run=several))}</td>"
            f"<td>{len(group.measured)}/{len(group.steps)}</td>{cells}</tr>"
        )
    return [
        "<h2>Repeats: median [min max]</h2>",
        f"<table><tr><th>step</th><th>repeats</th>{head}</tr>",
        *rows,
        "</table>",
        "<p>Each figure is the median of the repeats with the lowest and highest in "
        "brackets; repeats ran interleaved (A B A B).</p>",
    ]


def _spread_cell(spread: repeats.Spread | None, fmt: Callable[[float], str]) -> str:
    """The median, and under it [lowest highest]."""
    if spread is None:
        return "<td>-</td>"
    return (
        f"<td>{escape(fmt(spread.mid))}<br>"
        f"<small>[{escape(fmt(spread.lo))} {escape(fmt(spread.hi))}]</small></td>"
    )


def _cell(figure: Figure, judged: bool) -> str:
    if not judged:
        return '<td class="refused">-</td>'
    css = (figure.verdict or "refused").replace(" ", "")
    c = figure.change
    if c is None:
        return f'<td class="{css}">{escape(figure.refused.split(":")[0] or "-")}</td>'
    mid, lo, hi = (change_lines.change_number(v, points=c.points) for v in (c.mid, c.lo, c.hi))
    return (
        f'<td class="change {css}">{escape(mid)}<br><small>[{escape(lo)} {escape(hi)}]</small>'
        f"<br>{escape(c.verdict)}</td>"
    )


def changes_tables(comparisons: Sequence[Comparison]) -> list[str]:
    """Each comparison: a row per matched step, a cell per figure in its verdict's colour."""
    out: list[str] = []
    for comparison in comparisons:
        if not comparison.steps:
            continue
        labels = [f.metric.label for f in comparison.steps[0].figures]
        head = "".join(f"<th>{escape(label)}</th>" for label in labels)
        rows = []
        for step in comparison.steps:
            judged = bool(step.estimate.method)
            cells = "".join(_cell(f, judged) for f in step.figures)
            rows.append(
                f"<tr><td>{escape(step.title)}</td>"
                f"<td>{escape(change_lines.estimate_cell(step))}</td>{cells}</tr>"
            )
        notes = [*change_lines.explain(comparison), *change_lines.refusals(comparison)]
        out += [
            f"<h2>{escape(change_lines.title(comparison))}</h2>",
            '<p class="legend"><span class="improved">improved</span>'
            '<span class="regressed">regressed</span><span>no change</span></p>',
            f"<table><tr><th>step</th><th>estimate</th>{head}</tr>",
            *rows,
            "</table>",
            *(f"<p>{escape(line)}</p>" for line in notes if line),
        ]
    return out
