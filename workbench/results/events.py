"""Run events: what the engine yields, the store keeps, and both faces consume."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from workbench.results.metrics import Stats, Summary, summarise

# "degraded": measured to the end, but some workers were lost on the way (their share is
# missing from the figures after they were lost). "abandoned": the process running it
# ended without finishing it (found so when the store is next opened).
RunStatus = Literal["running", "completed", "degraded", "interrupted", "failed", "abandoned"]


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    name: str
    spec: dict[str, Any]
    steps: list[dict[str, Any]]  # {"index", "label", "title"} per step
    environment: dict[str, Any]
    started_at: float
    # Who runs it: {"host", "pid", "pid_start"}, so that a run whose process is gone can be
    # told apart from one still running (empty in runs stored before it was kept).
    runner: dict[str, Any] = field(default_factory=dict)


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
    # The resolved facts, so that reading a run never needs the plugin that ran it.
    system: str = ""
    strategy: str = ""  # the strategy really run, never "" once resolved
    system_options: dict[str, Any] = field(default_factory=dict)
    strategy_options: dict[str, Any] = field(default_factory=dict)
    server_options: dict[str, Any] = field(default_factory=dict)  # {} when not managed
    # {"name", "version"}, and "native_available": whether its system has a native strategy
    engine: dict[str, Any] = field(default_factory=dict)
    allow_remote: bool = False
    # Machines the workers ran on: {"host", "cpus", "workers"} each; [] for this host only.
    nodes: list[dict[str, Any]] = field(default_factory=list)
    # How the clients map to connections, in one sentence (`workbench.engine.connections`), said
    # when the step starts and stored, so a reader never needs the plugin.
    connections: str = ""
    # What the system declared that a reader needs (`CacheSystem.facts`): its server's
    # cores, the option that sizes its cache, its figures' names, its refusals.
    facts: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        """The resolved facts as the store keeps them."""
        return {
            "system": self.system,
            "strategy": self.strategy,
            "system_options": self.system_options,
            "strategy_options": self.strategy_options,
            "server_options": self.server_options,
            "engine": self.engine,
            "allow_remote": self.allow_remote,
            "nodes": self.nodes,
            "connections": self.connections,
            "facts": self.facts,
        }


@dataclass(frozen=True)
class Interval:
    run_id: str
    step: int
    index: int
    elapsed: float  # seconds since the step's measurement began, at the interval's end
    stats: Stats
    warmup: bool = False

    @cached_property
    def summary(self) -> Summary:
        """`summarise(stats)`, taken once: the store's chart point and the live view both
        read it (an interval's statistics are not changed once it is an event)."""
        return summarise(self.stats)


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
class StepSimulated:
    """A step's trace replayed through eviction policies (`workbench.simulate`): simulated
    figures, stored beside the measured ones and never mistaken for them.

    `results` is {"limit", "unit", "requests", "seconds", "policies": {name: {"hit_rate",
    "hot", "cold"}}} with rates as shares (0..1), as the measured ones, or {"error": why}."""

    run_id: str
    step: int
    results: dict[str, Any]


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    status: RunStatus
    error: str | None = None


Event = RunStarted | StepStarted | Interval | Notice | StepFinished | StepSimulated | RunFinished
