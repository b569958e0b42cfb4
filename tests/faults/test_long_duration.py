"""Issue 39 item 6: a run of 1e9 s allocates nothing in proportion to its duration, and
a Ctrl-C keeps what it measured (workers used to build every interval's end first:
gigabytes, no interval reported, the run stored as "nothing measured")."""

from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path

import pytest
from faults_support import children

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

# A worker of a short run holds some tens of MB; the old grid of ends grew by hundreds of
# MB a second, so the test stops it as soon as a worker passes this instead of waiting.
WORKER_RSS_LIMIT_KB = 400_000


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _wait_for_interval_watching_memory(cli, needle: str, timeout: float = 90.0) -> None:
    """Read the CLI's lines until `needle`, failing as soon as a worker grows too large."""
    assert cli.proc.stdout is not None
    fd = cli.proc.stdout.fileno()
    os.set_blocking(fd, False)
    buffer = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in children(cli.proc.pid):
            rss = _rss_kb(child)
            assert rss < WORKER_RSS_LIMIT_KB, f"worker {child} holds {rss} kB: {buffer}"
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 65536).decode(errors="replace")
            if not chunk:
                break
            buffer += chunk
            if needle in buffer:
                os.set_blocking(fd, True)
                cli.lines.append(buffer)
                return
    raise AssertionError(f"no line with {needle!r} in: {buffer}")


@pytest.mark.parametrize("strategy", ["multiplexed", "native"])
def test_a_run_of_a_billion_seconds_measures_and_stops(
    redis: ServerProcess, cli_run, tmp_path: Path, strategy: str
) -> None:
    cli = cli_run(
        "-s", redis.target_options["url"], "-c", "2", "-w", "2", "--test-time", "1e9",
        "--set", f"strategy.name={strategy}", "--set", "load.warmup=0",
        "--set", "load.interval=0.25",
    )  # fmt: skip
    _wait_for_interval_watching_memory(cli, "[  0.5s]")
    cli.signal(signal.SIGINT)
    code, out = cli.finish(timeout=60)
    assert code == 130, out
    assert "nothing measured" not in out
    run = Store(tmp_path / "runs.sqlite").load("last")
    assert run.status == "interrupted"
    assert run.steps[0].intervals, out
