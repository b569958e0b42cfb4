"""Deterministic stored runs for the golden reports.

Each run is a stream of real events (RunStarted, StepStarted, Interval, Notice,
StepFinished, RunFinished) with real `Stats` and HDR histograms filled from a seeded
generator, recorded through a real `Store` and loaded back, exactly as a report reads a
run the engine recorded. Only the clock-dependent `finished_at` is pinned after loading.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.engine.connections import describe as describe_connections
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
from workbench.results.metrics import Stats, fold, merged, new_histogram
from workbench.results.store import Store, StoredRun
from workbench.sdk.discovery import load_plugin
from workbench.spec.load import spec_from_data
from workbench.spec.model import Spec, spec_to_dict
from workbench.spec.steps import Step, plan, resolve_strategy

T0 = 1_700_000_000.0
ENVIRONMENT: dict[str, Any] = {
    "host": "bench-host",
    "cpus": 8,
    "machine": "x86_64",
    "system": "Linux 6.1.0",
    "python": "3.11.9",
    "workbench": "0.1.0",
    "libraries": {"hdrhistogram": "0.10.8", "redis": "5.0.1", "uvloop": "0.19.0"},
    "cpu_model": "Test CPU @ 2.40GHz",
}


def interval_stats(
    rng: random.Random,
    *,
    clients: int,
    slow: float,
    mix: dict[str, float],
    value_size: int,
    hot_share: float,
    errors: int = 0,
    server: dict[str, Any] | None = None,
) -> Stats:
    """One second of measurement: latencies around a median that grows with `clients`."""
    ops = int(4000 * slow**-1 * min(clients, 4) ** 0.5)
    median_ns = 20_000 * slow * (1 + clients / 8)
    stats = Stats(duration=1.0)
    total_weight = sum(mix.values())
    for name, weight in mix.items():
        kind = "get" if name == "cache_aside" else name
        n = int(ops * weight / total_weight)
        values = [int(rng.lognormvariate(0, 0.5) * median_ns) + 1 for _ in range(n)]
        values += [int(median_ns * 40)] * (n // 500)  # a slow tail
        hist = new_histogram()
        fold(hist, values)
        stats.hist[kind] = hist
        if kind == "get":
            hits = int(len(values) * (0.55 + 0.4 * rng.random()))
            stats.hits, stats.misses = hits, len(values) - hits
            stats.hot_gets = int(len(values) * hot_share)
            stats.hot_hits = min(stats.hot_gets, int(hits * 0.9))
            stats.bytes_in = hits * value_size
            if name == "cache_aside":  # every miss is set from the source
                stats.hist["set"] = new_histogram()
                fold(stats.hist["set"], [v * 2 for v in values[: stats.misses]])
                stats.bytes_out += stats.misses * value_size
        else:
            stats.bytes_out += len(values) * value_size
    if errors:
        stats.errors = {"timeout": errors}
        stats.first_errors = {"timeout": "TimeoutError: no reply within 1.0s"}
    stats.server = dict(server or {})
    return stats


def resolved_facts(spec: Spec) -> dict[str, Any]:
    """What the engine records with a step: the resolved system, strategy and options."""
    system = load_plugin(spec.target.system)
    strategy = resolve_strategy(system, spec)
    server = (
        system.server.options.resolve(dict(spec.target.server), "target.server")
        if (system.server and spec.target.managed)
        else {}
    )
    return {
        "facts": system.facts(server, spec.target.managed),
        "system": system.name,
        "strategy": strategy.name,
        "system_options": system.options.resolve(dict(spec.target.options), "target.options"),
        "strategy_options": strategy.options.resolve(
            dict(spec.strategy.options), "strategy.options"
        ),
        "engine": {"name": "python", "version": "0.1.0"},
    }


@dataclass(frozen=True)
class Shape:
    """How a synthetic run behaves: slower clients, a stop, errors, server figures, notices."""

    slow: float = 1.0
    stop_after: tuple[int, int] | None = None  # (step, intervals): stopped there, as Ctrl-C
    errors_from: int | None = None  # steps with at least this many clients time out
    server: dict[str, Any] | None = None
    notices: dict[int, str] | None = None  # step index -> an error notice
    intervals: int = 3  # per step (unless stopped)

    def stops_at(self, step: Step) -> bool:
        return self.stop_after is not None and step.index == self.stop_after[0]


def step_events(run_id: str, step: Step, rng: random.Random, shape: Shape) -> list[Event]:
    """StepStarted, its intervals, any notice and StepFinished for one step."""
    clients = step.spec.load.concurrency
    strategy_slow = shape.slow * (1.4 if step.spec.strategy.name == "threads" else 1.0)
    events: list[Event] = [
        StepStarted(
            run_id,
            step.index,
            step.title,
            step.label,
            spec_to_dict(step.spec),
            workers=min(2, clients),
            clients=clients,
            server={},
            **(facts := resolved_facts(step.spec)),
            connections=describe_connections(
                facts["system"],
                facts["strategy"],
                facts["strategy_options"],
                clients,
                min(2, clients),
                facts["system_options"],
            ),
        )
    ]
    stopped = shape.stops_at(step)
    count = shape.stop_after[1] if stopped and shape.stop_after else shape.intervals
    size = int(step.spec.workload.value_size.strip("fixed()") or 100)
    timeouts = shape.errors_from is not None and clients >= shape.errors_from
    intervals = []
    for i in range(count):
        stats = interval_stats(
            rng,
            clients=clients,
            slow=strategy_slow * (1 + 0.1 * i),
            mix=dict(step.spec.workload.mix),
            value_size=size,
            hot_share=0.8 if "hotcold" in step.spec.workload.key_distribution else 0.2,
            errors=7 * clients if timeouts else 0,
            server=shape.server,
        )
        intervals.append(stats)
        events.append(Interval(run_id, step.index, i, float(i + 1), stats))
    for index, message in (shape.notices or {}).items():
        if index == step.index:
            events.append(Notice(run_id, step.index, "error", message))
    step_status = "interrupted" if stopped else "completed"
    total = merged(intervals, concurrent=False)
    events.append(StepFinished(run_id, step.index, step_status, total))
    return events


def build(
    store: Store,
    run_id: str,
    *,
    overrides: list[str],
    seed: int = 1,
    slow: float = 1.0,
    stop_after: tuple[int, int] | None = None,
    errors_from: int | None = None,
    server: dict[str, Any] | None = None,
    notices: dict[int, str] | None = None,
    simulated: dict[str, Any] | None = None,
    intervals: int = 3,
) -> StoredRun:
    """Record a run of the spec `overrides` describe; `stop_after=(step, intervals)` stops
    it there, as Ctrl-C would."""
    shape = Shape(slow, stop_after, errors_from, server, notices, intervals)
    spec = spec_from_data({}, overrides)
    steps = plan(spec)
    rng = random.Random(seed)
    events: list[Event] = [
        RunStarted(
            run_id,
            spec.name,
            spec_to_dict(spec),
            [{"index": s.index, "label": s.label, "title": s.title} for s in steps],
            ENVIRONMENT,
            T0,
        )
    ]
    status = "completed"
    for step in steps:
        events += step_events(run_id, step, rng, shape)
        if simulated is not None:  # libCacheSim's figures for the step, as the session adds
            events.append(StepSimulated(run_id, step.index, simulated))
        if shape.stops_at(step):
            status = "interrupted"
            break
    events.append(RunFinished(run_id, status))  # type: ignore[arg-type]
    for event in events:
        store.record(event)
    run = store.load(run_id)
    run.finished_at = T0 + 60
    return run


def scenarios(path: Path) -> dict[str, list[StoredRun]]:
    """Every golden scenario: the runs each one reports on."""
    store = Store(path)
    single = build(
        store,
        "20231114-221320-0001",
        overrides=["name=single", "strategy.name=direct", "workload.keys=1000"],
    )
    sweep_args = [
        "name=sweep",
        'strategy.name=["direct", "threads"]',
        "load.concurrency=[1, 4, 16]",
        "workload.key_distribution=hotcold(0.8,0.2)",
        "workload.mix={get=0.8, set=0.2}",
        "workload.keys=50000",
        "load.duration=3",
    ]
    cache = {"used_memory": 3_500_000, "curr_items": 3_500, "evictions": 0}
    sweep = build(
        store, "20231114-221320-0002", overrides=sweep_args, seed=2, errors_from=16, server=cache
    )
    other = build(
        store,
        "20231114-221320-0003",
        overrides=[*sweep_args[:-1], "load.duration=3", "name=sweep-slower", "seed=7"],
        seed=3,
        slow=1.3,
        server=cache,
    )
    interrupted = build(
        store,
        "20231114-221320-0004",
        overrides=[
            "name=stopped",
            "strategy.name=direct",
            "load.concurrency=[2, 8, 32]",
            "workload.mix={cache_aside=1}",
            "workload.value_size=fixed(1000)",
            "target.options={max_entries=400}",
        ],
        seed=4,
        stop_after=(1, 2),
        server={"used_memory": 400_000, "curr_items": 400, "peak_rss_bytes": 2_161_553_408},
        notices={1: "worker died: pid 4242 killed by SIGKILL"},
    )
    policies = {
        "lru": {"hit_rate": 0.682712, "hot": 0.827601, "cold": 0.107453},
        "s3fifo": {"hit_rate": 0.795611, "hot": 0.980229, "cold": 0.062917},
        "belady": {"hit_rate": 0.829712, "hot": 0.972994, "cold": 0.260812},
    }
    simulated = build(
        store,
        "20231114-221320-0005",
        overrides=[
            "name=simulated",
            "strategy.name=direct",
            "workload.mix={cache_aside=1}",
            "workload.key_distribution=hotcold(0.8,0.2)",
            "target.options={max_entries=400}",
            'simulate.policies=["lru", "s3fifo", "belady"]',
        ],
        seed=5,
        server={"curr_items": 400},
        simulated={
            "limit": 400,
            "unit": "objects",
            "requests": 50_000,
            "seconds": 0.31,
            "trace": "/tmp/t.oracleGeneral",
            "warmed": True,
            "policies": policies,
        },
    )
    # An A/B with repeats: two strategies, each run three times, interleaved.
    ab = build(
        store,
        "20231114-221320-0006",
        overrides=[
            "name=ab",
            'strategy.name=["direct", "threads"]',
            "load.repeat=3",
            "load.concurrency=4",
            "workload.key_distribution=hotcold(0.8,0.2)",
        ],
        seed=6,
        intervals=4,
    )
    return {
        "ab": [ab],
        "simulated": [simulated],
        "single": [single],
        "sweep": [sweep],
        "comparison": [sweep, other],
        "interrupted": [interrupted],
    }
