"""Trace replay against Redis beside the synthetic workload of the same shape, in the
Python engine and in the native engine (not a test).

A synthetic trace (zipf 0.9 over K objects, sizes uniform(10,1000)) is replayed
get-set-on-miss against a fresh managed Redis; then the same shape is run as the engine's
own workload (cache_aside, zipf(0.9) over K keys, the same op count). Pairs run
interleaved A B A B; the ratio of ops/s within a pair is the figure to read. Each line
also gives the load generator's CPU (its workers, in cores) and the server's.

- python: the `multiplexed` strategy, 16 clients on 2 workers;
- native: the native engine, 1 worker, 16 clients with P requests in flight each (the
  issue's goal: at least 0.9x the synthetic rate, and 1M requests/s from a file to a
  pipelined server on a quiet machine).

With `kinds` = writes, the trace is Twitter's format replayed as recorded: 70% get, 10%
gets and 20% writes of the conditional kinds (add, replace, cas, append, prepend, incr,
decr, touch, 2.5% each), against the same mix drawn by the engine (workload.mix).

Usage: python bench/bench_trace_replay.py [requests] [objects] [pairs] [engines] [pipeline]
  [file] [kinds]
  engines: python, native or both (default both); pipeline: the native P (default 16);
  file: zst (the trace compressed, the default) or plain. A .zst trace is decompressed on
  a thread of the worker's own, which on a 2-core machine takes CPU from the server's core.
  kinds: aside (get-set-on-miss, the default) or writes.
The machine may be shared: compare ratios within a pair, not absolute figures.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from workbench.results.events import Interval, StepFinished
from workbench.results.store import Store
from workbench.run import session
from workbench.spec.steps import load_spec
from workbench.workload.traces.formats import writer
from workbench.workload.traces.records import Request
from workbench.workload.traces.synth import synth

# The writes workload: 20% conditional writes, and the gets whose tokens the cas send.
WRITES = {"get": 70.0, "gets": 10.0} | dict.fromkeys(
    ("add", "replace", "cas", "append", "prepend", "incr", "decr", "touch"), 2.5
)

COMMON = [
    "target.system=redis",
    "target.managed=true",
    "load.concurrency=16",
    "load.warmup=0",
    "load.interval=1",
]


def engine_options(engine: str, pipeline: int) -> list[str]:
    if engine == "native":
        return ['strategy.name="native"', f"strategy.options.pipeline={pipeline}", "load.workers=1"]
    return ['strategy.name="multiplexed"', "load.workers=2"]


@dataclass
class Figures:
    ops_per_s: float
    worker_cores: float  # the load generator's CPU over the step, in cores
    server_cores: float


async def measure(overrides: list[str], store: Store) -> Figures:
    spec = load_spec(None, overrides)
    worker_cpu = server_cpu = 0.0
    async for e in session.run(spec, store):
        if isinstance(e, Interval):
            worker_cpu += sum(float(s) for s in e.stats.cpu.values())
            server_cpu += float(e.stats.server.get("cpu_seconds") or 0.0)
        if isinstance(e, StepFinished):
            assert e.status == "completed", e.reason
            d = e.stats.duration
            return Figures(e.stats.ops / d, worker_cpu / d, server_cpu / d)
    raise AssertionError("no step finished")


def line(name: str, f: Figures) -> str:
    return (
        f"{name} {f.ops_per_s:,.0f} ops/s (load {f.worker_cores:.2f} cores, "
        f"server {f.server_cores:.2f})"
    )


def with_writes(requests: Iterator[Request]) -> Iterator[Request]:
    """The requests with their ops drawn from WRITES (seeded)."""
    rng = random.Random(2)
    names, weights = list(WRITES), list(WRITES.values())
    for r in requests:
        yield r._replace(op=rng.choices(names, weights)[0])


def workloads(trace: str, requests: int, objects: int, kinds: str) -> tuple[list[str], list[str]]:
    """The overrides of the replay and of the synthetic workload of the same shape."""
    mix = "{" + ", ".join(f"{k}={v}" for k, v in WRITES.items()) + "}"
    replay = [f'workload.trace.path="{trace}"', "load.duration=600"]
    if kinds == "writes":
        replay.append('workload.trace.ops="as-recorded"')
    shaped = [
        f"workload.mix={mix if kinds == 'writes' else '{cache_aside=1}'}",
        f"workload.keys={objects}",
        'workload.key_distribution="zipf(0.9)"',
        'workload.value_size="uniform(10,1000)"',
        f"load.ops={requests}",
        "load.duration=600",
    ]
    return replay, shaped


def write_trace(tmp: str, file: str, kinds: str, requests: int, objects: int) -> str:
    fmt = "twitter" if kinds == "writes" else "oracleGeneral"
    name = "bench.twitter.csv" if kinds == "writes" else "bench.oracleGeneral"
    trace = os.path.join(tmp, name + (".zst" if file == "zst" else ""))
    print(f"trace file: {os.path.basename(trace)}, {requests:,} requests, {objects:,} objects")
    made = synth(requests, objects, seed=1)
    writer(fmt)(with_writes(made) if kinds == "writes" else made, trace)
    return trace


async def main(
    requests: int, objects: int, pairs: int, engines: str, pipeline: int, file: str, kinds: str
) -> None:
    chosen = ["python", "native"] if engines == "both" else [engines]
    if file not in ("zst", "plain"):
        raise SystemExit(f"file: expected zst or plain, got {file!r}")
    if kinds not in ("aside", "writes"):
        raise SystemExit(f"kinds: expected aside or writes, got {kinds!r}")
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_trace(tmp, file, kinds, requests, objects)
        store = Store(os.path.join(tmp, "runs.sqlite"))
        replayed, drawn = workloads(trace, requests, objects, kinds)
        for engine in chosen:
            common = [*COMMON, *engine_options(engine, pipeline)]
            replay, shaped = [*common, *replayed], [*common, *drawn]
            for pair in range(pairs):
                a = await measure(replay, store)
                b = await measure(shaped, store)
                print(
                    f"{engine} pair {pair + 1}: {line('trace replay', a)}; "
                    f"{line('synthetic', b)}; ratio {a.ops_per_s / b.ops_per_s:.2f}",
                    flush=True,
                )
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().strip()}")


if __name__ == "__main__":
    args = sys.argv[1:]
    defaults: list[str] = ["200000", "10000", "2", "both", "16", "zst", "aside"]
    a = args + defaults[len(args) :]
    asyncio.run(main(int(a[0]), int(a[1]), int(a[2]), a[3], int(a[4]), a[5], a[6]))
