"""The hiccup meter in Python, for a machine without the native binary.

``python -m workbench.engine.hiccup_fallback --tick-us 1000 --threshold-us 1000`` writes
the same frames as ``workbench-native --hiccup`` (docs/frames.md, "The hiccup meter"):
one thread per CPU, pinned, sleeps the tick and records how late it woke.

It is a process of its own, so no worker's GIL is in its figures; but its own threads
share one GIL and an interpreter's wake-up is slower than a native one, so it cannot see
delays shorter than its own lateness when nothing stalls. It measures that at start (the
median lateness of `CALIBRATION` ticks) and says it in its ready frame
(``resolution_ns``), which every face shows beside its figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections import Counter
from typing import Any

from workbench.engine.wire import write_frame

# Between frames (at the first wake-up past each end), on the wall clock: twice the native
# meter's, as every frame costs the interpreter a few hundred µs of CPU.
SLICE_NS = 100_000_000
CALIBRATION = 50  # ticks slept at start to measure the resolution
KEEP_BITS = 11  # HdrHistogram's 2048 sub-buckets (3 significant digits)
MAX_FILLED = 1_000_000
# The shortest tick the stand-in sleeps. A wake-up of a pinned interpreter thread costs
# 50-150 µs of CPU on a busy VM (the GIL, a cold cache), so a 1 ms tick cost 2.6-4% of a
# core per CPU against the native meter's 0.8%. A longer tick measures lateness just as
# finely (to the ns; its resolution is its own lateness when nothing stalls): it sees every
# stall longer than the tick, and a shorter one only when a wake-up falls in it.
MIN_TICK_NS = 10_000_000


def quantise(value: int) -> int:
    s = value.bit_length() - KEEP_BITS
    return (value >> s) << s if s > 0 else value


class CpuFigures:
    """One CPU's wake-ups since the last frame, recorded as they happen (a frame then only
    hands them over): how late, quantised as HdrHistogram keeps them, with the wake-ups a
    late one swallowed (jHiccup's correction); and the hiccups over the threshold."""

    __slots__ = ("counts", "events", "longest", "lost", "over", "wakes")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.wakes = self.longest = self.over = self.lost = 0
        self.events: list[list[Any]] = []

    def add(self, late: int, tick: int) -> None:
        counts = self.counts
        q = quantise(late)
        counts[q] = counts.get(q, 0) + 1
        self.wakes += 1
        if late > self.longest:
            self.longest = late
        missed, filled = late, 0
        while missed > tick and filled < MAX_FILLED:
            missed -= tick
            filled += 1
            q = quantise(missed)
            counts[q] = counts.get(q, 0) + 1

    def hiccup(self, late: int, event: list[Any]) -> None:
        self.over += 1
        self.lost += late
        self.events.append(event)


def run_delay(pid: int) -> int | None:
    """The ns a process's main thread waited on a run queue (/proc/PID/schedstat)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def processor(pid: int) -> int | None:
    """The CPU a process's main thread last ran on (field 39 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


# The share of a hiccup the run's own processes must have run on its CPU for it to be
# their own (the native meter's `own::OWN_SHARE`).
OWN_SHARE = 0.5
# ...and of the time since the CPU's last reading (the native meter's `own::OWN_BUSY`: a
# light load's run before the hiccup must not cover a short one something else caused).
OWN_BUSY = 0.25
RELIST_SLICES = 10  # slices between re-listings of our processes' threads (1 s)


class Ours:
    """The run's own processes (the coordinator, the workers, the managed server): whether
    they held a CPU through a hiccup, the load's own CPU sharing rather than the machine's
    stall (the native meter's own.rs says why and how). Their threads' /proc files stay
    open; they are read at each hiccup and at each slice, never per tick."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pids: dict[int, str] = {}  # pid -> name ("server", "worker 0", "coordinator")
        self.threads: dict[int, tuple[int, int, int]] = {}  # tid -> (pid, schedstat, stat fds)
        # Per CPU, its last two readings (when, each thread's run ns), newest first: the
        # writer's may fall inside a hiccup (even after its end, before its thread judged
        # it), and a hiccup is judged from the newest reading before it began.
        self.readings: dict[int, list[tuple[int, dict[int, int]]]] = {}
        self.slices = 0

    def set(self, pids: dict[int, str]) -> None:
        with self.lock:
            if pids == self.pids:
                return
            self.pids = dict(pids)
            self._relist()
            self.readings.clear()

    def _relist(self) -> None:
        kept: dict[int, tuple[int, int, int]] = {}
        for pid in self.pids:
            try:
                tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
            except (OSError, ValueError):
                continue
            for tid in tids:
                fds = self.threads.pop(tid, None) or _open_thread(pid, tid)
                if fds is not None:
                    kept[tid] = fds
        for fds in self.threads.values():
            for fd in fds[1:]:
                os.close(fd)
        self.threads = kept

    def _runs(self) -> dict[int, int]:
        runs = {}
        for tid, (_, schedstat, _) in self.threads.items():
            try:
                runs[tid] = int(os.pread(schedstat, 96, 0).split()[0])
            except (OSError, IndexError, ValueError):
                continue
        return runs

    def read(self, cpus: list[int]) -> None:
        """The slice's reading for every CPU: where a hiccup's run time counts from."""
        with self.lock:
            if not self.pids:
                return
            self.slices += 1
            if self.slices >= RELIST_SLICES:
                self.slices = 0
                self._relist()
            at, runs = time.monotonic_ns(), self._runs()
            for cpu in cpus:
                self._keep(cpu, at, runs)

    def _keep(self, cpu: int, at: int, runs: dict[int, int]) -> None:
        self.readings[cpu] = [(at, runs), *self.readings.get(cpu, [])[:1]]

    def held(self, cpu: int, late: int, woke: int) -> str:
        """Whether our threads last seen on `cpu` ran at least `OWN_SHARE` of the hiccup of
        `late` ns that ended at `woke` (monotonic ns), or of the time since `cpu`'s reading
        when that began within it, and `OWN_BUSY` of the time since that reading: the name of
        the one that ran longest there, or "" when not our own. `cpu` is read again now."""
        with self.lock:
            if not self.pids:
                return ""
            runs = self._runs()
            here = [(t, pid) for t, (pid, _, stat) in self.threads.items() if _cpu(stat) == cpu]
            names = dict(self.pids)
            kept = self.readings.get(cpu, [])
            self._keep(cpu, time.monotonic_ns(), runs)
        began = woke - late
        before = next((r for r in kept if r[0] <= began), kept[-1] if kept else None)
        if before is None:
            return ""
        at, then = before
        by_pid: dict[int, int] = {}
        for t, pid in here:
            if t in runs and t in then:
                by_pid[pid] = by_pid.get(pid, 0) + runs[t] - then[t]
        ran = sum(by_pid.values())
        window = woke - at
        span = min(late, window)
        if span <= 0 or ran < OWN_SHARE * span or ran < OWN_BUSY * window:
            return ""
        return names.get(max(by_pid, key=lambda pid: (by_pid[pid], -pid)), "")


def _open_thread(pid: int, tid: int) -> tuple[int, int, int] | None:
    try:
        schedstat = os.open(f"/proc/{pid}/task/{tid}/schedstat", os.O_RDONLY)
    except OSError:
        return None
    try:
        return pid, schedstat, os.open(f"/proc/{pid}/task/{tid}/stat", os.O_RDONLY)
    except OSError:
        os.close(schedstat)
        return None


def _cpu(stat: int) -> int | None:
    try:
        return int(os.pread(stat, 1024, 0).rsplit(b")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


class Meter:
    def __init__(self, tick_ns: int, threshold_ns: int) -> None:
        self.tick_ns, self.threshold_ns = max(tick_ns, MIN_TICK_NS), threshold_ns
        self.cpus = sorted(os.sched_getaffinity(0))
        self.lock = threading.Lock()
        self.figures = {c: CpuFigures() for c in self.cpus}
        self.watched: dict[str, int] = {}
        self.ours = Ours()
        self.delays: dict[int, int] = {}  # pid -> run-queue delay when last sampled
        self.stop = threading.Event()

    def run_cpu(self, cpu: int, out: int | None = None) -> None:
        """Sleep the tick on `cpu` until stopped; the thread given `out` also writes the
        slices there, as its wake-ups pass their ends (a thread of its own woke the
        interpreter 20 more times a second, a third of the stand-in's CPU)."""
        os.sched_setaffinity(0, {cpu})  # 0: the calling thread
        tick_ns, threshold = self.tick_ns, self.threshold_ns
        tick, now, sleep, lock = tick_ns / 1e9, time.monotonic_ns, time.sleep, self.lock
        # The CPUs' threads wake in turn, not at once: at once they wait for the GIL.
        sleep(tick * self.cpus.index(cpu) / len(self.cpus))
        start = time.time_ns()
        next_slice = start + SLICE_NS - start % SLICE_NS
        while not self.stop.is_set():
            due = now() + tick_ns
            sleep(tick)
            late = max(0, now() - due)
            event = None
            if late >= threshold:  # rare: its /proc reads outside the lock
                on = [n for n, pid in self.watched.items() if processor(pid) == cpu]
                event = [cpu, due, late, on, self.ours.held(cpu, late, due + late)]
            with lock:
                mine = self.figures[cpu]
                mine.add(late, tick_ns)
                if event is not None:
                    mine.hiccup(late, event)
            if out is not None and (end := time.time_ns()) >= next_slice:
                if start < end:
                    try:
                        write_frame(out, self.frame(start, end))
                    except OSError:  # the coordinator is gone
                        self.stop.set()
                    self.ours.read(self.cpus)
                start, next_slice = end, end + SLICE_NS - end % SLICE_NS

    def frame(self, start: int, end: int) -> dict[str, Any]:
        with self.lock:
            figures, self.figures = self.figures, {c: CpuFigures() for c in self.cpus}
        offset = time.time_ns() - time.monotonic_ns()
        counts: Counter[int] = Counter()
        cpus, events = {}, []
        for number, mine in figures.items():
            counts.update(mine.counts)
            cpus[str(number)] = [mine.wakes, mine.longest, mine.over, mine.lost]
            events += mine.events
        seen, waited = {}, {}
        for name, pid in self.watched.items():
            cpu, delay = processor(pid), run_delay(pid)
            if cpu is None or delay is None:
                continue
            seen[name] = cpu
            waited[name] = max(0, delay - self.delays.get(pid, delay))
            self.delays[pid] = delay
        return {
            "type": "slice",
            "start": start,
            "end": end,
            "hist": sorted(counts.items()),
            "cpus": cpus,
            "events": [[c, due + offset, *rest] for c, due, *rest in events],
            "seen": seen,
            "waited": waited,
        }


def calibrate(tick_ns: int) -> int:
    """The median lateness of a tick's sleep here (ns): the stand-in's resolution."""
    lates = []
    for _ in range(CALIBRATION):
        slept = time.monotonic_ns()
        time.sleep(tick_ns / 1e9)
        lates.append(max(0, time.monotonic_ns() - slept - tick_ns))
    return int(statistics.median(lates))


def read_orders(meter: Meter) -> None:
    """Watch orders from stdin; its end stops the meter."""
    import json
    import struct

    stdin = sys.stdin.buffer
    while header := stdin.read(4):
        if len(header) < 4:
            break
        (size,) = struct.unpack(">I", header)
        frame = json.loads(stdin.read(size))
        if frame.get("type") == "watch":
            meter.watched = {str(k): int(v) for k, v in frame.get("pids", {}).items()}
            own = {int(v): str(k) for k, v in frame.get("own", {}).items()}
            meter.ours.set({**own, **{pid: name for name, pid in meter.watched.items()}})
    meter.stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hiccup_fallback")
    parser.add_argument("--tick-us", type=int, default=1000)
    parser.add_argument("--threshold-us", type=int, default=1000)
    args = parser.parse_args(argv)
    meter = Meter(args.tick_us * 1000, args.threshold_us * 1000)
    resolution = calibrate(meter.tick_ns)
    out = sys.stdout.fileno()
    ready = {
        "type": "ready",
        "pid": os.getpid(),
        "meter": "python",
        "cpus": meter.cpus,
        "tick_ns": meter.tick_ns,
        "threshold_ns": meter.threshold_ns,
        "slice_ns": SLICE_NS,
        "resolution_ns": resolution,
    }
    write_frame(out, ready)
    for cpu in meter.cpus:
        writer = out if cpu == meter.cpus[0] else None
        threading.Thread(target=meter.run_cpu, args=(cpu, writer), daemon=True).start()
    read_orders(meter)  # until the coordinator closes our input
    return 0


if __name__ == "__main__":
    sys.exit(main())
