"""Plain-text renderings shared by CLI commands (the live line, the step summary)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.cli.optable import op_table
from workbench.results.events import StepStarted
from workbench.results.hiccups import Hiccups
from workbench.results.hiccups import lines as hiccup_lines
from workbench.results.live import StepView
from workbench.results.metrics import SUMMARY_TICKS, Summary, format_us, summarise
from workbench.results.refusals import refusals
from workbench.results.self_checks import failed_line
from workbench.results.step_text import outcomes_text, redirects_text


def live_line(elapsed: float, s: Summary, skipped: int = 0, hiccups: Hiccups | None = None) -> str:
    """One interval's figures; `skipped`: the trace requests the step skipped so far, said
    when there are any; `hiccups`: the machine's over the interval, beside the latency."""
    hits = f"hits {s.hits:,} misses {s.misses:,}" if s.hits + s.misses else "no gets"
    machine = f"  hiccup max {format_us(hiccups.max_us):>7}" if hiccups is not None else ""
    # Within 100 columns for the usual figures: a terminal of that width never wraps it.
    return (
        f"[{elapsed:5.1f}s] {s.ops_per_s:>9,.0f} ops/s {s.mib_per_s:7.2f} MiB/s  "
        f"p50 {format_us(s.p(50.0)):>7}  p99 {format_us(s.p(99.0)):>7}{machine}  {hits}  "
        f"errors {s.errors:,}" + (f"  skipped {skipped:,}" if skipped else "")
    )


def skipped_line(skipped: dict[str, int]) -> str:
    """A trace replay's requests not sent, each kind named once."""
    kinds = ", ".join(f"{what} {n:,}" for what, n in sorted(skipped.items()))
    return f"skipped {sum(skipped.values()):,} trace request(s) this target does not do: {kinds}"


@dataclass(frozen=True)
class SummaryStyle:
    """How a step's summary is printed: the percentiles its ladder lists (memtier's
    --print-percentiles; empty: the usual ones), whether the ladder is shown at all
    (memtier's --hide-histogram), and the width the verdict is wrapped to."""

    ticks: tuple[float, ...] = ()
    ladder: bool = True
    width: int = 100


def step_summary(step: StepView, style: SummaryStyle = SummaryStyle()) -> list[str]:
    """The step's figures: totals, the percentile ladder, a row per op kind, and the
    verdict wrapped at words."""
    s = step.summary
    errors = [
        f"  error {kind}: {n:,} (first: {step.totals.first_errors.get(kind, '')})"
        for kind, n in step.totals.errors.items()
    ]
    declared = step.facts.get("refusals") or ()
    refused = [
        f"notice: {line}"
        for line in refusals(step.totals.errors, step.totals.first_errors, declared)
    ]
    if s is None or not s.ops:
        every = ", every operation failed" if errors else ""
        return [f"== {step.title} ({step.status}): nothing measured{every} ==", *errors, *refused]
    hit = f"{s.hit_rate:.2%}" if s.hit_rate is not None else "n/a"
    lines = [
        f"== {step.title} ({step.status}) ==",
        f"{s.ops:,} ops in {s.duration:.2f}s: {s.ops_per_s:,.0f} ops/s, {s.mib_per_s:.2f} MiB/s, "
        f"{step.clients} clients on {step.workers} worker(s)",
        f"hits {s.hits:,}  misses {s.misses:,}  hit rate {hit}  errors {s.errors:,}",
    ]
    # What the conditional writes did (stored, not stored, exists...), per op kind.
    lines += [f"  {kind}: {outcomes_text(n)}" for kind, n in step.totals.outcomes.items()]
    if step.totals.published:
        lines.append(
            f"pub/sub: published {step.totals.published:,}, delivered "
            f"{step.totals.delivered:,} of {step.totals.expected_deliveries:,} "
            f"expected, lost {s.lost:,}"
        )
    if redirected := redirects_text(step.totals):
        lines.append(redirected)
    lines += errors
    if step.totals.skipped:
        lines.append(skipped_line(step.totals.skipped))
    lines += refused
    if style.ladder:
        lines += percentile_ladder(step, s, style.ticks)
    lines += op_table(step.totals)
    lines += hiccup_lines(step.totals.hiccups)
    verdict = step.verdict
    if verdict.known:
        lines += textwrap.wrap(
            f"verdict: {verdict.line}", width=max(40, style.width), subsequent_indent="  "
        )
    if failed := failed_line(step.self_checks):
        lines.append(f"self-check failed: {failed}")
    return lines


def percentile_ladder(step: StepView, s: Summary, ticks: Sequence[float]) -> list[str]:
    """The percentile ticks of the source documents (or `ticks`), then the max."""
    lines = ["Response times percentiles:"]
    if ticks:
        s = summarise(step.totals, ticks)
    for tick in ticks or SUMMARY_TICKS:
        lines.append(f"  {tick:>9.5g}% < {format_us(s.p(tick))}")
    lines.append(f"  {'max':>9}  = {format_us(s.max_us)}")
    return lines


def step_heading(event: StepStarted, steps: int) -> str:
    """The line that opens a step: what runs, on what, with how many clients."""
    target = event.spec["target"]["system"]
    strategy = event.strategy or event.spec["strategy"]["name"] or "default"
    server = (
        f", server {event.server.get('version', '')} pid {event.server['pid']}"
        if event.server
        else ""
    )
    model = event.connections or f"{event.clients} clients, {event.workers} worker(s)"
    line = (
        f"-- step {event.step + 1}/{steps}: {event.title} on {target}/{strategy}, {model}{server}"
    )
    if event.nodes:  # workers on a Ray cluster: where the load came from
        line += "\n   nodes: " + "; ".join(
            f"{n['host']} ({n['cpus']} CPUs, {n['workers']} worker(s))" for n in event.nodes
        )
    return line


def simulated_lines(results: dict[str, Any]) -> list[str]:
    """A step's simulated hit rates, each line saying it is simulated."""
    if "error" in results:
        return [f"simulated: not simulated: {results['error']}"]
    out = []
    for name, figures in results.get("policies", {}).items():
        rates = " ".join(
            f"{key} {100 * v:.2f}%"
            for key in ("hit_rate", "hot", "cold")
            if isinstance(v := figures.get(key), int | float)
        )
        out.append(f"simulated {name} at the same limit (libCacheSim): {rates.replace('_', ' ')}")
    return out
