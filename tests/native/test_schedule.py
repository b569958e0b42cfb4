"""One open-loop schedule, two engines: the intended starts the native engine computes are
the Python engine's, to the ns (both arrival processes), offered counts agree, and a client
that was idle when its timer fired late is timed from the send in both engines."""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import signal
import statistics
import struct
import subprocess
import sys
import time
from typing import Any

import pytest
from native_workers import frame, intervals, order, run_worker, spec, stats_of, status
from workbench_redis.server import start_redis

from workbench.engine.arrivals import Schedule, SplitMix64, exponential_gap
from workbench.engine.client_plans import client_plans
from workbench.results.metrics import decode
from workbench.sdk.errors import SpecError
from workbench.sdk.servers import ServerProcess
from workbench.spec.native_binary import binary_path
from workbench.spec.steps import check_spec

START = 1_000_000_000_000  # any start time: the schedule is relative to it


def _spec(arrivals: str, rate: float = 20_000.0, clients: int = 16, **more: Any) -> Any:
    return spec(
        **{
            "target.system": "redis",
            "strategy.name": "native",
            "load.concurrency": clients,
            "load.rate": rate,
            "load.arrivals": arrivals,
            **more,
        }
    )


def python_times(s: Any, count: int, start: int = START) -> list[int]:
    """The first `count` intended starts of all clients, merged (ties: lower client first)."""
    schedules = [p.schedule(start) for p in client_plans(s, 0, 1)]
    heap = [(sch.next_ns, i) for i, sch in enumerate(schedules)]
    heapq.heapify(heap)
    out = []
    while len(out) < count:
        _, i = heapq.heappop(heap)
        out.append(schedules[i].take())
        heapq.heappush(heap, (schedules[i].next_ns, i))
    return out


def native_times(s: Any, count: int, start: int = START) -> list[int]:
    body = json.dumps(
        {"op": "schedule", "order": order(s), "start_ns": start, "count": count}
    ).encode()
    done = subprocess.run(
        [str(binary_path()), "--probe"],
        input=struct.pack(">I", len(body)) + body,
        capture_output=True,
        timeout=60,
        check=True,
    )
    (size,) = struct.unpack_from(">I", done.stdout)
    times: list[int] = json.loads(done.stdout[4 : 4 + size])["times"]
    return times


@pytest.mark.parametrize("arrivals", ["uniform", "poisson"])
def test_the_first_thousand_intended_starts_are_the_same_in_both_engines(arrivals: str) -> None:
    s = _spec(arrivals)
    python = python_times(s, 1000)
    assert native_times(s, 1000) == python
    # 16 clients, one phase each: no burst of 16 at one instant.
    assert len(set(python[:16])) == 16
    if arrivals == "uniform":
        assert python[:16] == [START + i * 50_000 for i in range(16)]  # 800 µs / 16 clients


def test_poisson_gaps_are_exponential_with_the_period_as_mean() -> None:
    period = 800_000
    sch = Schedule(0, period, 0, "poisson", 12345)
    times = [sch.take() for _ in range(20_001)]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    mean = statistics.fmean(gaps)
    assert mean == pytest.approx(period, rel=0.03)
    assert statistics.pstdev(gaps) / mean == pytest.approx(1.0, abs=0.05)  # exponential: CV 1
    # P(gap > mean) = 1/e for an exponential
    assert sum(g > period for g in gaps) / len(gaps) == pytest.approx(math.exp(-1), abs=0.02)
    uniform = Schedule(7, period, 3, "uniform", 12345)
    assert [uniform.take() for _ in range(3)] == [10, 10 + period, 10 + 2 * period]


def test_the_gap_generator_is_splitmix64() -> None:
    rng = SplitMix64(1234567)  # Vigna's reference outputs
    assert [rng.next_u64(), rng.next_u64()] == [6457827717110365317, 3203168211198807973]
    assert exponential_gap(1000, 0.0) == 0
    assert exponential_gap(1000, 1 - math.exp(-1)) in (999, 1000)


def test_an_unknown_arrival_process_is_refused_naming_the_field() -> None:
    with pytest.raises(SpecError) as err:
        check_spec(_spec("bursty"))
    assert err.value.where == "load.arrivals"
    assert "uniform, poisson" in err.value.message
    res = subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "run", "--set", "load.arrivals=bursty"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 2 and "load.arrivals" in res.stderr


@pytest.mark.redis
@pytest.mark.parametrize("arrivals", ["uniform", "poisson"])
def test_both_engines_offer_what_the_schedule_holds(
    redis_server: ServerProcess, arrivals: str
) -> None:
    common: dict[str, Any] = {
        "target.options": {"url": redis_server.target_options["url"]},
        "load.warmup": 0.0,
        "load.duration": 1.0,
        "load.interval": 0.5,
        "workload.mix": {"get": 1.0},
    }
    native = _spec(arrivals, rate=2000.0, clients=4, **common)
    python = _spec(arrivals, rate=2000.0, clients=4, **{**common, "strategy.name": "multiplexed"})
    due = sum(t < START + 1_000_000_000 for t in python_times(native, 4000))
    for s in (native, python):
        engine = "native" if s.strategy.name == "native" else "python"
        frames = run_worker(engine, s)
        assert status(frames) == "completed"
        assert sum(f["stats"]["offered"] for f in intervals(frames)) == due, engine


def _run_with_a_pause(
    engine: str, s: Any, pause_at: float, pause: float, pid: int | None = None
) -> list[dict[str, Any]]:
    """Run a worker, and stop a process (the worker itself unless `pid` names another) for
    `pause` s at `pause_at` s after the start."""
    argv = (
        [str(binary_path())]
        if engine == "native"
        else [sys.executable, "-m", "workbench.engine.worker"]
    )
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    frames: list[dict[str, Any]] = []
    try:
        proc.stdin.write(frame(order(s)))
        proc.stdin.flush()
        while True:
            head = proc.stdout.read(4)
            if len(head) < 4:
                break
            message = json.loads(proc.stdout.read(struct.unpack(">I", head)[0]))
            frames.append(message)
            if message["type"] == "armed":
                start = time.time() + 0.2
                proc.stdin.write(frame({"type": "go", "start": start}))
                proc.stdin.flush()
                time.sleep(max(0.0, start + pause_at - time.time()))
                target = proc.pid if pid is None else pid
                os.kill(target, signal.SIGSTOP)
                time.sleep(pause)
                os.kill(target, signal.SIGCONT)
            if message["type"] == "step_done":
                break
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return frames


@pytest.mark.redis
@pytest.mark.parametrize("engine", ["native", "python"])
def test_an_idle_client_woken_late_is_timed_from_the_send(
    redis_server: ServerProcess, engine: str
) -> None:
    # One client, an op every 250 ms; the worker is stopped for 150 ms from 10 ms before
    # the op due at 1 s: that op is sent about 140 ms late by an idle client. Its latency
    # is the server's (from the send); the lateness shows in the send lag.
    s = _spec(
        "uniform",
        rate=4.0,
        clients=1,
        **{
            "strategy.name": "native" if engine == "native" else "multiplexed",
            "target.options": {"url": redis_server.target_options["url"]},
            "load.warmup": 0.0,
            "load.duration": 2.0,
            "load.interval": 2.0,
            "workload.mix": {"get": 1.0},
        },
    )
    frames = _run_with_a_pause(engine, s, pause_at=0.99, pause=0.15)
    assert status(frames) == "completed"
    (only,) = intervals(frames)
    lag = decode(only["stats"]["send_lag"])
    assert lag.get_max_value() >= 80_000_000  # the late op
    assert stats_of(only).hist["get"].get_max_value() < 80_000_000


@pytest.mark.parametrize("engine", ["native", "python"])
def test_a_stalled_server_shows_in_the_latency_of_the_ops_it_held_up(engine: str) -> None:
    # Coordinated omission corrected: the server stopped for 1 s, the clients busy with
    # their last request; every op due meanwhile is timed from its intended start.
    with start_redis() as server:
        s = _spec(
            "uniform",
            rate=200.0,
            clients=2,
            **{
                "strategy.name": "native" if engine == "native" else "multiplexed",
                "target.options": {"url": server.target_options["url"]},
                "load.warmup": 0.0,
                "load.duration": 3.0,
                "load.interval": 3.0,
                "workload.mix": {"get": 1.0},
            },
        )
        frames = _run_with_a_pause(engine, s, pause_at=1.0, pause=1.0, pid=server.pid)
    assert status(frames) == "completed"
    (only,) = intervals(frames)
    latency = stats_of(only).hist["get"]
    assert latency.get_max_value() >= 900_000_000
    assert latency.get_value_at_percentile(99) >= 700_000_000
    assert decode(only["stats"]["send_lag"]).get_max_value() >= 700_000_000  # sent late too


@pytest.mark.serial  # 8,000 ops/s kept up with: throughput, run alone (docs/testing.md)
@pytest.mark.redis
def test_every_op_sent_on_schedule_is_answered(redis_server: ServerProcess) -> None:
    # Timer wake-ups and replies arrive together all the time at this rate: a reply's
    # readiness must never be dropped (it would not come again; the client would stall).
    s = _spec(
        "uniform",
        rate=8000.0,
        clients=32,
        **{
            "target.options": {"url": redis_server.target_options["url"]},
            "load.warmup": 0.0,
            "load.duration": 3.0,
            "load.interval": 1.0,
            "workload.mix": {"get": 1.0},
        },
    )
    frames = run_worker("native", s)
    assert status(frames) == "completed"
    got = intervals(frames)
    stats = [stats_of(f) for f in got]
    assert all(not st.errors for st in stats), [st.first_errors for st in stats]
    offered = sum(f["stats"]["offered"] for f in got)
    assert offered == 24_000
    assert sum(st.ops for st in stats) >= 0.8 * offered


@pytest.mark.redis
def test_a_native_worker_reports_its_idle_polling_within_its_cpu(
    redis_server: ServerProcess,
) -> None:
    # 50,000 ops/s from one worker: sends 20 µs apart, nearer than a wake-up costs
    # (pacing::WAKE_COST), so the loop polls between them rather than sleeping; the polls
    # that found nothing come in each interval frame as "polled", a part of its "cpu".
    s = _spec(
        "uniform",
        rate=50_000.0,
        clients=16,
        **{
            "target.options": {"url": redis_server.target_options["url"]},
            "load.warmup": 0.0,
            "load.duration": 1.0,
            "load.interval": 0.5,
            "workload.mix": {"get": 1.0},
        },
    )
    frames = run_worker("native", s)
    assert status(frames) == "completed"
    got = intervals(frames)
    polled = [f["polled"] for f in got]
    cpu = [sum(f["stats"]["cpu"].values()) for f in got]
    assert sum(polled) > 0, polled
    assert all(0 <= p <= c + 0.01 for p, c in zip(polled, cpu, strict=True)), (polled, cpu)
