"""Pass/fail thresholds on a run's steps: ``p99<2ms``, ``get.p99<1ms``, ``errors<0.1%``.

An expression is ``[KIND.]METRIC OP VALUE[UNIT]``, spaces allowed between the parts:

- KIND (optional): an op kind, ``get``, ``set``, ``delete``, ``publish`` or ``deliver``:
  the figure of that kind alone; without it, every issued op kind together.
- METRIC and its VALUE:
  - ``pN`` (any percentile: ``p50``, ``p90``, ``p99``, ``p99.9``, ``p99.99``), ``max``,
    ``mean``: a latency, with a unit: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``;
  - ``ops_per_s``: throughput, a number, optionally with ``k`` or ``M`` (``50k``);
  - ``errors``: with ``%``, the share of issued ops that failed (errors / (ops + errors));
    without, the count of failed ops. Errors are counted per step, not per op kind;
  - ``hit_rate``: the share of gets that hit, ``0.8`` or ``80%``. Per step only.
- OP: ``<``, ``<=``, ``>``, ``>=``.

Every check holds for every step that ran, or it fails for that step; a step that measured
nothing fails every check. `parse_check` raises a `SpecError` naming the expression, so
a malformed one is caught before anything runs.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.results.live import StepView
from workbench.results.metrics import Stats, format_us, summarise
from workbench.sdk.errors import SpecError
from workbench.sdk.ops import RECORDED

LATENCY_UNITS = {"ns": 0.001, "us": 1.0, "µs": 1.0, "ms": 1000.0, "s": 1_000_000.0}  # -> µs
COUNT_UNITS = {"": 1.0, "k": 1000.0, "M": 1_000_000.0}
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
PER_STEP_ONLY = ("errors", "hit_rate")

_EXPRESSION = re.compile(
    r"""^\s*
    (?:(?P<kind>[A-Za-z_]+)\s*\.\s*)?
    (?P<metric>p\d+(?:\.\d+)?|[A-Za-z_]+)\s*
    (?P<op><=|>=|<|>|==|=)\s*
    (?P<number>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*
    (?P<unit>[A-Za-zµ%]*)\s*$""",
    re.VERBOSE,
)
EXAMPLES = "e.g. p99<2ms, get.p99.9<=5ms, errors<0.1%, hit_rate>=0.8, ops_per_s>50000"


@dataclass(frozen=True)
class Check:
    """One parsed expression; `threshold` is in the metric's own unit (see `measure`)."""

    text: str
    kind: str | None
    metric: str  # "latency", "ops_per_s", "errors", "error_share", "hit_rate"
    percentile: float | None  # for latency: 0..100, or None with `stat` "max"/"mean"
    stat: str  # latency: "p", "max" or "mean"; otherwise the metric
    op: str
    threshold: float

    def holds(self, value: float) -> bool:
        return COMPARISONS[self.op](value, self.threshold)

    def measure(self, stats: Stats) -> float | None:
        """The figure this check compares, from a step's totals; None: nothing measured.

        Latencies in µs, throughput in ops/s, shares 0..1, error counts as counts.
        """
        if self.metric == "errors":
            return float(stats.error_count)
        if self.metric == "error_share":
            issued = stats.ops + stats.error_count
            return stats.error_count / issued if issued else None
        if self.metric == "hit_rate":
            return summarise(stats, ()).hit_rate
        part = stats
        if self.kind is not None:
            if self.kind not in stats.hist:
                return None
            # Under a neutral name, so that deliveries count as ops here too.
            part = Stats(duration=stats.duration, hist={"kind": stats.hist[self.kind]})
        ticks = (self.percentile,) if self.percentile is not None else ()
        s = summarise(part, ticks)
        if not s.ops:
            return None
        if self.metric == "ops_per_s":
            return s.ops_per_s
        if self.stat == "max":
            return s.max_us
        if self.stat == "mean":
            return s.mean_us
        assert self.percentile is not None
        return s.p(self.percentile)

    def show(self, value: float | None) -> str:
        """A measured value in the check's own terms."""
        if value is None:
            return "nothing measured"
        if self.metric == "latency":
            return format_us(value)
        if self.metric in ("error_share", "hit_rate"):
            return f"{value:.3%}" if value < 0.001 and value else f"{value:.2%}"
        if self.metric == "errors":
            return f"{value:,.0f} errors"
        return f"{value:,.0f} ops/s"


def parse_check(text: str, where: str = "--fail-on") -> Check:
    """A check from its expression, or a SpecError naming `where` and saying what is wrong."""
    m = _EXPRESSION.match(text)
    if m is None:
        raise SpecError(f"cannot read {text!r}: expected [KIND.]METRIC OP VALUE, {EXAMPLES}", where)
    kind, metric, op = m["kind"], m["metric"], m["op"]
    number, unit = float(m["number"]), m["unit"]
    if op in ("=", "=="):
        raise SpecError(f"{text!r}: expected one of <, <=, >, >= (a threshold, not a value)", where)
    if kind is not None and kind not in RECORDED:
        raise SpecError(
            f"{text!r}: unknown op kind {kind!r}; expected {', '.join(RECORDED)}", where
        )
    if kind is not None and metric in PER_STEP_ONLY:
        raise SpecError(f"{text!r}: {metric} is counted per step, not per op kind", where)
    known = ("max", "mean", "ops_per_s", "errors", "hit_rate")
    if not re.fullmatch(r"p\d+(?:\.\d+)?", metric) and metric not in known:
        raise SpecError(
            f"{text!r}: unknown metric {metric!r}; expected pN (p50, p99.9...), max, mean, "
            "ops_per_s, errors or hit_rate",
            where,
        )
    percentile = None
    stat = metric
    if re.fullmatch(r"p\d+(?:\.\d+)?", metric):
        percentile = float(metric[1:])
        if percentile > 100:
            raise SpecError(f"{text!r}: a percentile is between p0 and p100", where)
        stat, metric = "p", "latency"
    elif metric in ("max", "mean"):
        metric = "latency"
    if metric == "latency":
        if unit not in LATENCY_UNITS:
            raise SpecError(
                f"{text!r}: a latency needs a unit: {', '.join(LATENCY_UNITS)} (e.g. 2ms)", where
            )
        threshold = number * LATENCY_UNITS[unit]
    elif metric == "ops_per_s":
        if unit not in COUNT_UNITS:
            raise SpecError(f"{text!r}: ops_per_s takes a number, optionally k or M", where)
        threshold = number * COUNT_UNITS[unit]
    elif metric == "errors":
        if unit not in ("", "%"):
            raise SpecError(f"{text!r}: errors takes a count (10) or a share (0.1%)", where)
        threshold = number / 100 if unit == "%" else number
        metric = "error_share" if unit == "%" else "errors"
    else:  # hit_rate
        if unit not in ("", "%"):
            raise SpecError(f"{text!r}: hit_rate takes a share: 0.8 or 80%", where)
        threshold = number / 100 if unit == "%" else number
        if not 0 <= threshold <= 1:
            raise SpecError(f"{text!r}: a hit rate is between 0 and 1 (0% and 100%)", where)
    if threshold < 0:
        raise SpecError(f"{text!r}: expected a threshold of 0 or more", where)
    return Check(text.strip(), kind, metric, percentile, stat, op, threshold)


def parse_checks(texts: Iterable[str], where: str = "--fail-on") -> list[Check]:
    return [parse_check(t, where) for t in texts]


def spec_checks(spec: Mapping[str, Any], source: str = "") -> list[Check]:
    """The checks a stored or loaded spec's ``[checks]`` table declares (``fail_on``)."""
    texts = (spec.get("checks") or {}).get("fail_on") or []
    prefix = f"{source}: " if source else ""
    return [parse_check(t, f"{prefix}checks.fail_on[{i}]") for i, t in enumerate(texts)]


@dataclass(frozen=True)
class Outcome:
    """One check on one step."""

    check: Check
    step: int
    title: str
    value: float | None
    passed: bool

    @property
    def line(self) -> str:
        """One line for people: step, expression, measured value."""
        word = "passed" if self.passed else "FAILED"
        return (
            f"check {word}: step {self.step + 1} '{self.title}': {self.check.text} "
            f"(measured {self.check.show(self.value)})"
        )


def evaluate(checks: Sequence[Check], steps: Iterable[StepView]) -> list[Outcome]:
    """Every check on every step that ran (steps never started are not judged)."""
    outcomes = []
    for step in steps:
        if step.status == "pending":
            continue
        for check in checks:
            value = check.measure(step.totals)
            passed = value is not None and check.holds(value)
            outcomes.append(Outcome(check, step.index, step.title, value, passed))
    return outcomes


def failures(outcomes: Iterable[Outcome]) -> list[Outcome]:
    return [o for o in outcomes if not o.passed]
