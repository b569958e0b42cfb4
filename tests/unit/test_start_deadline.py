"""A starting server is waited for past its timeout only while it uses CPU."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from workbench.sdk.start_deadline import StartDeadline, cpu_ticks

# Burns half a second of CPU (however long that takes on this machine), says so, then idles.
BUSY_THEN_IDLE = """
import sys, time
t = time.process_time()
while time.process_time() - t < 0.5:
    pass
open(sys.argv[1], "w").close()
time.sleep(60)
"""


def test_a_process_still_working_is_waited_for_and_an_idle_one_is_not(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    proc = subprocess.Popen([sys.executable, "-c", BUSY_THEN_IDLE, str(marker)])
    try:
        deadline = StartDeadline(proc.pid, timeout=0.05, hard=600.0)
        # Bounded: a window without CPU ends the wait, and the burn is half a CPU-second.
        for _ in range(int(600 / 0.02)):
            if deadline.expired():
                break
            time.sleep(0.02)
        else:
            raise AssertionError("the wait never ended")
        assert marker.exists(), "the wait ended while the process was still working"
    finally:
        proc.kill()
        proc.wait()


def test_a_process_using_no_cpu_is_given_up_at_its_timeout() -> None:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.2)  # its own start-up done: from here it uses no CPU
        deadline = StartDeadline(proc.pid, timeout=0.05, hard=600.0)
        time.sleep(0.1)
        assert deadline.expired()
    finally:
        proc.kill()
        proc.wait()


def test_the_hard_bound_ends_even_a_busy_wait() -> None:
    deadline = StartDeadline(os.getpid(), timeout=0.0, hard=0.0)
    t = time.process_time()
    while time.process_time() - t < 0.05:  # this process works
        pass
    assert deadline.expired()


def test_cpu_ticks_reads_a_live_process_and_not_a_gone_one() -> None:
    assert isinstance(cpu_ticks(os.getpid()), int)
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert cpu_ticks(proc.pid) is None
