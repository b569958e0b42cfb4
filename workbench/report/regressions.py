"""``--fail-on-regression 'p99:+5%'``: fail a CI job when a figure regressed, significantly,
by more than a threshold.

An expression is ``METRIC:[SIGN]N%``: METRIC ``ops_per_s`` (or ``thrpt``), ``p50``, ``p99``,
``p99.9``, ``errors`` (the error share) or ``hit_rate``; the sign, when given, is the
direction that is worse (``+`` for latencies and errors, ``-`` for ops_per_s and hit_rate).
A check fails when the whole 95% interval of the change lies beyond the threshold (of a
share, the threshold taken of the base's share, as the noise threshold is). A matched step
it cannot judge (too few samples) fails it too, as a check on a step that measured nothing
does: a CI job whose runs are too short to tell must not pass for that.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from workbench.report.change_lines import change_number, three
from workbench.report.changes import BY_KEY, Comparison, Metric
from workbench.sdk.errors import SpecError

ALIASES = {"thrpt": "ops_per_s", "throughput": "ops_per_s", "errors": "error_share"}
_FORM = re.compile(r"^\s*([a-z_.0-9]+)\s*:\s*([+-]?)\s*(\d+(?:\.\d+)?)\s*%\s*$")
WHERE = "--fail-on-regression"


@dataclass(frozen=True)
class RegressionCheck:
    text: str
    metric: Metric
    threshold: float  # relative: 0.05 is 5%


def parse(text: str, where: str = WHERE) -> RegressionCheck:
    """One expression; a malformed one is a SpecError naming it and what was expected."""
    form = _FORM.match(text.lower())
    names = ", ".join(sorted({*BY_KEY, *ALIASES} - {"error_share"}))
    if form is None:
        raise SpecError(f"{text!r}: expected METRIC:[+|-]N%, e.g. p99:+5% ({names})", where)
    name, sign, number = form.groups()
    metric = BY_KEY.get(ALIASES.get(name, name))
    if metric is None:
        raise SpecError(f"{text!r}: unknown metric {name!r}; expected one of {names}", where)
    worse = "-" if metric.higher_better else "+"
    if sign and sign != worse:
        raise SpecError(
            f"{text!r}: {name} regresses {'down' if worse == '-' else 'up'}; write {worse}N%",
            where,
        )
    return RegressionCheck(text.strip(), metric, float(number) / 100)


def parse_all(texts: Iterable[str], where: str = WHERE) -> list[RegressionCheck]:
    return [parse(t, where) for t in texts]


def failures(checks: Sequence[RegressionCheck], comparisons: Sequence[Comparison]) -> list[str]:
    """One line per check a matched step fails, and per comparison that matched nothing."""
    lines = []
    for comparison in comparisons if checks else ():
        who = f"'{comparison.new.name}' against '{comparison.base.name}'"
        if not comparison.steps:
            lines.append(f"{who}: no step matched, nothing judged")
        for step in comparison.steps:
            for check in checks:
                figure = step.figure(check.metric.key)
                c = figure.change
                if c is None:
                    reason = figure.refused or "no verdict"
                    lines.append(f"{who}, {step.title}: {check.text} not judged: {reason}")
                elif c.beyond(check.threshold, higher_better=check.metric.higher_better):
                    limit = change_number(
                        c.limit(check.threshold) * (-1 if check.metric.higher_better else 1),
                        points=c.points,
                    )
                    lines.append(
                        f"{who}, {step.title}: {check.metric.label} regressed beyond "
                        f"{check.text}: {three(c)} lies beyond {limit}"
                    )
    return lines
