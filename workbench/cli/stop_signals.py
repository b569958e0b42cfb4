"""Ctrl-C, SIGTERM and SIGHUP mean one thing from the first line of `workbench` to its exit.

Before this, the three differed by moment: a SIGTERM or SIGHUP in the first second (the
imports, the spec check) killed the process with no word, a SIGINT was ignored there when
the shell had started the command with SIGINT ignored (a background job) and honoured a
second later, and a signal while the interpreter shut down killed it by that signal. Now:

- from `install()` (the top of `workbench.cli.main`) each raises KeyboardInterrupt, which
  every command turns into one `interrupted` line and exit 130, running its clean-ups;
- while a run's event loop is up, the loop handles them instead (`handled()`: the first
  stops and keeps what was measured, the second abandons);
- once the command's exit status is decided (`exiting`), one ends the process at once with
  that status; and once the exit handlers ran they are ignored, since the interpreter's
  tear-down (up to a second on a busy machine) puts their fatal default back: the process
  then ends with the status decided, not killed by the signal.

A SIGHUP that was ignored when the process started stays ignored: that is what `nohup`
asks for, and a run meant to outlive its terminal must not stop when the terminal closes.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from types import FrameType
from typing import NoReturn

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_ignored_at_start: set[int] = set()
_seen_start = {"done": False}


def handled() -> tuple[signal.Signals, ...]:
    """The stop signals this process answers (SIGHUP not under `nohup`)."""
    if not _seen_start["done"]:
        _ignored_at_start.update(
            s for s in (signal.SIGHUP,) if signal.getsignal(s) == signal.SIG_IGN
        )
        _seen_start["done"] = True
    return tuple(s for s in STOP_SIGNALS if s not in _ignored_at_start)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _seen_stop["signal"] = signum
    raise KeyboardInterrupt


_seen_stop: dict[str, int] = {}


def stop_seen() -> bool:
    """True once a stop signal raised KeyboardInterrupt. Raised where Python drops
    exceptions (a weakref callback inside the import machinery, a finaliser), it is printed
    as "ignored" and the command would carry on as if none came: the run asks here."""
    return bool(_seen_stop)


def install() -> None:
    """Each stop signal raises KeyboardInterrupt (again after an event loop that handled
    them gave them back: asyncio leaves SIGTERM and SIGHUP at their fatal default)."""
    for sig in handled():
        signal.signal(sig, _interrupt)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def leave(status: int) -> NoReturn:
    """End the process now with `status`, for a run stopped by a signal (the person wants
    out, and the run is stored): the exit handlers run (managed servers are stopped), the
    interpreter's tear-down, up to a second on a busy machine, is skipped."""
    _flush()
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    _flush()
    os._exit(status)


def exiting(status: int) -> None:
    """From now on a stop signal ends the process at once with `status`, the one decided."""

    def exit_now(signum: int, frame: FrameType | None) -> None:
        _flush()
        os._exit(status)

    for sig in handled():
        signal.signal(sig, exit_now)
    atexit.register(_hold_off)  # run first of the exit handlers: the last registered
    # A KeyboardInterrupt that escaped code run from a string (a dataclass or namedtuple
    # being made while a module imports) leaves CPython's "Ctrl-C not handled" flag set,
    # and under `python -m` the interpreter then kills itself by SIGINT whatever status was
    # decided. A string run that succeeds clears the flag.
    exec("")


def _hold_off() -> None:
    # Ignored, not blocked: a signal sent to the process may land on any thread (a maths
    # library's), and the interpreter's tear-down leaves an ignored signal ignored.
    for sig in handled():
        signal.signal(sig, signal.SIG_IGN)
