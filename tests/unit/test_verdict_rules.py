"""Issue 35 item 5: no verdict contradicts a figure printed beside it.

Every verdict of a grid of recorded figures (busy and idle workers, servers and machines,
schedules kept or not, sends on time or late, long waits or none, unanswered ops, the
machine's stalls explaining the waits or not, few clients or many, open and closed loop)
is held to the claims `workbench.results.verdict_rules` lists for its kind.
"""

from __future__ import annotations

import itertools

from test_verdict import interval

from workbench.results.hiccups import Hiccup, Hiccups
from workbench.results.metrics import Stats
from workbench.results.verdict import (
    KINDS,
    MACHINE_STALLED,
    ON_SCHEDULE,
    SENT_LATE,
    TOO_FEW_CLIENTS,
    UNKNOWN,
    Context,
    verdict_of,
)
from workbench.results.verdict_rules import CLAIMS, contradictions, figure_stands


def _with_hiccups(stats: Stats, stall_ns: int) -> Stats:
    """The interval with a meter's figures: a hiccup of `stall_ns` on the server's CPU."""
    h = Hiccups("native", 1_000_000, 1_000_000, seen={"server": ["1"], "worker 0": ["0"]})
    every = [v.get_max_value() for v in stats.hist.values()]
    h.wait_ns = max(every, default=0)
    h.intervals = 1
    if stall_ns:
        h.events = [Hiccup("1", 0.2, stall_ns, ("server",))]
        h.cpus = {"1": [900, stall_ns, 1, stall_ns]}
    stats.hiccups = h
    return stats


GRID = {
    "workers": [(0.2,), (0.95,)],
    "server_cpu": [0.2, 0.95],
    "host": [(0.3, 2), (0.97, 2)],
    "offered": [0, 10_000, 13_000],  # closed loop, kept, behind
    "lag_ns": [5_000, 3_000_000],
    "slow": [(0, 0), (150, 30_000_000), (150, 600_000_000)],
    "errors": [0, 3],
    "stall_ns": [None, 0, 28_000_000],  # no meter, a meter with no stall, a 28 ms stall
    "clients": [1, 16],
}


def _cases() -> list[dict[str, object]]:
    keys = list(GRID)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*GRID.values())]


def test_no_verdict_of_the_grid_contradicts_its_figures() -> None:
    seen: set[str] = set()
    broken = []
    for case in _cases():
        offered = int(case["offered"])  # type: ignore[call-overload]
        stats = interval(
            workers=case["workers"],  # type: ignore[arg-type]
            server_cpu=case["server_cpu"],  # type: ignore[arg-type]
            host=case["host"],  # type: ignore[arg-type]
            offered=offered,
            lag_ns=case["lag_ns"] if offered else None,  # type: ignore[arg-type]
            slow=case["slow"],  # type: ignore[arg-type]
            errors=case["errors"],  # type: ignore[arg-type]
        )
        if case["stall_ns"] is not None:
            stats = _with_hiccups(stats, int(case["stall_ns"]))  # type: ignore[call-overload]
        context = Context(
            "redis",
            open_loop=bool(offered),
            server_cores=1.0,
            single_threaded=True,
            clients=int(case["clients"]),  # type: ignore[call-overload]
        )
        v = verdict_of([stats], context)
        seen.add(v.kind)
        if wrong := contradictions(v):
            broken.append((case, v.line, wrong))
    assert not broken, broken[:3]
    # The grid reaches every verdict but the one for runs that recorded nothing.
    assert seen == set(KINDS) - {UNKNOWN}, set(KINDS) - seen


def test_every_kind_has_its_claims() -> None:
    assert set(CLAIMS) == set(KINDS)


def test_the_issues_cases_read_what_their_figures_say() -> None:
    # An open loop at 20,000/s whose send lag p99 (3.38 ms) was above its latency p99
    # (2.70 ms) read "on schedule" before; the schedule was kept in count, not in time.
    late = interval(
        ops=20_000,
        latency_ns=2_700_000,
        workers=(0.3,),
        server_cpu=0.3,
        offered=20_000,
        lag_ns=3_380_000,
    )
    v = verdict_of([late], Context("redis", open_loop=True, server_cores=1.0, clients=16))
    assert v.kind == SENT_LATE and v.kind != ON_SCHEDULE, v.line
    assert "send lag p99 3.38ms" in v.evidence
    # Behind the schedule with clients to spare (rate x p50 needs 1 of 16): not "too few
    # clients", which its own figure would contradict.
    behind = interval(workers=(0.3,), server_cpu=0.3, offered=13_000, lag_ns=5_000)
    v = verdict_of([behind], Context("redis", open_loop=True, server_cores=1.0, clients=16))
    assert v.kind != TOO_FEW_CLIENTS and not contradictions(v), v.line
    # A 28 ms stall of the server's CPU explains 30 ms waits: the machine's, not the server's.
    stalled = _with_hiccups(
        interval(
            workers=(0.3,), server_cpu=0.3, offered=10_000, lag_ns=5_000, slow=(150, 30_000_000)
        ),
        28_000_000,
    )
    v = verdict_of([stalled], Context("redis", open_loop=True, server_cores=1.0, clients=16))
    assert v.kind == MACHINE_STALLED, v.line
    assert v.evidence.startswith("CPU 1 lost 28.00ms at 0.2 s; 1 hiccup over 1.00ms")


def test_conclusions_compare_only_figures_that_stand() -> None:
    machine = verdict_of(
        [interval(workers=(0.6,), server_cpu=0.5, host=(0.97, 2))],
        Context("redis", server_cores=1.0),
    )
    assert not figure_stands(machine)
    server = verdict_of(
        [interval(workers=(0.3,), server_cpu=0.95, host=(0.5, 8))],
        Context("redis", server_cores=1.0),
    )
    assert figure_stands(server)
