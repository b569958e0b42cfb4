"""Issue 39 item 12: an open-loop step never issues more than it offered. Ops due in the
warm-up but sent once the measured phase had begun (a backlog caught up) were counted as
the measured phase's, whose offered count leaves them out: a search probe read "issued
103.4% of the offered ops". They belong to the warm-up now, in both engines.

The backlog is made for certain: the server is stopped (SIGSTOP) as soon as the load's
connections are up, in the warm-up, and let go at the first measured interval."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
import redis
from support import collect, finished
from workbench_redis.server import start_redis

from workbench.results.events import Event, Interval
from workbench.results.store import Store

CLIENTS = 2


def _commands(client: redis.Redis) -> int:
    return int(client.info("stats")["total_commands_processed"])


def _stop_once_loaded(client: redis.Redis, pid: int, done: threading.Event) -> None:
    """SIGSTOP the server once the warm-up's load is under way (bounded: 60 s)."""
    before = _commands(client)
    deadline = time.monotonic() + 60
    polls = 0
    while time.monotonic() < deadline and not done.is_set():
        polls += 1  # each poll is a command too
        if _commands(client) > before + polls + 100:  # a twentieth of a second of warm-up
            os.kill(pid, signal.SIGSTOP)
            return
        time.sleep(0.01)


# Timed: the measured second must issue 90% of its schedule once the server is back; on a
# machine shared with the parallel pass it issued 44-67% (the serial pass, docs/testing.md).
@pytest.mark.serial
@pytest.mark.parametrize("strategy", ["multiplexed", "native"])
async def test_a_warm_up_backlog_is_not_issued_in_the_measured_phase(
    tmp_path: Path, strategy: str
) -> None:
    server = start_redis()
    client = redis.Redis.from_url(server.target_options["url"])
    done = threading.Event()
    watcher = threading.Thread(target=_stop_once_loaded, args=(client, server.pid, done))

    def on_event(event: Event) -> None:
        if isinstance(event, Interval):
            os.kill(server.pid, signal.SIGCONT)

    overrides = [
        "target.system=redis",
        f"target.options.url={server.target_options['url']}",
        f"strategy.name={strategy}",
        "load.rate=2000",
        "load.warmup=1",
        "load.duration=1",
        f"load.concurrency={CLIENTS}",
        "load.workers=1",
    ]
    watcher.start()
    try:
        events = await collect(overrides, Store(tmp_path / "runs.sqlite"), on_event=on_event)
    finally:
        done.set()
        watcher.join()
        os.kill(server.pid, signal.SIGCONT)
        client.close()
        server.stop()
    (step,) = finished(events)
    stats = step.stats
    assert stats.offered > 0, (step.status, step.reason, stats.ops, stats.errors)
    assert stats.ops + stats.error_count <= stats.offered, (stats.ops, stats.offered)
    assert stats.ops > 0.9 * stats.offered  # what was due in the phase was issued
