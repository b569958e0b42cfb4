"""Who runs a run: its process, named so that "still running" can be told from "gone".

A pid alone can be reused, so a process is named by its pid and its start time (field 22
of /proc/PID/stat, in clock ticks since boot): both must match for "still running".
"""

from __future__ import annotations

import os
import platform
from typing import Any

from workbench.sdk.scratch import start_ticks


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
