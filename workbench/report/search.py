"""The report of a rate search (`workbench search`): the highest rate within the target, the
first failing one, the knee, and the latency-vs-throughput table of every probe.

Each probe is a stored step; the conclusion is the search replayed over them
(`workbench.results.search_rules.replay`), so a stored search reports exactly what the live
one said.
A run that is not a search (no ``[search] target``) gets its steps as a table all the
same, rates offered or not, without a conclusion.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from workbench.report.markdown import escape_cell, footer, header, overrides, verdict_notes
from workbench.report.model import RunData, read_runs
from workbench.results.metrics import format_us
from workbench.results.search_causes import describe
from workbench.results.search_rules import (
    KNEE_RISE,
    Probe,
    Search,
    probes_from,
    replay,
    settings_of,
)
from workbench.results.search_rules import target_checks as parse_target
from workbench.results.store import StoredRun
from workbench.spec.model import SearchSpec


def probes(run: RunData) -> tuple[Search | None, list[Probe]]:
    """The search a run holds (None if it is not one) and its probes in the order run."""
    settings = settings_of(run.spec)
    checks = parse_target(settings.target, "search.target") if settings else []
    pairs = [(s.view, float(s.spec["load"].get("rate") or 0)) for s in run.started_steps]
    found = probes_from(pairs, checks)
    return (replay(found, settings) if settings else None), found


def probe_table(
    found: Sequence[Probe], names: dict[int, str] | None = None, search: Search | None = None
) -> list[str]:
    """Latency against throughput: one row per probe, by offered rate.

    With `names` (a run that is not a search), each row names its step instead of saying
    whether it met a target. With `search`, a retry and what it decided follow the target
    cell ("retry 1: the failure is confirmed: the rate fails").
    """
    head = ["offered ops/s", "achieved ops/s", "p50", "p99", "p99.9", "errors"]
    head = (["step"] if names else []) + head + (["verdict"] if names else ["target", "verdict"])
    align = (["---"] if names else []) + ["---:"] * 6 + (["---"] if names else ["---", "---"])
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |"]
    for p in sorted(found, key=lambda p: (p.rate, p.step)):
        cells = [escape_cell(names[p.step])] if names else []
        cells += [
            f"{p.rate:,.0f}" if p.rate else "closed loop",
            f"{p.achieved:,.0f}",
            format_us(p.p50_us),
            format_us(p.p99_us),
            format_us(p.p999_us),
            f"{p.errors:,} ({p.error_share:.2%})" if p.errors else "0",
        ]
        if not names:
            said = search.said(p) if search is not None else ""
            result = "pass" if p.passed else f"fail ({describe(p)}): {p.why_failed()}"
            if p.server_text and not p.passed:
                said = "; ".join(t for t in (said, f"server: {p.server_text}") if t)
            cells.append(escape_cell(f"{result}; {said}" if said else result))
        cells.append(p.verdict.kind if p.verdict.known else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def search_section(run: RunData) -> list[str]:
    search, found = probes(run)
    if search is not None:  # as the search recorded them: each with its attempt
        found = search.probes
    if search is None:
        names = {s.index: s.name(with_run=False) for s in run.started_steps}
        return [
            "Not a search (no `[search] target`): its steps by rate offered.",
            "",
            *probe_table(found, names),
        ]
    target = ", ".join(c.text for c in parse_target(search.settings.target, "search.target"))
    best, failing, knee = search.best, search.first_failing, search.knee()
    lines = [f"Target: **{escape_cell(target)}** on every probe.", ""]
    if best is not None:
        lines.append(
            f"- Highest passing rate: **{best.rate:,.0f} ops/s** offered "
            f"({best.achieved:,.0f} achieved), p99 {format_us(best.p99_us)}, "
            f"p99.9 {format_us(best.p999_us)}"
        )
    else:
        lines.append("- Highest passing rate: none; no probed rate met the target")
    lines += _server_knee(search)
    if failing is not None:
        lines.append(
            f"- First failing rate: {failing.rate:,.0f} ops/s ({escape_cell(describe(failing))}): "
            f"{escape_cell(failing.why_failed())}"
        )
    if knee is not None:
        lines.append(
            f"- Knee: {knee.rate:,.0f} ops/s, the highest rate whose p99 "
            f"({format_us(knee.p99_us)}) stays within {KNEE_RISE:g}x of the lowest rate's"
        )
    ended = "interrupted; " if run.status == "interrupted" else ""
    lines += [f"- Outcome: {ended}{escape_cell(search.conclusion())}", ""]
    lines += probe_table(found, search=search)
    confirm = search.settings.confirm
    lines += [
        f"Each probe ran open loop for {search.settings.probe:g} s after the profile's "
        "warm-up; latency is measured from each op's intended start. A probe passes when "
        "every target holds, it issued at least 95% of the offered ops and it completed. "
        + (
            f"A failing rate was probed again until {confirm} of its probes failed or as "
            "many passed, so that one hiccup does not end the search."
            if confirm > 1
            else "A rate failed at its first failing probe (search.confirm=1)."
        )
        + (
            ""
            if search.settings.strict
            else " A probe failed by the machine's own stalls alone was probed again (twice at "
            "most); a rate where the machine stalled every time is inconclusive, not failing, "
            "and counts for the server's knee by its intervals with no machine stall."
        )
        + _long_note(search.settings),
        "",
    ]
    return lines


def _long_note(settings: SearchSpec) -> str:
    """What the search did with a probe too short for its percentile (`search_length`)."""
    if settings.strict or settings.max_probe <= settings.probe:
        return ""
    return (
        " A probe that failed with too few ops for the failing percentile (1,000/(1-q): "
        "100,000 for p99) was followed by one long probe of its rate, as long as that "
        f"percentile needs at the rate (at most search.max_probe, {settings.max_probe:g} s), "
        "and the rate was decided on it."
    )


def _server_knee(search: Search) -> list[str]:
    """The server's knee, when it is above the machine's (`Search.server_knee`)."""
    best, server = search.best, search.server_knee
    if server is None or (best is not None and server.rate <= best.rate):
        return []
    return [
        f"- Server's knee: **{server.rate:,.0f} ops/s**, the highest rate at which the server "
        "met the target in the intervals with no machine stall (the rates between were "
        "failed by this machine's stalls, not the server's)"
    ]


def reproduce(run: RunData) -> list[str]:
    sets = overrides(run.spec) if settings_of(run.spec) else None
    if sets is None:
        return []
    command = " ".join(["workbench search", *(f"--set {shlex.quote(s)}" for s in sets)])
    return ["Search again:", "", "```sh", command, "```", ""]


def conclusion(stored: StoredRun) -> str:
    """What `workbench search` prints when it ends: the report's search section, how to
    search again and what limited each probe, without its header and its profile."""
    (run,) = read_runs(stored)
    lines = [*search_section(run), *reproduce(run), *verdict_notes([run])]
    return "\n".join(lines).strip("\n")


def render(runs: Sequence[RunData], **options: Any) -> str:
    lines = header(runs, options.get("title") or "Rate search")
    for run in runs:
        if len(runs) > 1:
            lines += [f"## {run.name} (`{run.id}`)", ""]
        else:
            lines += ["## Highest rate within the target", ""]
        lines += search_section(run)
        lines += reproduce(run)
    lines += footer(runs)
    return "\n".join(lines).rstrip("\n") + "\n"
