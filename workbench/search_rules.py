"""The highest open-loop rate that keeps a latency target: probes, doubling, then bisection.

A search runs one configuration (a spec without a sweep) as a run of short open-loop
probes, each a stored step at one rate. It starts at ``[search].start`` ops/s and doubles
until a probe breaks the target, then bisects between the highest passing and the lowest
failing rate until they are within ``precision`` (5%) of each other, or ``max_probes``
probes were run.

A probe passes when every target check holds on it (``p99<1ms``: any percentile, ``max`` or
``mean``, plus ``errors<0.1%`` unless the target says otherwise), the load kept its
schedule (issued at least `verdict.KEPT_SCHEDULE` of the offered ops) and the step
completed. It stops early, saying why:

- when a probe fails and its verdict says the generator, not the target, is what failed
  (generator-bound, machine-bound, or fell behind: a busy worker missed its schedule): a
  higher rate would measure the load, not the server. A server that saturates or stalls,
  or clients too few for the rate at that latency, are the target failing: the search
  bisects on;
- when a probe failed outright and measured nothing (the server would not start, every
  operation failed): its notices say why;
- when the target is not met even at the start rate halved `HALVINGS` times (it cannot be
  met at any rate this setup can measure, e.g. ``p99<1ns``).

The search is a pure state machine (`Search`): replaying the stored probes of a run
through it gives the same conclusion, so a report of a stored search needs nothing but the
run. The knee is the highest rate whose p99 stays within `KNEE_RISE` times the p99 of the
lowest rate probed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.checks import Check, parse_check
from workbench.errors import SpecError
from workbench.live import StepView
from workbench.metrics import format_us
from workbench.spec.model import SearchSpec, Spec
from workbench.verdict import GENERATOR_KINDS, KEPT_SCHEDULE, Verdict

HALVINGS = 3  # a target failing at start / 2**HALVINGS ops/s is not met at any rate
KNEE_RISE = 2.0  # the knee: p99 still within this factor of the lowest rate's p99
DEFAULT_ERRORS = "errors<0.1%"
TARGET_METRICS = ("latency", "errors", "error_share")


def target_checks(texts: Iterable[str], where: str = "--target") -> list[Check]:
    """The checks of a search target: latencies and errors (``errors<0.1%`` by default)."""
    checks = []
    for i, text in enumerate(texts):
        check = parse_check(text, f"{where}[{i}]" if where != "--target" else where)
        if check.metric not in TARGET_METRICS:
            raise SpecError(
                f"{text!r}: a search target is a latency (p99<1ms, max<10ms) or errors "
                "(errors<0.1%)",
                where,
            )
        checks.append(check)
    if not any(c.metric == "latency" for c in checks):
        raise SpecError("expected a latency target, e.g. p99<1ms", where)
    if not any(c.metric in ("errors", "error_share") for c in checks):
        checks.append(parse_check(DEFAULT_ERRORS, where))
    return checks


def check_settings(s: SearchSpec, where: str = "search") -> None:
    if s.start <= 0:
        raise SpecError(f"expected a rate above 0 ops/s; got {s.start:g}", f"{where}.start")
    if s.probe <= 0:
        raise SpecError(f"expected seconds above 0; got {s.probe:g}", f"{where}.probe")
    if s.max_probes < 2:
        raise SpecError(f"expected at least 2 probes; got {s.max_probes}", f"{where}.max_probes")
    if not 0 < s.precision < 1:
        raise SpecError(
            f"expected a share between 0 and 1 (0.05: 5%); got {s.precision:g}",
            f"{where}.precision",
        )


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
    failed = []
    for check in checks:
        value = check.measure(t)
        if value is None or not check.holds(value):
            failed.append(f"{check.text} (measured {check.show(value)})")
    return Probe(
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
    )


@dataclass
class Search:
    """The search's state: which rate to probe next, and what it concluded."""

    settings: SearchSpec
    probes: list[Probe] = field(default_factory=list)
    stopped: str = ""  # why it stopped early ("" while it goes on, or when it converged)

    @property
    def best(self) -> Probe | None:
        """The highest passing probe."""
        passing = [p for p in self.probes if p.passed]
        return max(passing, key=lambda p: p.rate) if passing else None

    @property
    def first_failing(self) -> Probe | None:
        """The lowest failing probe above the highest passing one."""
        best = self.best
        failing = [p for p in self.probes if not p.passed and (best is None or p.rate > best.rate)]
        return min(failing, key=lambda p: p.rate) if failing else None

    @property
    def converged(self) -> bool:
        lo, hi = self.best, self.first_failing
        return (
            lo is not None
            and hi is not None
            and (hi.rate - lo.rate) <= self.settings.precision * lo.rate
        )

    def next_rate(self) -> float | None:
        """The next rate to probe, or None when the search is over."""
        if self.stopped or self.converged:
            return None
        if len(self.probes) >= self.settings.max_probes:
            return None
        lo, hi = self.best, self.first_failing
        if not self.probes:
            return _round(self.settings.start)
        if hi is None:
            assert lo is not None
            return _round(lo.rate * 2)
        if lo is None:
            return _round(hi.rate / 2)
        mid = _round((lo.rate + hi.rate) / 2)
        if mid in (lo.rate, hi.rate):  # rates are whole ops/s: nothing left between them
            return None
        return mid

    def record(self, probe: Probe) -> None:
        self.probes.append(probe)
        if probe.passed:
            return
        if probe.status == "interrupted":
            self.stopped = "interrupted: the search was stopped"
        elif probe.status == "failed" and not probe.achieved:
            self.stopped = (
                f"the probe at {probe.rate:,.0f} ops/s failed and measured nothing "
                "(see its notices): no rate can be judged"
            )
        elif probe.verdict.kind in GENERATOR_KINDS:
            self.stopped = (
                f"the generator, not the target, failed at {probe.rate:,.0f} ops/s: "
                f"{probe.verdict.line}"
            )
        elif self.best is None and probe.rate <= self.settings.start / 2**HALVINGS:
            self.stopped = (
                f"the target is not met even at {probe.rate:,.0f} ops/s "
                f"({probe.why_failed()}): it cannot be met at any rate this setup measures"
            )

    def conclusion(self) -> str:
        """What the search found, in one line."""
        lo, hi = self.best, self.first_failing
        found = (
            f"highest passing rate {lo.rate:,.0f} ops/s (p99 {format_us(lo.p99_us)})"
            if lo
            else "no probed rate met the target"
        )
        failing = f", first failing {hi.rate:,.0f} ops/s ({hi.why_failed()})" if hi else ""
        if self.stopped:
            return f"{found}{failing}; stopped early: {self.stopped}"
        if self.converged:
            assert lo is not None and hi is not None
            gap = (hi.rate - lo.rate) / lo.rate
            return f"{found}{failing}; within {gap:.1%} after {len(self.probes)} probes"
        if hi is None and lo is not None:
            return (
                f"{found}; every probe passed: the rate was never high enough to break the "
                f"target in {len(self.probes)} probes (raise search.max_probes or search.start)"
            )
        return f"{found}{failing}; stopped after {len(self.probes)} probes (search.max_probes)"

    def knee(self) -> Probe | None:
        """The highest rate whose p99 is within KNEE_RISE of the lowest rate's p99."""
        measured = sorted((p for p in self.probes if p.achieved > 0), key=lambda p: p.rate)
        if not measured:
            return None
        base = measured[0].p99_us
        knee = measured[0]
        for p in measured[1:]:
            if p.p99_us > KNEE_RISE * base:
                break
            knee = p
        return knee


def _round(rate: float) -> float:
    return float(max(1, round(rate)))


def replay(probes: Iterable[Probe], settings: SearchSpec) -> Search:
    """The search as it went, from its stored probes (same rules, same conclusion)."""
    search = Search(settings)
    for p in probes:
        search.record(p)
    return search


# --- running a search ------------------------------------------------------------------


def search_spec(spec: Spec, targets: Sequence[str] = ()) -> tuple[Spec, list[Check]]:
    """The spec a search runs (its [search] target set) and the target's checks."""
    if spec.sweep:
        raise SpecError(
            "a search probes one configuration; remove the sweep (or pin its value with --set)",
            "sweep",
        )
    settings = spec.search or SearchSpec()
    texts = tuple(targets) or settings.target
    if not texts:
        raise SpecError("expected a target, e.g. --target 'p99<1ms'", "search.target")
    where = "--target" if targets else "search.target"
    checks = target_checks(texts, where)
    check_settings(settings)
    return replace(spec, search=replace(settings, target=texts)), checks


def probe_step_spec(spec: Spec, rate: float) -> Spec:
    """The spec of one probe: open loop at `rate` for `search.probe` seconds."""
    probe = (spec.search or SearchSpec()).probe
    load = replace(spec.load, rate=rate, duration=probe, ops=None)
    return replace(spec, load=load)


def probes_from(steps: Iterable[tuple[StepView, float]], checks: Sequence[Check]) -> list[Probe]:
    """The probes of a stored search: each step that ran, at the rate it offered."""
    return [probe_of(step, rate, checks) for step, rate in steps if step.status != "pending"]


def settings_of(spec: Mapping[str, Any]) -> SearchSpec | None:
    """The [search] settings of a stored spec, or None when it has no target."""
    from workbench.spec.model import spec_from_dict

    try:
        settings = spec_from_dict(spec).search
    except SpecError:
        return None
    return settings if settings is not None and settings.target else None
