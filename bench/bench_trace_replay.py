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

Usage: python bench/bench_trace_replay.py [requests] [objects] [pairs] [engines] [pipeline] [file]
  engines: python, native or both (default both); pipeline: the native P (default 16);
  file: zst (the trace compressed, the default) or plain. A .zst trace is decompressed on
  a thread of the worker's own, which on a 2-core machine takes CPU from the server's core.
The machine may be shared: compare ratios within a pair, not absolute figures.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass

from workbench.results.events import Interval, StepFinished
from workbench.results.store import Store
from workbench.run import session
from workbench.spec.steps import load_spec
from workbench.workload.traces.formats import writer
from workbench.workload.traces.synth import synth

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


async def main(
    requests: int, objects: int, pairs: int, engines: str, pipeline: int, file: str
) -> None:
    chosen = ["python", "native"] if engines == "both" else [engines]
    if file not in ("zst", "plain"):
        raise SystemExit(f"file: expected zst or plain, got {file!r}")
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "bench.oracleGeneral" + (".zst" if file == "zst" else ""))
        print(f"trace file: {os.path.basename(trace)}, {requests:,} requests, {objects:,} objects")
        writer("oracleGeneral")(synth(requests, objects, seed=1), trace)
        store = Store(os.path.join(tmp, "runs.sqlite"))
        for engine in chosen:
            common = [*COMMON, *engine_options(engine, pipeline)]
            replay = [*common, f'workload.trace.path="{trace}"', "load.duration=600"]
            shaped = [
                *common,
                "workload.mix={cache_aside=1}",
                f"workload.keys={objects}",
                'workload.key_distribution="zipf(0.9)"',
                'workload.value_size="uniform(10,1000)"',
                f"load.ops={requests}",
                "load.duration=600",
            ]
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
    defaults: list[str] = ["200000", "10000", "2", "both", "16", "zst"]
    a = args + defaults[len(args) :]
    asyncio.run(main(int(a[0]), int(a[1]), int(a[2]), a[3], int(a[4]), a[5]))
