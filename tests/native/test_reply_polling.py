"""A pipelined closed loop polls for its replies rather than sleeping to them, so that the
server's writes need not wake it (a wake-up the server pays for); one request in flight
per client sleeps as before. Either way the idle polling is reported inside the CPU."""

from __future__ import annotations

from typing import Any

import pytest
from native_workers import intervals, run_worker, spec, status

from workbench.sdk.servers import ServerProcess


def _closed_loop(url: str, clients: int, pipeline: int) -> Any:
    return spec(
        **{
            "target.system": "redis",
            "target.options": {"url": url},
            "strategy.name": "native",
            "strategy.options": {"pipeline": pipeline} if pipeline > 1 else {},
            "load.concurrency": clients,
            "load.warmup": 0.0,
            "load.duration": 1.0,
            "load.interval": 0.5,
            "workload.mix": {"get": 1.0},
        }
    )


@pytest.mark.redis
def test_a_pipelined_closed_loop_polls_for_replies_within_its_cpu(
    redis_server: ServerProcess,
) -> None:
    frames = run_worker("native", _closed_loop(redis_server.target_options["url"], 4, 16))
    assert status(frames) == "completed"
    got = intervals(frames)
    polled = [f.get("polled", 0.0) for f in got]
    cpu = [sum(f["stats"]["cpu"].values()) for f in got]
    # The first 100 ms poll window always polls; a contended machine then pauses it.
    assert sum(polled) > 0, polled
    assert all(0 <= p <= c + 0.01 for p, c in zip(polled, cpu, strict=True)), (polled, cpu)


@pytest.mark.redis
def test_one_request_in_flight_per_client_sleeps_to_its_replies(
    redis_server: ServerProcess,
) -> None:
    frames = run_worker("native", _closed_loop(redis_server.target_options["url"], 4, 1))
    assert status(frames) == "completed"
    assert sum(f.get("polled", 0.0) for f in intervals(frames)) == 0
