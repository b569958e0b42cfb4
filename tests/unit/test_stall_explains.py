"""The rule that says whether the machine's stalls explain a step's long waits
(`workbench.results.stalls`): the run of hiccups taken as one, and the server's
utilization's drain factor, on figures taken from real runs of the issue-35 search
(tests/native/test_native_search.py: 16 clients, one native worker, a redis-server on
loopback, 0.1 s intervals) and from a server stopped with SIGSTOP."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from test_verdict import OPEN, interval

from workbench.results.hiccups import Hiccup, Hiccups
from workbench.results.metrics import Stats
from workbench.results.stalls import (
    DRAIN_CAP,
    EXPLAIN_FACTOR,
    EXPLAIN_SLACK_NS,
    MachineUsage,
    chain_ns,
    drain_factor,
    explained,
    stall_ns,
)
from workbench.results.verdict import MACHINE_STALLED, SERVER_STALLED, verdict_of

MS = 1_000_000
ON = ("server", "worker 0")
MACHINE, SERVER = "machine", "server"


@dataclass(frozen=True)
class Case:
    """One interval's figures: its longest wait, the hiccups that counted in it (cpu, s
    into the step, ms), the longest spell a watched process waited for a CPU, and the
    server's utilization (its CPU share of its core over the step)."""

    name: str
    wait_ms: float
    hiccups: tuple[tuple[str, float, float], ...]
    load: float
    cause: str  # what the rule must say: the machine's wait, or not
    starved_ms: float = 0.0

    def interval(self) -> Hiccups:
        return Hiccups(
            events=[Hiccup(cpu, at, round(ms * MS), ON) for cpu, at, ms in self.hiccups],
            starved={"worker 0": round(self.starved_ms * MS)},
            wait_ns=round(self.wait_ms * MS),
        )


def old_rule(case: Case) -> bool:
    """The rule before: twice the longest single hiccup or spell, plus 1 ms."""
    longest = max([ms for _, _, ms in case.hiccups] + [case.starved_ms]) * MS
    return case.wait_ms * MS <= EXPLAIN_FACTOR * longest + EXPLAIN_SLACK_NS


CASES = (
    # 2026-11-29 01:00 UTC, load 1.1-1.4 (another benchmark beside it), probe at 2,597
    # ops/s, the interval from 0.7 s: seven hiccups on CPU 1 within 32 ms, each 1.8-5.8 ms
    # (the server's and the worker's CPU), wait 15.2 ms. With the hiccups alone (a server
    # whose CPU waits cannot be read has no spell) the longest single one explains 12.7 ms;
    # as one run they are 31.8 ms long.
    Case(
        "a cluster of hiccups on the server's CPU, hiccups alone",
        15.196,
        (
            ("1", 0.6899, 1.763),
            ("1", 0.7337, 3.429),
            ("1", 0.7397, 5.825),
            ("1", 0.7467, 2.362),
            ("1", 0.7513, 3.098),
            ("1", 0.7584, 2.498),
            ("1", 0.7631, 2.354),
        ),
        0.10,
        MACHINE,
    ),
    # The same interval with the worker's spell of waiting for a CPU it had (23.4 ms).
    Case(
        "the same cluster, with the worker's wait for a CPU",
        15.196,
        (("1", 0.7337, 3.429), ("1", 0.7397, 5.825), ("1", 0.7631, 2.354)),
        0.10,
        MACHINE,
        starved_ms=23.357,
    ),
    # Same run, probe at 10,388 ops/s (server 28% busy), from 0.1 s: a 10.9 ms hiccup then
    # nine of 1-1.7 ms, wait 7.3 ms: explained by any rule.
    Case(
        "one long hiccup and its tail",
        7.262,
        (("0", 0.1184, 10.929), ("0", 0.1539, 1.230), ("0", 0.1566, 1.224)),
        0.28,
        MACHINE,
    ),
    # Same run, probe at 5,194 ops/s, from 0.4 s: a 2.0 ms wait with no hiccup and no spell
    # of waiting for a CPU: nothing the machine did explains it.
    Case("a wait with no stall at all", 2.028, (), 0.15, SERVER),
    # A server stopped (SIGSTOP) for 0.5 s near capacity, beside this VM's worst hiccups
    # (33 ms, kdamond): at the capped drain factor they explain 265 ms, not 500.
    Case(
        "a server stopped for 0.5 s beside 33 ms hiccups near capacity",
        500.0,
        (("0", 0.20, 33.0), ("1", 0.25, 9.6)),
        0.84,
        SERVER,
    ),
)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_recorded_interval_reads_as_its_cause(case: Case) -> None:
    h = case.interval()
    assert explained(h, load=case.load) is (case.cause == MACHINE), (case, stall_ns(h))
    usage = MachineUsage().plus(h, 0.1)
    late = usage.unexplained(case.load)
    assert (late is None) is (case.cause == MACHINE), late
    assert usage.explains(case.load) is (case.cause == MACHINE)


def test_the_old_rule_blamed_the_server_for_a_cluster_of_hiccups() -> None:
    cluster = CASES[0]
    assert not old_rule(cluster) and explained(cluster.interval(), load=cluster.load)
    assert [old_rule(c) for c in CASES[1:]] == [c.cause == MACHINE for c in CASES[1:]]


def test_hiccups_that_overlap_or_follow_closely_are_one_stall() -> None:
    def run(*spans: tuple[str, float, float]) -> int:
        return chain_ns(Hiccup(cpu, at, round(ms * MS)) for cpu, at, ms in spans)

    assert run(("0", 1.000, 10.0)) == 10 * MS
    assert run(("0", 1.000, 10.0), ("1", 1.005, 10.0)) == 15 * MS  # overlapping, both CPUs
    # 8 ms after a 10 ms stall its backlog is still draining: one run, gap and all.
    assert run(("0", 1.000, 10.0), ("1", 1.018, 5.0)) == 23 * MS
    assert run(("0", 1.000, 2.0), ("0", 1.030, 2.0)) == 2 * MS  # drained long before


def test_the_drain_factor_grows_with_the_servers_utilization_up_to_its_cap() -> None:
    assert drain_factor(None) == drain_factor(0.0) == 1.0
    assert drain_factor(0.5) == pytest.approx(2.0)
    assert drain_factor(0.7) == pytest.approx(1 / 0.3)
    assert drain_factor(0.8) == drain_factor(1.2) == DRAIN_CAP


def test_a_wait_of_three_stalls_near_capacity_is_the_machines() -> None:
    """A wait 2.5 times the longest hiccup: the server's at 20% busy, the machine's at 70%."""
    h = Hiccups(events=[Hiccup("0", 0.3, 8 * MS, ON)], wait_ns=26 * MS)
    assert not explained(h, load=0.2) and explained(h, load=0.7)
    usage = MachineUsage().plus(h, 0.1)
    assert usage.unexplained_ns(0.2) == 26 * MS and usage.unexplained(0.7) is None


def test_a_late_wait_is_kept_only_while_no_longer_one_covers_it() -> None:
    """The step keeps the waits that could decide it at some utilization: a wait is
    dropped when another is as long and as many times its own stall."""
    usage = MachineUsage()
    for k, (wait_ms, stall) in enumerate(((30, 10), (20, 10), (45, 20), (25, 0))):
        events = [Hiccup("0", k * 0.5, stall * MS, ON)] if stall else []
        usage = usage.plus(Hiccups(events=events, wait_ns=wait_ms * MS), 0.5)
    kept = [(w.wait_ns // MS, w.stall_ns // MS) for w in usage.late]
    assert kept == [(45, 20), (30, 10), (25, 0)]  # 20 ms beside a 10 ms stall: covered
    assert usage.unexplained_ns(0.0) == 45 * MS
    assert usage.unexplained_ns(0.5) == 25 * MS  # 4 x the stall + 1 ms: only no stall is left
    assert usage.unexplained_ns(0.7) == 25 * MS and usage.unexplained(None) is not None


def _step(load: float, wait_ms: float, stall_ms: float) -> list[Stats]:
    """Ten 0.1 s intervals of an open loop at 20,000 ops/s (16 clients), p50 50 µs, the
    server `load` busy; in one, a `stall_ms` hiccup on the server's CPU, 250 ops that
    waited `wait_ms` and sends as late (the clients waited on those replies)."""
    parts = []
    for k in range(10):
        hit = k == 4
        stats = interval(
            ops=2_000,
            offered=2_000,
            workers=(0.3,),
            server_cpu=load,
            lag_ns=round(0.8 * wait_ms * MS) if hit else 20_000,
            duration=0.1,
            slow=(250, round(wait_ms * MS)) if hit else (0, 0),
            host=(0.5, 2),
        )
        events = [Hiccup("0", 0.41, round(stall_ms * MS), ON)] if hit else []
        wait = stats.hist["get"].get_max_value()
        stats.hiccups = Hiccups(events=events, seen={"server": ["0"]}, wait_ns=wait)
        stats.hiccups.cpus = {"0": [100, 0, len(events), 0]}
        parts.append(stats)
    return parts


def test_the_verdict_judges_the_stalls_at_the_servers_utilization() -> None:
    """A 26 ms wait beside an 8 ms hiccup, the server 70% busy: machine stalled (the rule
    before read it "server stalled"); a 500 ms wait is the server's at any utilization."""
    busy = verdict_of(_step(0.70, 26.0, 8.0), OPEN)
    assert busy.kind == MACHINE_STALLED, busy.line
    assert "CPU 0 lost 8.00ms" in busy.evidence
    assert verdict_of(_step(0.20, 26.0, 8.0), OPEN).kind == SERVER_STALLED
    stopped = verdict_of(_step(0.70, 500.0, 8.0), OPEN)
    assert stopped.kind == SERVER_STALLED, stopped.line
    assert stopped.figures["unexplained_wait_us"] >= 500_000
