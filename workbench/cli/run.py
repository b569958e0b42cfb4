"""`workbench run [PROFILE] [flags] [--set path=value ...]`: run an experiment headless."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import typer

from workbench.cli import flags as f
from workbench.cli import outputs, stop_signals
from workbench.cli.check import FailOnOption, checks_for, judge_steps, with_fail_on
from workbench.cli.common import (
    EXIT_CODES_HELP,
    ExitStatus,
    StoreOption,
    one_line_errors,
    only_result_on_stdout,
    open_store,
    out,
    result,
)
from workbench.cli.compare_options import DEFAULT_NOISE, FailOnRegressionOption, NoiseOption
from workbench.cli.format import (
    SummaryStyle,
    live_line,
    simulated_lines,
    step_heading,
    step_summary,
)
from workbench.cli.run_options import (
    AllowRemoteOption,
    BaselineOption,
    CsvOutOption,
    HlogOutOption,
    JsonOutOption,
    NameOption,
    PrintIdOption,
    ProfileArgument,
    QuietOption,
    ReportOption,
    SetOption,
    SimulateOption,
    TraceOutOption,
)
from workbench.cli.waits import show_waits
from workbench.files.output_files import protect_database
from workbench.results.checks import Check
from workbench.results.events import (
    Event,
    Interval,
    Notice,
    RunFinished,
    RunStarted,
    StepFinished,
    StepSimulated,
    StepStarted,
)
from workbench.results.live import RunView
from workbench.results.store import Store, default_path
from workbench.run import session
from workbench.simulate.policies import parse_policies
from workbench.spec.load import read_profile
from workbench.spec.model import Spec, check_name, spec_to_dict
from workbench.spec.profile_files import find_profile

if TYPE_CHECKING:
    from workbench.cli.comparing import Baseline

# Where a command's events come from, given the stop request: `session.run` unless told.
EventSource = Callable[[asyncio.Event], AsyncIterator[Event]]


@one_line_errors
@f.familiar_flags
def run_command(
    profile: ProfileArgument = None,
    set_: SetOption = None,
    name: NameOption = None,
    quiet: QuietOption = False,
    print_id: PrintIdOption = False,
    report: ReportOption = None,
    json_out: JsonOutOption = None,
    csv_out: CsvOutOption = None,
    hlog_out: HlogOutOption = None,
    allow_remote: AllowRemoteOption = False,
    fail_on: FailOnOption = None,
    baseline: BaselineOption = None,
    fail_on_regression: FailOnRegressionOption = None,
    noise: NoiseOption = DEFAULT_NOISE,
    trace_out: TraceOutOption = None,
    simulate: SimulateOption = None,
    store: StoreOption = None,
    flags: f.Flags = f.Flags(),
) -> None:
    """Run an experiment: live progress, then a summary per step.

    A progress bar on a terminal, else one plain line per interval.

    Familiar flags map onto the spec (docs/cli.md); this memtier_benchmark command

    memtier_benchmark -s 127.0.0.1 -p 6379 -c 50 -t 4 --ratio 1:10 -d 100 --test-time 30

    is, in one line:

    workbench run -s redis://127.0.0.1:6379 -c 200 -w 4 --ratio 1:10 -d 100 --test-time 30
    """
    if print_id:
        only_result_on_stdout()
    protect_database(store or default_path())  # no output (--json-out, --trace-out) over it
    remote = ["target.allow_remote=true"] if allow_remote else []
    remote += simulation_overrides(trace_out, simulate)
    if name is not None:
        check_name(name, "--name", given=True)
    spec = with_fail_on(f.load_with_flags(profile, flags, [*(set_ or []), *remote]), fail_on or [])
    if profile is not None and not read_profile(find_profile(profile)):
        out(_empty_profile_note(profile, spec))
    if name is None and profile is None and spec.name == "default":
        name = f.run_name(spec)  # not "default": the target and shape it ran
    checks = checks_for(spec_to_dict(spec), [], str(profile) if profile else "")
    wanted = outputs.requested(report or [], json_out, csv_out, hlog_out)
    against = None
    if baseline is not None or fail_on_regression:
        from workbench.cli.comparing import Baseline  # numpy and the bootstrap: only when asked

        against = Baseline.read(baseline, fail_on_regression or [], noise, store)
    if stop_signals.stop_seen():  # one came where Python dropped its KeyboardInterrupt
        raise KeyboardInterrupt
    st = open_store(store)
    stream = sys.stderr if print_id else sys.stdout
    bar_on = stream if not quiet and stream.isatty() else None
    view = asyncio.run(_drive(spec, st, name, quiet, bar_on, style=summary_style(flags)))
    _finish(view, st, wanted, checks, against, print_id)


def _finish(
    view: RunView,
    st: Store,
    wanted: list[outputs.Output],
    checks: list[Check],
    against: Baseline | None,
    print_id: bool,
) -> None:
    """After the run: where it is stored, its files, its checks and baseline, the exit."""
    out(
        f"run {view.run_id} {view.status}"
        + (f": {view.error}" if view.error else "")
        + f" (stored in {st.path})"
    )
    failed_files = _write_outputs(wanted, st, view.run_id)
    passed = judge_steps(checks, view.steps) if checks else True
    if against is not None and view.run_id and view.status != "interrupted":
        passed = against.judge(st.load(view.run_id)) and passed
    if print_id:
        result(view.run_id)
    if view.status == "interrupted":  # by Ctrl-C: out now, a second one has nothing to wait on
        st.close()  # its last writes reach the file itself, not only the journal
        stop_signals.leave(int(ExitStatus.INTERRUPTED))
    if view.status == "failed" or failed_files:
        raise typer.Exit(int(ExitStatus.RUN_FAILED))
    if not passed:
        raise typer.Exit(int(ExitStatus.CHECKS_FAILED))


def simulation_overrides(trace_out: str | None, simulate: str | None) -> list[str]:
    """`--trace-out` and `--simulate` as the `--set` texts they stand for."""
    out = []
    if trace_out is not None:
        out.append(f"workload.trace_out={json.dumps(trace_out)}")
    if simulate is not None:
        names = parse_policies(simulate, "--simulate")
        out.append(f"simulate.policies={json.dumps(list(names))}")
    return out


run_command.__doc__ = inspect.cleandoc(run_command.__doc__ or "") + "\n\n" + EXIT_CODES_HELP


def _empty_profile_note(profile: Path, spec: Spec) -> str:
    """One line for a profile that sets nothing: what runs instead."""
    what = (
        "the default, a short run on the embedded cache"
        if spec == Spec()
        else "the defaults with the flags and --set given"
    )
    return f"note: {profile} sets nothing: running {what}"


def _write_outputs(wanted: list[outputs.Output], st: Store, run_id: str) -> bool:
    """Write the requested files and print the stdout reports; True when a file failed."""
    if not wanted or not run_id:
        return False
    done = outputs.write(wanted, st.load(run_id))
    for w in done:
        if w.output.path is None:
            out(w.text.rstrip("\n"))
        elif w.error:
            typer.echo(f"error: {w.error}", err=True)
        else:
            typer.echo(f"wrote {w.output.format} to {w.output.path}", err=True)
    return any(w.error for w in done)


class _Presses:
    """Stop signals as they come (Ctrl-C, SIGTERM, SIGHUP): the first stops the run and
    keeps what was measured, the second abandons it (cancels `task`)."""

    def __init__(
        self, stop: asyncio.Event, task: asyncio.Task[Any] | None, say: Callable[[str], None]
    ) -> None:
        self.stop, self.task, self.say = stop, task, say
        self.count = 0

    def __call__(self) -> None:
        self.count += 1
        if self.count == 1:
            self.say(
                "stopping: finishing the current interval and keeping what was measured "
                "(Ctrl-C again to abandon)"
            )
            self.stop.set()
        elif self.count == 2 and self.task is not None:
            self.say("abandoning: workers killed, complete intervals kept")
            self.task.cancel()


async def _drive(
    spec: Spec,
    st: Store,
    name: str | None,
    quiet: bool,
    bar_on: TextIO | None,
    source: EventSource | None = None,
    show: Callable[[object, RunView, bool], None] | None = None,
    style: SummaryStyle = SummaryStyle(),
) -> RunView:
    """The run, with Ctrl-C: the first stops and keeps what was measured, the second abandons.

    Abandoning cancels the run's task: the workers are killed, the run is stored as
    interrupted with every interval that was complete, and the command exits 130.
    `source` gives the events instead of `session.run` (a search), `show` prints them.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    bar = None
    if bar_on is not None:
        from workbench.cli.progress import RunProgress

        bar = RunProgress(bar_on, style)
    on_signal = _Presses(stop, task, bar.print if bar is not None else out)
    # A closed terminal (SIGHUP) stops and saves as SIGTERM does; output to the gone
    # terminal is dropped by `out`.
    stops = stop_signals.handled()
    for sig in stops:
        loop.add_signal_handler(sig, on_signal)
    loop.add_signal_handler(signal.SIGUSR1, show_waits)
    if stop_signals.stop_seen():  # one came before the loop's handlers, and was dropped
        on_signal()
    view = RunView()
    try:
        events = source(stop) if source else session.run(spec, st, stop=stop, name=name)
        async for event in events:
            view = view.apply(event)
            if bar is not None:
                bar.on_event(event, view)
            else:
                (show or functools.partial(show_event, style=style))(event, view, quiet)
    except asyncio.CancelledError:
        if on_signal.count < 2 or task is None:
            raise
        task.uncancel()  # our own abandonment: the run is stored, report it
        view = view.apply(RunFinished(view.run_id, "interrupted", "abandoned"))
    finally:
        if bar is not None:
            bar.close()
        for sig in (*stops, signal.SIGUSR1):
            loop.remove_signal_handler(sig)
        # asyncio restores SIGUSR1's default, which kills: one sent as the run ends must not
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        stop_signals.install()  # asyncio left SIGTERM and SIGHUP fatal: the files still to write
    return view


def summary_style(flags: f.Flags) -> SummaryStyle:
    """How the step summaries print: memtier's --print-percentiles and --hide-histogram."""
    return SummaryStyle(f.percentiles(flags.print_percentiles), not flags.hide_histogram)


def show_event(
    event: object, view: RunView, quiet: bool, style: SummaryStyle = SummaryStyle()
) -> None:
    """One event as `workbench run` prints it (the live line only when not quiet; `style`:
    how a step's summary is printed)."""
    if isinstance(event, RunStarted):
        out(f"run {event.run_id} '{event.name}': {len(event.steps)} step(s)")
    elif isinstance(event, StepStarted):
        out(step_heading(event, len(view.steps)))
    elif isinstance(event, Interval) and not quiet:
        step = view.steps[event.step]
        if step.latest is not None:
            skipped = step.totals.skipped_count
            out(live_line(event.elapsed, step.latest, skipped, event.stats.hiccups))
    elif isinstance(event, Notice):
        out(f"{event.level}: {event.message}")
    elif isinstance(event, StepFinished):
        for line in step_summary(view.steps[event.step], style):
            out(line)
    elif isinstance(event, StepSimulated):
        for line in simulated_lines(event.results):
            out(line)
    elif isinstance(event, RunFinished):
        pass
