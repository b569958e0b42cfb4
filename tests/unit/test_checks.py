"""Threshold expressions: parsing with units, refusing malformed ones, judging steps."""

from __future__ import annotations

import pytest

from workbench.results.checks import evaluate, failures, parse_check, spec_checks
from workbench.results.live import StepView
from workbench.results.metrics import Stats, fold, new_histogram, summarise
from workbench.sdk.errors import SpecError


def step(
    index: int = 0,
    *,
    gets: list[int] | None = None,
    sets: list[int] | None = None,
    hits: int = 0,
    misses: int = 0,
    errors: int = 0,
    duration: float = 2.0,
    status: str = "completed",
) -> StepView:
    stats = Stats(duration=duration, hits=hits, misses=misses)
    for kind, values in (("get", gets), ("set", sets)):
        if values:
            h = new_histogram()
            fold(h, values)
            stats.hist[kind] = h
    if errors:
        stats.errors = {"timeout": errors}
    return StepView(index, f"step{index}", status, totals=stats, summary=summarise(stats))


@pytest.mark.parametrize(
    ("text", "metric", "op", "threshold"),
    [
        ("p99<2ms", "latency", "<", 2000.0),
        ("p99.9 <= 5ms", "latency", "<=", 5000.0),
        ("p50<800us", "latency", "<", 800.0),
        ("p50<800µs", "latency", "<", 800.0),
        ("p99.99<250000ns", "latency", "<", 250.0),
        ("max<1s", "latency", "<", 1_000_000.0),
        ("mean<1.5ms", "latency", "<", 1500.0),
        ("errors<0.1%", "error_share", "<", 0.001),
        ("errors<=10", "errors", "<=", 10.0),
        ("hit_rate>=0.8", "hit_rate", ">=", 0.8),
        ("hit_rate>=80%", "hit_rate", ">=", 0.8),
        ("ops_per_s>50000", "ops_per_s", ">", 50_000.0),
        ("ops_per_s>50k", "ops_per_s", ">", 50_000.0),
        ("ops_per_s>1.5M", "ops_per_s", ">", 1_500_000.0),
    ],
)
def test_parse_units(text: str, metric: str, op: str, threshold: float) -> None:
    check = parse_check(text)
    assert (check.metric, check.op, check.kind) == (metric, op, None)
    assert check.threshold == pytest.approx(threshold)


def test_parse_per_op_kind() -> None:
    check = parse_check("get.p99.9<1ms")
    assert (check.kind, check.percentile, check.threshold) == ("get", 99.9, 1000.0)
    assert parse_check("set.ops_per_s>=100").kind == "set"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("p99<2", "a latency needs a unit"),
        ("p99<2 hours", "a latency needs a unit"),
        ("p99=2ms", "a threshold, not a value"),
        ("p101<2ms", "between p0 and p100"),
        ("latency<2ms", "unknown metric 'latency'"),
        ("foo.p99<2ms", "unknown op kind 'foo'"),
        ("get.errors<1%", "counted per step"),
        ("hit_rate>1.5", "between 0 and 1"),
        ("errors<1ms", "a count (10) or a share"),
        ("ops_per_s>5ms", "optionally k or M"),
        ("p99 2ms", "cannot read"),
        ("", "cannot read"),
    ],
)
def test_malformed_expressions_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_check(text, "--fail-on")
    assert says in str(caught.value)
    assert str(caught.value).startswith("--fail-on: ")


def test_spec_checks_name_the_field() -> None:
    spec = {"checks": {"fail_on": ["p99<2ms", "p99<<2ms"]}}
    with pytest.raises(SpecError) as caught:
        spec_checks(spec, "ci.toml")
    assert caught.value.where == "ci.toml: checks.fail_on[1]"
    assert [c.text for c in spec_checks({"checks": {"fail_on": ["p99<2ms"]}})] == ["p99<2ms"]
    assert spec_checks({}) == []


def test_latency_checks_pass_and_fail_on_the_measured_figure() -> None:
    s = step(gets=[100_000] * 980 + [5_000_000] * 20)  # 100 µs, 2% at 5 ms
    (ok, bad, tail) = evaluate(
        [parse_check("p50<200us"), parse_check("p99<1ms"), parse_check("p99.9<=6ms")], [s]
    )
    assert ok.passed and not bad.passed and tail.passed
    assert bad.value == pytest.approx(5000, rel=0.01)
    assert bad.line == "check FAILED: step 1 'step0': p99<1ms (measured 5.00ms)"


def test_per_kind_checks_read_that_kind_alone() -> None:
    s = step(gets=[100_000] * 1000, sets=[3_000_000] * 1000)
    get_ok, set_bad, all_bad = evaluate(
        [parse_check("get.p99<1ms"), parse_check("set.p99<1ms"), parse_check("p99<1ms")], [s]
    )
    assert get_ok.passed and not set_bad.passed and not all_bad.passed
    (missing,) = evaluate([parse_check("delete.p99<1ms")], [s])
    assert not missing.passed and "nothing measured" in missing.line


def test_error_share_and_count() -> None:
    s = step(gets=[100_000] * 999, errors=1)  # 1 of 1000 issued
    share_bad, share_ok, count_ok = evaluate(
        [parse_check("errors<0.1%"), parse_check("errors<=0.1%"), parse_check("errors<2")], [s]
    )
    assert share_bad.value == pytest.approx(0.001)
    assert not share_bad.passed and share_ok.passed and count_ok.passed


def test_hit_rate_and_throughput() -> None:
    s = step(gets=[100_000] * 1000, hits=850, misses=150, duration=2.0)
    hit, rate, fast = evaluate(
        [parse_check("hit_rate>=0.8"), parse_check("ops_per_s>400"), parse_check("ops_per_s>1k")],
        [s],
    )
    assert hit.passed and hit.value == pytest.approx(0.85)
    assert rate.passed and rate.value == pytest.approx(500)
    assert not fast.passed and "measured 500 ops/s" in fast.line


def test_steps_that_measured_nothing_fail_and_steps_not_run_are_skipped() -> None:
    empty = step(0, status="failed")
    pending = step(1, status="pending")
    outcomes = evaluate([parse_check("p99<1s"), parse_check("hit_rate>=0")], [empty, pending])
    assert [o.step for o in outcomes] == [0, 0]
    assert len(failures(outcomes)) == 2
