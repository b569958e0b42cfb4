"""Process identity and lifetime: who runs a run, and children that die with their parent.

A pid alone can be reused, so a process is named by its pid and its start time (field 22
of /proc/PID/stat, in clock ticks since boot): both must match for "still running".
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import queue
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

PR_SET_PDEATHSIG = 1


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


@functools.cache
def _libc() -> Any:
    """The C library this interpreter is linked with (no search: that would run ldconfig)."""
    return ctypes.CDLL(None, use_errno=True)


def dies_with_this_process() -> Callable[[], None]:
    """A ``preexec_fn``: the child is sent SIGKILL by the kernel when its parent dies.

    The kernel's "parent" is the thread that forked, so start such children with `spawn`,
    which forks from a thread that lives as long as the process. If the parent died before
    the call, the child exits at once rather than serve with nobody to stop it.
    """
    parent = os.getpid()
    libc = _libc()  # loaded before the fork: nothing in the child but a system call

    def preexec() -> None:
        try:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: the parent's atexit stop remains
            return
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class _Spawner:
    """One daemon thread that starts children for threads that may end before them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def run(self, start: Callable[[], T]) -> T:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._serve, name="spawner", daemon=True)
                self.thread.start()
        done: Future[T] = Future()
        self.jobs.put((start, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            start, done = self.jobs.get()
            try:
                done.set_result(start())
            except BaseException as exc:  # handed to the caller's thread
                done.set_exception(exc)


_SPAWNER = _Spawner()


def spawn(start: Callable[[], T]) -> T:
    """Call `start` (a Popen) from a thread that lives as long as the process, so that a
    child started with `dies_with_this_process` outlives the calling thread (a pool or
    TUI worker thread that ends) and dies only with the process."""
    if threading.current_thread() is threading.main_thread():
        return start()
    return _SPAWNER.run(start)
