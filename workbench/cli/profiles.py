"""`workbench profiles`: the experiments in profiles/ (or a folder), checked."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench.cli.common import one_line_errors, out
from workbench.sdk.errors import SpecError
from workbench.spec.profile_files import profiles_dir
from workbench.spec.steps import Step, check_spec, load_spec

app = typer.Typer(
    help="List and check the TOML experiments in profiles/.", invoke_without_command=True
)


@app.callback()
@one_line_errors
def profiles(
    ctx: typer.Context,
    folder: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="where the profiles are; default: profiles/ here, else the "
            "ones shipped with the workbench",
        ),
    ] = None,
) -> None:
    """Every profile with its description, then the systems and strategies its steps run, the
    step count and an estimated duration; broken ones with their error."""
    if ctx.invoked_subcommand is not None:
        return
    folder = folder or profiles_dir()
    files = sorted(folder.glob("*.toml"))
    if not files:
        out(f"no profiles in {folder}/")
        return
    for path in files:
        try:
            spec = load_spec(path)
            steps = check_spec(spec)
        except SpecError as exc:
            out(f"{path}: BROKEN: {exc}")
            continue
        out(f"{path}: {spec.description or spec.name}")
        out(f"    {what_runs(steps)}; {len(steps)} step{'s' if len(steps) != 1 else ''}, "
            f"{estimate(steps)}")  # fmt: skip


def what_runs(steps: list[Step]) -> str:
    """Each system with the strategies its steps run, e.g. "redis: multiplexed, pipeline"."""
    by_system: dict[str, list[str]] = {}
    for step in steps:
        names = by_system.setdefault(step.spec.target.system, [])
        if step.spec.strategy.name not in names:
            names.append(step.spec.strategy.name)
    return "; ".join(f"{system}: {', '.join(names)}" for system, names in by_system.items())


STEP_OVERHEAD = 1.0  # seconds: starting workers (and a managed server), a step's tail


def estimate(steps: list[Step]) -> str:
    """About how long the run takes: each timed step's warm-up and duration plus start-up.
    Steps that end after N ops, or at the end of a trace they replay (its duration is only
    an upper bound), cannot be timed before they run: they are said as such."""
    counted = [s for s in steps if s.spec.load.ops is not None]
    replays = [s for s in steps if s.spec.load.ops is None and s.spec.workload.trace]
    timed = [s.spec.load for s in steps if s.spec.load.ops is None and not s.spec.workload.trace]
    seconds = sum((ld.warmup if ld.warmup_ops is None else 0) + (ld.duration or 0) for ld in timed)
    parts = [f"about {_duration(seconds + STEP_OVERHEAD * len(timed))}"] if timed else []
    if counted:
        counts = sorted({s.spec.load.ops or 0 for s in counted})
        each = f"{counts[0]:,}" if len(counts) == 1 else f"{counts[0]:,} to {counts[-1]:,}"
        alone = len(counted) == len(steps)  # the step count is said before: "3 steps, "
        parts.append(f"{each} ops each" if alone else f"{_steps(len(counted))} of {each} ops")
    if replays:
        alone = len(replays) == len(steps)
        parts.append(f"{'each' if alone else _steps(len(replays))} replaying its trace to the end")
    if counted or replays:
        parts[-1] += " (time depends on the rate)"
    return " + ".join(parts)


def _steps(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
