"""Who runs a run: its process, named so that "still running" can be told from "gone".

A pid alone can be reused, so a process is named by its pid and its start time (field 22
of /proc/PID/stat, in clock ticks since boot): both must match for "still running".
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any


def start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot), or None if there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces or ')'.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 overall: starttime
    except (IndexError, ValueError):
        return None


def this_runner() -> dict[str, Any]:
    """This process as a stored run names its runner."""
    pid = os.getpid()
    return {"host": platform.node(), "pid": pid, "pid_start": start_ticks(pid)}


def runner_gone(runner: dict[str, Any]) -> bool:
    """True when the process that ran a run is known to be gone (never a guess: a run from
    another host, or stored before runners were kept, is not judged)."""
    pid = runner.get("pid")
    if not isinstance(pid, int) or runner.get("host") != platform.node():
        return False
    now = start_ticks(pid)
    if now is None:
        return True
    started = runner.get("pid_start")
    return started is not None and now != started
