"""A step's figures as chart series and the axes they are drawn on: throughput, latency
over time (with the machine's hiccups beside it) and the percentile curve. Each interval's
figure is held across its interval (`stepped`)."""

from __future__ import annotations

import math

from workbench.results.live import StepView
from workbench.tui.figures import axis_us, nines_label, percentile_x
from workbench.tui.widgets.chart import Axis, Series


def seconds_label(v: float) -> str:
    return f"{v:.0f}s" if v >= 10 or v == int(v) else f"{v:.1f}s"


def us_axis() -> Axis:
    return Axis(log=True, fmt=axis_us)


def stepped(points: list[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """Each interval's figure held across the interval (it is a rate over that span)."""
    out: list[tuple[float, float]] = []
    prev = 0.0
    for elapsed, value in points:
        out += [(prev, value), (elapsed, value)]
        prev = elapsed
    return tuple(out)


def throughput_series(step: StepView, mib: bool) -> tuple[Series, ...]:
    pts = step.points
    if mib:
        return (Series("MiB/s", stepped([(p.elapsed, p.mib_per_s) for p in pts])),)
    kinds = sorted({k for p in pts for k in p.per_op_ops})
    out = [Series("all ops", stepped([(p.elapsed, p.ops_per_s) for p in pts]))]
    if len(kinds) > 1:
        out += [
            Series(k, stepped([(p.elapsed, p.per_op_ops.get(k, 0.0)) for p in pts])) for k in kinds
        ]
    return tuple(out)


def latency_series(step: StepView) -> tuple[Series, ...]:
    """p50, p99 and p99.9 of each interval, and beside them the machine's longest hiccup
    in it (when a hiccup meter ran): a spike in both is the machine's."""
    pts = step.points
    out = [
        Series("p50", stepped([(p.elapsed, p.p50_us) for p in pts])),
        Series("p99", stepped([(p.elapsed, p.p99_us) for p in pts])),
        Series("p99.9", stepped([(p.elapsed, p.p999_us) for p in pts])),
    ]
    hiccups = [(p.elapsed, p.hiccup_max_us) for p in pts if p.hiccup_max_us is not None]
    if hiccups:
        out.append(Series("hiccup max", stepped([(t, max(v, 1.0)) for t, v in hiccups])))
    return tuple(out)


def curve_series(name: str, curve: list[tuple[float, float]]) -> Series:
    """A percentile curve on the 1/(1-p) axis (the max, at infinity, is left out)."""
    return Series(name, tuple((percentile_x(p), us) for p, us in curve if p < 100.0))


def percentile_axis(series: tuple[Series, ...]) -> Axis:
    hi = max((x for s in series for x, _ in s.points), default=3.0)
    hi = max(2, math.ceil(hi - 1e-9))
    return Axis(lo=0.0, hi=float(hi), ticks=list(range(hi + 1)), fmt=nines_label)


def time_axis() -> Axis:
    return Axis(lo=0.0, fmt=seconds_label)
