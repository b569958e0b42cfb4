"""Native steps through the real session: stored runs, a server killed mid-run, a sweep
that mixes Python and native strategies, and the one line when the binary is missing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support import collect, finished
from workbench_redis.server import start_redis

from workbench.results.events import Interval, StepStarted
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess, free_port


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite3")


@pytest.mark.redis
async def test_killed_server_errors_counted_then_reconnected_and_the_run_stored(
    store: Store,
) -> None:
    port = free_port()
    server = start_redis(port=port)
    revived: list[ServerProcess] = []

    async def kill_and_revive() -> None:
        await asyncio.sleep(1.0)
        os.kill(server.pid, signal.SIGKILL)
        await asyncio.sleep(0.8)
        revived.append(await asyncio.to_thread(start_redis, port))

    chaos = asyncio.create_task(kill_and_revive())
    try:
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url=redis://127.0.0.1:{port}/0",
                "strategy.name=native",
                "load.concurrency=4",
                "load.workers=1",
                "load.duration=3.5",
                "load.interval=0.5",
            ],
            store,
        )
        await chaos
    finally:
        chaos.cancel()
        with contextlib.suppress(Exception):
            server.stop()
        for r in revived:
            r.stop()
    intervals = [e for e in events if isinstance(e, Interval)]
    assert len(intervals) == 7
    errors = sum(i.stats.errors.get("connection", 0) for i in intervals)
    assert errors > 0
    # Load before the kill and again once the server is back.
    assert intervals[0].stats.ops > 0 and intervals[-1].stats.ops > 0
    assert intervals[-1].stats.error_count == 0
    (done,) = finished(events)
    assert done.status == "completed" and done.stats.errors.get("connection") == errors
    stored = store.load("last")
    assert stored is not None


@pytest.mark.redis
async def test_a_sweep_mixes_python_and_native_strategies(
    store: Store, redis_server: ServerProcess
) -> None:
    events = await collect(
        [
            "target.system=redis",
            f"target.options.url={redis_server.target_options['url']}",
            "load.ops=2000",
            "load.workers=2",
            "load.concurrency=4",
            "strategy.name=['native', 'multiplexed', 'native']",
        ],
        store,
    )
    done = finished(events)
    assert [d.status for d in done] == ["completed"] * 3
    assert [d.stats.ops for d in done] == [2000, 2000, 2000]
    started = [e for e in events if isinstance(e, StepStarted)]
    assert [s.spec["strategy"]["name"] for s in started] == ["native", "multiplexed", "native"]
    assert [s.engine["name"] for s in started] == ["native", "python", "native"]


def test_a_missing_binary_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "WORKBENCH_NATIVE": str(tmp_path / "absent"),
        "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3"),
    }
    res = subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "run", "--set", "target.system=redis",
         "--set", "strategy.name=native"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "./dev setup" in lines[0], res.stderr
    assert str(tmp_path / "absent") in lines[0]  # the missing path, named


@pytest.mark.redis
async def test_a_native_step_records_the_server_cpu_through_a_python_connection(
    store: Store, redis_server: ServerProcess
) -> None:
    """The native strategy has no Python connection: the server's INFO (its CPU seconds)
    is read through the system's default strategy instead, so the verdict has the server."""
    events = await collect(
        [
            "target.system=redis",
            f"target.options.url={redis_server.target_options['url']}",
            "strategy.name=native",
            "load.concurrency=4",
            "load.workers=1",
            "load.duration=1.5",
            "load.interval=0.5",
            "load.warmup=0",
        ],
        store,
    )
    intervals = [e for e in events if isinstance(e, Interval)]
    assert intervals and all("cpu_seconds" in i.stats.server for i in intervals[1:])
