"""Self-checks of a step before its figures are trusted (Lancet's, in the workbench's terms).

Three checks, each a pure function of what was recorded; a step that fails one says
which, in one line, in the summary, the reports and ``--json-out``:

- **schedule** (open loop, and a trace replayed on its own timing): did the sends keep the
  intended schedule? With uniform arrivals (and a replay), the send lag's p99 must stay
  below `LAG_SHARE` of the period between one client's sends (or `LAG_FLOOR_NS`). With
  Poisson arrivals, the gaps between one client's sends must stay within a
  Kolmogorov-Smirnov distance `POISSON_KS` of the intended exponential ones. The engines
  keep the send lag, not each send, so the distance is bounded from it: a gap moves by at
  most the larger of its two ends' lags, so for any δ the distance is at most
  δ/m + 2·P(lag > δ) (m: the mean gap; the exponential's density is at most 1/m), and the
  best δ among the lag's percentiles is taken.
- **stationarity** (every step of at least `MIN_INTERVALS` intervals): no trend in the
  completed ops/s or the p50 over the step: a Mann-Kendall test at `TREND_Z` (1%) and a
  change of at least `TREND_CHANGE` between the first and the last third's medians.
- **samples**: a percentile p needs 1,000/(1 - p/100) ops (100,000 for p99): fewer is too
  few for it. The percentiles checked are those a search target or a --fail-on check asks
  for, else p99.

A closed loop has none of them: its figure is a throughput, and it has no schedule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from workbench.results.histograms import Recorded, format_us
from workbench.results.metrics import Stats
from workbench.results.timeline import Point
from workbench.results.verdict import Context

LAG_SHARE = 0.25
LAG_FLOOR_NS = 100_000
POISSON_KS = 0.05
MIN_INTERVALS = 6
TREND_Z = 2.576  # two-sided 1%
TREND_CHANGE = 0.2
SAMPLES_PER_TAIL = 1000  # ops beyond the percentile a figure needs: 1,000/(1 - q)
DEFAULT_PERCENTILE = 99.0


@dataclass(frozen=True)
class SelfCheck:
    name: str  # "schedule", "stationarity", "samples"
    ok: bool
    line: str  # what was found, in one line

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "line": self.line}


def schedule(totals: Stats, context: Context) -> SelfCheck | None:
    """Whether the sends kept the intended schedule (None: nothing was scheduled)."""
    if not totals.offered or totals.send_lag is None or not totals.send_lag.get_total_count():
        return None
    clients = context.clients or 1
    rate = totals.offered / totals.duration if totals.duration > 0 else 0.0
    if rate <= 0:
        return None
    gap_ns = clients / rate * 1e9  # one client's mean gap between sends
    recorded = Recorded(totals.send_lag)
    if context.arrivals == "poisson" and not context.replay:
        distance, delta = _poisson_distance(recorded, gap_ns)
        ok = distance <= POISSON_KS
        line = (
            f"arrivals {'' if ok else 'not '}Poisson: a client's gaps within KS distance "
            f"{distance:.3f} of the intended exponential (mean gap {format_us(gap_ns / 1000)}, "
            f"send lag {format_us(delta / 1000)} or less for most sends)"
        )
        return SelfCheck("schedule", ok, line)
    p99 = recorded.values_at((99.0,))[99.0]
    allowed = max(LAG_FLOOR_NS, LAG_SHARE * gap_ns)
    ok = p99 <= allowed
    share = p99 / gap_ns
    line = (
        f"sends {'on' if ok else 'off'} schedule: send lag p99 {format_us(p99 / 1000)} is "
        f"{share:.0%} of a client's {format_us(gap_ns / 1000)} period"
    )
    return SelfCheck("schedule", ok, line)


def _poisson_distance(recorded: Recorded, gap_ns: float) -> tuple[float, int]:
    """The least bound δ/m + 2·P(lag > δ) over δ at the lag's percentiles, and that δ."""
    best = (math.inf, 0)
    total = recorded.total
    ticks = (50.0, 90.0, 95.0, 98.0, 99.0, 99.5, 99.9, 99.99, 100.0)
    for delta in recorded.values_at(ticks).values():
        beyond = _share_above(recorded, delta, total)
        bound = delta / gap_ns + 2 * beyond
        best = min(best, (bound, delta))
    return best


def _share_above(recorded: Recorded, value: int, total: int) -> float:
    hist = recorded.hist
    index = hist.get_counts_array_index(value)
    above = sum(n for i, n in zip(recorded.indices, recorded.counts, strict=True) if i > index)
    return above / total if total else 0.0


def stationarity(points: Sequence[Point]) -> SelfCheck | None:
    """No trend in completed ops/s or p50 over the step (None: too few intervals)."""
    if len(points) < MIN_INTERVALS:
        return None
    for name, values, fmt in (
        ("throughput", [p.ops_per_s for p in points], lambda v: f"{v:,.0f} ops/s"),
        ("p50", [p.p50_us for p in points], format_us),
    ):
        z = mann_kendall(values)
        third = max(1, len(values) // 3)
        first, last = median(values[:third]), median(values[-third:])
        change = abs(last - first) / first if first else 0.0
        if abs(z) >= TREND_Z and change >= TREND_CHANGE:
            way = "rose" if last > first else "fell"
            line = (
                f"not stationary: {name} {way} from {fmt(first)} to {fmt(last)} over the step "
                f"(Mann-Kendall z = {z:.1f})"
            )
            return SelfCheck("stationarity", False, line)
    return SelfCheck("stationarity", True, "stationary: no trend in throughput or p50")


def mann_kendall(values: Sequence[float]) -> float:
    """The Mann-Kendall trend statistic as a standard normal z (ties not corrected)."""
    n = len(values)
    s = sum(
        (values[j] > values[i]) - (values[j] < values[i])
        for i in range(n - 1)
        for j in range(i + 1, n)
    )
    var = n * (n - 1) * (2 * n + 5) / 18
    if s == 0 or var <= 0:
        return 0.0
    return (s - math.copysign(1, s)) / math.sqrt(var)


def samples(totals: Stats, context: Context) -> SelfCheck | None:
    """Enough ops for each percentile asked (None: nothing was measured)."""
    n = totals.ops
    if not n:
        return None
    asked = context.percentiles or (DEFAULT_PERCENTILE,)
    short = [(p, needed(p)) for p in asked if n < needed(p)]
    if not short:
        most = max(asked)
        return SelfCheck("samples", True, f"enough samples for p{most:g}: {n:,} ops")
    p, need = max(short)
    return SelfCheck(
        "samples", False, f"too few samples for p{p:g}: {n:,} ops, p{p:g} needs {need:,}"
    )


def needed(percentile: float) -> int:
    """Ops a percentile needs: 1,000 beyond it (100,000 for p99)."""
    return math.ceil(SAMPLES_PER_TAIL / (1 - percentile / 100) - 1e-6)


def checks(totals: Stats, points: Sequence[Point], context: Context) -> list[SelfCheck]:
    """Every self-check of a step in open loop or a timed replay (none in closed loop)."""
    if not (context.open_loop or context.replay or totals.offered):
        return []
    found = [schedule(totals, context), stationarity(points), samples(totals, context)]
    return [c for c in found if c is not None]


def failed_line(found: Sequence[SelfCheck]) -> str:
    """The failed checks in one line ("" when every check passed)."""
    return "; ".join(c.line for c in found if not c.ok)
