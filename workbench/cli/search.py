"""`workbench search [PROFILE] --target 'p99<1ms'`: the highest open-loop rate within a target.

Probes of a few seconds each, doubling the rate until the target breaks, then bisecting
(see `workbench.results.search_rules`); every probe is a stored step of one run, so
`workbench report RUN --format search` (or any other format) shows the whole curve again.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Annotated

import typer

from workbench.cli import flags as f
from workbench.cli.common import ExitStatus, StoreOption, one_line_errors, open_store, out
from workbench.cli.run import _drive, show_event
from workbench.report.search import conclusion
from workbench.results.events import Interval, Notice, RunStarted, StepFinished, StepStarted
from workbench.results.live import RunView
from workbench.results.metrics import format_us
from workbench.results.search_causes import describe
from workbench.results.search_length import LONG_LABEL
from workbench.results.search_rules import RETRY_LABEL, search_spec
from workbench.results.store import Store
from workbench.run.search import SearchRun
from workbench.sdk.errors import SpecError

# The command's own arguments (besides the familiar flags of `workbench run`).
ProfileArgument = Annotated[
    Path | None,
    typer.Argument(
        help="a TOML profile, or the name of one in profiles/; none: the embedded cache "
        "with the defaults"
    ),
]
TargetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--target",
        "-t",
        help="what every probe must meet: a latency (p50..p99.99, max, mean), e.g. "
        "'p99<1ms', and errors ('errors<0.1%' unless given); repeatable; default: "
        "search.target of the profile",
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="override any spec field, e.g. load.concurrency=64"),
]
StartOption = Annotated[
    float | None, typer.Option(help="first rate probed, ops/s (search.start, 1000)")
]
ProbeOption = Annotated[
    float | None, typer.Option(help="seconds measured per probe (search.probe, 3)")
]
MaxProbeOption = Annotated[
    float | None,
    typer.Option(
        help="a probe too short for the percentile it failed is probed again as long as "
        "that percentile needs, this many seconds at most (search.max_probe, 30; 0: never)"
    ),
]
MaxProbesOption = Annotated[
    int | None,
    typer.Option(help="at most this many probes, retries too (search.max_probes, 16)"),
]
ConfirmOption = Annotated[
    int | None,
    typer.Option(
        help="a rate fails when this many of its probes failed (search.confirm, 2: two "
        "of three; 1: at the first)"
    ),
]
PrecisionOption = Annotated[
    float | None,
    typer.Option(help="done when passing and failing rates are this close (0.05: 5%)"),
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="any failure fails (search.strict): no retry for a probe the machine's own "
        "stalls failed, no inconclusive rate, no server's knee apart from the machine's",
    ),
]


@one_line_errors
@f.familiar_flags
def command(
    profile: ProfileArgument = None,
    target: TargetOption = None,
    set_: SetOption = None,
    start: StartOption = None,
    probe: ProbeOption = None,
    max_probes: MaxProbesOption = None,
    max_probe: MaxProbeOption = None,
    confirm: ConfirmOption = None,
    precision: PrecisionOption = None,
    strict: StrictOption = False,
    name: Annotated[str | None, typer.Option(help="name of the stored run")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no live lines")] = False,
    store: StoreOption = None,
    flags: f.Flags = f.Flags(),
) -> None:
    """Find the highest open-loop rate whose probes meet a latency target.

    Exit codes:
    0 a passing rate was found (the report says whether it converged or stopped early, and why);
    1 an error (the store, a run that failed);
    2 a bad profile, flag or target (nothing ran);
    3 no probed rate met the target;
    130 interrupted (the probes run are stored).
    """
    given = {
        "start": start,
        "probe": probe,
        "max_probes": max_probes,
        "max_probe": max_probe,
        "precision": precision,
        "confirm": confirm,
        "strict": True if strict else None,
    }
    extra = _search_sets(given)
    _refuse_thread_count(target or [])
    spec = f.load_with_flags(profile, flags, [*(set_ or []), *extra])
    spec, checks = search_spec(spec, target or [])
    st = open_store(store)
    searching = SearchRun(spec, checks)

    def show(event: object, view: RunView, quiet_: bool) -> None:
        _show_probe(searching, event, view, quiet_)

    view = asyncio.run(
        _drive(
            spec,
            st,
            name,
            quiet,
            None,  # no progress bar: one line per probe
            source=lambda stop: searching.events(st, stop=stop, name=name),
            show=show,
        )
    )
    _conclude(view, st, searching)


def _refuse_thread_count(target: list[str]) -> None:
    if any(t.strip().isdigit() for t in target):  # memtier's -t N (threads)
        raise SpecError(
            "-t is the latency target here, e.g. -t 'p99<1ms'; memtier's -t/--threads is "
            "-w N (worker processes)",
            "-t",
        )


def _search_sets(given: dict[str, float | int | None]) -> list[str]:
    """The search flags given, as `--set search.KEY=VALUE`s."""
    for key, value in given.items():  # NaN passed as a --set was labelled --set
        if isinstance(value, float) and not math.isfinite(value):
            raise SpecError(f"expected a finite number; got {value}", f"--{key.replace('_', '-')}")
    return [f"search.{key}={value!r}" for key, value in given.items() if value is not None]


def _conclude(view: RunView, st: Store, searching: SearchRun) -> None:
    """The search's conclusion, and its exit status when it is not 0."""
    out(f"run {view.run_id} {view.status} (stored in {st.path})")
    if view.run_id:
        out(conclusion(st.load(view.run_id)))
    if view.status == "interrupted":
        raise typer.Exit(int(ExitStatus.INTERRUPTED))
    if searching.search.best is None:
        raise typer.Exit(int(ExitStatus.CHECKS_FAILED))


def _show_probe(searching: SearchRun, event: object, view: RunView, quiet: bool) -> None:
    if isinstance(event, RunStarted):
        targets = ", ".join(c.text for c in searching.checks)
        out(f"run {event.run_id} '{event.name}': searching for the highest rate with {targets}")
    elif isinstance(event, StepStarted):
        load = event.spec["load"]
        retry = event.label.get(RETRY_LABEL)
        again = f" (retry {retry}: is the failure at this rate real?)" if retry else ""
        if event.label.get(LONG_LABEL):
            again = f" (retry {retry}: long enough for the percentile it failed)"
        out(
            f"-- probe {event.step + 1}: {load['rate']:,.0f} ops/s for {load['duration']:g}s{again}"
        )
    elif isinstance(event, Interval | Notice):
        show_event(event, view, quiet)  # as `workbench run` shows them
    elif isinstance(event, StepFinished):
        p = searching.probe(event.step)
        verdict = f" [{p.verdict.kind}]" if p.verdict.known else ""
        result = "pass" if p.passed else f"FAIL ({describe(p)}): {p.why_failed()}"
        said = searching.search.said(p)
        if p.server_text and not p.passed:
            said = "; ".join(t for t in (said, f"server: {p.server_text}") if t)
        out(
            f"   {p.rate:,.0f} offered, {p.achieved:,.0f} achieved ops/s, p50 "
            f"{format_us(p.p50_us)}, p99 {format_us(p.p99_us)}, p99.9 {format_us(p.p999_us)}: "
            f"{result}{verdict}" + (f"; {said}" if said else "")
        )
