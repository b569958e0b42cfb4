"""Issue 13 item 1: the first Ctrl-C stops and keeps; the second abandons within a second."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from support import stopped

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

ABANDON_WITHIN = 1.0  # seconds from the second Ctrl-C to the exit, as the README promises


def _redis_args(server: ServerProcess, *more: str) -> list[str]:
    return [
        "--set", "target.system=redis",
        "--set", f"target.options.url={server.target_options['url']}",
        "--set", "load.duration=10",
        "--set", "load.warmup=0",
        "--set", "load.interval=0.5",
        "--set", "load.workers=1",
        *more,
    ]  # fmt: skip


def _check_stored(store: Path) -> None:
    run = Store(store).load("last")
    assert run.status == "interrupted"
    step = run.steps[0]
    assert step.intervals, "the complete intervals are kept"
    assert all(i.stats.duration > 0 for i in step.intervals)


def _abandon(cli, second_after: float) -> tuple[int, str, float]:  # type: ignore[no-untyped-def]
    cli.signal(signal.SIGINT)
    time.sleep(second_after)
    t0 = time.monotonic()
    cli.signal(signal.SIGINT)
    code, out = cli.finish(timeout=15)
    return code, out, time.monotonic() - t0


def test_a_second_interrupt_abandons_a_run_against_a_stopped_server(
    redis: ServerProcess, cli_run, tmp_path: Path
) -> None:
    cli = cli_run(*_redis_args(redis, "--set", "load.concurrency=8"))
    cli.wait_for_line("[  1.0s]")
    stopped(redis.pid)
    try:
        time.sleep(0.3)
        code, out, took = _abandon(cli, 0.2)
    finally:
        os.kill(redis.pid, signal.SIGCONT)
    assert code == 130, out
    assert took < ABANDON_WITHIN, f"took {took:.2f}s"
    _check_stored(tmp_path / "runs.sqlite")


@pytest.mark.parametrize("attempt", range(2))
def test_two_interrupts_20ms_apart_on_many_threads_end_the_run(
    redis: ServerProcess, cli_run, tmp_path: Path, attempt: int
) -> None:
    args = ("--set", "strategy.name=sync-per-client", "--set", "load.concurrency=64")
    cli = cli_run(*_redis_args(redis, *args))
    cli.wait_for_line("[  1.0s]")
    code, out, took = _abandon(cli, 0.02)
    assert code == 130, out
    assert took < ABANDON_WITHIN, f"took {took:.2f}s"
    _check_stored(tmp_path / "runs.sqlite")


def test_one_interrupt_stops_and_keeps_what_was_measured(
    redis: ServerProcess, cli_run, tmp_path: Path
) -> None:
    cli = cli_run(*_redis_args(redis, "--set", "load.concurrency=8"))
    cli.wait_for_line("[  1.0s]")
    cli.signal(signal.SIGINT)
    code, out = cli.finish(timeout=20)
    assert code == 130, out
    assert "interrupted" in out
    _check_stored(tmp_path / "runs.sqlite")
