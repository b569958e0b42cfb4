"""Issue 35 item 4: the search names what failed each probe, retries a probe failed by the
machine alone at most twice (then inconclusive, not failing), and states the machine's
knee and the server's; --strict keeps the rule from before."""

from __future__ import annotations

from dataclasses import replace

from test_search import probe

from workbench.results.search_causes import (
    FEW_SAMPLES,
    GENERATOR,
    MACHINE,
    SERVER,
    cause_of,
)
from workbench.results.search_rules import Search
from workbench.results.verdict import (
    FELL_BEHIND,
    MACHINE_BOUND,
    MACHINE_STALLED,
    ON_SCHEDULE,
    SERVER_STALLED,
    Verdict,
)
from workbench.spec.model import SearchSpec

STALLS = "CPU 1 lost 33.00ms at 0.4 s; 14 hiccups over 1.00ms"


def machine_probe(step: int, rate: float, server_passed: bool | None = True):  # type: ignore[no-untyped-def]
    """A probe failed by the machine: its verdict says so, the server met the target in the
    intervals with no machine stall."""
    p = probe(step, rate, False, MACHINE_STALLED, p99_us=4000.0)
    return replace(
        p, cause=MACHINE, server_passed=server_passed, stalls=STALLS, stall_ns=33_000_000
    )


def server_probe(step: int, rate: float):  # type: ignore[no-untyped-def]
    p = probe(step, rate, False, SERVER_STALLED, p99_us=4000.0)
    return replace(p, cause=SERVER, server_passed=False)


def test_each_failing_probe_is_named_by_its_cause() -> None:
    stalled = Verdict(MACHINE_STALLED, "CPU 1 lost 33ms")
    assert cause_of(stalled, True, True, few_samples=True) == MACHINE
    assert cause_of(stalled, True, None, few_samples=False) == MACHINE
    assert cause_of(stalled, True, False, few_samples=False) == SERVER  # failed even clean
    assert cause_of(Verdict(FELL_BEHIND, ""), False, None, few_samples=False) == GENERATOR
    on = Verdict(ON_SCHEDULE, "")
    assert cause_of(on, True, True, few_samples=False) == MACHINE  # stalls, clean passed
    assert cause_of(on, False, None, few_samples=True) == FEW_SAMPLES
    assert cause_of(on, False, None, few_samples=False) == SERVER
    ours = {"machine_cpus": 2, "workers_core_share": {"0": 0.9}, "server_cores_used": 0.8}
    others = {"machine_cpus": 2, "workers_core_share": {"0": 0.2}, "server_cores_used": 0.3}
    assert cause_of(Verdict(MACHINE_BOUND, "", ours), False, None, False) == GENERATOR
    assert cause_of(Verdict(MACHINE_BOUND, "", others), False, None, False) == MACHINE


def test_a_probe_failed_by_the_machine_is_retried_twice_then_inconclusive() -> None:
    search = Search(SearchSpec(target=("p99<1ms",), start=1000, max_probes=20))
    search.record(probe(0, 1000, True))
    search.record(probe(1, 2000, True))
    assert search.next_rate() == 4000
    for step in (2, 3, 4):
        assert search.next_rate() == 4000  # the machine stalled: probed again
        search.record(machine_probe(step, 4000))
    assert search.inconclusive(4000)
    assert search.said(search.probes[-1]).startswith(
        "retry 2: the machine stalled on every retry: inconclusive, not failing; the server "
        "met the target"
    )
    assert search.best is not None and search.best.rate == 2000  # the machine's knee
    assert search.server_knee is not None and search.server_knee.rate == 4000
    assert search.next_rate() == 8000  # the search goes on from the server's knee
    search.record(server_probe(5, 8000))
    search.record(server_probe(6, 8000))
    assert search.first_failing is not None and search.first_failing.rate == 8000
    conclusion = search.conclusion()
    assert conclusion.startswith(
        "highest passing rate 2,000 ops/s (p99 100µs) on this machine as it is; the server "
        "met the target up to 4,000 ops/s in the intervals with no machine stall (between "
        f"them, the machine: it stalled in 3 probes, the worst: {STALLS})"
    ), conclusion


def test_a_machine_stall_that_does_not_come_back_lets_the_rate_pass() -> None:
    search = Search(SearchSpec(target=("p99<1ms",), start=1000, max_probes=20))
    search.record(machine_probe(0, 1000))
    assert search.decision(1000) is None
    search.record(probe(1, 1000, True))
    assert search.decision(1000) is True and not search.inconclusive(1000)
    assert search.best is not None and search.best.rate == 1000


def test_an_inconclusive_rate_whose_server_failed_even_clean_bounds_the_search() -> None:
    search = Search(SearchSpec(target=("p99<1ms",), start=1000, max_probes=20))
    search.record(probe(0, 1000, True))
    for step in (1, 2, 3):
        search.record(machine_probe(step, 2000, server_passed=False))
    assert search.inconclusive(2000) and search.decision(2000) is False
    assert search.next_rate() == 1500


def test_strict_keeps_the_rule_from_before_any_failure_fails() -> None:
    search = Search(SearchSpec(target=("p99<1ms",), start=1000, max_probes=20, strict=True))
    search.record(probe(0, 1000, True))
    search.record(machine_probe(1, 2000))
    search.record(machine_probe(2, 2000))
    assert search.decision(2000) is False and not search.inconclusive(2000)
    assert search.server_knee is None
    assert search.best is not None and search.best.rate == 1000
    assert "server met" not in search.conclusion()
