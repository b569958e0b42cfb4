"""The load machine's hiccups, measured beside every step: the meter's figures.

A hiccup meter (`workbench-native --hiccup`, or its Python stand-in) runs on each load
machine while a run goes on: one thread per CPU sleeps a fixed tick and records how late
it wakes. A CPU taken from everyone (a kernel thread, the host, a real-time task) shows
as a late wake-up on that CPU. The coordinator lays the meter's slices on each interval
(`workbench.engine.hiccup_meter`) and the interval carries them in `Stats.hiccups`:

- ``hist``: how late the wake-ups of every CPU were, in ns, corrected for coordinated
  omission as jHiccup does (a wake-up 30 ms late also counts the 29 ticks it swallowed),
  so its percentiles are what an event arriving at any moment waited for its CPU;
- ``cpus``: per CPU, ``[wake-ups, longest ns, hiccups, ns lost to them]``;
- ``events``: the longest hiccups (at least the threshold, 1 ms by default), each with its
  CPU, when it began (seconds into the step's measured phase, as `Interval.elapsed`), its
  length, the watched processes (``server``, ``worker 0``) seen on that CPU as it
  ended, and which of the run's own processes held the CPU for it (``own``: the load's
  own CPU sharing, which `workbench.results.stalls` does not count as the machine's);
  ``dropped`` counts those not kept;
- ``seen``: the CPUs each watched process was seen on during the span;
- ``waited``: how long each watched process waited for a CPU while it could run (its
  run-queue delay), and ``starved`` the longest spell of it (consecutive slices in which
  it waited at least `STARVED_SHARE` of the slice): a CPU given to something else;
- ``wait_ns``: the span's longest op latency, which the verdict lays against the hiccups;
- ``clean``: the latencies of the intervals with no machine stall (`workbench.results.stalls`),
  what the server did when the machine left it alone, and how many intervals those were.

Pure data: merging, encoding and the figures every face shows. The rules that read them
are in `workbench.results.stalls`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from workbench.results.histograms import Recorded, decode, encode, format_us, new_histogram

MAX_EVENTS = 32  # the longest hiccups a span keeps; the rest are counted (`dropped`)
# A slice in which a watched process waited for a CPU at least this share of the slice is
# part of a spell of starvation (sharing two CPUs with each other, the server and a worker
# wait a little in every slice).
STARVED_SHARE = 0.25
NATIVE = "native"  # the meter's name for the native binary's threads


@dataclass(frozen=True)
class Hiccup:
    """One hiccup: `cpu` taken for `length_ns` from `at` s into the measured phase."""

    cpu: str  # "1", or "10.77.0.3/1" on another load machine
    at: float
    length_ns: int
    on: tuple[str, ...] = ()  # watched processes seen on that CPU as it ended
    # Which of the run's own processes ("server", "worker 0", "coordinator") held the CPU
    # for it, "" if none did: the load's own CPU sharing, not a stall of the machine
    # (`stalls.counts`).
    own: str = ""

    def text(self) -> str:
        return f"CPU {self.cpu} lost {format_us(self.length_ns / 1000)} at {self.at:.1f} s"

    def to_list(self) -> list[Any]:
        out = [self.cpu, round(self.at, 4), self.length_ns, list(self.on)]
        return [*out, self.own] if self.own else out

    @classmethod
    def from_list(cls, data: list[Any]) -> Hiccup:
        cpu, at, length, on, *own = data
        held = str(own[0] or "") if own else ""
        return cls(str(cpu), float(at), int(length), tuple(str(x) for x in on), held)


@dataclass
class Hiccups:
    """The meter's figures over a span (an interval, a step)."""

    meter: str = ""  # "native", or the Python stand-in with its resolution
    tick_ns: int = 0
    threshold_ns: int = 0
    hist: HdrHistogram = field(default_factory=new_histogram)
    cpus: dict[str, list[int]] = field(default_factory=dict)
    events: list[Hiccup] = field(default_factory=list)
    dropped: int = 0
    seen: dict[str, list[str]] = field(default_factory=dict)
    waited: dict[str, int] = field(default_factory=dict)
    starved: dict[str, int] = field(default_factory=dict)
    wait_ns: int = 0
    remote_server: bool = False  # the server runs on a machine no meter watches
    intervals: int = 0
    clean_intervals: int = 0
    clean: HdrHistogram | None = None
    clean_duration: float = 0.0

    # --- figures -------------------------------------------------------------------
    def percentiles_us(self, ticks: tuple[float, ...] = (99.0, 99.9)) -> dict[float, float]:
        """Wake-up lateness at `ticks` (µs), over every CPU."""
        at = Recorded(self.hist).values_at(ticks)
        return {t: v / 1000 for t, v in at.items()}

    @property
    def max_us(self) -> float:
        return self.hist.get_max_value() / 1000 if self.hist.get_total_count() else 0.0

    @property
    def count(self) -> int:
        """Hiccups over the threshold, on every CPU."""
        return sum(c[2] for c in self.cpus.values())

    @property
    def lost_ns(self) -> int:
        return sum(c[3] for c in self.cpus.values())

    @property
    def longest(self) -> Hiccup | None:
        return max(self.events, key=lambda e: e.length_ns, default=None)

    def summary(self) -> str:
        """One line for people: ``hiccups p99 0.12ms, p99.9 2.10ms, max 33.0ms; 14 over 1ms
        (longest: CPU 1 lost 33.0ms at 12.4 s)``."""
        if not self.hist.get_total_count():
            return "hiccups not measured"
        at = self.percentiles_us()
        text = (
            f"hiccups p99 {format_us(at[99.0])}, p99.9 {format_us(at[99.9])}, "
            f"max {format_us(self.max_us)}"
        )
        threshold = format_us(self.threshold_ns / 1000)
        text += f"; {self.count:,} over {threshold}"
        if longest := self.longest:
            text += f" (longest: {longest.text()})"
        return text

    # --- merging -------------------------------------------------------------------
    def merge(self, other: Hiccups) -> None:
        """Add `other` in: a later interval, or another load machine's CPUs."""
        self.meter = self.meter or other.meter
        self.tick_ns = self.tick_ns or other.tick_ns
        self.threshold_ns = self.threshold_ns or other.threshold_ns
        self.hist.add(other.hist)
        for cpu, (wakes, longest, over, lost) in other.cpus.items():
            mine = self.cpus.setdefault(cpu, [0, 0, 0, 0])
            mine[0] += wakes
            mine[1] = max(mine[1], longest)
            mine[2] += over
            mine[3] += lost
        self.add_events(other.events)
        self.dropped += other.dropped
        for name, cpus in other.seen.items():
            self.seen[name] = sorted({*self.seen.get(name, []), *cpus}, key=_cpu_order)
        for name, ns in other.waited.items():
            self.waited[name] = self.waited.get(name, 0) + ns
        for name, ns in other.starved.items():
            self.starved[name] = max(self.starved.get(name, 0), ns)
        self.wait_ns = max(self.wait_ns, other.wait_ns)
        self.remote_server = self.remote_server or other.remote_server
        self.intervals += other.intervals
        self.clean_intervals += other.clean_intervals
        self.clean_duration += other.clean_duration
        if other.clean is not None:
            if self.clean is None:
                self.clean = new_histogram()
            self.clean.add(other.clean)

    def add_events(self, events: list[Hiccup]) -> None:
        """Keep the `MAX_EVENTS` longest, in time order; count the others."""
        both = self.events + events
        if len(both) > MAX_EVENTS:
            kept = sorted(both, key=lambda e: -e.length_ns)[:MAX_EVENTS]
            self.dropped += len(both) - MAX_EVENTS
            both = kept
        self.events = sorted(both, key=lambda e: e.at)

    # --- encoding ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "meter": self.meter,
            "tick_ns": self.tick_ns,
            "threshold_ns": self.threshold_ns,
            "hist": encode(self.hist),
            "cpus": self.cpus,
            "events": [e.to_list() for e in self.events],
            "dropped": self.dropped,
            "seen": self.seen,
            "waited": self.waited,
            "starved": self.starved,
            "wait_ns": self.wait_ns,
            "intervals": self.intervals,
            "clean_intervals": self.clean_intervals,
            "clean_duration": round(self.clean_duration, 6),
        }
        if self.remote_server:
            out["remote_server"] = True
        if self.clean is not None:
            out["clean"] = encode(self.clean)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hiccups:
        out = cls(
            meter=str(data.get("meter", "")),
            tick_ns=int(data.get("tick_ns", 0)),
            threshold_ns=int(data.get("threshold_ns", 0)),
            cpus={str(k): [int(x) for x in v] for k, v in dict(data.get("cpus", {})).items()},
            events=[Hiccup.from_list(e) for e in data.get("events", [])],
            dropped=int(data.get("dropped", 0)),
            seen={str(k): [str(c) for c in v] for k, v in dict(data.get("seen", {})).items()},
            waited={str(k): int(v) for k, v in dict(data.get("waited", {})).items()},
            starved={str(k): int(v) for k, v in dict(data.get("starved", {})).items()},
            wait_ns=int(data.get("wait_ns", 0)),
            remote_server=bool(data.get("remote_server", False)),
            intervals=int(data.get("intervals", 0)),
            clean_intervals=int(data.get("clean_intervals", 0)),
            clean_duration=float(data.get("clean_duration", 0.0)),
        )
        if data.get("hist"):
            out.hist = decode(data["hist"])
        if data.get("clean"):
            out.clean = decode(data["clean"])
        return out


def merged(parts: list[Hiccups | None]) -> Hiccups | None:
    """The parts added up, or None when none was measured."""
    out: Hiccups | None = None
    for part in parts:
        if part is None:
            continue
        if out is None:
            out = Hiccups()
        out.merge(part)
    return out


def _cpu_order(cpu: str) -> tuple[int, str]:
    return (int(cpu), "") if cpu.isdigit() else (1 << 30, cpu)


def meter_text(h: Hiccups) -> str:
    """How the figures were measured: ``native meter, 1.00ms tick``."""
    tick = format_us(h.tick_ns / 1000) if h.tick_ns else "?"
    return f"{h.meter or 'unknown'} meter, {tick} tick"


def lines(h: Hiccups | None) -> list[str]:
    """A step's hiccups as the text faces list them, below its latency percentiles."""
    if h is None or not h.hist.get_total_count():
        return []
    at = h.percentiles_us((50.0, 99.0, 99.9))
    out = [
        f"Machine hiccups ({meter_text(h)}): p50 {format_us(at[50.0])}  "
        f"p99 {format_us(at[99.0])}  p99.9 {format_us(at[99.9])}  max {format_us(h.max_us)}"
    ]
    threshold = format_us(h.threshold_ns / 1000)
    for cpu, (_, longest, over, lost) in sorted(h.cpus.items(), key=lambda kv: _cpu_order(kv[0])):
        if over:
            out.append(
                f"  CPU {cpu}: {over:,} over {threshold}, {format_us(lost / 1000)} lost, "
                f"longest {format_us(longest / 1000)}"
            )
    if not h.count:
        out.append(f"  no hiccup over {threshold}")
    if longest_event := h.longest:
        on = f" ({', '.join(longest_event.on)} there)" if longest_event.on else ""
        out.append(f"  longest: {longest_event.text()}{on}")
    if h.remote_server:
        out.append("  the server's machine is not measured (a remote server)")
    return out
