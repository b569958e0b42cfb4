"""Machine stalls against a step's long waits: which hiccups count, and what they explain.

A hiccup counts for a step when it took a CPU the step's server or workers ran on: the
meter sees, every slice, the CPU each watched process is on (`Hiccups.seen`) and, for each
hiccup, which of them were on its CPU as it ended (`Hiccup.on`). With nothing watched (no
figures of where they ran), every CPU counts. A hiccup the run's own processes (the
coordinator, the workers, the server) held the CPU through does not count (`Hiccup.own`):
on a machine the load fills, the meter's thread waits behind them as any woken thread
does, and that is the load's own CPU sharing; what it cost the server is the server's own
wait for a CPU, which counts (`starved`, below). Such a hiccup still explains a long wait
when a worker or the coordinator held the CPU (the server or a worker waited behind it as
the meter did: the load's doing, not the server's), not when the server did (`delays`).

The meter also reads how long the server and the workers waited for a CPU while they
could run (`Hiccups.starved`, the longest spell): a machine full of other work delays them
that way without a hiccup of its own threads (a thread that sleeps is woken ahead of busy
ones), while a stopped server is not runnable and waits for nothing.

An interval's longest wait is *explained* by the machine when it is within what its
stalls could leave behind (`allowed_ns`): `EXPLAIN_FACTOR` times the stall, times the
drain factor 1/(1-rho) of the server's utilization rho (capped at `DRAIN_CAP`), plus
`EXPLAIN_SLACK_NS`. The stall is the longest run of hiccups that count in it (or that
ended less than `RECOVERY` s before it began: the queue a stall leaves takes a while to
drain) taken as one (`chain_ns`): hiccups that overlap or follow each other on the
server's and the workers' CPUs delay the same ops one after the other; or the longest
spell the server or a worker waited for a CPU. The drain factor: a stall of s at
utilization rho leaves a backlog that takes s*rho/(1-rho) more to drain, s/(1-rho) in
all, and the stalls and sub-threshold wake-up delays within that span land on ops already
late; so near capacity the longest wait is several times the stall the meter saw. A
server stopped for 0.5 s leaves waits of 0.5 s that no 30 ms hiccup explains at any
utilization the verdict reads as not server-bound; a CPU taken for 30 ms leaves waits of
30 to 100 ms. The utilization is the step's, known only with its verdict (the server's
cores come from its system), so each interval's wait is kept against its stall
(`LateWait`) and judged when the utilization is given (`MachineUsage.unexplained`).
An interval is *clean* when no hiccup that counts fell in it or that close before it,
and no spell of waiting for a CPU: what the server did with the machine out of the way
(`Hiccups.clean`, the search's server knee).

`MachineUsage` sums these over a step's intervals as `cpu_usage.Usage` does its CPU figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from workbench.results.hiccups import MAX_EVENTS, Hiccup, Hiccups
from workbench.results.metrics import Stats, all_ops_histogram, format_us

EXPLAIN_FACTOR = 2.0
EXPLAIN_SLACK_NS = 1_000_000
# The drain factor 1/(1-rho) at most: rho = 0.75. Past SERVER_BUSY (0.85) the verdict is
# server-bound anyway; the cap keeps a long server stop (0.5 s against 30 ms hiccups,
# 2 x 4 x 30 ms + 1 ms = 241 ms) the server's near capacity too.
DRAIN_CAP = 4.0
# A hiccup joins the run of those before it when it begins at most this share of the
# run's stalled time after the run ended: the backlog the run left takes that long to
# drain at rho = 1/2 (s*rho/(1-rho) = s), so ops it delayed are still waiting.
CHAIN_GAP_SHARE = 1.0
RECOVERY = 0.1  # seconds after a hiccup that its queue may still delay ops
WATCHED = ("server", "worker")  # the prefixes of the names the coordinator watches


def our_cpus(h: Hiccups) -> set[str] | None:
    """The CPUs the server and workers were seen on; None when none was seen."""
    cpus = {c for name, seen in h.seen.items() if name.startswith(WATCHED) for c in seen}
    return cpus or None


def on_our_cpus(h: Hiccups) -> list[Hiccup]:
    """The hiccups on a CPU our server or workers used, whoever held it."""
    ours = our_cpus(h)
    return [
        e
        for e in h.events
        if ours is None or e.cpu in ours or any(n.startswith(WATCHED) for n in e.on)
    ]


def counts(h: Hiccups) -> list[Hiccup]:
    """The hiccups that took a CPU our server or workers used from them: not those the
    run's own processes held (`Hiccup.own`)."""
    return [e for e in on_our_cpus(h) if not e.own]


def delays(h: Hiccups) -> list[Hiccup]:
    """The hiccups that may explain a long wait: those that count, and those the run's
    generator (a worker, the coordinator) held, behind which the server or a worker waited
    as the meter did; not those the server held: it ran through them, and a wait then is
    its own."""
    return [e for e in on_our_cpus(h) if not e.own.startswith("server")]


def starved_ns(h: Hiccups) -> int:
    """The longest spell the server or a worker waited for a CPU it could have run on."""
    return max((ns for name, ns in h.starved.items() if name.startswith(WATCHED)), default=0)


def drain_factor(load: float | None) -> float:
    """1/(1-rho), capped at `DRAIN_CAP`: how much longer than a stall the backlog it left
    delays ops at the server's utilization `load` (None, unknown: 1)."""
    if load is None or load <= 0:
        return 1.0
    if load >= 1 - 1 / DRAIN_CAP:
        return DRAIN_CAP
    return 1 / (1 - load)


def allowed_ns(stall_ns: int, load: float | None) -> float:
    """The longest wait a stall of `stall_ns` explains at the server's utilization `load`."""
    return EXPLAIN_FACTOR * drain_factor(load) * stall_ns + EXPLAIN_SLACK_NS


def chain_ns(stalls: Iterable[Hiccup]) -> int:
    """The longest run of stalls taken as one, from the first's start to the last's end:
    each begins while the ones before it overlap it or their backlog still drains
    (`CHAIN_GAP_SHARE`), on whichever of our CPUs; an op delayed by the first waits
    through them all."""
    spans = sorted((e.at, e.at + e.length_ns / 1e9) for e in stalls)
    best = 0.0
    first = end = stalled = 0.0
    for k, (begin, finish) in enumerate(spans):
        if k == 0 or begin > end + CHAIN_GAP_SHARE * stalled:
            first, end, stalled = begin, finish, finish - begin
        else:
            stalled += max(0.0, finish - max(begin, end))
            end = max(end, finish)
        best = max(best, end - first)
    return round(best * 1e9)


def _near(
    h: Hiccups, before: tuple[Hiccup, ...], start: float, which: Callable[[Hiccups], list[Hiccup]]
) -> list[Hiccup]:
    """This interval's hiccups `which` keeps, and those of the one before (`before`, kept
    alike) that ended less than `RECOVERY` s before `start`."""
    late = [e for e in before if e.at + e.length_ns / 1e9 > start - RECOVERY]
    return which(h) + late


def stall_ns(h: Hiccups, before: tuple[Hiccup, ...] = (), start: float = 0.0) -> int:
    """The interval's stall: its longest run of hiccups that may explain a wait (`delays`,
    `chain_ns`; `before`: the last interval's), or its longest spell of the server or a
    worker waiting for a CPU."""
    return max(chain_ns(_near(h, before, start, delays)), starved_ns(h))


def explained(
    h: Hiccups, before: tuple[Hiccup, ...] = (), start: float = 0.0, load: float | None = None
) -> bool:
    """Whether the interval's longest wait is within what its machine stalls explain at
    the server's utilization `load`."""
    return h.wait_ns <= allowed_ns(stall_ns(h, before, start), load)


def clean(h: Hiccups, before: tuple[Hiccup, ...] = (), start: float = 0.0) -> bool:
    """No hiccup that counts fell in the interval, or just before it, and neither the
    server nor a worker spent a spell waiting for a CPU."""
    return not _near(h, before, start, counts) and not starved_ns(h)


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
class LateWait:
    """An interval's longest wait that its stall does not explain at every utilization,
    kept to be judged at the step's (`MachineUsage.unexplained`)."""

    wait_ns: int
    stall_ns: int  # the interval's stall (`stall_ns`)
    at: float  # seconds into the step at the interval's end

    def explained(self, load: float | None) -> bool:
        return self.wait_ns <= allowed_ns(self.stall_ns, load)

    def covers(self, other: LateWait) -> bool:
        """Whether this wait is as long as `other` and unexplained wherever `other` is
        (its wait past the slack is at least as many times its stall): `other` then
        never decides a step and need not be kept."""
        if self.wait_ns < other.wait_ns:
            return False
        mine, theirs = self.wait_ns - EXPLAIN_SLACK_NS, other.wait_ns - EXPLAIN_SLACK_NS
        return mine * other.stall_ns >= theirs * self.stall_ns


MAX_LATE = 32  # the late waits a step keeps (those no other covers), longest first


@dataclass(frozen=True)
class MachineUsage:
    """What a step's intervals say of the machine's stalls, summed as they arrive."""

    measured: bool = False  # a meter ran for at least one interval
    hiccups: tuple[Hiccup, ...] = ()  # the longest hiccups that counted (`MAX_EVENTS`)
    count: int = 0  # hiccups that counted, all of them
    lost_ns: int = 0  # their lengths summed
    explained_ns: int = 0  # the longest wait of an interval its stalls explain at any load
    # The longest wait of an interval whose workers were busy (the generator's own doing:
    # starting its clients, say) that its stalls do not explain.
    generator_ns: int = 0
    # The waits of intervals whose stalls explain them only at some utilization, or not at
    # all (`LateWait`): the step's utilization decides (`unexplained`).
    late: tuple[LateWait, ...] = ()
    stall_ns: int = 0  # the longest stall of an interval (`stall_ns`)
    before: tuple[Hiccup, ...] = ()  # the last interval's hiccups that may explain (`delays`)
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
        stall = stall_ns(h, self.before, start)  # `before`: the last interval's `delays`
        out = replace(
            self,
            measured=True,
            hiccups=kept,
            count=self.count + len(mine),
            lost_ns=self.lost_ns + sum(e.length_ns for e in mine),
            stall_ns=max(self.stall_ns, stall),
            before=tuple(delays(h)),
            elapsed=end,
            remote_server=self.remote_server or h.remote_server,
            starved=_longest(self.starved, h.starved),
        )
        if h.wait_ns <= allowed_ns(stall, None):
            return replace(out, explained_ns=max(out.explained_ns, h.wait_ns))
        if busy:
            return replace(out, generator_ns=max(out.generator_ns, h.wait_ns))
        return replace(out, late=_keep(out.late, LateWait(h.wait_ns, stall, end)))

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

    def unexplained(self, load: float | None = None) -> LateWait | None:
        """The longest wait of an interval that neither its stalls, at the server's
        utilization `load` (its CPU share of its cores; None: unknown), nor a busy worker
        explain."""
        late = [w for w in self.late if not w.explained(load)]
        return max(late, key=lambda w: w.wait_ns, default=None)

    def unexplained_ns(self, load: float | None = None) -> int:
        wait = self.unexplained(load)
        return wait.wait_ns if wait else 0

    def explains(self, load: float | None = None) -> bool:
        """Whether the step's longest wait no interval's stalls explained is still within
        what its longest stall could explain at utilization `load`: near a stall the meter
        placed an interval off, say. A server stopped for 0.5 s leaves a wait no 15 ms
        stall explains, and a step with one is not the machine's to excuse, whatever else
        it stalled."""
        longest = self.longest.length_ns if self.longest else 0
        spells = (ns for name, ns in self.starved if name.startswith(WATCHED))
        stall = max(self.stall_ns, longest, *spells)
        return self.unexplained_ns(load) <= allowed_ns(stall, load)

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


def _keep(kept: tuple[LateWait, ...], new: LateWait) -> tuple[LateWait, ...]:
    """`kept` with `new`, leaving out the waits another covers, at most `MAX_LATE`."""
    if any(w.covers(new) for w in kept):
        return kept
    out = [w for w in kept if not new.covers(w)] + [new]
    return tuple(sorted(out, key=lambda w: -w.wait_ns)[:MAX_LATE])
