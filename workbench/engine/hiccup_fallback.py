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

SLICE = 0.05  # seconds between frames, aligned on the wall clock
CALIBRATION = 50  # ticks slept at start to measure the resolution
KEEP_BITS = 11  # HdrHistogram's 2048 sub-buckets (3 significant digits)
MAX_FILLED = 1_000_000


def quantise(value: int) -> int:
    s = value.bit_length() - KEEP_BITS
    return (value >> s) << s if s > 0 else value


def add_corrected(counts: Counter[int], late: int, tick: int) -> None:
    """One wake-up `late` ns late, and the wake-ups it swallowed (jHiccup's correction)."""
    counts[quantise(late)] += 1
    missed, filled = late, 0
    while missed > tick and filled < MAX_FILLED:
        missed -= tick
        filled += 1
        counts[quantise(missed)] += 1


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


class Meter:
    def __init__(self, tick_ns: int, threshold_ns: int) -> None:
        self.tick_ns, self.threshold_ns = tick_ns, threshold_ns
        self.cpus = sorted(os.sched_getaffinity(0))
        self.lock = threading.Lock()
        self.late: dict[int, list[int]] = {c: [] for c in self.cpus}
        self.events: list[list[Any]] = []
        self.watched: dict[str, int] = {}
        self.delays: dict[int, int] = {}  # pid -> run-queue delay when last sampled
        self.stop = threading.Event()

    def run_cpu(self, cpu: int) -> None:
        os.sched_setaffinity(0, {cpu})  # 0: the calling thread
        tick = self.tick_ns / 1e9
        while not self.stop.is_set():
            slept = time.monotonic_ns()
            time.sleep(tick)
            due = slept + self.tick_ns
            late = max(0, time.monotonic_ns() - due)
            event = None
            if late >= self.threshold_ns:
                on = [n for n, pid in self.watched.items() if processor(pid) == cpu]
                event = [cpu, due, late, on]
            with self.lock:
                self.late[cpu].append(late)
                if event:
                    self.events.append(event)

    def frame(self, start: int, end: int) -> dict[str, Any]:
        with self.lock:
            late, self.late = self.late, {c: [] for c in self.cpus}
            events, self.events = self.events, []
        offset = time.time_ns() - time.monotonic_ns()
        counts: Counter[int] = Counter()
        cpus = {}
        for cpu, values in late.items():
            for v in values:
                add_corrected(counts, v, self.tick_ns)
            over = [v for v in values if v >= self.threshold_ns]
            cpus[str(cpu)] = [len(values), max(values, default=0), len(over), sum(over)]
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
            "events": [[c, due + offset, length, on] for c, due, length, on in events],
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
    meter.stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hiccup_fallback")
    parser.add_argument("--tick-us", type=int, default=1000)
    parser.add_argument("--threshold-us", type=int, default=1000)
    args = parser.parse_args(argv)
    meter = Meter(args.tick_us * 1000, args.threshold_us * 1000)
    resolution = calibrate(meter.tick_ns)
    for cpu in meter.cpus:
        threading.Thread(target=meter.run_cpu, args=(cpu,), daemon=True).start()
    threading.Thread(target=read_orders, args=(meter,), daemon=True).start()
    out = sys.stdout.fileno()
    ready = {
        "type": "ready",
        "pid": os.getpid(),
        "meter": "python",
        "cpus": meter.cpus,
        "tick_ns": meter.tick_ns,
        "threshold_ns": meter.threshold_ns,
        "slice_ns": int(SLICE * 1e9),
        "resolution_ns": resolution,
    }
    write_frame(out, ready)
    start = time.time_ns()
    while not meter.stop.is_set():
        now = time.time()
        meter.stop.wait(SLICE - now % SLICE)
        end = time.time_ns()
        try:
            write_frame(out, meter.frame(start, end))
        except OSError:  # the coordinator is gone
            return 0
        start = end
    return 0


if __name__ == "__main__":
    sys.exit(main())
