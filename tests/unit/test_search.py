"""The search's state machine on simulated probes: doubling, bisecting, stopping and why."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from workbench.errors import SpecError
from workbench.search_rules import Probe, Search, replay, search_spec, target_checks
from workbench.spec.load import spec_from_data
from workbench.spec.model import SearchSpec
from workbench.verdict import (
    FELL_BEHIND,
    GENERATOR_BOUND,
    MACHINE_BOUND,
    ON_SCHEDULE,
    SERVER_BOUND,
    SERVER_STALLED,
    TOO_FEW_CLIENTS,
    Verdict,
)


def probe(
    step: int,
    rate: float,
    passed: bool,
    kind: str = ON_SCHEDULE,
    p99_us: float = 100.0,
    kept: float = 1.0,
) -> Probe:
    return Probe(
        step=step,
        rate=rate,
        status="completed",
        achieved=rate * kept,
        p50_us=p99_us / 2,
        p99_us=p99_us,
        p999_us=p99_us * 2,
        errors=0,
        error_share=0.0,
        kept=kept,
        failed_checks=() if passed else (f"p99<1ms (measured {p99_us / 1000:.2f}ms)",),
        verdict=Verdict(kind, "figures"),
    )


def drive(search: Search, passes: Callable[[float], bool], kind: str = SERVER_BOUND) -> list[float]:
    """Run the search against a simulated server; the rates it probed, in order."""
    rates = []
    while (rate := search.next_rate()) is not None:
        rates.append(rate)
        ok = passes(rate)
        search.record(probe(len(rates) - 1, rate, ok, ON_SCHEDULE if ok else kind))
        assert len(rates) < 100
    return rates


def test_doubles_until_the_target_breaks_then_bisects_to_five_percent() -> None:
    search = Search(SearchSpec(target=("p99<1ms",), start=1000, max_probes=20))
    rates = drive(search, lambda r: r <= 7300)
    assert rates == [1000, 2000, 4000, 8000, 6000, 7000, 7500, 7250]
    assert search.best is not None and search.best.rate == 7250
    assert search.first_failing is not None and search.first_failing.rate == 7500
    assert search.converged and not search.stopped
    assert search.conclusion().startswith(
        "highest passing rate 7,250 ops/s (p99 100µs), first failing 7,500 ops/s "
        "(p99<1ms (measured 0.10ms)); within 3.4% after 8 probes"
    )


def test_a_set_number_of_probes_bounds_it() -> None:
    search = Search(SearchSpec(start=1000, max_probes=5))
    assert drive(search, lambda r: r <= 7300) == [1000, 2000, 4000, 8000, 6000]
    assert "stopped after 5 probes (search.max_probes)" in search.conclusion()


def test_a_failing_start_halves_until_one_passes() -> None:
    search = Search(SearchSpec(start=1000, max_probes=20, precision=0.05))
    rates = drive(search, lambda r: r <= 300)
    assert rates[:3] == [1000, 500, 250]
    assert search.best is not None and 285 <= search.best.rate <= 300
    assert search.converged


def test_a_target_never_met_stops_and_says_why() -> None:
    search = Search(SearchSpec(start=1000, max_probes=20))
    assert drive(search, lambda r: False) == [1000, 500, 250, 125]
    assert search.best is None
    assert search.conclusion() == (
        "no probed rate met the target, first failing 125 ops/s (p99<1ms (measured 0.10ms)); "
        "stopped early: the target is not met even at 125 ops/s (p99<1ms (measured 0.10ms)): "
        "it cannot be met at any rate this setup measures"
    )


def test_a_generator_that_fails_stops_the_search() -> None:
    search = Search(SearchSpec(start=1000, max_probes=20))
    assert drive(search, lambda r: r <= 3000, kind=GENERATOR_BOUND) == [1000, 2000, 4000]
    assert search.stopped.startswith("the generator, not the target, failed at 4,000 ops/s: ")
    assert "highest passing rate 2,000 ops/s" in search.conclusion()


@pytest.mark.parametrize("kind", [GENERATOR_BOUND, MACHINE_BOUND, FELL_BEHIND])
def test_only_the_generator_failing_stops_the_search_early(kind: str) -> None:
    search = Search(SearchSpec(start=1000, max_probes=20))
    assert drive(search, lambda r: r <= 3000, kind=kind) == [1000, 2000, 4000]
    assert search.stopped.startswith("the generator, not the target, failed at 4,000 ops/s")


@pytest.mark.parametrize("kind", [SERVER_BOUND, SERVER_STALLED, TOO_FEW_CLIENTS, ON_SCHEDULE])
def test_the_target_failing_bisects_on_to_the_knee(kind: str) -> None:
    """The server saturating, stalling, or the clients' one-in-flight limit: the target
    failed, not the generator, so the search narrows down instead of stopping."""
    search = Search(SearchSpec(start=1000, max_probes=20))
    rates = drive(search, lambda r: r <= 7300, kind=kind)
    assert rates == [1000, 2000, 4000, 8000, 6000, 7000, 7500, 7250]
    assert search.converged and not search.stopped


def test_a_passing_generator_bound_probe_goes_on() -> None:
    search = Search(SearchSpec(start=1000))
    search.record(probe(0, 1000, True, GENERATOR_BOUND))
    assert search.next_rate() == 2000


def test_a_probe_that_fell_behind_fails_even_within_the_target() -> None:
    p = probe(0, 1000, True, kept=0.9)
    assert not p.passed and p.why_failed() == "issued 90% of the offered ops"


def test_every_probe_passing_says_so() -> None:
    search = Search(SearchSpec(start=1000, max_probes=3))
    drive(search, lambda r: True)
    assert "every probe passed" in search.conclusion()


def test_knee_is_where_p99_leaves_twice_the_lowest() -> None:
    search = Search(SearchSpec(start=1000))
    for i, (rate, p99) in enumerate([(1000, 100), (2000, 120), (4000, 190), (8000, 900)]):
        search.record(probe(i, rate, p99 < 500, p99_us=p99))
    knee = search.knee()
    assert knee is not None and knee.rate == 4000


def test_replay_reaches_the_same_conclusion() -> None:
    search = Search(SearchSpec(start=1000, max_probes=20))
    drive(search, lambda r: r <= 7300)
    again = replay(search.probes, search.settings)
    assert again.conclusion() == search.conclusion()
    assert again.next_rate() is None


def test_target_checks_add_errors_and_refuse_other_metrics() -> None:
    checks = target_checks(["p99<1ms"])
    assert [c.text for c in checks] == ["p99<1ms", "errors<0.1%"]
    assert [c.text for c in target_checks(["max<5ms", "errors<1%"])] == ["max<5ms", "errors<1%"]
    with pytest.raises(SpecError, match="a search target is a latency"):
        target_checks(["p99<1ms", "ops_per_s>5"])
    with pytest.raises(SpecError, match="expected a latency target"):
        target_checks(["errors<1%"])


def test_search_spec_takes_the_target_and_refuses_a_sweep() -> None:
    spec, checks = search_spec(spec_from_data({}, []), ["p99<2ms"])
    assert spec.search.target == ("p99<2ms",) and len(checks) == 2
    profile = spec_from_data({"search": {"target": ["p99.9<3ms"], "start": 500}})
    spec, _ = search_spec(profile)
    assert spec.search.start == 500
    with pytest.raises(SpecError, match="expected a target"):
        search_spec(spec_from_data({}, []))
    with pytest.raises(SpecError, match="one configuration"):
        search_spec(spec_from_data({}, ["load.concurrency=[1,2]"]), ["p99<1ms"])
    with pytest.raises(SpecError) as caught:
        search_spec(spec_from_data({"search": {"precision": 2}}), ["p99<1ms"])
    assert caught.value.where == "search.precision"


def test_a_probe_that_measured_nothing_stops_the_search() -> None:
    search = Search(SearchSpec(start=1000))
    broken = probe(0, 1000, False)
    search.record(Probe(**{**broken.__dict__, "status": "failed", "achieved": 0.0}))
    assert search.next_rate() is None
    assert "failed and measured nothing" in search.conclusion()
