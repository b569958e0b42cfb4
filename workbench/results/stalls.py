"""Machine stalls against a step's long waits: which hiccups count, and what they explain.

A hiccup counts for a step when it took a CPU the step's server or workers ran on: the
meter sees, every slice, the CPU each watched process is on (`Hiccups.seen`) and, for each
hiccup, which of them were on its CPU as it ended (`Hiccup.on`). With nothing watched (no
figures of where they ran), every CPU counts.

The meter also reads how long the server and the workers waited for a CPU while they
could run (`Hiccups.starved`, the longest spell): a machine full of other work delays them
that way without a hiccup of its own threads (a thread that sleeps is woken ahead of busy
ones), while a stopped server is not runnable and waits for nothing.

An interval's longest wait is *explained* by the machine when it is at most
`EXPLAIN_FACTOR` times the longest hiccup that counts in it (or that ended less than
`RECOVERY` s before it began: the queue a stall leaves takes a while to drain), or the
longest spell the server or a worker waited for a CPU, plus `EXPLAIN_SLACK_NS`. A server
stopped for 0.5 s leaves waits of 0.5 s that no 30 ms hiccup explains; a CPU taken for
30 ms leaves waits of about 30 ms. An interval is *clean* when no hiccup that counts fell
in it or that close before it, and no spell of waiting for a CPU: what the server did with
the machine out of the way (`Hiccups.clean`, the search's server knee).

`MachineUsage` sums these over a step's intervals as `cpu_usage.Usage` does its CPU figures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from workbench.results.hiccups import MAX_EVENTS, Hiccup, Hiccups
from workbench.results.metrics import Stats, all_ops_histogram, format_us

EXPLAIN_FACTOR = 2.0
EXPLAIN_SLACK_NS = 1_000_000
RECOVERY = 0.1  # seconds after a hiccup that its queue may still delay ops
WATCHED = ("server", "worker")  # the prefixes of the names the coordinator watches


def our_cpus(h: Hiccups) -> set[str] | None:
    """The CPUs the server and workers were seen on; None when none was seen."""
    cpus = {c for name, seen in h.seen.items() if name.startswith(WATCHED) for c in seen}
    return cpus or None


def counts(h: Hiccups) -> list[Hiccup]:
    """The hiccups that took a CPU our server or workers used."""
    ours = our_cpus(h)
    return [
        e
        for e in h.events
        if ours is None or e.cpu in ours or any(n.startswith(WATCHED) for n in e.on)
    ]


def starved_ns(h: Hiccups) -> int:
    """The longest spell the server or a worker waited for a CPU it could have run on."""
    return max((ns for name, ns in h.starved.items() if name.startswith(WATCHED)), default=0)


def _near(h: Hiccups, before: tuple[Hiccup, ...], start: float) -> list[Hiccup]:
    """This interval's hiccups that count, and those of the one before that ended less than
    `RECOVERY` s before `start`."""
    late = [e for e in before if e.at + e.length_ns / 1e9 > start - RECOVERY]
    return counts(h) + late


def explained(h: Hiccups, before: tuple[Hiccup, ...] = (), start: float = 0.0) -> bool:
    """Whether the interval's longest wait is within what its machine stalls explain."""
    longest = max((e.length_ns for e in _near(h, before, start)), default=0)
    longest = max(longest, starved_ns(h))
    return h.wait_ns <= EXPLAIN_FACTOR * longest + EXPLAIN_SLACK_NS


def clean(h: Hiccups, before: tuple[Hiccup, ...] = (), start: float = 0.0) -> bool:
    """No hiccup that counts fell in the interval, or just before it, and neither the
    server nor a worker spent a spell waiting for a CPU."""
    return not _near(h, before, start) and not starved_ns(h)


def mark_interval(stats: Stats, before: tuple[Hiccup, ...], start: float) -> None:
    """Fill in an interval's own facts (its longest wait, and its latencies when clean)
    once its hiccups are attached (`start`: its start, s into the step; `before`: the
    hiccups that counted in the interval before it): the coordinator calls this as it
    merges the interval."""
    h = stats.hiccups
    if h is None:
        return
    every = all_ops_histogram(stats)
    h.wait_ns = every.get_max_value() if every.get_total_count() else 0
    h.intervals = 1
    if clean(h, before, start):
        h.clean, h.clean_intervals, h.clean_duration = every, 1, stats.duration


@dataclass(frozen=True)
class MachineUsage:
    """What a step's intervals say of the machine's stalls, summed as they arrive."""

    measured: bool = False  # a meter ran for at least one interval
    hiccups: tuple[Hiccup, ...] = ()  # the longest hiccups that counted (`MAX_EVENTS`)
    count: int = 0  # hiccups that counted, all of them
    lost_ns: int = 0  # their lengths summed
    explained_ns: int = 0  # the longest wait of an interval its stalls explain
    # The longest wait of an interval whose workers were busy (the generator's own doing:
    # starting its clients, say), and of one neither the machine nor the load explains.
    generator_ns: int = 0
    unexplained_ns: int = 0
    unexplained_at: float = 0.0  # seconds into the step at that interval's end
    before: tuple[Hiccup, ...] = ()  # the last interval's hiccups that counted
    elapsed: float = 0.0  # the end of the last interval added
    remote_server: bool = False
    starved: tuple[tuple[str, int], ...] = ()  # per watched process, its longest spell

    def plus(self, h: Hiccups | None, duration: float, busy: bool = False) -> MachineUsage:
        """This usage with one more interval (its hiccups, `duration` s long, `busy`: a
        worker used a full core in it) added."""
        start = self.elapsed
        end = start + duration
        if h is None:
            return replace(self, elapsed=end, before=())
        mine = counts(h)
        kept = tuple(sorted((*self.hiccups, *mine), key=lambda e: -e.length_ns)[:MAX_EVENTS])
        out = replace(
            self,
            measured=True,
            hiccups=kept,
            count=self.count + len(mine),
            lost_ns=self.lost_ns + sum(e.length_ns for e in mine),
            before=tuple(mine),
            elapsed=end,
            remote_server=self.remote_server or h.remote_server,
            starved=_longest(self.starved, h.starved),
        )
        if explained(h, self.before, start):
            return replace(out, explained_ns=max(out.explained_ns, h.wait_ns))
        if busy:
            return replace(out, generator_ns=max(out.generator_ns, h.wait_ns))
        if h.wait_ns > out.unexplained_ns:
            return replace(out, unexplained_ns=h.wait_ns, unexplained_at=end)
        return out

    @property
    def longest(self) -> Hiccup | None:
        return max(self.hiccups, key=lambda e: e.length_ns, default=None)

    def starved_ns(self, threshold_ns: int) -> tuple[str, int] | None:
        """The watched process that waited longest for a CPU, if a spell of at least
        `threshold_ns`."""
        ours = [(n, ns) for n, ns in self.starved if n.startswith(WATCHED) and ns]
        name, ns = max(ours, key=lambda kv: kv[1], default=("", 0))
        return (name, ns) if ns and ns >= threshold_ns else None

    def stalled(self, threshold_ns: int) -> bool:
        """Whether the machine took the CPUs of the server or a worker at all."""
        return bool(self.count) or self.starved_ns(threshold_ns) is not None

    def explains(self) -> bool:
        """Whether the step's longest wait no interval's stalls explained is still within
        what its longest stall could explain: near a stall the meter placed an interval
        off, say. A server stopped for 0.5 s leaves a wait no 15 ms stall explains, and
        a step with one is not the machine's to excuse, whatever else it stalled."""
        longest = self.longest.length_ns if self.longest else 0
        longest = max([longest, *(ns for name, ns in self.starved if name.startswith(WATCHED))])
        return self.unexplained_ns <= EXPLAIN_FACTOR * longest + EXPLAIN_SLACK_NS

    def text(self, threshold_ns: int) -> str:
        """``CPU 1 lost 33.0ms at 12.4 s; 14 hiccups over 1.00ms; server waited 40.2ms for
        a CPU``, or "" with none of them."""
        over = format_us(threshold_ns / 1000) if threshold_ns else "the threshold"
        parts = []
        if longest := self.longest:
            n = self.count
            parts.append(f"{longest.text()}; {n:,} hiccup{'s' * (n != 1)} over {over}")
        if starved := self.starved_ns(threshold_ns):
            name, ns = starved
            parts.append(f"{name} waited {format_us(ns / 1000)} for a CPU")
        return "; ".join(parts)


def _longest(kept: tuple[tuple[str, int], ...], new: dict[str, int]) -> tuple[tuple[str, int], ...]:
    out = dict(kept)
    for name, ns in new.items():
        out[name] = max(out.get(name, 0), ns)
    return tuple(sorted(out.items()))
