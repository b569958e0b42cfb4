"""`workbench run [PROFILE] [--set path=value ...]`: run an experiment headless."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

import typer

from workbench import session
from workbench.cli.common import ExitStatus, StoreOption, one_line_errors, open_store, out
from workbench.cli.format import live_line, step_summary
from workbench.events import Interval, Notice, RunFinished, RunStarted, StepFinished, StepStarted
from workbench.live import RunView
from workbench.spec.load import load_spec


@one_line_errors
def run_command(
    profile: Annotated[
        Path | None,
        typer.Argument(help="a TOML profile; none: a short default run on the embedded cache"),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", "-s", help="override, e.g. load.concurrency=[1,4,16]"),
    ] = None,
    name: Annotated[str | None, typer.Option(help="name of the stored run")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no live lines")] = False,
    store: StoreOption = None,
) -> None:
    """Run an experiment: one live line per interval, then a summary per step."""
    spec = load_spec(profile, set_ or [])
    st = open_store(store)
    view = asyncio.run(_drive(spec, st, name, quiet))
    out(
        f"run {view.run_id} {view.status}"
        + (f": {view.error}" if view.error else "")
        + f" (stored in {st.path})"
    )
    if view.status == "interrupted":
        raise typer.Exit(int(ExitStatus.INTERRUPTED))
    if view.status == "failed":
        raise typer.Exit(int(ExitStatus.RUN_FAILED))


async def _drive(spec, st, name: str | None, quiet: bool) -> RunView:  # type: ignore[no-untyped-def]
    """The run, with Ctrl-C: the first stops and keeps what was measured, the second abandons.

    Abandoning cancels the run's task: the workers are killed, the run is stored as
    interrupted with every interval that was complete, and the command exits 130.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    presses = {"n": 0}

    def on_signal() -> None:
        presses["n"] += 1
        if presses["n"] == 1:
            out(
                "stopping: finishing the current interval and keeping what was measured "
                "(Ctrl-C again to abandon)"
            )
            stop.set()
        elif presses["n"] == 2 and task is not None:
            out("abandoning: workers killed, complete intervals kept")
            task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    view = RunView()
    try:
        async for event in session.run(spec, st, stop=stop, name=name):
            view = view.apply(event)
            _show(event, view, quiet)
    except asyncio.CancelledError:
        if presses["n"] < 2 or task is None:
            raise
        task.uncancel()  # our own abandonment: the run is stored, report it
        view = view.apply(RunFinished(view.run_id, "interrupted", "abandoned"))
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return view


def _node(node: dict[str, object]) -> str:
    return f"{node['host']} ({node['cpus']} CPUs, {node['workers']} worker(s))"


def _show(event: object, view: RunView, quiet: bool) -> None:
    if isinstance(event, RunStarted):
        out(f"run {event.run_id} '{event.name}': {len(event.steps)} step(s)")
    elif isinstance(event, StepStarted):
        step = f"step {event.step + 1}/{len(view.steps)}: {event.title}"
        target = event.spec["target"]["system"]
        strategy = event.spec["strategy"]["name"] or "default"
        server = (
            f", server {event.server.get('version', '')} pid {event.server['pid']}"
            if (event.server)
            else ""
        )
        out(
            f"-- {step} on {target}/{strategy}, {event.clients} clients, "
            f"{event.workers} worker(s){server}"
        )
        if event.nodes:
            out("   nodes: " + "; ".join(_node(n) for n in event.nodes))
    elif isinstance(event, Interval) and not quiet:
        step = view.steps[event.step]
        if step.latest is not None:
            out(live_line(event.elapsed, step.latest))
    elif isinstance(event, Notice):
        out(f"{event.level}: {event.message}")
    elif isinstance(event, StepFinished):
        for line in step_summary(view.steps[event.step]):
            out(line)
    elif isinstance(event, RunFinished):
        pass
