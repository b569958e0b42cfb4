"""A comparison as people and scripts read it: criterion's ``change:`` lines, a markdown
table, and plain data for JSON. Every text here reads `changes.Comparison`; none computes.

                     change: against 'quick' 20261128-064220-de0f; bootstrap over ...
                            thrpt:    [-48.69% -32.51% -16.91%] (p = 0.00 < 0.05) Perfor...
                            p99.9:    too few samples: 4,211 ops, p99.9 needs 10,000
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.report.changes import Comparison, Figure, StepChange
from workbench.report.markdown import escape_cell
from workbench.stats.change import IMPROVED, LEVEL, REGRESSED, SIGNIFICANCE, Change

INDENT = " " * 24
SENTENCES = {
    IMPROVED: "Performance has improved.",
    REGRESSED: "Performance has regressed.",
}


def change_number(value: float, *, points: bool) -> str:
    """A relative change as +2.05%, a share's as +2.05 (points); never "-0.00"."""
    shown = round(value * 100, 2) or 0.0
    return f"{shown:+.2f}" + ("" if points else "%")


def three(change: Change) -> str:
    """[lo mid hi], criterion's order, with " points" after a share's."""
    text = " ".join(
        change_number(v, points=change.points) for v in (change.lo, change.mid, change.hi)
    )
    return f"[{text}]" + (" points" if change.points else "")


def sentence(change: Change) -> str:
    if change.verdict in SENTENCES:
        return SENTENCES[change.verdict]
    if change.within_noise:
        return "Change within noise threshold."
    return "No change in performance detected."


def p_text(change: Change) -> str:
    """criterion's "(p = 0.00 < 0.05)", with a third digit where two would read 0.05."""
    shown = f"{change.p:.2f}" if round(change.p, 2) != SIGNIFICANCE else f"{change.p:.3f}"
    return f"(p = {shown} {'<' if change.significant else '>'} {SIGNIFICANCE:.2f})"


def figure_line(figure: Figure) -> str:
    label = f"{figure.metric.label}:"
    if figure.change is None:
        return f"{INDENT}{label:<10}{figure.refused}"
    c = figure.change
    return f"{INDENT}{label:<10}{three(c)} {p_text(c)} {sentence(c)}"


def against(comparison: Comparison, step: StepChange) -> str:
    """What a step is compared with: the base run (and its step, when named otherwise)."""
    base = comparison.base
    if comparison.axis:
        return step.base.title
    where = f"'{base.name}' {base.id}"
    return where if step.base.title == step.new.title else f"{where} {step.base.title}"


def change_block(comparison: Comparison, step: StepChange) -> list[str]:
    """The ``change:`` line with what it is against and how it was estimated, then a line
    per figure."""
    head = f"{' ' * 17}change: against {against(comparison, step)}; {step.estimate.describe()}"
    caution = [f"{INDENT}note: {step.machine}"] if step.machine else []
    if not step.estimate.method:  # refused as a whole: the head says why, once
        return [head, *caution]
    return [head, *(figure_line(f) for f in step.figures), *caution]


def verdict_cell(figure: Figure) -> str:
    """A table cell: the change [lo hi] and its verdict, the verdicts that matter in bold."""
    c = figure.change
    if c is None:
        return escape_cell(figure.refused.split(":")[0] or "-")
    lo, hi = (change_number(v, points=c.points) for v in (c.lo, c.hi))
    word = f"**{c.verdict}**" if c.verdict in SENTENCES else c.verdict
    return f"{change_number(c.mid, points=c.points)} [{lo} {hi}] {word}"


def estimate_cell(step: StepChange) -> str:
    e = step.estimate
    if e.method == "repeats":
        return f"repeats {e.base.repeats}/{e.new.repeats}"
    if e.method == "intervals":
        return f"intervals {e.base.intervals}/{e.new.intervals}"
    return "too few samples"


def table(comparisons: Sequence[Comparison], heading: str = "###") -> list[str]:
    """One markdown table per comparison: a row per matched step, a column per figure."""
    lines: list[str] = []
    for comparison in comparisons:
        if not (comparison.steps or comparison.only_base or comparison.only_new):
            continue
        lines += [f"{heading} {title(comparison)}", ""]
        if comparison.steps and not any(s.estimate.method for s in comparison.steps):
            lines += [f"{len(comparison.steps)} step(s) matched; {refusals(comparison)[0]}", ""]
        elif comparison.steps:
            labels = [f.metric.label for f in comparison.steps[0].figures]
            lines += [
                "| step | estimate | " + " | ".join(labels) + " |",
                "| --- | --- |" + " ---: |" * len(labels),
            ]
            for step in comparison.steps:
                cells = [escape_cell(step.title), estimate_cell(step)]
                judged = bool(step.estimate.method)
                cells += [verdict_cell(f) if judged else "-" for f in step.figures]
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
            lines += refusals(comparison)
        lines += [*explain(comparison), ""]
    return lines


def refusals(comparison: Comparison) -> list[str]:
    """What each side had, for the steps too short for any verdict (once per reason)."""
    reasons = dict.fromkeys(s.estimate.refused for s in comparison.steps if not s.estimate.method)
    return [f"No verdict, {reason}." for reason in reasons] + ([""] if reasons else [])


def title(comparison: Comparison) -> str:
    if comparison.axis:
        return f"A/B: each {comparison.axis} against the first"
    return f"Did it change? '{comparison.new.name}' against '{comparison.base.name}'"


def explain(comparison: Comparison) -> list[str]:
    """How to read the table, and what matched nothing."""
    out = [
        f"Each cell: the change of the figure, new against base, with its {LEVEL:.0%} "
        "interval (Student's t on a seeded bootstrap's standard error, over the repeats when "
        "both sides have 3, else over blocks of intervals); a share's change is in points. "
        "Improved or regressed "
        f"only when the whole interval lies beyond the noise threshold "
        f"({comparison.noise:.0%}; of a share, {comparison.noise:.0%} of the base's share)."
    ]
    out += [f"{s.title}: {s.machine}." for s in comparison.steps if s.machine]
    if comparison.only_base:
        out.append(f"Only in the base run, not compared: {', '.join(comparison.only_base)}.")
    if comparison.only_new:
        out.append(f"Only in the new run, not compared: {', '.join(comparison.only_new)}.")
    return out


def to_dict(comparison: Comparison) -> dict[str, Any]:
    """The comparison as plain data (JSON)."""
    return {
        "base": {"id": comparison.base.id, "name": comparison.base.name},
        "new": {"id": comparison.new.id, "name": comparison.new.name},
        "axis": comparison.axis,
        "noise": comparison.noise,
        "level": LEVEL,
        "steps": [_step_dict(s) for s in comparison.steps],
        "only_base": list(comparison.only_base),
        "only_new": list(comparison.only_new),
    }


def _step_dict(step: StepChange) -> dict[str, Any]:
    e = step.estimate
    return {
        "title": step.title,
        "base_steps": [s.index for s in step.base.measured],
        "new_steps": [s.index for s in step.new.measured],
        "estimate": {
            "method": e.method,
            "base": {"repeats": e.base.repeats, "intervals": e.base.intervals},
            "new": {"repeats": e.new.repeats, "intervals": e.new.intervals},
            "refused": e.refused,
        },
        "metrics": {f.metric.key: _figure_dict(f) for f in step.figures},
        "machine": step.machine,
    }


def _figure_dict(figure: Figure) -> dict[str, Any]:
    c = figure.change
    return {
        "base": figure.base,
        "new": figure.new,
        "change": None
        if c is None
        else {"lo": c.lo, "mid": c.mid, "hi": c.hi, "p": c.p, "points": c.points},
        "verdict": figure.verdict,
        "refused": figure.refused,
    }


def text(comparisons: Sequence[Comparison]) -> list[str]:
    """Every comparison as `workbench compare` prints it: the two runs, a block of change
    lines per matched step, what matched nothing, and the count of each verdict."""
    lines: list[str] = []
    for comparison in comparisons:
        lines += [title(comparison), *_runs_line(comparison), ""]
        for step in comparison.steps:
            lines += [step.new.name(with_run=False), *change_block(comparison, step), ""]
        if not comparison.steps:
            lines += ["no step of the new run matches a step of the base run", ""]
        lines += [line for line in explain(comparison)[1:]]
        lines += [tally(comparison), ""]
    return lines[:-1] if lines and not lines[-1] else lines


def _runs_line(comparison: Comparison) -> list[str]:
    if comparison.axis:
        return [f"run '{comparison.new.name}' {comparison.new.id} ({comparison.new.status})"]
    return [
        f"base '{comparison.base.name}' {comparison.base.id} ({comparison.base.status})",
        f"new  '{comparison.new.name}' {comparison.new.id} ({comparison.new.status})",
    ]


def tally(comparison: Comparison) -> str:
    """How many figures came out each way."""
    figures = [f for s in comparison.steps for f in s.figures]
    counts = {word: sum(f.verdict == word for f in figures) for word in (REGRESSED, IMPROVED)}
    unchanged = sum(f.change is not None and f.verdict not in SENTENCES for f in figures)
    refused = sum(f.change is None for f in figures)
    return (
        f"{counts[REGRESSED]} regressed, {counts[IMPROVED]} improved, {unchanged} no change, "
        f"{refused} without a verdict, of {len(figures)} figures in {len(comparison.steps)} "
        f"step(s); noise threshold {comparison.noise:.0%}"
    )


StepKey = tuple[str, tuple[int, ...]]


def step_key(run_id: str, indices: Sequence[int]) -> StepKey:
    """A step, or a step's repeats, of one run: where its change lines go."""
    return (run_id, tuple(indices))


def blocks_by_step(comparisons: Sequence[Comparison]) -> dict[StepKey, list[str]]:
    """The change lines of each compared step, by the new step's (or repeats') key."""
    return {
        step_key(c.new.id, [s.index for s in step.new.steps]): change_block(c, step)
        for c in comparisons
        for step in c.steps
    }
