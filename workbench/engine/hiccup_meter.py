"""The hiccup meter of the load machine, run beside the workers for the whole run.

The coordinator starts one meter process on its machine (`workbench-native --hiccup`, or
``python -m workbench.engine.hiccup_fallback`` when the binary is absent), tells it which
processes to watch (the managed server, the local workers) and lays the slices it writes
(every 50 ms, in wall-clock time) on each interval: `SliceBook.take` gives the interval's
`workbench.results.hiccups.Hiccups`. A slice belongs to the interval its middle falls in, so an
interval's histogram is exact to half a slice; hiccups carry their own start and are
exact. An interval waits for the meter's slice that covers its end (`SliceBook.through`),
at most `MAX_WAIT` s, so a meter that died or hangs never holds a run.

Why a process and not a thread of the coordinator or the workers: docs/frames.md ("The
hiccup meter").
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import sys
import time
from array import array
from collections.abc import Awaitable, Callable
from typing import Any

from workbench.engine.polling import poll
from workbench.engine.wire import pack, read_frame
from workbench.results.hiccups import STARVED_SHARE, Hiccup, Hiccups, merged
from workbench.spec.native_binary import binary_path

MAX_WAIT = 0.5  # seconds past an interval's end its figures may wait for the meter
# ...for the meter of another load machine (a Ray node), whose slices come through Ray
REMOTE_WAIT = 1.5
START_TIMEOUT = 10.0
KEEP_SLICES = 2400  # two minutes of 50 ms slices not yet taken (between steps, say)
DEFAULT_TICK = 0.001
DEFAULT_THRESHOLD = 0.001


class Slice:
    """One meter slice as kept until its interval takes it: a few objects, where its JSON
    tree is hundreds (every wake-up lateness a list of two ints). A coordinator that falls
    behind its workers holds many slices, and held as JSON they grew it by kilobytes an
    interval (the long-run memory test)."""

    __slots__ = ("cpus", "end", "events", "hist", "seen", "start", "waited")

    def __init__(self, frame: dict[str, Any]) -> None:
        self.start = int(frame["start"])  # wall-clock ns
        self.end = int(frame["end"])
        # (lateness ns, count) pairs, flat: one array, no object per pair
        self.hist = array("q", itertools.chain.from_iterable(frame.get("hist", ())))
        # (cpu, wake-ups, longest ns, hiccups, ns lost to them)
        self.cpus = tuple(
            (str(cpu), int(wakes), int(longest), int(over), int(lost))
            for cpu, (wakes, longest, over, lost) in frame.get("cpus", {}).items()
        )
        # Hiccups over the threshold: (cpu, start ns, length ns, processes on it, which of
        # the run's own processes held the CPU, "" if none did); rare.
        self.events = tuple(
            (str(cpu), int(at), int(length), tuple(on), str(own[0] or "") if own else "")
            for cpu, at, length, on, *own in frame.get("events", ())
        )
        self.seen = tuple((str(k), str(v)) for k, v in frame.get("seen", {}).items())
        self.waited = tuple((str(k), int(v)) for k, v in frame.get("waited", {}).items())

    @property
    def middle(self) -> float:
        return (self.start + self.end) / 2e9


class SliceBook:
    """The meter's slices as they arrive, taken interval by interval. Pure: no process."""

    def __init__(
        self,
        ready: dict[str, Any],
        prefix: str = "",
        wait: float = MAX_WAIT,
        silence: float | None = None,
    ) -> None:
        self.ready = ready
        self.wait = wait
        # Another machine's meter that sent nothing for `silence` s is lost with its
        # machine (no output ends there to say so): intervals stop waiting for it, or
        # each interval after a lost host waited its full `wait` and the run ended late.
        self.silence = silence
        self.heard = time.time()  # when the last slice came
        self.meter = _meter_name(ready)
        self.tick_ns = int(ready.get("tick_ns", 0))
        self.threshold_ns = int(ready.get("threshold_ns", 0))
        self.prefix = prefix  # "10.77.0.3/" for the CPUs of another load machine
        self.slices: collections.deque[Slice] = collections.deque(maxlen=KEEP_SLICES)
        self.covered = 0.0  # wall-clock seconds up to which slices have arrived
        self.ended = False  # the meter's output ended

    def add(self, frame: dict[str, Any] | Slice, now: float | None = None) -> None:
        """A frame from the meter (only its slices count), or a slice another book kept."""
        if isinstance(frame, dict):
            if frame.get("type") != "slice":
                return
            frame = Slice(frame)
        self.slices.append(frame)
        self.covered = max(self.covered, frame.end / 1e9)
        self.heard = time.time() if now is None else now

    def through(self, wall: float, now: float | None = None) -> bool:
        """Whether the figures up to `wall` are in (or will not come: the meter ended, went
        silent for `silence` s, or `wait` s have passed since `wall`)."""
        if self.ended or self.covered >= wall:
            return True
        now = time.time() if now is None else now
        if self.silence is not None and now - self.heard >= self.silence:
            return True
        return now >= wall + self.wait

    def take(self, start: float, end: float, origin: float) -> Hiccups | None:
        """The figures of the interval from `start` to `end` (wall s), hiccups placed in
        seconds since `origin` (the measured phase's start). Slices before `start` are
        dropped; None when no slice fell in the interval."""
        out = Hiccups(self.meter, self.tick_ns, self.threshold_ns)
        seen: dict[str, set[str]] = {}
        spells = Spells()
        taken = 0
        while self.slices and self.slices[0].middle < end:
            s = self.slices.popleft()
            events = [_hiccup(e, origin, self.prefix) for e in s.events]
            if s.middle < start:
                # Warm-up or between steps: only a hiccup still going at the start counts.
                events = [e for e in events if origin + e.at + e.length_ns / 1e9 > start]
                out.add_events(events)
                continue
            taken += 1
            _add_slice(out, s, self.prefix)
            out.add_events(events)
            for name, cpu in s.seen:
                seen.setdefault(name, set()).add(f"{self.prefix}{cpu}")
            spells.add(s)
        if not taken:
            return None
        out.seen = {name: sorted(cpus) for name, cpus in seen.items()}
        out.waited, out.starved = spells.waited, spells.longest
        return out


class Spells:
    """Each watched process's waits for a CPU over consecutive slices: the sum, and the
    longest spell (slices in which it waited at least `STARVED_SHARE` of the slice)."""

    def __init__(self) -> None:
        self.waited: dict[str, int] = {}
        self.longest: dict[str, int] = {}
        self.current: dict[str, int] = {}

    def add(self, s: Slice) -> None:
        length = s.end - s.start
        for name, ns in s.waited:
            self.waited[name] = self.waited.get(name, 0) + ns
            spell = self.current.get(name, 0) + ns if ns >= STARVED_SHARE * length else 0
            self.current[name] = spell
            self.longest[name] = max(self.longest.get(name, 0), spell)


def _meter_name(ready: dict[str, Any]) -> str:
    name = str(ready.get("meter", ""))
    resolution = ready.get("resolution_ns")
    if resolution:
        return f"{name}, resolution {resolution / 1e6:.2f}ms"
    return name


def _hiccup(
    event: tuple[str, int, int, tuple[str, ...], str], origin: float, prefix: str
) -> Hiccup:
    cpu, at_ns, length, on, own = event
    return Hiccup(f"{prefix}{cpu}", at_ns / 1e9 - origin, length, on, own)


def _add_slice(out: Hiccups, s: Slice, prefix: str) -> None:
    highest = out.hist.highest_trackable_value
    hist = s.hist
    for i in range(0, len(hist), 2):
        if 0 < hist[i] <= highest:
            out.hist.record_value(hist[i], hist[i + 1])
    for cpu, wakes, longest, over, lost in s.cpus:
        mine = out.cpus.setdefault(f"{prefix}{cpu}", [0, 0, 0, 0])
        mine[0] += wakes
        mine[1] = max(mine[1], longest)
        mine[2] += over
        mine[3] += lost


def meter_command(tick: float, threshold: float) -> list[str]:
    """The meter's argv: the native binary's ``--hiccup`` mode, else the Python stand-in."""
    args = ["--tick-us", str(max(1, round(tick * 1e6)))]
    args += ["--threshold-us", str(max(1, round(threshold * 1e6)))]
    binary = binary_path()
    if binary is not None:
        return [str(binary), "--hiccup", *args]
    return [sys.executable, "-m", "workbench.engine.hiccup_fallback", *args]


class MeterProcess:
    """A running meter: its frames read into a `SliceBook` in the background."""

    def __init__(self, proc: asyncio.subprocess.Process, book: SliceBook) -> None:
        self.proc = proc
        self.book = book
        self.on_slice: Callable[[], None] | None = None  # called as each slice arrives
        self.task = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls, tick: float = DEFAULT_TICK, threshold: float = DEFAULT_THRESHOLD
    ) -> MeterProcess | None:
        """A meter on this machine, or None when neither meter would start."""
        for command in _commands(tick, threshold):
            meter = await _started(command)
            if meter is not None:
                return meter
        return None

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            while (frame := await read_frame(self.proc.stdout)) is not None:
                self.book.add(frame)
                if self.on_slice is not None:
                    self.on_slice()
        except (ValueError, OSError):
            pass
        finally:
            self.book.ended = True
            if self.on_slice is not None:
                self.on_slice()

    async def watch(self, pids: dict[str, int], own: dict[str, int] | None = None) -> None:
        """Watch these processes (by name: "server", "worker 0") from now on; they and
        `own` ({"coordinator": pid}) are the run's own, whose CPU time is the load's."""
        if self.proc.stdin is None or self.proc.stdin.is_closing():
            return
        with contextlib.suppress(OSError, ConnectionError):
            self.proc.stdin.write(pack({"type": "watch", "pids": pids, "own": own or {}}))
            await self.proc.stdin.drain()

    async def close(self) -> None:
        """End the meter (its input closes) and wait for it, briefly; then kill it."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout=2.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.task.cancel()


def _commands(tick: float, threshold: float) -> list[list[str]]:
    """The native meter first (when built), then the Python stand-in."""
    first = meter_command(tick, threshold)
    fallback = [sys.executable, "-m", "workbench.engine.hiccup_fallback", *first[-4:]]
    return [first] if first[0] == sys.executable else [first, fallback]


async def _started(command: list[str]) -> MeterProcess | None:
    """The meter of `command` once it said it is ready, or None if it would not start."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=2**24,
        )
    except OSError:
        return None
    assert proc.stdout is not None
    try:
        ready = await asyncio.wait_for(read_frame(proc.stdout), timeout=START_TIMEOUT)
    except (TimeoutError, ValueError):
        ready = None
    if not ready or ready.get("type") != "ready":
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return None
    return MeterProcess(proc, SliceBook(ready))


class StepHiccups:
    """One step's side of the meter: where its measured phase began (wall s), and the
    hiccups of its last interval (a stall just before an interval still delays it)."""

    def __init__(self, book: SliceBook, remote_server: bool, server_anywhere: bool = False) -> None:
        self.book = book
        self.remote_server = remote_server
        # A server on this machine whose process was not found: it may run on any CPU, so
        # a stall on any CPU counts against the step (`stalls.counts`).
        self.server_anywhere = server_anywhere
        # The meters of the other load machines (Ray nodes), by host, as they come in.
        self.others: dict[str, SliceBook] = {}
        self.origin: float | None = None  # wall-clock start of the measured phase
        self.start = 0.0  # the end of the last interval attached, s into the phase
        self.before: tuple[Hiccup, ...] = ()

    def begins(self, wall: float) -> None:
        if self.origin is None:
            self.origin = wall

    def ready(self, elapsed: float) -> bool:
        """Whether the meter has reported up to the end of the interval ending `elapsed`
        s into the phase (or never will)."""
        if self.origin is None:
            return True
        books = [self.book, *self.others.values()]
        return all(b.through(self.origin + elapsed) for b in books)

    def attach(self, stats: Any, elapsed: float) -> None:
        """The interval ending `elapsed` s into the phase gets its hiccups (`Stats.hiccups`)
        and its own facts (`stalls.mark_interval`)."""
        from workbench.results.stalls import counts, mark_interval

        start, self.start = self.start, elapsed
        if self.origin is None:
            return
        span = (self.origin + start, self.origin + elapsed, self.origin)
        parts = [b.take(*span) for b in (self.book, *self.others.values())]
        h = merged([p for p in parts if p is not None])
        if h is None:
            self.before = ()
            return
        h.remote_server = self.remote_server
        if self.server_anywhere:
            h.seen["server"] = sorted(h.cpus)
        stats.hiccups = h
        mark_interval(stats, self.before, start)
        self.before = tuple(counts(h))

    def add_remote(self, host: str, ready: dict[str, Any], slices: list[Slice]) -> None:
        """Slices of the meter on load machine `host` (its CPUs named "host/cpu")."""
        book = self.others.get(host)
        if book is None:
            book = SliceBook(ready, prefix=f"{host}/", wait=REMOTE_WAIT, silence=REMOTE_WAIT)
            self.others[host] = book
        for s in slices:
            book.add(s)


NODE_POLL = 0.25  # seconds between asks for the other load machines' slices


async def poll_nodes(
    read: Callable[[], Awaitable[dict[str, Any]]],
    side: StepHiccups,
    wake: Callable[[], None],
) -> None:
    """Bring the other load machines' slices (a Ray launcher's `hiccups`) to `side`, until
    cancelled; `wake` the collecting loop as they come."""

    def take(nodes: dict[str, Any]) -> None:
        for host, (ready, slices) in nodes.items():
            side.add_remote(host, ready, slices)
        wake()

    await poll(read, take, NODE_POLL)
