"""Issue 35: a probe too short for the percentile it failed is probed again for as long as
that percentile needs at its rate (`search.max_probe` at most), and its rate is decided on
that long probe."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_search import probe
from test_search_causes import STALLS

from workbench.results.search_causes import FEW_SAMPLES, MACHINE, SERVER, describe
from workbench.results.search_length import lengthens, long_seconds
from workbench.results.search_rules import Probe, Search, replay, search_spec, settings_of
from workbench.results.verdict import MACHINE_STALLED, ON_SCHEDULE
from workbench.sdk.errors import SpecError
from workbench.spec.load import spec_from_data
from workbench.spec.model import SearchSpec

P99_OPS = 100_000  # what a p99 needs (`self_checks.needed`)


def short_probe(step: int, rate: float, seconds: float = 1.0) -> Probe:
    """A probe failed at `rate` with the ops of `seconds` there: too few for its p99."""
    p = probe(step, rate, False, ON_SCHEDULE, p99_us=3000.0)
    ops = round(rate * seconds)
    return replace(p, cause=FEW_SAMPLES if ops < P99_OPS else SERVER, ops=ops, needed_ops=P99_OPS)


def settings(**given: float) -> SearchSpec:
    return SearchSpec(target=("p99<1ms",), start=1000, probe=1.0, max_probes=20, **given)  # type: ignore[arg-type]


def test_the_long_probe_lasts_what_the_percentile_needs_within_its_bounds() -> None:
    s = settings(max_probe=30.0)
    assert long_seconds(s, 8000, P99_OPS) == 13.2  # 12.5 s and 5% more, up to a 0.1 s step
    assert long_seconds(s, 1000, P99_OPS) == 30.0  # capped by search.max_probe
    assert long_seconds(s, 500_000, P99_OPS) == 1.0  # never shorter than search.probe
    assert lengthens(s, short_probe(0, 8000))
    assert not lengthens(settings(max_probe=0.0), short_probe(0, 8000))  # turned off
    assert not lengthens(replace(s, strict=True), short_probe(0, 8000))  # the rule from before
    assert not lengthens(s, short_probe(0, 200_000))  # enough ops: not the cause


def test_a_rate_too_short_for_its_p99_is_decided_on_its_long_probe() -> None:
    search = Search(settings())
    search.record(short_probe(0, 8000))
    assert search.decision(8000) is None
    assert search.next_rate() == 8000 and search.next_seconds() == 13.2
    said = search.said(search.probes[0])
    assert said.startswith("too few samples in 1s: probing this rate again for 13.2s"), said
    assert (
        describe(search.probes[0])
        == "too few samples (8,000 ops of the 100,000 its percentile needs)"
    )
    search.record(probe(1, 8000, True))  # long enough, and the server kept p99<1ms
    long = search.probes[1]
    assert long.long and long.seconds == 13.2 and long.attempt == 1
    assert search.decision(8000) is True and search.best is long
    assert search.said(long) == "retry 1: long probe (13.2s): the rate passes"
    assert search.next_rate() == 16000 and search.next_seconds() == 1.0  # a new rate: short
    assert "1 long for their percentile's samples" in search.retried()


def test_a_long_probe_that_fails_fails_its_rate_at_once() -> None:
    search = Search(settings())
    search.record(probe(0, 4000, True))
    search.record(short_probe(1, 8000))
    search.record(short_probe(2, 8000, seconds=13.2))  # 105,600 ops: the server failed
    assert search.decision(8000) is False
    assert search.first_failing is not None and search.first_failing.rate == 8000
    assert search.said(search.probes[2]).endswith("decided on it: the rate fails")
    assert search.next_rate() == 6000


def test_a_long_probe_capped_short_of_its_percentile_is_still_the_decision() -> None:
    search = Search(settings(max_probe=5.0))
    search.record(short_probe(0, 1000))
    assert search.next_seconds() == 5.0
    search.record(short_probe(1, 1000, seconds=5.0))  # 5,000 ops: still too few
    assert search.decision(1000) is False
    assert "still fewer than the 100,000 ops it needs" in search.said(search.probes[1])
    assert search.next_rate() == 500 and search.next_seconds() == 1.0


def test_a_long_probe_failed_by_the_machine_is_inconclusive_at_once() -> None:
    search = Search(settings())
    search.record(short_probe(0, 8000))
    stalled = probe(1, 8000, False, MACHINE_STALLED, p99_us=4000.0)
    search.record(replace(stalled, cause=MACHINE, server_passed=True, stalls=STALLS))
    assert search.inconclusive(8000) and search.decision(8000) is True
    assert search.server_knee is not None and search.server_knee.rate == 8000
    assert search.best is None  # the machine's knee: no rate passed on this machine as it is


def test_a_stored_search_replays_its_long_probes_and_an_old_one_has_none() -> None:
    search = Search(settings())
    search.record(short_probe(0, 8000))
    search.record(probe(1, 8000, True))
    again = replay(search.probes, search.settings)
    assert [p.long for p in again.probes] == [False, True] and again.decision(8000) is True
    old = settings_of({"search": {"target": ["p99<1ms"], "confirm": 2}})
    assert old is not None and old.max_probe == 0  # stored before long probes
    before = replay(search.probes, old)
    assert not any(p.long for p in before.probes) and before.decision(8000) is None


@pytest.mark.parametrize("value", [0.5, -1, float("inf"), float("nan")])
def test_a_bad_max_probe_names_its_field_and_what_was_expected(value: float) -> None:
    with pytest.raises(SpecError) as caught:
        search_spec(spec_from_data({"search": {"probe": 1, "max_probe": value}}), ["p99<1ms"])
    assert caught.value.where == "search.max_probe"
    if abs(value) != float("inf") and value == value:  # the loader refuses the others first
        assert "expected 0 (never probe longer) or at least search.probe (1 s)" in str(caught.value)
