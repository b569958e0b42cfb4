"""A finished step read as one probe of a rate search: its figures against the target,
what failed it (`workbench.results.search_causes`) and what the server did in its intervals with
no machine stall. `workbench.results.search_rules` decides the search from these."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from workbench.results.checks import Check
from workbench.results.live import StepView
from workbench.results.search_causes import cause_of, server_check
from workbench.results.self_checks import needed
from workbench.results.verdict import KEPT_SCHEDULE, Verdict


@dataclass(frozen=True)
class Probe:
    """One probe's figures, as the search and its report read them."""

    step: int
    rate: float  # offered, ops/s
    status: str
    achieved: float  # completed ops/s
    p50_us: float
    p99_us: float
    p999_us: float
    errors: int
    error_share: float
    kept: float | None  # issued / offered
    failed_checks: tuple[str, ...]  # "p99<1ms (measured 1.31ms)" per failing check
    verdict: Verdict
    attempt: int = 0  # 0: the rate's first probe; 1, 2: retries of a failure (set by Search)
    cause: str = ""  # what failed it (`search_causes`): "" when it passed
    ops: int = 0
    # Whether the latency targets held in its intervals with no machine stall (None: no
    # meter, or no such interval), and those figures in a few words.
    server_passed: bool | None = None
    server_text: str = ""
    stalls: str = ""  # the machine's stalls during it, in a few words
    stall_ns: int = 0  # the longest of them
    # Ops the failing percentiles need (`self_checks.needed`; 0: no percentile failed),
    # and, set by `Search.record`, the seconds it was planned to measure and whether it
    # was a rate's long probe (`search_length`): one that holds that many.
    needed_ops: int = 0
    seconds: float = 0.0
    long: bool = False

    @property
    def passed(self) -> bool:
        return not self.why_failed()

    def why_failed(self) -> str:
        """Why the probe failed, in a few words; empty when it passed."""
        reasons = list(self.failed_checks)
        if self.kept is not None and self.kept < KEPT_SCHEDULE:
            reasons.append(f"issued {self.kept:.0%} of the offered ops")
        if self.status != "completed":
            reasons.append(f"step {self.status}")
        return ", ".join(reasons)


def probe_of(step: StepView, rate: float, checks: Sequence[Check]) -> Probe:
    """A finished step, read as a probe at `rate` against `checks`."""
    s = step.summary
    t = step.totals
    issued = t.ops + t.error_count
    failed, percentiles = [], []
    for check in checks:
        value = check.measure(t)
        if value is None or not check.holds(value):
            over = _intervals_over(step, check)
            failed.append(f"{check.text} (measured {check.show(value)}{over})")
            if check.percentile is not None:
                percentiles.append(check.percentile)
    threshold = t.hiccups.threshold_ns if t.hiccups is not None else 0
    server_passed, server_text = server_check(t, checks)
    if len(percentiles) < len(failed):  # an errors target failed: no clean interval mends it
        server_passed = server_passed and False
    probe = Probe(
        step=step.index,
        rate=rate,
        status=step.status,
        achieved=s.ops_per_s if s else 0.0,
        p50_us=s.p(50.0) if s else 0.0,
        p99_us=s.p(99.0) if s else 0.0,
        p999_us=s.p(99.9) if s else 0.0,
        errors=t.error_count,
        error_share=t.error_count / issued if issued else 0.0,
        kept=issued / t.offered if t.offered else None,
        failed_checks=tuple(failed),
        verdict=step.verdict,
        ops=t.ops,
        server_passed=server_passed,
        server_text=server_text,
        stalls=step.usage.machine.text(threshold),
        stall_ns=_longest_stall(step, threshold),
    )
    if probe.passed:
        return probe
    need = max((needed(p) for p in percentiles), default=0)
    few = t.ops < need
    machine = step.usage.machine
    # Judged at the server's utilization its verdict read (its CPU share of its cores).
    load = probe.verdict.figures.get("server_share")
    stalled = machine.stalled(threshold) and machine.explains(load)
    cause = cause_of(probe.verdict, stalled, server_passed, few)
    return replace(probe, cause=cause, needed_ops=need)


# The per-interval figure of a latency check, where each interval's chart point keeps it.
_POINT_FIGURES = {50.0: "p50_us", 99.0: "p99_us", 99.9: "p999_us"}


def _intervals_over(step: StepView, check: Check) -> str:
    """How many of the probe's intervals ("; over in 1 of 4 intervals") broke a latency check
    on their own, so a reader tells one hiccup from a rate the server cannot keep. Empty
    for other checks, percentiles the chart points do not keep, or downsampled points."""
    name = _POINT_FIGURES.get(check.percentile or -1.0)
    points = step.points
    if check.metric != "latency" or check.kind or name is None or len(points) < 2:
        return ""
    if step.timeline.stride != 1:
        return ""
    over = sum(1 for p in points if not check.holds(getattr(p, name)))
    return f"; over in {over} of {len(points)} intervals"


def _longest_stall(step: StepView, threshold: int) -> int:
    """The longest hiccup, or spell of waiting for a CPU, of the server or the workers."""
    machine = step.usage.machine
    longest = machine.longest.length_ns if machine.longest else 0
    starved = machine.starved_ns(threshold)
    return max(longest, starved[1] if starved else 0)
