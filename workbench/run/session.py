"""The one way to run an experiment: `run(spec, store)`. Both faces are a loop over it.

Every event is stored before it is yielded, so what a face shows is what the store
holds. A stop request (Ctrl-C, the TUI's stop key) ends the load promptly; what was
measured is kept and the run is marked interrupted.
"""

from __future__ import annotations

import asyncio
import os
import platform
import secrets
import shutil
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

from workbench import __version__
from workbench.engine.coordinator import Coordinator, NextStep
from workbench.engine.limits import check_limits
from workbench.files.run_owner import this_runner
from workbench.results.events import (
    Event,
    Notice,
    RunFinished,
    RunStarted,
    StepFinished,
    StepSimulated,
    StepStarted,
)
from workbench.results.store import Store, StoredRun
from workbench.sdk.discovery import load_plugin
from workbench.sdk.errors import WorkbenchError
from workbench.sdk.scratch import scratch_dir
from workbench.simulate.policies import parse_policies
from workbench.simulate.runner import require as require_simulator
from workbench.simulate.steps import simulate_step
from workbench.spec.model import Spec, check_name, spec_to_dict
from workbench.spec.resolve import fallback_notice
from workbench.spec.steps import Step, check_spec, plan

# The workbench's own libraries whose versions a run records; each system adds its own
# (`CacheSystem.libraries`: its client libraries).
LIBRARIES = ("hdrhistogram", "uvloop", "textual")


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def launcher_log(store: Store, run_id: str) -> Path:
    """The file a run's launcher logs to (Ray's own lines), beside the store."""
    return store.path.parent / "logs" / f"{run_id}.ray.log"


def run_libraries(spec: Spec, steps: list[Step]) -> tuple[str, ...]:
    """The systems' client libraries (every step's, or the spec's for a search that plans
    as it goes), then the workbench's own."""
    systems = [s.resolved.system for s in steps if s.resolved] or [load_plugin(spec.target.system)]
    own = [name for system in systems for name in system.libraries]
    return tuple(dict.fromkeys([*own, *LIBRARIES]))


def environment(libraries: tuple[str, ...] = LIBRARIES) -> dict[str, Any]:
    """The machine and software a run was measured on, for the report's header."""
    libs = {}
    for name in libraries:
        try:
            libs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "workbench": __version__,
        "libraries": libs,
        "cpu_model": _cpu_model(),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _simulation(spec: Spec) -> tuple[Spec, tuple[str, ...], str | None]:
    """The spec (writing its requests to a scratch trace when it simulates and names no
    trace of its own), the policies to simulate, and the scratch directory to remove."""
    policies = parse_policies(spec.simulate.policies) if spec.simulate is not None else ()
    if not policies:
        return spec, (), None
    require_simulator()  # one line saying how to install it, before anything runs
    if spec.workload.trace_out:
        return spec, policies, None
    scratch = str(scratch_dir("trace"))  # removed after the run
    trace = os.path.join(scratch, "trace.oracleGeneral")
    return replace(spec, workload=replace(spec.workload, trace_out=trace)), policies, scratch


def _planned(
    spec: Spec, next_step: NextStep | None, scratch: str | None
) -> tuple[list[Step], NextStep | None]:
    """The spec's steps (none when asked for in turn), each checked against this machine's
    limits: here for a planned run, as they come for a search. A refused spec's scratch
    trace folder is removed (it was left in the temporary folder)."""
    try:
        steps = check_spec(spec) if next_step is None else []
        check_limits(steps)
    except BaseException:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    return steps, None if next_step is None else _limits_checked(next_step)


async def run(
    spec: Spec,
    store: Store,
    *,
    stop: asyncio.Event | None = None,
    name: str | None = None,
    next_step: NextStep | None = None,
) -> AsyncIterator[Event]:
    """Run `spec`, storing then yielding every event; ends with exactly one RunFinished.

    With `next_step`, the steps are not the spec's sweep: each is asked for in turn,
    given the previous step's StepFinished (None at first), until it returns None.
    """
    check_name(name or spec.name, "name")
    spec, policies, scratch = _simulation(spec)
    steps, next_step = _planned(spec, next_step, scratch)
    stop = stop or asyncio.Event()
    run_id = new_run_id()
    started = RunStarted(
        run_id,
        name or spec.name,
        spec_to_dict(spec),
        [{"index": s.index, "label": s.label, "title": s.title} for s in steps],
        environment(run_libraries(spec, steps)),
        time.time(),
        this_runner(),
    )
    store.record(started)
    yield started
    for notice in _fallback_notices(run_id, spec, steps):
        store.record(notice)
        yield notice
    coordinator = Coordinator(run_id, steps, stop, launcher_log=launcher_log(store, run_id))
    finished: RunFinished | None = None
    step_starts: dict[int, StepStarted] = {}
    try:
        stream = coordinator.events() if next_step is None else coordinator.events_from(next_step)
        async for event in stream:
            store.record(event)
            yield event
            if isinstance(event, StepStarted):
                step_starts[event.step] = event
            elif policies and isinstance(event, StepFinished) and event.step in step_starts:
                simulated = await _simulate(step_starts[event.step], event, policies)
                store.record(simulated)
                yield simulated
        finished = RunFinished(run_id, "interrupted" if stop.is_set() else coordinator.status)
    except WorkbenchError as exc:
        finished = RunFinished(run_id, "failed", str(exc))
    except (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt):
        store.record(RunFinished(run_id, "interrupted", "cancelled"))
        raise
    except Exception as exc:
        finished = RunFinished(run_id, "failed", f"{type(exc).__name__}: {exc}")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    store.record(finished)
    yield finished


async def _simulate(
    started: StepStarted, finished: StepFinished, policies: tuple[str, ...]
) -> StepSimulated:
    """The step's trace through the policies (in a thread: the simulator is a subprocess)."""
    if finished.status not in ("completed", "degraded"):
        results: dict[str, Any] = {"error": f"the step {finished.status}"}
    else:
        try:
            results = await asyncio.to_thread(
                simulate_step, started.spec, started.resolved(), finished.stats.server, policies
            )
        except WorkbenchError as exc:
            results = {"error": exc.message}
    return StepSimulated(started.run_id, started.step, results)


def _fallback_notices(run_id: str, spec: Spec, steps: list[Step]) -> list[Notice]:
    """A notice per system whose steps, naming no strategy, fall back to a Python client."""
    said: dict[str, Notice] = {}
    for step in plan(spec) if steps else []:  # as written: "" where no strategy is named
        system = load_plugin(step.spec.target.system)
        if system.name in said:
            continue
        text = fallback_notice(system, step.spec)
        if step.spec.target.options.get("tls_insecure"):
            text = "; ".join(
                t for t in (text, "TLS certificates are NOT verified (tls_insecure = true)") if t
            )
        if text:
            said[system.name] = Notice(run_id, step.index, "warning", text)
    return list(said.values())


def _limits_checked(next_step: NextStep) -> NextStep:
    """Each step asked for, checked against this machine's limits before it runs."""

    def checked(last: Any) -> Any:
        step = next_step(last)
        if step is not None:
            check_limits([step])
        return step

    return checked


def list_runs(store: Store) -> list[Any]:
    return store.list_runs()


def load_run(store: Store, ref: str) -> StoredRun:
    return store.load(ref)
