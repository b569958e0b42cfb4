"""The verdict rules on constructed intervals: each rule, its evidence line, the order."""

from __future__ import annotations

from typing import Any

import pytest

from workbench.results.events import Interval, RunStarted, StepFinished, StepStarted
from workbench.results.live import RunView
from workbench.results.metrics import Stats, fold, merged, new_histogram
from workbench.results.verdict import (
    FELL_BEHIND,
    GENERATOR_BOUND,
    LATENCY_BOUND,
    MACHINE_BOUND,
    ON_SCHEDULE,
    SERVER_BOUND,
    SERVER_STALLED,
    TOO_FEW_CLIENTS,
    UNKNOWN,
    WORKER_BUSY,
    Context,
    Usage,
    context_for,
    judge,
    verdict_of,
)
from workbench.sdk import load_plugin


def context_of(spec: dict[str, Any], server: dict[str, Any] | None = None) -> Context:
    """The context of a step of a built-in system, with the facts its plugin declares."""
    target = spec.get("target", {})
    system = load_plugin(target.get("system", "embedded"))
    facts = system.facts(
        {**target.get("server", {}), **(server or {})}, bool(target.get("managed"))
    )
    return context_for(spec, facts)


REDIS = Context("redis", open_loop=False, server_cores=1.0, single_threaded=True)
OPEN = Context("redis", open_loop=True, server_cores=1.0, single_threaded=True)


def interval(
    *,
    ops: int = 10_000,
    latency_ns: int = 50_000,
    workers: tuple[float, ...] = (),
    server_cpu: float | None = None,
    host: tuple[float, int] | None = None,
    offered: int = 0,
    lag_ns: int | None = None,
    duration: float = 1.0,
    errors: int = 0,
    server: dict[str, Any] | None = None,
    slow: tuple[int, int] = (0, 0),
) -> Stats:
    """One interval: `workers` and `server_cpu` are shares of a core over `duration`;
    `slow` is (how many, latency ns) of the ops that took longer than `latency_ns`."""
    h = new_histogram()
    fold(h, [latency_ns] * (ops - slow[0]) + [slow[1]] * slow[0])
    stats = Stats(duration=duration, hist={"get": h} if ops else {})
    stats.cpu = {str(i): share * duration for i, share in enumerate(workers)}
    stats.server = dict(server or {})
    if server_cpu is not None:
        stats.server["cpu_seconds"] = server_cpu * duration
    if host is not None:
        stats.server["host_busy"], stats.server["host_cpus"] = host
    stats.offered = offered
    if lag_ns is not None:
        lag = new_histogram()
        fold(lag, [lag_ns] * max(offered, 1))
        stats.send_lag = lag
    if errors:
        stats.errors = {"timeout": errors}
    return stats


def test_generator_bound_names_the_busy_workers_and_the_idle_server() -> None:
    v = verdict_of([interval(workers=(0.97, 0.95), server_cpu=0.41, host=(0.3, 8))], REDIS)
    assert v.kind == GENERATOR_BOUND
    assert v.line == (
        "generator-bound: workers 97% 95% of a core, server 41% of 1 core (single-threaded), "
        "machine 30% busy on 8 CPUs (2.33 of them ours) — the figure is a lower bound of the "
        "server's capacity: "
        "add workers or use the native engine"
    )


def test_one_busy_worker_of_several_is_enough() -> None:
    v = verdict_of([interval(workers=(0.9, 0.3), server_cpu=0.2, host=(0.2, 8))], REDIS)
    assert v.kind == GENERATOR_BOUND


def test_worker_threshold_is_inclusive() -> None:
    at = verdict_of([interval(workers=(WORKER_BUSY,), server_cpu=0.2)], REDIS)
    below = verdict_of([interval(workers=(WORKER_BUSY - 0.01,), server_cpu=0.2)], REDIS)
    assert (at.kind, below.kind) == (GENERATOR_BOUND, LATENCY_BOUND)


def test_single_threaded_server_near_one_core_is_server_bound() -> None:
    v = verdict_of([interval(workers=(0.6, 0.58), server_cpu=0.98, host=(0.6, 8))], REDIS)
    assert v.kind == SERVER_BOUND
    assert v.evidence.startswith("server 98% of 1 core (single-threaded), workers 60% 58%")


def test_multi_threaded_server_is_judged_on_all_its_cores() -> None:
    memcached = context_of({"target": {"system": "memcached", "managed": True, "server": {}}})
    busy = verdict_of([interval(workers=(0.5,), server_cpu=3.6)], memcached)
    idle = verdict_of([interval(workers=(0.5,), server_cpu=2.0)], memcached)
    assert busy.kind == SERVER_BOUND
    assert "server 3.60 of 4 cores (90%)" in busy.evidence
    assert idle.kind == LATENCY_BOUND


def test_the_cores_a_server_may_run_on_cap_its_threads() -> None:
    memcached = context_of({"target": {"system": "memcached", "managed": True}})  # -t 4
    stats = interval(workers=(0.5,), server_cpu=1.9, server={"cpu_cores": 2})
    assert verdict_of([stats], memcached).kind == SERVER_BOUND
    # Redis on a two-core affinity still runs its commands on one thread.
    redis = interval(workers=(0.5,), server_cpu=0.9, server={"cpu_cores": 2})
    assert verdict_of([redis], REDIS).kind == SERVER_BOUND


def test_server_bound_comes_before_generator_bound() -> None:
    v = verdict_of([interval(workers=(0.99,), server_cpu=0.95, host=(0.5, 8))], REDIS)
    assert v.kind == SERVER_BOUND


def test_full_machine_shared_by_load_and_server_is_machine_bound() -> None:
    v = verdict_of([interval(workers=(0.7, 0.65), server_cpu=0.6, host=(0.97, 2))], REDIS)
    assert v.kind == MACHINE_BOUND
    assert v.evidence.startswith(
        "machine 97% busy on 2 CPUs (1.95 of them ours), workers 70% 65% of a core"
    )


def test_machine_bound_comes_before_generator_bound() -> None:
    v = verdict_of([interval(workers=(0.95, 0.9), server_cpu=0.1, host=(0.99, 2))], REDIS)
    assert v.kind == MACHINE_BOUND


def test_a_machine_filled_by_others_is_machine_bound() -> None:
    # A worker starved of CPU looks idle: the full machine explains it.
    closed = verdict_of([interval(workers=(0.28,), server_cpu=0.1, host=(0.99, 2))], REDIS)
    assert closed.kind == MACHINE_BOUND
    assert closed.evidence.startswith("machine 99% busy on 2 CPUs (0.38 of them ours)")
    late = interval(
        offered=10_000, workers=(0.2,), server_cpu=0.1, host=(0.95, 2), lag_ns=5_000_000
    )
    assert verdict_of([late], OPEN).kind == MACHINE_BOUND


def test_a_schedule_missed_for_want_of_replies_comes_before_a_busy_machine() -> None:
    stalled = interval(
        ops=100,
        offered=10_000,
        workers=(0.05,),
        server_cpu=0.0,
        host=(0.99, 2),
        slow=(4, 900_000_000),
    )
    v = verdict_of([stalled], OPEN)
    assert v.kind == SERVER_STALLED
    assert v.evidence.startswith(
        "issued 100 of 10,000 ops/s offered (1.0%), longest wait 900.20ms against p50 50.0µs"
    )


OPEN_4 = Context("redis", open_loop=True, server_cores=1.0, single_threaded=True, clients=4)


def test_a_stalled_server_reads_as_the_server_stalling_not_add_clients() -> None:
    """SIGSTOP for 1.5 s: most ops answer in 50 µs, four clients wait 1.5 s each; the ops
    due meanwhile are never sent. The workers idle: it is the server's doing."""
    stalled = interval(
        ops=1_000,
        offered=4_000,
        workers=(0.05,),
        server_cpu=0.0,
        lag_ns=20_000,
        duration=2.0,
        slow=(4, 1_500_000_000),
    )
    v = verdict_of([stalled], OPEN_4)
    assert v.kind == SERVER_STALLED, v.line
    assert "longest wait 1.50s against p50 50.0µs" in v.evidence
    assert "add clients" not in v.line and "lower the rate" not in v.line
    assert "server stalled" in v.line


def test_a_stall_the_clients_caught_up_on_still_reads_as_the_server_stalling() -> None:
    """After a stall the clients send every overdue op at once: the schedule is kept in
    count, but the sends were as late as the answers were slow (busy clients)."""
    caught_up = interval(
        ops=4_000,
        offered=4_000,
        workers=(0.1,),
        server_cpu=0.05,
        lag_ns=1_400_000_000,
        duration=2.0,
        slow=(1_500, 1_450_000_000),
    )
    v = verdict_of([caught_up], OPEN_4)
    assert v.kind == SERVER_STALLED, v.line
    assert "issued 2,000 of 2,000 ops/s offered (100.0%), send lag p99 1.40s" in v.evidence


def test_ops_that_timed_out_on_a_stopped_server_read_as_the_server_stalling() -> None:
    """With a reply timeout shorter than the stop, the long waits end as errors, not as
    latencies: the unanswered ops are the stall's evidence."""
    stalled = interval(
        ops=500, errors=30, offered=4_000, workers=(0.02,), server_cpu=0.0, host=(0.99, 2)
    )
    v = verdict_of([stalled], OPEN_4)
    assert v.kind == SERVER_STALLED, v.line
    assert "30 ops unanswered (timed out or abandoned)" in v.evidence


def test_too_few_clients_for_the_rate_at_this_latency() -> None:
    # 10,000 ops/s at 1 ms each keeps 10 ops in flight: 4 clients cannot carry it.
    short = interval(
        ops=4_000,
        latency_ns=1_000_000,
        offered=10_000,
        workers=(0.2,),
        server_cpu=0.3,
        lag_ns=20_000,
    )
    v = verdict_of([short], OPEN_4)
    assert v.kind == TOO_FEW_CLIENTS, v.line
    assert "needs 10.0 ops in flight, 4 clients" in v.evidence
    assert "add clients (load.concurrency)" in v.advice
    assert "lower the rate" not in v.line


def test_a_busy_worker_that_issued_too_few_fell_behind() -> None:
    stats = interval(ops=8_000, offered=10_000, workers=(0.9,), server_cpu=0.3, lag_ns=20_000)
    v = verdict_of([stats], OPEN)
    assert v.kind == FELL_BEHIND
    assert v.evidence.startswith("worker 90% of a core")
    assert "issued 8,000 of 10,000 ops/s offered (80.0%)" in v.evidence
    assert v.figures["kept_share"] == pytest.approx(0.8)
    assert "add workers or use the native engine" in v.advice
    assert "lower the rate" not in v.line


def test_a_native_step_is_not_advised_to_use_the_native_engine() -> None:
    behind = interval(ops=8_000, offered=10_000, workers=(0.95,), server_cpu=0.3, lag_ns=20_000)
    busy = interval(workers=(0.97,), server_cpu=0.41)
    native_open = Context("redis", open_loop=True, server_cores=1.0, native=True)
    native_closed = Context("redis", server_cores=1.0, native=True)
    for stats, context, kind in (
        (behind, native_open, FELL_BEHIND),
        (busy, native_closed, GENERATOR_BOUND),
    ):
        v = verdict_of([stats], context)
        assert v.kind == kind
        assert v.advice.endswith(": add workers"), v.line
        assert "native engine" not in v.line
        assert v.to_dict()["advice"] == v.advice
    # The Python engine's steps are still pointed at it.
    assert verdict_of([busy], REDIS).advice.endswith("add workers or use the native engine")


def test_the_live_view_advises_by_the_engine_the_workers_named() -> None:
    spec = {"target": {"system": "redis"}, "load": {}}
    busy = interval(workers=(0.97,), server_cpu=0.41)
    advice = {}
    for engine in ("native", "python"):
        events: list[Any] = [
            RunStarted("r", "n", spec, [{"index": 0, "label": {}, "title": "run"}], {}, 0.0),
            StepStarted("r", 0, "run", {}, spec, 1, 16, engine={"name": engine, "version": ""}),
            Interval("r", 0, 0, 1.0, busy),
        ]
        view = RunView()
        for e in events:
            view = view.apply(e)
        advice[engine] = view.steps[0].verdict.advice
    assert advice["native"].endswith(": add workers")
    assert advice["python"].endswith("add workers or use the native engine")


def test_failed_ops_were_issued_on_schedule() -> None:
    stats = interval(ops=9_000, errors=1_000, offered=10_000, workers=(0.4,), lag_ns=20_000)
    assert verdict_of([stats], OPEN).kind == ON_SCHEDULE


def test_a_busy_worker_whose_sends_were_late_fell_behind() -> None:
    late = interval(offered=10_000, workers=(0.9,), server_cpu=0.3, lag_ns=2_000_000)
    v = verdict_of([late], OPEN)
    assert v.kind == FELL_BEHIND
    assert "send lag p99 2.00ms" in v.evidence


def test_a_send_lag_small_against_the_latency_is_not_late() -> None:
    # 150 µs late against 1 ms answers: a busy worker, but the schedule held.
    v = verdict_of(
        [interval(offered=10_000, latency_ns=1_000_000, workers=(0.9,), lag_ns=150_000)], OPEN
    )
    assert v.kind == GENERATOR_BOUND


def test_late_sends_from_idle_workers_keep_the_schedule_and_the_latency() -> None:
    """An idle client's latency runs from its send: a late timer shows in the send lag,
    not in the latency, so the schedule was kept and the figures are the server's."""
    late = interval(offered=10_000, workers=(0.4,), server_cpu=0.3, lag_ns=2_000_000)
    v = verdict_of([late], OPEN)
    assert v.kind == ON_SCHEDULE
    assert "send lag p99 2.00ms" in v.evidence
    assert "lower the rate" not in v.line


def test_open_loop_that_kept_its_schedule() -> None:
    v = verdict_of([interval(offered=10_000, workers=(0.3,), server_cpu=0.2, lag_ns=9_000)], OPEN)
    assert v.kind == ON_SCHEDULE
    assert v.evidence == (
        "issued 10,000 of 10,000 ops/s offered (100.0%), send lag p99 9.0µs; "
        "worker 30% of a core, server 20% of 1 core (single-threaded)"
    )
    assert v.advice.endswith("the latencies are the server's and the network's at this rate")


def test_idle_polling_is_left_out_of_the_worker_and_the_machine_and_said() -> None:
    # A native worker that polled 64% of the time between sends and replies nearer than a
    # wake-up (frames.md, "Idle polling"): at work 31% of a core, on a machine 95% busy of
    # which 0.64 of a CPU was that polling.
    polling = {"idle_poll": {"0": 0.64}}
    stats = interval(offered=10_000, workers=(0.95,), server_cpu=0.5, host=(0.95, 2), lag_ns=2_000)
    stats.server |= polling
    v = verdict_of([stats], OPEN)
    assert v.kind == ON_SCHEDULE
    assert v.evidence == (
        "issued 10,000 of 10,000 ops/s offered (100.0%), send lag p99 2.0µs; "
        "worker 31% of a core (+64% idle polling), server 50% of 1 core (single-threaded), "
        "machine 63% busy on 2 CPUs (0.81 of them ours)"
    )
    # Without it, the same CPU is a busy generator on a full machine.
    stats.server.pop("idle_poll")
    assert verdict_of([stats], OPEN).kind == MACHINE_BOUND


def test_saturation_explains_an_open_loop_step_first() -> None:
    stats = interval(ops=5_000, offered=10_000, workers=(0.99,), server_cpu=0.3, lag_ns=5_000_000)
    v = verdict_of([stats], OPEN)
    assert v.kind == FELL_BEHIND
    assert "issued 5,000 of 10,000 ops/s offered (50.0%)" in v.evidence
    busy_server = interval(ops=5_000, offered=10_000, workers=(0.99,), server_cpu=0.95)
    assert verdict_of([busy_server], OPEN).kind == SERVER_BOUND


def test_no_verdict_of_a_kept_schedule_advises_a_lower_rate() -> None:
    kept = [
        interval(offered=10_000, workers=w, server_cpu=c, host=h, lag_ns=lag)
        for w in ((0.2,), (0.95,))
        for c in (0.1, 0.95)
        for h in ((0.3, 2), (0.99, 2))
        for lag in (10_000, 3_000_000)
    ]
    for stats in kept:
        line = verdict_of([stats], OPEN).line
        assert "lower the rate" not in line, line


def test_closed_loop_with_neither_side_busy_is_latency_bound() -> None:
    v = verdict_of([interval(workers=(0.3, 0.28), server_cpu=0.4, host=(0.4, 2))], REDIS)
    assert v.kind == LATENCY_BOUND
    assert v.line.startswith("latency-bound: workers 30% 28% of a core, server 40% of 1 core")


def test_no_cpu_figures_is_unknown() -> None:
    v = verdict_of([interval(), interval()], REDIS)
    assert v.kind == UNKNOWN and not v.known and v.badge == ""


def test_server_cpu_unknown_is_said() -> None:
    v = verdict_of([interval(workers=(0.2,))], Context("http"))
    assert v.evidence == "worker 20% of a core, server CPU not recorded"


def test_many_workers_are_summarised() -> None:
    v = verdict_of([interval(workers=(0.9,) + (0.5,) * 7, server_cpu=0.1)], REDIS)
    assert "8 workers at 90% (busiest) and 55% (mean) of a core" in v.evidence


def test_usage_weights_each_interval_by_its_duration() -> None:
    parts = [
        interval(workers=(1.0,), server_cpu=1.0, host=(1.0, 2), duration=1.0),
        interval(workers=(0.0,), server_cpu=0.0, host=(0.0, 2), duration=3.0),
    ]
    usage = Usage.of(parts)
    assert usage.worker_shares() == {"0": pytest.approx(0.25)}
    assert usage.server_cores_used() == pytest.approx(0.25)
    assert usage.machine_share() == pytest.approx(0.25)


def test_the_live_view_reaches_the_same_verdict_as_the_intervals() -> None:
    parts = [
        interval(workers=(0.97, 0.95), server_cpu=0.41, host=(0.3, 8)),
        interval(workers=(0.9, 0.92), server_cpu=0.45, host=(0.35, 8)),
    ]
    spec = {"target": {"system": "redis"}, "load": {"rate": None}}
    events: list[Any] = [
        RunStarted("r", "n", spec, [{"index": 0, "label": {}, "title": "run"}], {}, 0.0),
        StepStarted("r", 0, "run", {}, spec, 2, 16),
        *(Interval("r", 0, i, i + 1.0, s) for i, s in enumerate(parts)),
    ]
    view = RunView()
    for e in events:
        view = view.apply(e)
    live = view.steps[0].verdict
    view = view.apply(StepFinished("r", 0, "completed", merged(parts, concurrent=False)))
    assert live == view.steps[0].verdict == verdict_of(parts, context_for(spec))
    assert live.kind == GENERATOR_BOUND


def test_context_from_the_spec() -> None:
    redis = context_of({"target": {"system": "redis"}, "load": {}})
    threaded = context_of(
        {"target": {"system": "redis", "managed": True, "server": {"io_threads": 4}}}
    )
    memcached = context_of(
        {"target": {"system": "memcached", "managed": True}}, server={"threads": 2}
    )
    outside = context_of({"target": {"system": "memcached"}, "load": {"rate": 5000}})
    assert (redis.server_cores, redis.single_threaded, redis.open_loop) == (1.0, True, False)
    assert (threaded.server_cores, threaded.single_threaded) == (4.0, False)
    assert memcached.server_cores == 2.0
    assert (outside.server_cores, outside.open_loop) == (None, True)
    assert redis.clients is None
    sixteen = context_of({"target": {"system": "redis"}, "load": {"concurrency": 16}})
    groups = context_of(
        {
            "target": {"system": "redis"},
            "load": {"concurrency": 16},
            "workload": {"groups": [{"concurrency": 3}, {"concurrency": 5}]},
        }
    )
    assert (sixteen.clients, groups.clients) == (16, 8)


def test_unknown_cores_fall_back_to_what_the_server_then_the_machine_says() -> None:
    outside = Context("memcached")
    reported = verdict_of(
        [interval(workers=(0.3,), server_cpu=1.8, server={"threads": 2})], outside
    )
    machine = verdict_of([interval(workers=(0.3,), server_cpu=1.8, host=(0.6, 4))], outside)
    assert reported.kind == SERVER_BOUND
    assert machine.kind == LATENCY_BOUND and "of 4 cores (45%)" in machine.evidence


def test_verdict_as_data() -> None:
    v = verdict_of([interval(workers=(0.97,), server_cpu=0.41)], REDIS)
    d = v.to_dict()
    assert d["kind"] == GENERATOR_BOUND and d["line"] == v.line
    assert d["figures"]["workers_core_share"] == {"0": pytest.approx(0.97)}
    assert judge(Usage(), Stats(), REDIS).kind == UNKNOWN


def test_a_managed_reference_http_server_is_one_asyncio_process() -> None:
    proxy = context_of({"target": {"system": "http", "managed": True}})
    assert (proxy.server_cores, proxy.single_threaded) == (1.0, True)
    # A proxy busy on one core of a two-core machine is the limit, not latency.
    stats = interval(workers=(0.59,), server_cpu=0.99, server={"cpu_cores": 2})
    assert verdict_of([stats], proxy).kind == SERVER_BOUND
    assert context_of({"target": {"system": "http"}}).server_cores is None  # anyone's server


def test_a_cluster_is_as_busy_as_its_busiest_node_and_the_step_names_it() -> None:
    nodes = {"127.0.0.1:7000": 0.95, "127.0.0.1:7001": 0.20, "127.0.0.1:7002": 0.15}
    busy = interval(workers=(0.5,), server_cpu=1.30, server={"node_cpu": nodes, "cpu_cores": 8})
    v = verdict_of([busy], REDIS)
    assert v.kind == SERVER_BOUND  # 1.30 of 3 cores is 43%, but one node is saturated
    assert v.evidence.startswith(
        "server 3 nodes 1.30 of 3 cores: busiest node 127.0.0.1:7000 95% of 1 core "
        "(single-threaded)"
    )
    assert v.figures["busiest_node"] == "127.0.0.1:7000"
    assert v.figures["server_cores"] == 3.0
    # Spread evenly, the same total leaves every node room: not server-bound.
    even = {"127.0.0.1:7000": 0.45, "127.0.0.1:7001": 0.45, "127.0.0.1:7002": 0.40}
    calm = interval(workers=(0.5,), server_cpu=1.30, server={"node_cpu": even, "cpu_cores": 8})
    assert verdict_of([calm], REDIS).kind == LATENCY_BOUND


def test_a_clusters_usable_cores_are_capped_by_the_cores_its_nodes_may_run_on() -> None:
    nodes = {"127.0.0.1:7000": 0.6, "127.0.0.1:7001": 0.6, "127.0.0.1:7002": 0.5}
    stats = interval(workers=(0.3,), server_cpu=1.7, server={"node_cpu": nodes, "cpu_cores": 2})
    v = verdict_of([stats], REDIS)
    assert v.figures["server_cores"] == 2.0
    assert "server 3 nodes 1.70 of 2 cores: busiest node 127.0.0.1:7000 60%" in v.evidence
