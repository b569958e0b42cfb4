"""What limited a step's figure: the verdict, from the CPU each side used and the schedule kept.

Every step gets one of:

- **server-bound**: the server used at least `SERVER_BUSY` of its cores (one core for a
  single-threaded server such as Redis). The figure is the server's capacity for this
  workload.
- **machine-bound**: the load machine was at least `MACHINE_BUSY` busy and our own processes
  (workers and server, which share it) used at least `MACHINE_OURS` of its CPUs; or it was
  that busy with other processes (a starved worker looks idle, and reads replies late)
  and the step shows no server stall. The figure is a lower bound of both sides.
- **generator-bound**: a worker used at least `WORKER_BUSY` of a core while the server had
  headroom. The figure is a lower bound of the server's capacity.
- **fell behind** (open loop): the generator could not keep its schedule — fewer than
  `KEPT_SCHEDULE` of the offered ops were issued, or the send lag (actual send minus
  intended start) was large against the latency (`lagged`) — and a worker was busy; or
  fewer were issued while the clients had room (rate x p50 latency under
  `TOO_FEW_SHARE` of them). The latencies include queueing in the clients. (A worker
  starved by other processes is machine-bound.)
- **machine stalled** (open loop): the long waits (at least `STALL_FACTOR` times the p50)
  are all explained by the load machine's stalls on the CPUs the server or the workers
  used: the hiccup meter's (a CPU taken from everyone) or their waits for a CPU
  (`workbench.results.stalls`). Never read as the server's.
- **server stalled** (open loop): the clients waited on replies while the workers idled
  (fewer than `KEPT_SCHEDULE` of the offered ops issued, or sends late by about as much
  as the latency, which for a busy client runs from the intended start), and one wait
  was at least `STALL_FACTOR` times the p50 (or ops went unanswered: timed out or
  abandoned, `UNANSWERED_KINDS`) while a typical op left the clients room
  (rate x p50 latency below `STALL_ROOM` times the clients). Ops due meanwhile went out
  late or never; the latencies include the wait (coordinated omission corrected). Where
  the hiccup meter ran, that wait is in an interval neither the machine's stalls nor a
  busy worker explain.
- **too few clients** (open loop): fewer than `KEPT_SCHEDULE` of the offered ops issued
  while the workers idled on a machine with CPUs to spare, with no such stall: each
  client has one op in flight, and at this latency they cannot carry the rate (rate x
  p50 latency, at least `TOO_FEW_SHARE` of the clients, says how many it needs).
- **sent late** (open loop): the offered rate was kept in count, neither side was busy,
  but the sends were late against the latency (`lagged`): the load arrived later and
  burstier than scheduled. Each latency runs from its send (an idle client's), so it is
  the server's at the load that came.
- **on schedule** (open loop): the offered rate was kept, in count and in time, and
  neither side was busy. The latencies are the server's and the network's at this rate.
- **latency-bound** (closed loop): neither side was busy; throughput is clients divided by
  latency.
- **unknown**: the step recorded no CPU figures and no offered rate (runs of an older
  workbench); every face then leaves the verdict out.

The rules are tried in that order: a busy server explains a figure before a busy machine,
and a busy machine before a busy worker (adding workers to a full machine helps nothing).
A machine other processes fill comes next when idle clients sent late (starved), then a
machine stall (long waits the machine's own stalls explain), then a server stall (its
signature is plain even on a full machine), then the full machine again (a starved
worker's clients seem to wait on replies), then too few clients, fell behind, sent late.
No verdict of a step that kept its schedule advises a lower rate. No verdict contradicts
a figure printed beside it: `workbench.results.verdict_rules` states what each one claims, and
a test holds every verdict to it.
Each verdict carries its evidence in one line, e.g. ``generator-bound: workers 97% 95% of a
core, server 41% of 1 core — the figure is a lower bound of the server's capacity: add
workers or use the native engine``.

With workers on several machines (a Ray cluster), each load machine's busy share is read
on that machine (``stats.server["hosts"]``, see engine/hostload.py) apart from the
coordinator's own: *machine-bound* then names the machine that was full, e.g.
``machine-bound: host 10.77.0.3 98% busy on 4 CPUs (3.70 of them ours), ...``.

Figures come from the step's intervals: worker CPU (``stats.cpu``, seconds per worker),
the offered op count and the send-lag histogram (open loop), and from ``stats.server``
the server's CPU seconds (``cpu_seconds``), its usable cores (``cpu_cores``) and the load
machine's busy share (``host_busy``, 0..1 over ``host_cpus``). The server's cores, when
the coordinator does not report them: Redis has one (``io_threads`` when managed with
more), memcached its ``-t`` threads (``target.server.threads``, default 4), others what
the server reports as ``threads``, else the load machine's CPUs.

A native worker's idle polling (``stats.server["idle_poll"]``, seconds per worker) is left
out of its busy share and of the machine's: it polls rather than sleeps only while its
next send or reply is nearer than a wake-up would cost, so that CPU stands in for
wake-ups, not for work the generator could not keep up with (``worker 31% of a core (+64%
idle polling)``).

Everything here is a pure function of recorded data; thresholds are the constants below,
and the busy shares (`WORKER_BUSY`, `SERVER_BUSY`, `MACHINE_BUSY`, `MACHINE_OURS`) those of
`workbench.results.cpu_usage`, which sums a step's CPU figures (`Usage`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.results.cpu_usage import MACHINE_BUSY as MACHINE_BUSY
from workbench.results.cpu_usage import MACHINE_OURS as MACHINE_OURS
from workbench.results.cpu_usage import SERVER_BUSY as SERVER_BUSY
from workbench.results.cpu_usage import WORKER_BUSY as WORKER_BUSY
from workbench.results.cpu_usage import Usage as Usage
from workbench.results.metrics import Recorded, Stats, format_us, merged, new_histogram
from workbench.results.verdict_context import Context as Context
from workbench.results.verdict_context import context_for as context_for
from workbench.results.verdict_figures import load_of, open_loop_figures
from workbench.results.verdict_figures import server_cores as server_cores
from workbench.results.verdict_text import cpu_text, join_parts, lead, schedule_text
from workbench.sdk.ops import RECEIVED

# --- thresholds: the one place they are set ------------------------------------------------
KEPT_SCHEDULE = 0.95  # open loop: issued / offered below this means the schedule was missed
# Open loop: the sends were late when the send lag's p99 is above SEND_LAG_FLOOR_NS and at
# least SEND_LAG_SHARE of the latency's p99 (late against what is measured, not absolutely).
SEND_LAG_FLOOR_NS = 100_000
SEND_LAG_SHARE = 0.5
# Open loop, clients that waited on replies while the workers idled: a stall when the
# longest wait is at least STALL_FACTOR times the p50 and a typical op left the clients
# room (rate x p50 latency, the ops in flight it needs, below STALL_ROOM of them: at one
# op in flight each, the clients could carry the rate at the typical latency).
STALL_FACTOR = 100
# Error kinds of ops whose answer never came (a timeout; still in flight at the end): a
# wait at least as long as the reply timeout, which the latencies do not hold.
UNANSWERED_KINDS = ("timeout", "abandoned")
STALL_ROOM = 1.0
# Open loop, behind with no stall: too few clients when rate x p50 latency needs at least
# this share of them in flight (a p50 understates the time a client is taken per op);
# below it, the clients had room and the generator did not send.
TOO_FEW_SHARE = 0.5

SERVER_BOUND = "server-bound"
MACHINE_BOUND = "machine-bound"
GENERATOR_BOUND = "generator-bound"
FELL_BEHIND = "fell behind"
SENT_LATE = "sent late"
SERVER_STALLED = "server stalled"
MACHINE_STALLED = "machine stalled"
TOO_FEW_CLIENTS = "too few clients"
ON_SCHEDULE = "on schedule"
LATENCY_BOUND = "latency-bound"
UNKNOWN = "unknown"
KINDS = (
    SERVER_BOUND,
    MACHINE_BOUND,
    GENERATOR_BOUND,
    FELL_BEHIND,
    SENT_LATE,
    MACHINE_STALLED,
    SERVER_STALLED,
    TOO_FEW_CLIENTS,
    ON_SCHEDULE,
    LATENCY_BOUND,
    UNKNOWN,
)
# A generator that fails, not the target: a search stops there rather than report a knee.
GENERATOR_KINDS = (GENERATOR_BOUND, MACHINE_BOUND, FELL_BEHIND)

ADVICE = {
    SERVER_BOUND: "the figure is the server's capacity for this workload",
    MACHINE_BOUND: (
        "the load machine's CPUs are full (server and load share them, with anything else "
        "running), so the figure is a lower bound of both: give the server its own cores, "
        "load it from another machine, or stop what else runs"
    ),
    GENERATOR_BOUND: (
        "the figure is a lower bound of the server's capacity: add workers or use the native engine"
    ),
    FELL_BEHIND: (
        "the generator did not keep its schedule, so latencies include queueing in the "
        "clients: add workers or use the native engine"
    ),
    SERVER_STALLED: (
        "the server stalled: the clients waited on its answers, so ops due meanwhile went out "
        "late or never, and the latencies include the wait; look at the server, not the load"
    ),
    SENT_LATE: (
        "the generator sent late (its timer, its loop or its share of the CPUs), so the load "
        "came later and burstier than scheduled; each latency runs from its send and is the "
        "server's at that load: add workers or use the native engine"
    ),
    MACHINE_STALLED: (
        "the load machine took the CPUs the server or the workers ran on (a kernel thread, "
        "the host, another task), and the long waits are those stalls, not the server's: "
        "`workbench doctor` shows this machine's hiccups; run where nothing takes the CPUs"
    ),
    TOO_FEW_CLIENTS: (
        "each client has one op in flight, and at this latency the clients cannot issue the "
        "offered rate: add clients (load.concurrency)"
    ),
    ON_SCHEDULE: (
        "the offered rate was kept with neither side busy: the latencies are the server's and "
        "the network's at this rate"
    ),
    LATENCY_BOUND: (
        "neither side is busy: throughput is clients divided by latency; add clients to "
        "load the server harder"
    ),
    UNKNOWN: "the verdict needs them (a run of an older workbench?)",
}
# A step the native engine ran, or of a system with no native strategy (the in-process
# cache): its advice cannot offer the native engine.
NATIVE_ADVICE = {
    GENERATOR_BOUND: "the figure is a lower bound of the server's capacity: add workers",
    SENT_LATE: (
        "the generator sent late (its timer or its share of the CPUs), so the load came "
        "later and burstier than scheduled; each latency runs from its send and is the "
        "server's at that load: add workers, or see `workbench doctor` for this machine"
    ),
    FELL_BEHIND: (
        "the generator did not keep its schedule, so latencies include queueing in the "
        "clients: add workers"
    ),
}
BADGES = {
    SERVER_BOUND: "server-bound",
    MACHINE_BOUND: "machine-bound",
    GENERATOR_BOUND: "generator-bound",
    FELL_BEHIND: "fell behind",
    SENT_LATE: "sent late",
    SERVER_STALLED: "server stalled",
    MACHINE_STALLED: "machine stalled",
    TOO_FEW_CLIENTS: "too few clients",
    ON_SCHEDULE: "on schedule",
    LATENCY_BOUND: "latency-bound",
    UNKNOWN: "",
}


@dataclass(frozen=True)
class Verdict:
    kind: str
    evidence: str  # the numbers, e.g. "workers 97% 95% of a core, server 41% of 1 core"
    figures: Mapping[str, Any] = field(default_factory=dict)
    native: bool = False  # the step ran on the native engine
    native_available: bool = True  # its system has a native strategy

    @property
    def known(self) -> bool:
        return self.kind != UNKNOWN

    @property
    def advice(self) -> str:
        offer = not self.native and self.native_available  # the native engine is an option
        return (not offer and NATIVE_ADVICE.get(self.kind)) or ADVICE[self.kind]

    @property
    def badge(self) -> str:
        return BADGES[self.kind]

    @property
    def line(self) -> str:
        """The verdict, its numbers and what they mean, in one line."""
        return f"{self.kind}: {self.evidence} — {self.advice}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "evidence": self.evidence,
            "advice": self.advice,
            "line": self.line,
            "figures": dict(self.figures),
        }


def judge(usage: Usage, totals: Stats, context: Context) -> Verdict:
    """The verdict of a step from its usage and its merged totals (ops, offered, send lag)."""
    verdict = _judge(usage, totals, context)
    return replace(verdict, native=context.native, native_available=context.native_available)


def _judge(usage: Usage, totals: Stats, context: Context) -> Verdict:
    load, figures = load_of(usage, totals, context)
    workers, server_used, cores = load.workers, load.server_used, load.cores
    server_share, machine = load.server_share, load.machine
    open_loop, kept, lag_p99 = load.open_loop, load.kept, load.lag_p99
    if not usage.recorded and not totals.offered:
        return Verdict(UNKNOWN, "no CPU figures and no offered rate recorded", figures)

    latency = _latency(totals)
    lat_p50, lat_p99, lat_max = latency if latency else (0, 0, 0)
    unanswered = sum(totals.errors.get(kind, 0) for kind in UNANSWERED_KINDS)
    if open_loop:
        figures |= open_loop_figures(totals, context, usage, latency, (unanswered, server_share))
    cpu = cpu_text(workers, server_used, cores, server_share, context, usage)
    schedule = schedule_text(totals, kept, lag_p99) if open_loop else ""
    both = "; ".join(t for t in (schedule, cpu) if t)
    ours = sum(workers.values()) + (server_used or 0.0)
    full = machine is not None and machine >= MACHINE_BUSY and bool(usage.host_cpus)
    behind = kept is not None and kept < KEPT_SCHEDULE
    lagged = (
        lag_p99 is not None and lag_p99 > SEND_LAG_FLOOR_NS and lag_p99 >= SEND_LAG_SHARE * lat_p99
    )
    busy = bool(workers) and max(workers.values()) >= WORKER_BUSY
    if server_share is not None and server_share >= SERVER_BUSY:
        return Verdict(SERVER_BOUND, lead(cpu, "server", schedule), figures)
    if full and ours >= MACHINE_OURS * (usage.host_cpus or 0):
        return Verdict(MACHINE_BOUND, lead(cpu, "machine", schedule), figures)
    if host := usage.full_host(ours_needed=True):  # a load machine of its own was full
        return Verdict(MACHINE_BOUND, lead(cpu, f"host {host} ", schedule), figures)
    if busy:  # the generator's own doing: it missed its schedule or set the pace
        kind = FELL_BEHIND if open_loop and (behind or lagged) else GENERATOR_BOUND
        return Verdict(kind, join_parts(cpu, schedule), figures)
    # A busy client sends late by as much as it waited on the answer before, which its
    # latency (run from the intended start) holds too; an idle client woken late does not
    # (its latency runs from the send: far below the lag).
    # Waits that never ended (a timeout, still in flight at the end) are not latencies.
    waited = lagged and (
        unanswered > 0 or (lag_p99 is not None and lat_p99 >= SEND_LAG_SHARE * lag_p99)
    )
    # Long waits the machine's own stalls explain (hiccups, waits for a CPU): said as such
    # before anything that could be read as the server's.
    texts = (schedule, cpu)
    if open_loop and (stalled := _machine_stalled(usage, totals, latency, texts, server_share)):
        return replace(stalled, figures=figures | dict(stalled.figures))
    if full and ((lagged and not waited) or not open_loop):  # others took our CPUs
        return Verdict(MACHINE_BOUND, lead(cpu, "machine", schedule), figures)
    if open_loop and (behind or waited):  # idle workers, ops sent late or never: replies
        waits = (lat_p50, lat_max, unanswered)
        stall = _stall(totals, context, waits, texts, figures, (usage, server_share))
        if stall is not None:
            return stall
    if full:  # a starved worker reads replies late too: nothing here is the server's alone
        return Verdict(MACHINE_BOUND, lead(cpu, "machine", schedule), figures)
    if host := usage.full_host(ours_needed=False):  # a load machine full of others
        return Verdict(MACHINE_BOUND, lead(cpu, f"host {host} ", schedule), figures)
    if open_loop and totals.offered:
        return _unkept(totals, context, (behind, lagged, lat_p50), (schedule, cpu), figures)
    if not usage.recorded:
        return Verdict(UNKNOWN, "no CPU figures recorded", figures)
    return Verdict(LATENCY_BOUND, both, figures)


def _unkept(
    totals: Stats,
    context: Context,
    state: tuple[bool, bool, int],
    texts: tuple[str, str],
    figures: dict[str, Any],
) -> Verdict:
    """An open loop with neither side busy and no stall: on schedule when it was kept;
    else too few clients when rate x p50 latency needs most of them in flight, else the
    generator fell behind (it had clients to spare, and sent late or not at all)."""
    behind, lagged, p50 = state
    schedule, cpu = texts
    rate = totals.offered / totals.duration if totals.duration > 0 else 0.0
    needed = figures.setdefault("in_flight_needed", rate * p50 / 1e9)
    clients = context.clients
    if behind and (clients is None or needed >= TOO_FEW_SHARE * clients):
        need = f"rate x p50 latency needs {needed:,.1f} ops in flight"
        if clients is not None:
            need += f", {clients} clients"
        return Verdict(TOO_FEW_CLIENTS, join_parts(f"{schedule}, {need}", cpu), figures)
    if behind:
        return Verdict(FELL_BEHIND, join_parts(schedule, cpu), figures)
    if lagged:  # kept in count, late in time: an idle client's latency runs from its send
        return Verdict(SENT_LATE, join_parts(schedule, cpu), figures)
    return Verdict(ON_SCHEDULE, join_parts(schedule, cpu), figures)


def _stall(
    totals: Stats,
    context: Context,
    latency: tuple[int, int, int],
    texts: tuple[str, str],
    figures: dict[str, Any],
    measured: tuple[Usage, float | None],
) -> Verdict | None:
    """Clients that waited on replies while the workers idled: a stalled server, or None.

    Little's law tells a stall from a shortage of clients: a typical op (p50) at the
    offered rate keeps rate x p50 ops in flight. Well under the clients, they had room to
    spare, and the shortfall came from a few waits far longer than a typical op.
    Where the hiccup meter ran, the long wait must be in an interval that neither the
    machine's stalls (at the server's utilization, `measured`'s share) nor a busy worker
    explain (`stalls.MachineUsage`).
    """
    p50, longest, unanswered = latency  # unanswered: ops that timed out or were abandoned
    usage, load = measured
    if usage.machine.measured:
        longest = usage.machine.unexplained_ns(load)
    schedule, cpu = texts
    rate = totals.offered / totals.duration if totals.duration > 0 else 0.0
    needed = rate * p50 / 1e9
    figures["in_flight_needed"] = needed
    clients = context.clients
    if clients is not None and needed >= STALL_ROOM * clients:
        return None
    if longest >= STALL_FACTOR * max(p50, 1):
        wait = f"longest wait {format_us(longest / 1000)} against p50 {format_us(p50 / 1000)}"
    elif unanswered:
        wait = f"{unanswered:,} ops unanswered (timed out or abandoned)"
    else:
        return None
    return Verdict(SERVER_STALLED, join_parts(f"{schedule}, {wait}", cpu), figures)


def _machine_stalled(
    usage: Usage,
    totals: Stats,
    latency: tuple[int, int, int] | None,
    texts: tuple[str, str],
    load: float | None,
) -> Verdict | None:
    """Long waits (at least `STALL_FACTOR` times the p50) that every interval's machine
    stalls explain (`workbench.results.stalls`) at the server's utilization `load`, on
    CPUs the server or workers used: the machine's."""
    machine = usage.machine
    threshold = totals.hiccups.threshold_ns if totals.hiccups is not None else 0
    unanswered = sum(totals.errors.get(kind, 0) for kind in UNANSWERED_KINDS)
    if latency is None or not machine.stalled(threshold) or unanswered:
        return None
    p50, _, longest = latency
    long_wait = STALL_FACTOR * max(p50, 1)
    if longest < long_wait or machine.unexplained_ns(load) >= long_wait:
        return None
    wait = f"longest wait {format_us(longest / 1000)} against p50 {format_us(p50 / 1000)}"
    schedule, cpu = texts
    figures = {
        "hiccups_over_threshold": machine.count,
        "hiccup_longest_us": machine.longest.length_ns / 1000 if machine.longest else None,
        "hiccup_lost_us": machine.lost_ns / 1000,
    }
    lead = f"{machine.text(threshold)}; {wait}"
    return Verdict(MACHINE_STALLED, join_parts(join_parts(lead, schedule), cpu), figures)


def verdict_of(intervals: Iterable[Stats], context: Context) -> Verdict:
    """The verdict of a step from its recorded intervals (the pure form of `judge`)."""
    parts = list(intervals)
    return judge(Usage.of(parts), merged(parts, concurrent=False), context)


def _latency(totals: Stats) -> tuple[int, int, int] | None:
    """p50, p99 and max (ns) over every issued op kind (deliveries are not issued)."""
    hists = [h for k, h in totals.hist.items() if k not in RECEIVED and h.get_total_count()]
    if not hists:
        return None
    every = new_histogram()
    for h in hists:
        every.add(h)
    at = Recorded(every).values_at((50.0, 99.0))
    return at[50.0], at[99.0], every.get_max_value()
