"""The search's state machine on simulated probes: doubling, bisecting, stopping and why."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from workbench.results.search_rules import (
    Probe,
    Search,
    replay,
    search_spec,
    settings_of,
    target_checks,
)
from workbench.results.verdict import (
    FELL_BEHIND,
    GENERATOR_BOUND,
    MACHINE_BOUND,
    ON_SCHEDULE,
    SERVER_BOUND,
    SERVER_STALLED,
    TOO_FEW_CLIENTS,
    Verdict,
)
from workbench.sdk.errors import SpecError
from workbench.spec.load import spec_from_data
from workbench.spec.model import SearchSpec


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
    # Each failing rate is probed twice (the second confirms it), each passing one once.
    assert rates == [1000, 2000, 4000, 8000, 8000, 6000, 7000, 7500, 7500, 7250]
    assert search.best is not None and search.best.rate == 7250
    assert search.first_failing is not None and search.first_failing.rate == 7500
    assert search.first_failing.attempt == 1
    assert search.converged and not search.stopped
    assert search.conclusion() == (
        "highest passing rate 7,250 ops/s (p99 100µs), first failing 7,500 ops/s "
        "(p99<1ms (measured 0.10ms)); within 3.4% after 10 probes "
        "(2 retries: 2 failing rates confirmed)"
    )


def test_without_confirmation_a_failure_counts_at_once() -> None:
    search = Search(SearchSpec(start=1000, max_probes=20, confirm=1))
    assert drive(search, lambda r: r <= 7300) == [1000, 2000, 4000, 8000, 6000, 7000, 7500, 7250]
    assert not search.retries and search.converged


def test_one_hiccup_does_not_end_the_search() -> None:
    """The first probe at 2,000 fails once (a scheduler hiccup); its retries pass, so the
    search doubles on past it to the real knee instead of bisecting below 2,000."""
    hiccups = {2000.0: 1}

    def passes(rate: float) -> bool:
        if hiccups.get(rate):
            hiccups[rate] -= 1
            return False
        return rate <= 7300

    search = Search(SearchSpec(start=1000, max_probes=20))
    rates = drive(search, passes)
    assert rates[:6] == [1000, 2000, 2000, 2000, 4000, 8000]
    assert [p.attempt for p in search.probes[:4]] == [0, 0, 1, 2]
    assert search.decision(2000) is True
    assert search.best is not None and search.best.rate == 7250
    assert [search.said(p) for p in search.probes[1:4]] == [
        "probing this rate again to confirm the failure",
        "retry 1: probing this rate again to confirm the failure",
        "retry 2: the failure is not confirmed (a hiccup): the rate passes",
    ]
    assert [p.rate for p in search.outvoted()] == [2000]
    assert "1 failure not confirmed (a hiccup)" in search.conclusion()


def test_two_failures_of_three_fail_the_rate() -> None:
    search = Search(SearchSpec(start=1000, max_probes=20))
    search.record(probe(0, 1000, True))
    for i, ok in enumerate([False, True]):
        search.record(probe(i + 1, 2000, ok))
        assert search.next_rate() == 2000 and search.next_attempt() == i + 1
    search.record(probe(3, 2000, False))
    assert search.decision(2000) is False
    assert search.first_failing is not None and search.first_failing.step == 3
    assert search.next_rate() == 1500 and search.next_attempt() == 0


def test_a_generator_hiccup_then_the_target_failing_bisects_on() -> None:
    """One machine-bound probe (another process took the CPU), then a server-bound one: the
    rate fails, but not every failure was the generator's, so the search narrows down."""
    search = Search(SearchSpec(start=1000, max_probes=20))
    search.record(probe(0, 1000, True))
    search.record(probe(1, 2000, False, MACHINE_BOUND))
    assert not search.stopped and search.next_rate() == 2000
    search.record(probe(2, 2000, False, SERVER_BOUND))
    assert not search.stopped and search.next_rate() == 1500


def test_probes_running_out_while_a_failure_waits_says_so() -> None:
    search = Search(SearchSpec(start=1000, max_probes=2))
    search.record(probe(0, 1000, True))
    search.record(probe(1, 2000, False))
    assert search.next_rate() is None and search.first_failing is None
    assert search.conclusion() == (
        "highest passing rate 1,000 ops/s (p99 100µs); stopped after 2 probes (search.max_probes)"
    )


def test_a_set_number_of_probes_bounds_it() -> None:
    search = Search(SearchSpec(start=1000, max_probes=6))
    assert drive(search, lambda r: r <= 7300) == [1000, 2000, 4000, 8000, 8000, 6000]
    assert "stopped after 6 probes (1 retry: 1 failing rate confirmed) (search.max_probes)" in (
        search.conclusion()
    )


def test_a_failing_start_halves_until_one_passes() -> None:
    search = Search(SearchSpec(start=1000, max_probes=20, precision=0.05))
    rates = drive(search, lambda r: r <= 300)
    assert rates[:5] == [1000, 1000, 500, 500, 250]
    assert search.best is not None and 285 <= search.best.rate <= 300
    assert search.converged


def test_a_target_never_met_stops_and_says_why() -> None:
    search = Search(SearchSpec(start=1000, max_probes=20))
    assert drive(search, lambda r: False) == [1000, 1000, 500, 500, 250, 250, 125, 125]
    assert search.best is None
    assert search.conclusion() == (
        "no probed rate met the target, first failing 125 ops/s (p99<1ms (measured 0.10ms)); "
        "stopped early: the target is not met even at 125 ops/s (p99<1ms (measured 0.10ms)): "
        "it cannot be met at any rate this setup measures"
    )


def test_a_generator_that_fails_above_a_passing_rate_caps_the_search() -> None:
    """The generator failing at 4,000 says nothing of 2,000-4,000: the search bisects
    below it (never above) and says the generator failed there."""
    search = Search(SearchSpec(start=1000, max_probes=20))
    rates = drive(search, lambda r: r <= 3000, kind=GENERATOR_BOUND)
    assert rates == [1000, 2000, 4000, 4000, 3000, 3500, 3500, 3250, 3250, 3125, 3125]
    assert max(rates) == 4000 and not search.stopped and search.converged
    assert search.best is not None and search.best.rate == 3000
    assert search.capped.startswith(
        "the generator, not the target, failed at 4,000 ops/s (2 probes failed): "
    )
    assert search.conclusion().endswith(search.capped)


@pytest.mark.parametrize("kind", [GENERATOR_BOUND, MACHINE_BOUND, FELL_BEHIND])
def test_only_the_generator_failing_stops_the_search_early(kind: str) -> None:
    """With no rate passing, a generator that fails leaves nothing to bisect to: it stops
    (a target failing would halve on)."""
    search = Search(SearchSpec(start=1000, max_probes=20))
    assert drive(search, lambda r: False, kind=kind) == [1000, 1000]
    assert search.stopped.startswith("the generator, not the target, failed at 1,000 ops/s")
    assert search.best is None


@pytest.mark.parametrize("kind", [SERVER_BOUND, SERVER_STALLED, TOO_FEW_CLIENTS, ON_SCHEDULE])
def test_the_target_failing_bisects_on_to_the_knee(kind: str) -> None:
    """The server saturating, stalling, or the clients' one-in-flight limit: the target
    failed, not the generator, so the search narrows down instead of stopping."""
    search = Search(SearchSpec(start=1000, max_probes=20))
    rates = drive(search, lambda r: r <= 7300, kind=kind)
    assert rates == [1000, 2000, 4000, 8000, 8000, 6000, 7000, 7500, 7500, 7250]
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
    assert "every rate passed" in search.conclusion()


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
    assert again.probes == search.probes  # the retries marked the same
    assert [again.said(p) for p in again.probes] == [search.said(p) for p in search.probes]
    assert again.next_rate() is None


def test_a_search_stored_before_retries_replays_without_them() -> None:
    """A stored spec without `confirm` is a search that counted each failure at once."""
    stored = {"search": {"target": ["p99<1ms"], "start": 1000.0}}
    settings = settings_of(stored)
    assert settings is not None and settings.confirm == 1
    now = settings_of({"search": {"target": ["p99<1ms"], "confirm": 2}})
    assert now is not None and now.confirm == 2


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


def test_confirm_below_one_is_refused_with_its_field() -> None:
    with pytest.raises(SpecError) as caught:
        search_spec(spec_from_data({"search": {"confirm": 0}}), ["p99<1ms"])
    assert caught.value.where == "search.confirm"
