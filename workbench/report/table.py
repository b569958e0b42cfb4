"""The comparison table: one markdown row per step (and per run when several are compared),
the best value of each column in bold, then the percentile ticks of the source documents."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from workbench.report import change_lines, repeats, simulated
from workbench.report.changes import comparisons_for
from workbench.report.markdown import escape_cell, footer, header
from workbench.report.model import RunData, StepData
from workbench.report.units import ratio
from workbench.results.metrics import SUMMARY_TICKS, format_us
from workbench.results.step_text import outcome_lines, redirects_text


def _hit_rate(s: StepData) -> float | None:
    return s.summary.hit_rate


# name, value of a step, formatter, best is "max" or "min" (or None: not marked)
COLUMNS: list[tuple[str, Callable[[StepData], Any], Callable[[Any], str], str | None]] = [
    ("ops/s", lambda s: s.summary.ops_per_s, lambda v: f"{v:,.0f}", "max"),
    ("MiB/s", lambda s: s.summary.mib_per_s, lambda v: f"{v:,.2f}", "max"),
    ("p50", lambda s: s.summary.p(50.0), format_us, "min"),
    ("p99", lambda s: s.summary.p(99.0), format_us, "min"),
    ("p99.9", lambda s: s.summary.p(99.9), format_us, "min"),
    ("max", lambda s: s.summary.max_us, format_us, "min"),
    ("hits", lambda s: s.summary.hits, lambda v: f"{v:,}", None),
    ("hit rate", _hit_rate, lambda v: "n/a" if v is None else f"{v:.2%}", "max"),
    ("errors", lambda s: s.summary.errors, lambda v: f"{v:,}", "min"),
]


def matched_steps(runs: Sequence[RunData]) -> list[tuple[str, list[StepData]]]:
    """Steps of every run grouped by title, or by position when no titles are shared."""
    titles = [{s.title for s in r.steps} for r in runs]
    by_title = len(runs) == 1 or bool(set.intersection(*titles))
    groups: dict[str, list[StepData]] = {}
    for run in runs:
        for pos, step in enumerate(run.steps):
            key = step.title if by_title else f"step {pos + 1}"
            groups.setdefault(key, []).append(step)
    return list(groups.items())


def _best(steps: Sequence[StepData]) -> dict[str, Any]:
    best: dict[str, Any] = {}
    measured = [s for s in steps if s.has_data]
    if len(measured) < 2:
        return best
    for name, get, _, how in COLUMNS:
        values = [v for s in measured if (v := get(s)) is not None]
        if not how or len(set(values)) < 2:
            continue
        top = max(values) if how == "max" else min(values)
        if values.count(top) * 2 <= len(values):  # a mark shared by most rows says nothing
            best[name] = top
    return best


def results_table(runs: Sequence[RunData]) -> list[str]:
    several = len(runs) > 1
    groups = matched_steps(runs)
    steps = [s for _, g in groups for s in g]
    best = _best(steps)
    # The verdict column appears once any step recorded the figures it is judged on.
    verdicts = any(s.started and s.view.verdict.known for s in steps)
    head = ["step"] + (["run"] if several else []) + ["status", "clients"]
    head += [c[0] for c in COLUMNS] + (["vs first: ops/s", "vs first: p99"] if several else [])
    align = ["---"] * (len(head) - len(COLUMNS) - (2 if several else 0) - 1) + ["---:"]
    align += ["---:"] * len(COLUMNS) + (["---:", "---:"] if several else [])
    if verdicts:
        head.append("verdict")
        align.append("---")
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    for key, group in groups:
        base = next((s for s in group if s.run is runs[0]), None)
        for step in group:
            cells = [escape_cell(key)]
            if several:
                cells.append(escape_cell(step.run.name))
            cells += [step.status, str(step.clients) if step.started else "-"]
            for name, get, fmt, _ in COLUMNS:
                if not step.has_data:
                    cells.append("-")
                    continue
                value = get(step)
                text = fmt(value)
                cells.append(f"**{text}**" if name in best and value == best[name] else text)
            if several:
                if step is base:
                    cells += ["", ""]
                elif base is None or not (step.has_data and base.has_data):
                    cells += ["-", "-"]
                else:
                    cells.append(ratio(step.summary.ops_per_s, base.summary.ops_per_s))
                    cells.append(ratio(step.summary.p(99.0), base.summary.p(99.0)))
            if verdicts:
                cells.append(step.view.verdict.badge or "-" if step.started else "-")
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    marks = "Best value per column in **bold**"
    if several:
        marks += '; "vs first" is the ratio to the same step of the first run'
    lines += [marks + ". Latencies are of every operation issued, all kinds together.", ""]
    return lines


def per_op_table(runs: Sequence[RunData]) -> list[str]:
    several = len(runs) > 1
    rows = []
    for run in runs:
        for step in run.started_steps:
            for kind, (count, rate, p50, p99) in step.summary.per_op.items():
                name = step.name(with_run=several)
                rows.append(
                    f"| {escape_cell(name)} | {kind} | {count:,} | {rate:,.0f} | "
                    f"{format_us(p50)} | {format_us(p99)} |"
                )
    if not rows:
        return []
    return [
        "### Per operation",
        "",
        "| step | op | count | ops/s | p50 | p99 |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
        *rows,
        "",
    ]


def tick_label(tick: float) -> str:
    return f"{tick:.10g}%"


def ticks_table(runs: Sequence[RunData]) -> list[str]:
    several = len(runs) > 1
    steps = [s for r in runs for s in r.started_steps if s.has_data]
    if not steps:
        return []
    names = [escape_cell(s.name(with_run=several)) for s in steps]
    lines = [
        "### Response times percentiles",
        "",
        "| percentile | " + " | ".join(names) + " |",
        "| ---: |" + " ---: |" * len(steps),
    ]
    for tick in SUMMARY_TICKS:
        lines.append(
            f"| {tick_label(tick)} | "
            + " | ".join(format_us(s.summary.p(tick)) for s in steps)
            + " |"
        )
    lines.append("| max | " + " | ".join(format_us(s.summary.max_us) for s in steps) + " |")
    lines.append("")
    return lines


def notes(runs: Sequence[RunData]) -> list[str]:
    """Errors (with their first message), pub/sub losses and notices: what a reader must see."""
    lines: list[str] = []
    several = len(runs) > 1
    for run in runs:
        for step in run.started_steps:
            t = step.totals
            name = step.name(with_run=several)
            for kind, n in t.errors.items():
                first = t.first_errors.get(kind, "")
                lines.append(f"- {name}: {n:,} {kind} error(s); first: `{first}`")
            if t.skipped:
                kinds = ", ".join(f"{what} {n:,}" for what, n in sorted(t.skipped.items()))
                lines.append(
                    f"- {name}: {t.skipped_count:,} trace request(s) skipped, not sent: {kinds}"
                )
            for line in outcome_lines(t):
                lines.append(f"- {name}: {line}")
            if t.expected_deliveries:
                lines.append(
                    f"- {name}: published {t.published:,}, delivered {t.delivered:,} of "
                    f"{t.expected_deliveries:,} expected, lost {step.summary.lost:,}"
                )
            if redirected := redirects_text(t):
                lines.append(f"- {name}: {redirected}")
        for notice in run.stored.notices:
            lines.append(f"- {run.name} step {notice.step + 1}: {notice.level}: {notice.message}")
    return ["### Notes", "", *lines, ""] if lines else []


def render(runs: Sequence[RunData], **options: Any) -> str:
    title = options.get("title") or (
        "Cache Workbench comparison" if len(runs) > 1 else "Cache Workbench results"
    )
    lines = header(runs, title)
    lines += ["## Results", ""]
    lines += results_table(runs)
    lines += repeats.table(runs)
    lines += change_lines.table(comparisons_for(runs))
    lines += simulated.table(runs)
    lines += per_op_table(runs)
    lines += ticks_table(runs)
    lines += notes(runs)
    lines += footer(runs)
    return "\n".join(lines).rstrip("\n") + "\n"
