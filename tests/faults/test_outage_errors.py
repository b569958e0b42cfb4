"""Issue 13 item 8: an outage shows as errors in every strategy (no hidden library retries)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from support import collect, finished, stopped
from workbench_redis.server import start_redis

from workbench.results.events import Event, Interval
from workbench.results.store import Store

OUTAGE = 1.0  # seconds the server is stopped


@pytest.mark.parametrize("strategy", ["sync-per-client", "pipeline", "async-pool"])
async def test_a_one_second_stop_of_the_server_shows_as_errors(
    strategy: str, tmp_path: Path
) -> None:
    server = start_redis()
    paused: list[bool] = []

    def on_event(e: Event) -> None:
        if isinstance(e, Interval) and e.index == 0 and not paused:
            paused.append(True)
            stopped(server.pid)
            asyncio.get_running_loop().call_later(
                OUTAGE, server.process.send_signal, signal.SIGCONT
            )

    try:
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={server.target_options['url']}",
                "target.options.timeout=0.3",
                f"strategy.name={strategy}",
                "load.duration=3",
                "load.interval=0.5",
                "load.concurrency=4",
                "load.workers=1",
            ],
            Store(tmp_path / "runs.sqlite"),
            on_event=on_event,
        )
    finally:
        server.process.send_signal(signal.SIGCONT)
        server.stop()
    (step,) = finished(events)
    assert paused
    assert step.stats.errors.get("timeout", 0) > 0, step.stats.errors
    assert step.stats.ops > 0  # and it measured again once the server was back


@pytest.mark.parametrize("strategy", ["sync-per-client", "pipeline"])
async def test_a_killed_and_restarted_server_shows_as_errors(strategy: str, tmp_path: Path) -> None:
    first = start_redis()
    url = first.target_options["url"]
    port = first.port
    restarted: list[object] = []

    def on_event(e: Event) -> None:
        if isinstance(e, Interval) and e.index == 0 and not restarted:
            first.process.kill()
            first.process.wait()
            restarted.append(start_redis(port=port))

    try:
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={url}",
                "target.options.timeout=0.5",
                "target.options.connect_timeout=0.5",
                f"strategy.name={strategy}",
                "load.duration=2",
                "load.interval=0.5",
                "load.concurrency=4",
                "load.workers=1",
            ],
            Store(tmp_path / "runs.sqlite"),
            on_event=on_event,
        )
    finally:
        first.stop()
        for server in restarted:
            server.stop()  # type: ignore[attr-defined]
    (step,) = finished(events)
    assert step.stats.errors.get("connection", 0) > 0, step.stats.errors
