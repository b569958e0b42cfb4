"""Fault tests: real servers on free loopback ports, the CLI driven as a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from workbench_redis.server import start_redis

from workbench.sdk.servers import ServerProcess

WORKBENCH = [sys.executable, "-m", "workbench.cli.main"]


@pytest.fixture
def redis() -> Iterator[ServerProcess]:
    """A redis-server of this test's own (it gets stopped, killed, restarted)."""
    server = start_redis()
    try:
        yield server
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGCONT)
        server.stop()


class Cli:
    """`workbench run` as a subprocess in its own session, so signals reach only it."""

    def __init__(self, store: Path, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [*WORKBENCH, "run", "--store", str(store), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []

    def wait_for_line(self, text: str, timeout: float = 60.0) -> None:
        """Read output until a line contains `text` (bounded)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if text in line:
                return
        raise AssertionError(f"no line with {text!r} in: {''.join(self.lines)}")

    def signal(self, sig: int = signal.SIGINT) -> None:
        self.proc.send_signal(sig)

    def finish(self, timeout: float) -> tuple[int, str]:
        """Exit code and the rest of the output; kills the process (and fails) past `timeout`."""
        try:
            rest, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.communicate()
            raise AssertionError(f"workbench run did not end within {timeout}s") from None
        return self.proc.returncode, "".join(self.lines) + rest


@pytest.fixture
def cli_run(tmp_path: Path) -> Iterator[type]:
    made: list[Cli] = []

    def start(*args: str) -> Cli:
        cli = Cli(tmp_path / "runs.sqlite", list(args))
        made.append(cli)
        return cli

    yield start  # type: ignore[misc]
    for cli in made:
        if cli.proc.poll() is None:
            os.killpg(cli.proc.pid, signal.SIGKILL)
            cli.proc.wait()
