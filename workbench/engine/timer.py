"""Precise wake-ups for open-loop clients: one timerfd per worker, due sends in time order.

Why not `asyncio.sleep`: uvloop rounds every delay to whole milliseconds (a 0.6 ms sleep
becomes 1 ms, a 0.4 ms one fires at once), and libuv's loop clock is cached at the start
of each turn, so a paced client woke up to about a millisecond late (send lag p99 of
1.3 ms at 1,000 ops/s, measured). A timerfd armed at an absolute CLOCK_MONOTONIC instant
(the clock `time.perf_counter_ns` reads) has no such rounding: the kernel wakes the
loop's poll at the instant, and every client whose time has come is released in that
turn, earliest first. Only the earliest due time is armed, so a worker pays one
`timerfd_settime` per wake-up (re-arming clears the expiry: no `read`), not per client.

Where the kernel offers no timerfd (not Linux), `Wakeups.create` returns None and the
clients sleep as before.
"""

from __future__ import annotations

import asyncio
import ctypes
import heapq
import itertools
import os
import time

_CLOCK_MONOTONIC = 1
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = os.O_CLOEXEC
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class Wakeups:
    """The worker's due sends: `await wakeups.until(due_ns)` returns once `due_ns` has come."""

    def __init__(self, loop: asyncio.AbstractEventLoop, libc: ctypes.CDLL, fd: int) -> None:
        self.loop = loop
        self._settime = libc.timerfd_settime
        self.fd = fd
        self.heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self.order = itertools.count()  # ties keep the order in which clients asked
        self.armed = 0  # the instant the timer is set for; 0: disarmed
        self.spec = _Itimerspec()
        loop.add_reader(fd, self._fire)

    @classmethod
    def create(cls, loop: asyncio.AbstractEventLoop) -> Wakeups | None:
        """A timerfd on the clock perf_counter reads, or None where there is none."""
        if time.get_clock_info("perf_counter").implementation != ("clock_gettime(CLOCK_MONOTONIC)"):
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(loop, libc, fd) if fd >= 0 else None

    async def until(self, due_ns: int) -> None:
        """Return at `due_ns` (perf_counter_ns) or just after; at once if it has passed."""
        if due_ns <= time.perf_counter_ns():
            return
        fut: asyncio.Future[None] = self.loop.create_future()
        heapq.heappush(self.heap, (due_ns, next(self.order), fut))
        if not self.armed or due_ns < self.armed:
            self._arm(due_ns)
        await fut

    def release_all(self) -> None:
        """Wake every waiting client now (the load ended: each finds it out and stops)."""
        for _, _, fut in self.heap:
            if not fut.done():
                fut.set_result(None)
        self.heap.clear()
        self._arm(0)

    def close(self) -> None:
        self.release_all()
        self.loop.remove_reader(self.fd)
        os.close(self.fd)

    def _arm(self, at_ns: int) -> None:
        """Set the timer for the absolute instant `at_ns`; 0 disarms it."""
        self.armed = at_ns
        value = self.spec.it_value
        value.tv_sec, value.tv_nsec = divmod(at_ns, 1_000_000_000)
        if self._settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(self.spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")

    def _fire(self) -> None:
        """The timer expired: release every client whose time has come, then re-arm (which
        also clears the expiry, so the fd needs no read)."""
        heap = self.heap
        now = time.perf_counter_ns()
        while heap and heap[0][0] <= now:
            fut = heapq.heappop(heap)[2]
            if not fut.done():  # a cancelled client left its entry behind
                fut.set_result(None)
        self._arm(heap[0][0] if heap else 0)
