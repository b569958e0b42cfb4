"""Run events: what the engine yields, the store keeps, and both faces consume."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.metrics import Stats

# "degraded": measured to the end, but some workers were lost on the way (their share is
# missing from the figures after they were lost).
RunStatus = Literal["running", "completed", "degraded", "interrupted", "failed"]


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    name: str
    spec: dict[str, Any]
    steps: list[dict[str, Any]]  # {"index", "label", "title"} per step
    environment: dict[str, Any]
    started_at: float


@dataclass(frozen=True)
class StepStarted:
    run_id: str
    step: int
    title: str
    label: dict[str, str]
    spec: dict[str, Any]
    workers: int
    clients: int
    server: dict[str, Any] = field(default_factory=dict)  # managed server pid, version...
    # Machines the workers ran on: {"host", "cpus", "workers"} each; [] for this host only.
    nodes: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Interval:
    run_id: str
    step: int
    index: int
    elapsed: float  # seconds since the step's measurement began, at the interval's end
    stats: Stats
    warmup: bool = False


@dataclass(frozen=True)
class Notice:
    """Something a person should see: a worker died, a server stopped answering..."""

    run_id: str
    step: int
    level: Literal["info", "warning", "error"]
    message: str


@dataclass(frozen=True)
class StepFinished:
    run_id: str
    step: int
    status: RunStatus
    stats: Stats  # the whole measured step, all workers merged
    reason: str = ""  # why a step failed, in one line


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    status: RunStatus
    error: str | None = None


Event = RunStarted | StepStarted | Interval | Notice | StepFinished | RunFinished
