"""What failed each probe of a rate search, and what a rate decides when the machine did.

Every failing probe is named by its cause, one of:

- **generator**: the load could not be generated (generator-bound, fell behind, or a load
  machine our own load filled: `verdict.GENERATOR_KINDS`);
- **machine**: the load machine took the CPUs of the server or the workers (the verdict
  says *machine stalled*, or a machine full of other work), and in the intervals with no
  machine stall the server met the target (or there were none to tell);
- **too few samples**: nothing above explains it, and the step had fewer ops than the
  failing percentile needs (`workbench.results.self_checks.needed`: 100,000 for p99), so the
  failure may be chance;
- **server**: the rest: the server (or the network) did not meet the target.

A probe failed by the machine alone is probed again, at most `MACHINE_RETRIES` times; if
the machine stalls each time, the rate is *inconclusive*, not failing (`decide`). The
search then bisects on what the server did in the intervals with no machine stall
(`Probe.server_passed`), which is how it finds the server's knee apart from the machine's.
``[search] strict = true`` (``--strict``) keeps the rule from before: any failure fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from workbench.results.checks import Check
from workbench.results.metrics import Stats
from workbench.results.verdict import (
    GENERATOR_KINDS,
    MACHINE_BOUND,
    MACHINE_OURS,
    MACHINE_STALLED,
    Verdict,
)

if TYPE_CHECKING:
    from workbench.results.search_probe import Probe

GENERATOR = "generator"
MACHINE = "machine"
SERVER = "server"
FEW_SAMPLES = "too few samples"
CAUSES = (SERVER, GENERATOR, MACHINE, FEW_SAMPLES)
MACHINE_RETRIES = 2  # a probe failed by the machine alone is probed again this many times
INCONCLUSIVE = "inconclusive"


def server_check(totals: Stats, checks: Sequence[Check]) -> tuple[bool | None, str]:
    """Whether the latency targets held in the intervals with no machine stall, and their
    figures in a few words; (None, "") when no meter ran or every interval had a stall."""
    h = totals.hiccups
    if h is None or not h.intervals or h.clean is None or not h.clean_intervals:
        return None, ""
    clean = Stats(duration=h.clean_duration, hist={"all": h.clean})
    held, said = True, []
    for check in checks:
        if check.metric != "latency":
            continue
        part = clean if check.kind is None else Stats(clean.duration, {check.kind: h.clean})
        value = check.measure(part)
        ok = value is not None and check.holds(value)
        held = held and ok
        said.append(f"{check.text} {'held' if ok else 'failed'} ({check.show(value)})")
    where = f"in the {h.clean_intervals} of {h.intervals} intervals with no machine stall"
    return held, f"{', '.join(said)} {where}"


def cause_of(
    verdict: Verdict,
    stalled: bool,
    server_passed: bool | None,
    few_samples: bool,
) -> str:
    """The cause of a failing probe (module docstring). `stalled`: the machine took the
    CPUs of the server or a worker during it; `few_samples`: it had fewer ops than a
    failing percentile needs."""
    if verdict.kind in GENERATOR_KINDS and not _others_filled(verdict):
        return GENERATOR
    said = verdict.kind == MACHINE_STALLED or _others_filled(verdict)
    if (said and server_passed is not False) or (stalled and server_passed):
        return MACHINE
    if few_samples:
        return FEW_SAMPLES
    return SERVER


def _others_filled(verdict: Verdict) -> bool:
    """A machine-bound verdict of a machine full of other work (not our load)."""
    if verdict.kind != MACHINE_BOUND:
        return False
    f = verdict.figures
    cpus = f.get("machine_cpus") or 0
    ours = sum((f.get("workers_core_share") or {}).values()) + (f.get("server_cores_used") or 0)
    return bool(cpus) and ours < MACHINE_OURS * cpus


def decide(tries: Sequence[Probe], confirm: int) -> bool | str | None:
    """A rate's decision from its probes, machine stalls set apart: True (passes), False
    (fails), `INCONCLUSIVE` (the machine stalled on every retry), or None (probe again)."""
    if tries[0].passed:
        return True
    passes = sum(p.passed for p in tries)
    machine = sum(not p.passed and p.cause == MACHINE for p in tries)
    other = len(tries) - passes - machine
    if other >= confirm:
        return False
    if passes >= (confirm if other else 1):
        return True
    if len(tries) > MACHINE_RETRIES:  # retries used up
        if machine:
            return INCONCLUSIVE
        return passes > other
    return None


def decide_long(probe: Probe) -> bool | str:
    """A rate's decision from its long probe (`search_length`), taken on it alone: it
    holds the ops its percentile needs, so one failure is not chance. Failed by the
    machine, the rate is inconclusive at once (judged by its intervals with no machine
    stall, which now hold enough ops to tell): another long probe would cost as much."""
    if probe.passed:
        return True
    return INCONCLUSIVE if probe.cause == MACHINE else False


def server_decision(tries: Sequence[Probe]) -> bool:
    """An inconclusive rate, for the search's bisection: whether the server met the target
    in the intervals with no machine stall on most of its probes."""
    said = [p.server_passed for p in tries if p.server_passed is not None]
    return bool(said) and sum(said) * 2 > len(said)


def stalls_between(probes: Sequence[Probe], low: float, high: float) -> str:
    """The machine's stalls in the probes above `low` up to `high` ops/s, in a few words
    (the longest one's): what separates the machine's knee from the server's."""
    stalled = [p for p in probes if low < p.rate <= high and p.stalls]
    if not stalled:
        return ""
    worst = max(stalled, key=lambda p: p.stall_ns)
    n = len(stalled)
    return f"it stalled in {n} probe{'s' * (n != 1)}, the worst: {worst.stalls}"


def describe(probe: Probe) -> str:
    """A failing probe's cause with its evidence, in a few words."""
    if probe.passed:
        return ""
    if probe.cause == MACHINE:
        return f"{MACHINE}: {probe.stalls or probe.verdict.evidence.split(';')[0]}"
    if probe.cause == FEW_SAMPLES:
        need = f" of the {probe.needed_ops:,} its percentile needs" if probe.needed_ops else ""
        return f"{FEW_SAMPLES} ({probe.ops:,} ops{need})"
    return probe.cause


def inconclusive_text(probe: Probe) -> str:
    """What an inconclusive rate's last probe says."""
    server = {
        True: "the server met the target in the intervals with no machine stall",
        False: "the server did not meet it even in the intervals with no machine stall",
        None: "no interval was free of machine stalls",
    }[probe.server_passed]
    return f"the machine stalled on every retry: inconclusive, not failing; {server}"


def knees_text(best: Probe | None, server: Probe | None, probes: Sequence[Probe]) -> str:
    """The server's knee beside the machine's, when it is higher, with what separates them."""
    if server is None or (best is not None and server.rate <= best.rate):
        return ""
    low = best.rate if best is not None else 0.0
    stalls = stalls_between(probes, low, server.rate)
    between = f" (between them, the machine: {stalls})" if stalls else ""
    return (
        f" on this machine as it is; the server met the target up to {server.rate:,.0f} ops/s "
        f"in the intervals with no machine stall{between}"
    )
