"""Issue 35 item 3: self-checks before a figure is trusted (workbench.results.self_checks)."""

from __future__ import annotations

from workbench.results.metrics import Stats, new_histogram
from workbench.results.self_checks import (
    checks,
    failed_line,
    mann_kendall,
    needed,
    samples,
    schedule,
    stationarity,
)
from workbench.results.timeline import Point
from workbench.results.verdict import Context

OPEN = Context(open_loop=True, clients=16)


def _open_loop(rate: int, lags_ns: list[int], ops: int | None = None) -> Stats:
    """One second of an open loop at `rate` with these send lags (each `ops/len` times)."""
    stats = Stats(duration=1.0, offered=rate, hist={"get": new_histogram()})
    stats.hist["get"].record_value(100_000, ops or rate)
    stats.send_lag = new_histogram()
    for lag in lags_ns:
        stats.send_lag.record_value(lag, max(1, rate // len(lags_ns)))
    return stats


def _points(p50s: list[float], rates: list[float] | None = None) -> list[Point]:
    rates = rates or [1000.0] * len(p50s)
    return [
        Point(i + 1.0, r, 0.0, p50, p50 * 2, p50 * 3, {}, None, 0)
        for i, (p50, r) in enumerate(zip(p50s, rates, strict=True))
    ]


def test_sends_late_against_a_clients_period_are_off_schedule() -> None:
    # 20,000 ops/s over 16 clients: one send per client every 800 µs.
    on = schedule(_open_loop(20_000, [20_000] * 99 + [150_000]), OPEN)
    assert on is not None and on.ok, on
    off = schedule(_open_loop(20_000, [3_380_000] * 10), OPEN)
    assert off is not None and not off.ok
    assert "send lag p99 3.38ms" in off.line and "off schedule" in off.line


def test_poisson_arrivals_are_bounded_by_the_send_lag() -> None:
    poisson = Context(open_loop=True, clients=16, arrivals="poisson")
    close = schedule(_open_loop(20_000, [5_000] * 100), poisson)
    assert close is not None and close.ok and "KS distance 0.006" in close.line, close
    late = schedule(_open_loop(20_000, [400_000] * 100), poisson)
    assert late is not None and not late.ok and "not Poisson" in late.line, late


def test_a_trend_in_latency_over_the_step_is_not_stationary() -> None:
    flat = stationarity(_points([100, 102, 99, 101, 100, 98, 101, 100]))
    assert flat is not None and flat.ok
    rising = stationarity(_points([100, 110, 130, 150, 170, 200, 230, 260]))
    assert rising is not None and not rising.ok
    assert "p50 rose from" in rising.line and "Mann-Kendall" in rising.line
    falling = stationarity(_points([100.0] * 8, [1000, 950, 900, 800, 700, 650, 600, 500]))
    assert falling is not None and not falling.ok and "throughput fell" in falling.line
    assert stationarity(_points([100, 500, 900])) is None  # too few intervals to say
    assert mann_kendall([1, 2, 3, 4, 5, 6]) > 2.5


def test_a_percentile_needs_a_thousand_samples_beyond_it() -> None:
    assert needed(99.0) == 100_000 and needed(99.9) == 1_000_000 and needed(50.0) == 2_000
    short = samples(_open_loop(20_000, [1_000]), OPEN)
    assert short is not None and not short.ok
    assert short.line == "too few samples for p99: 20,000 ops, p99 needs 100,000"
    asked = Context(open_loop=True, clients=16, percentiles=(50.0,))
    enough = samples(_open_loop(20_000, [1_000]), asked)
    assert enough is not None and enough.ok


def test_a_step_names_every_check_it_failed_in_one_line() -> None:
    stats = _open_loop(20_000, [3_000_000] * 10)
    found = checks(stats, _points([100.0] * 2), OPEN)
    assert [c.name for c in found] == ["schedule", "samples"]
    line = failed_line(found)
    assert "off schedule" in line and "too few samples" in line and "\n" not in line
    closed = Stats(duration=1.0, hist={"get": new_histogram()})
    closed.hist["get"].record_value(100_000, 10)
    assert checks(closed, [], Context()) == []  # a closed loop has no schedule to check
