"""The highest open-loop rate that keeps a latency target: probes, doubling, then bisection.

A search runs one configuration (a spec without a sweep) as a run of short open-loop
probes, each a stored step at one rate. It starts at ``[search].start`` ops/s and doubles
until a rate fails the target, then bisects between the highest passing and the lowest
failing rate until they are within ``precision`` (5%) of each other, or ``max_probes``
probes were run (retries count).

A probe passes when every target check holds on it (``p99<1ms``: any percentile, ``max`` or
``mean``, plus ``errors<0.1%`` unless the target says otherwise), the load kept its
schedule (issued at least `verdict.KEPT_SCHEDULE` of the offered ops) and the step
completed.

A failing probe is confirmed before it counts: the same rate is probed again until
``confirm`` (2) of its probes failed, or as many passed (two of three). One scheduler
hiccup of a few ms, another process's burst or a GC pause fails a short probe's p99 once;
it must not cap the search below the knee. A rate whose first probe passed passes. The
retries are stored probes like any other (``attempt`` > 0, labelled ``search.retry``), so
a reader sees why the search went on. A rate *passes* or *fails* by this decision; a probe
only passes or fails its own figures.

It stops early, saying why:

- when a rate fails, no rate passed yet, and every failing probe's verdict says the
  generator, not the target, is what failed (generator-bound, machine-bound, or fell
  behind: a busy worker missed its schedule): a higher rate would measure the load, not the
  server, and there is no lower rate to bisect to. Above a passing rate, the same failure
  only caps the search: it bisects below it (the rates between can still be measured) and
  its conclusion says the generator failed there. A server that saturates or stalls, or
  clients too few for the rate at that latency, are the target failing: the search
  bisects on;
- when a probe failed outright and measured nothing (the server would not start, every
  operation failed): its notices say why (no retry: nothing was measured to disagree);
- when the target is not met even at the start rate halved `HALVINGS` times (it cannot be
  met at any rate this setup can measure, e.g. ``p99<1ns``).

The search is a pure state machine (`Search`): replaying the stored probes of a run
through it gives the same conclusion and the same retries, so a report of a stored search
needs nothing but the run. The knee is the highest rate whose p99 stays within
`KNEE_RISE` times the p99 of the lowest rate probed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.results.checks import Check, parse_check
from workbench.results.live import StepView
from workbench.results.metrics import format_us
from workbench.results.search_causes import (
    GENERATOR,
    INCONCLUSIVE,
    MACHINE,
    MACHINE_RETRIES,
    decide,
    decide_long,
    inconclusive_text,
    knees_text,
    server_decision,
)
from workbench.results.search_length import (
    lengthened_text,
    lengthens,
    long_seconds,
    long_text,
)
from workbench.results.search_probe import Probe as Probe
from workbench.results.search_probe import probe_of as probe_of
from workbench.results.verdict import GENERATOR_KINDS
from workbench.sdk.errors import SpecError
from workbench.spec.model import SearchSpec, Spec
from workbench.spec.search_settings import check_settings

HALVINGS = 3  # a target failing at start / 2**HALVINGS ops/s is not met at any rate
KNEE_RISE = 2.0  # the knee: p99 still within this factor of the lowest rate's p99
DEFAULT_ERRORS = "errors<0.1%"
TARGET_METRICS = ("latency", "errors", "error_share")
# A probe's intervals at most (unless --strict): this VM's kernel takes a CPU for 1-33 ms
# about twice a second, and the server's knee is read from the intervals no stall touched.
PROBE_INTERVAL = 0.1
RETRY_LABEL = "search.retry"  # the step label of a probe that re-runs a failed rate: "1", "2"


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


@dataclass
class Search:
    """The search's state: which rate to probe next, and what it concluded."""

    settings: SearchSpec
    probes: list[Probe] = field(default_factory=list)
    stopped: str = ""  # why it stopped early ("" while it goes on, or when it converged)
    # The generator failed at a rate above a passing one: the search bisects below it
    # (nothing above it is probed) and its conclusion says so.
    capped: str = ""

    def attempts(self, rate: float) -> list[Probe]:
        """Every probe run at `rate`, in order (the first and its retries)."""
        return [p for p in self.probes if p.rate == rate]

    def decision(self, rate: float) -> bool | None:
        """Whether `rate` passes (True) or fails (False); None: not probed, or a failure
        waiting for its confirmation."""
        return self._decide(self.attempts(rate))

    def _decide(self, tries: Sequence[Probe]) -> bool | None:
        """Pass, fail or None (probe again); an inconclusive rate (the machine stalled on
        every retry) by what the server did in its intervals with no machine stall."""
        if not tries:
            return None
        if self.settings.strict:
            if tries[0].passed:
                return True
            passes = sum(p.passed for p in tries)
            need = self.settings.confirm
            if len(tries) - passes >= need:
                return False
            return True if passes >= need else None
        decided = self._verdict(tries)
        if decided == INCONCLUSIVE:
            return server_decision([p for p in tries if p.long] or tries)
        return decided  # type: ignore[return-value]

    def _verdict(self, tries: Sequence[Probe]) -> bool | str | None:
        """A rate's decision without --strict (`search_causes.decide`): on its long probe
        when it has one; None (probe it long) after a probe too short for its percentile."""
        long = [p for p in tries if p.long]
        if long:
            return decide_long(long[0])
        if not tries[0].passed and any(lengthens(self.settings, p) for p in tries):
            return None
        return decide(tries, self.settings.confirm)

    def inconclusive(self, rate: float) -> bool:
        """The machine stalled on every probe of `rate` (never with --strict)."""
        tries = self.attempts(rate)
        if not tries or self.settings.strict:
            return False
        return self._verdict(tries) == INCONCLUSIVE

    def _seconds(self, tries: Sequence[Probe]) -> float:
        """The seconds the next probe of a rate probed by `tries` measures: as long as its
        percentile needs after a probe too short for it (once), else `search.probe`."""
        short = [p for p in tries if lengthens(self.settings, p)]
        if not short or any(p.long for p in tries):
            return self.settings.probe
        need = max(p.needed_ops for p in short)
        return long_seconds(self.settings, short[0].rate, need)

    def next_seconds(self) -> float:
        """The seconds the next probe measures (`search_length`)."""
        rate = self.next_rate()
        return self._seconds(self.attempts(rate)) if rate is not None else self.settings.probe

    def standing(self, rate: float) -> Probe:
        """The probe that stands for `rate`: its last probe that agrees with the decision
        (the last probe while the decision waits)."""
        tries = self.attempts(rate)
        decided = self.decision(rate)
        agree = [p for p in tries if p.passed is decided] if decided is not None else tries
        return (agree or tries)[-1]  # an inconclusive rate: its last probe

    def _decided(self, passed: bool) -> list[Probe]:
        rates = {p.rate for p in self.probes if self.decision(p.rate) is passed}
        return [self.standing(r) for r in rates]

    @property
    def best(self) -> Probe | None:
        """The highest passing rate on this machine as it is (its last passing probe): the
        machine's knee."""
        passing = [p for p in self._decided(True) if not self.inconclusive(p.rate)]
        return max(passing, key=lambda p: p.rate) if passing else None

    @property
    def server_knee(self) -> Probe | None:
        """The highest rate at which the server met the target, counting an inconclusive
        rate (the machine stalled on every retry) by its intervals with no machine stall:
        the server's knee. None with --strict (any failure fails there)."""
        if self.settings.strict:
            return None
        passing = self._decided(True)
        return max(passing, key=lambda p: p.rate) if passing else None

    def _low(self) -> Probe | None:
        """The search's lower bound: the server's knee (the machine's with --strict)."""
        return self.best if self.settings.strict else self.server_knee

    @property
    def first_failing(self) -> Probe | None:
        """The lowest failing rate above the search's lower bound (its last failing probe)."""
        low = self._low()
        failing = [p for p in self._decided(False) if low is None or p.rate > low.rate]
        return min(failing, key=lambda p: p.rate) if failing else None

    @property
    def retries(self) -> list[Probe]:
        return [p for p in self.probes if p.attempt]

    def outvoted(self) -> list[Probe]:
        """Failing probes whose rate passed all the same (their retries passed)."""
        return [p for p in self.probes if not p.passed and self.decision(p.rate) is True]

    @property
    def converged(self) -> bool:
        lo, hi = self._low(), self.first_failing
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
        if not self.probes:
            return _round(self.settings.start)
        last = self.probes[-1].rate
        if self.decision(last) is None:  # a failure not yet confirmed: probe it again
            return last
        lo, hi = self._low(), self.first_failing
        if hi is None:
            assert lo is not None
            return _round(lo.rate * 2)
        if lo is None:
            return _round(hi.rate / 2)
        mid = _round((lo.rate + hi.rate) / 2)
        if mid in (lo.rate, hi.rate):  # rates are whole ops/s: nothing left between them
            return None
        return mid

    def next_attempt(self) -> int:
        """The attempt the next probe is at its rate: 0 for a new rate, 1.. for a retry."""
        rate = self.next_rate()
        return len(self.attempts(rate)) if rate is not None else 0

    def record(self, probe: Probe) -> None:
        tries = self.attempts(probe.rate)
        seconds = self._seconds(tries)
        long = seconds > self.settings.probe
        probe = replace(probe, attempt=len(tries), seconds=seconds, long=long)
        self.probes.append(probe)
        if probe.passed:
            return
        if probe.status == "interrupted":
            self.stopped = "interrupted: the search was stopped"
            return
        if probe.status == "failed" and not probe.achieved:
            self.stopped = (
                f"the probe at {probe.rate:,.0f} ops/s failed and measured nothing "
                "(see its notices): no rate can be judged"
            )
            return
        if self.decision(probe.rate) is not False:  # confirmation pending, or outvoted
            return
        failed = [p for p in self.attempts(probe.rate) if not p.passed]
        confirmed = f" ({len(failed)} probes failed)" if len(failed) > 1 else ""
        generator = [  # by its cause, or with --strict (or none named) by its verdict
            p.cause == GENERATOR
            if p.cause and not self.settings.strict
            else p.verdict.kind in GENERATOR_KINDS
            for p in failed
        ]
        if all(generator):
            cause = (
                f"the generator, not the target, failed at {probe.rate:,.0f} ops/s"
                f"{confirmed}: {probe.verdict.line}"
            )
            # Below a passing rate, the rates between it and this one can still be
            # measured: bisect on. With none passing, there is nothing to bisect to.
            if self._low() is None:
                self.stopped = cause
            elif not self.capped:
                self.capped = cause
        elif self._low() is None and probe.rate <= self.settings.start / 2**HALVINGS:
            self.stopped = (
                f"the target is not met even at {probe.rate:,.0f} ops/s "
                f"({probe.why_failed()}): it cannot be met at any rate this setup measures"
            )

    def said(self, probe: Probe) -> str:
        """What the search made of `probe` when it came in: a retry, and whether its rate's
        failure was confirmed; empty for a rate's first probe that decided it at once."""
        upto = self.probes[: self.probes.index(probe) + 1]
        tries = [p for p in upto if p.rate == probe.rate]
        decided = self._decide(tries)
        inconclusive = not self.settings.strict and self._verdict(tries)
        if decided is None:
            outcome = "probing this rate again to confirm the failure"
            if lengthens(self.settings, probe):
                outcome = lengthened_text(self.settings, probe)
            elif probe.cause == MACHINE and not self.settings.strict:
                outcome = f"the machine stalled: probing again ({MACHINE_RETRIES} retries at most)"
        elif inconclusive == INCONCLUSIVE:
            outcome = inconclusive_text(probe)
            if probe.long:
                outcome = f"{long_text(probe)}: {outcome}"
        elif probe.long:
            outcome = long_text(probe) + ("" if decided else ": the rate fails")
        elif not probe.attempt:
            return ""
        elif decided:
            outcome = "the failure is not confirmed (a hiccup): the rate passes"
        else:
            outcome = "the failure is confirmed: the rate fails"
        return f"retry {probe.attempt}: {outcome}" if probe.attempt else outcome

    def retried(self) -> str:
        """What the retries did, in a few words; empty when none ran."""
        if not self.retries:
            return ""
        unconfirmed = len({p.rate for p in self.outvoted()})
        confirmed = len({p.rate for p in self.retries if self.decision(p.rate) is False})
        n = len(self.retries)
        parts = [f"{n} retr{'y' if n == 1 else 'ies'}"]
        if long := sum(p.long for p in self.probes):
            parts.append(f"{long} long for their percentile's samples")
        if confirmed:
            parts.append(f"{confirmed} failing rate{'s' * (confirmed > 1)} confirmed")
        if unconfirmed:
            parts.append(f"{unconfirmed} failure{'s' * (unconfirmed > 1)} not confirmed (a hiccup)")
        return ": ".join([parts[0], ", ".join(parts[1:])]) if len(parts) > 1 else parts[0]

    def conclusion(self) -> str:
        """What the search found, in one line."""
        lo, hi, best = self._low(), self.first_failing, self.best
        found = (
            f"highest passing rate {best.rate:,.0f} ops/s (p99 {format_us(best.p99_us)})"
            if best
            else "no probed rate met the target"
        )
        found += knees_text(best, self.server_knee, self.probes)
        failing = f", first failing {hi.rate:,.0f} ops/s ({hi.why_failed()})" if hi else ""
        retried = f" ({self.retried()})" if self.retries else ""
        if self.stopped:
            return f"{found}{failing}; stopped early: {self.stopped}"
        capped = f"; {self.capped}" if self.capped else ""
        if self.converged:
            assert lo is not None and hi is not None
            gap = (hi.rate - lo.rate) / lo.rate
            return (
                f"{found}{failing}; within {gap:.1%} after {len(self.probes)} probes{retried}"
                f"{capped}"
            )
        waiting = self.probes and self.decision(self.probes[-1].rate) is None
        if hi is None and lo is not None and not waiting:
            return (
                f"{found}; every rate passed: the rate was never high enough to break the "
                f"target in {len(self.probes)} probes{retried} "
                "(raise search.max_probes or search.start)"
            )
        return (
            f"{found}{failing}; stopped after {len(self.probes)} probes{retried} "
            f"(search.max_probes){capped}"
        )

    def knee(self) -> Probe | None:
        """The highest rate whose p99 is within KNEE_RISE of the lowest rate's p99."""
        rates = sorted({p.rate for p in self.probes})
        measured = [p for p in map(self.standing, rates) if p.achieved > 0]
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


def probe_step_spec(spec: Spec, rate: float, seconds: float | None = None) -> Spec:
    """The spec of one probe: open loop at `rate` for `seconds` (`search.probe`, or a long
    probe's: `search_length`), in intervals of at most `PROBE_INTERVAL` s (unless
    --strict): a machine stall taints the interval it falls in, and the server's knee is
    read from the others (`search_causes`)."""
    settings = spec.search or SearchSpec()
    interval = spec.load.interval if settings.strict else min(spec.load.interval, PROBE_INTERVAL)
    duration = seconds or settings.probe
    load = replace(spec.load, rate=rate, duration=duration, ops=None, interval=interval)
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
    if settings is None or not settings.target:
        return None
    stored = spec.get("search") or {}
    if "confirm" not in stored:  # stored before retries: none were run
        settings = replace(settings, confirm=1)
    if "max_probe" not in stored:  # stored before long probes: none were run
        settings = replace(settings, max_probe=0.0)
    return settings
