"""How long a starting server is waited for: a fixed time, then longer while it still works.

A server that has not listened within its start timeout is stopped. On a loaded machine a
server that starts in half a second of CPU can get a small share of one and take far
longer; a server that hangs uses no CPU at all. So past the timeout the wait goes on in
short windows for as long as the process used CPU in the last one, up to a hard bound.
"""

from __future__ import annotations

import time

PROGRESS_WINDOW = 2.0  # seconds: past the timeout, a window without CPU ends the wait
HARD_FACTOR = 4.0  # and no wait is longer than this many timeouts


def cpu_ticks(pid: int) -> int | None:
    """User and system clock ticks the process has used, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The name (field 2) is in parentheses and may hold spaces: count fields after it.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    except (IndexError, ValueError):
        return None


class StartDeadline:
    """`expired()` once `timeout` seconds passed and the process used no CPU over the
    last window, or once the hard bound passed."""

    def __init__(self, pid: int, timeout: float, hard: float | None = None) -> None:
        self.pid = pid
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.hard = self.started + (HARD_FACTOR * timeout if hard is None else hard)
        self.ticks = cpu_ticks(pid)

    def expired(self) -> bool:
        now = time.monotonic()
        if now <= self.deadline:
            return False
        ticks = cpu_ticks(self.pid)
        working = ticks is not None and self.ticks is not None and ticks > self.ticks
        self.ticks = ticks
        if working and now < self.hard:
            self.deadline = min(now + PROGRESS_WINDOW, self.hard)
            return False
        return True

    def waited(self) -> float:
        return time.monotonic() - self.started
