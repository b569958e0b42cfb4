"""What the fault tests share: the CLI as a subprocess, and processes checked by pid."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

WORKBENCH = [sys.executable, "-m", "workbench.cli.main"]


def cli(
    args: list[str], store: Path, timeout: float = 120, stdin: int | None = subprocess.DEVNULL
) -> subprocess.CompletedProcess[str]:
    """One `workbench` command to its end, with no terminal on stdin unless given one."""
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    return subprocess.run(
        [*WORKBENCH, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
        stdin=stdin,
    )


def start_cli(args: list[str], store: Path) -> subprocess.Popen[str]:
    """A `workbench` command left running, its output readable line by line."""
    env = {**os.environ, "WORKBENCH_STORE": str(store), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [*WORKBENCH, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 60) -> str:
    """The first output line holding `needle` (bounded in time)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return line
    proc.kill()
    _, err = proc.communicate(timeout=10)
    raise AssertionError(f"no line with {needle!r}; saw {seen!r}; stderr {err!r}")


def alive(pid: int) -> bool:
    """True while any thread of a process has not exited. A killed process's main thread
    can show as a zombie while its other threads still hold its files (and sockets)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return True
        except OSError:
            continue
    return False


def wait_gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def kill_if_alive(pid: int) -> None:
    """Clean up after a failed test: the one process it left, by its pid."""
    import signal

    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def children(pid: int) -> list[int]:
    """The pids whose parent is `pid`, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except OSError:
                continue
    return found
