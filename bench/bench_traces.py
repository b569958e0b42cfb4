"""Op traces and simulation: what they cost and how fast they run (not a test).

1. Simulation speed: a synthetic zipf trace through every policy in libCacheSim's
   subprocess, in requests per second, both ways it runs: libCacheSim's own loop (what
   `workbench mrc` uses) and fed request by request to tell hot from cold (what a step's
   simulation uses).
2. The cost of --trace-out: the same Redis step with and without a trace, interleaved A B
   A B, ops/s of each and the ratio, and the load worker's CPU per op (steadier than ops/s
   when the machine is shared), for the Python engine's `multiplexed` and the native one.

Usage: python bench/bench_traces.py [requests] [seconds per step] [pairs]
The machine may be shared: compare ratios within a pair, not absolute figures.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
from array import array

from workbench.results.events import StepFinished
from workbench.results.metrics import summarise
from workbench.results.store import Store
from workbench.run import session
from workbench.sdk.errors import SpecError
from workbench.simulate.policies import POLICIES
from workbench.simulate.runner import simulate
from workbench.spec.steps import load_spec
from workbench.workload.oracle_trace import write_trace


def zipf_trace(path: str, requests: int, objects: int) -> None:
    rng = random.Random(1)
    weights = [1 / (i + 1) for i in range(objects)]
    keys = array("Q", rng.choices(range(objects), weights=weights, k=requests))
    write_trace(path, array("q", range(requests)), keys, array("I", [100]) * requests)


def simulation_speed(requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "zipf.oracleGeneral")
        zipf_trace(trace, requests, requests // 10)
        size = requests  # objects of 100 bytes: a cache of a tenth of them
        print(f"simulation: {requests:,} zipf requests, cache of {size // 100:,} objects")
        for policy in POLICIES:
            _, own = simulate(trace, [policy], [size * 10], "bytes")
            _, fed = simulate(trace, [policy], [size * 10], "bytes", hot_below=requests // 50)
            print(
                f"  {policy:9} libCacheSim's loop {requests / own / 1e6:6.2f}M req/s   "
                f"fed one by one {requests / fed / 1e6:6.2f}M req/s"
            )


async def one_step(overrides: list[str], store: Store) -> tuple[float, float]:
    """ops/s, and the load worker's CPU per op in µs: the steadier figure on a busy machine."""
    spec = load_spec(None, overrides)
    async for event in session.run(spec, store):
        if isinstance(event, StepFinished):
            ops = max(event.stats.ops, 1)
            return summarise(event.stats).ops_per_s, 1e6 * sum(event.stats.cpu.values()) / ops
    return 0.0, 0.0


async def trace_cost(seconds: float, pairs: int) -> None:
    base = [
        "target.system=redis",
        "target.managed=true",
        "workload.mix={get=9,set=1}",
        f"load.duration={seconds}",
        "load.warmup=0.5",
        "load.workers=1",
    ]
    engines = [("python", ["strategy.name=multiplexed", "load.concurrency=64"])]
    engines.append(("native", ["strategy.name=native", "load.concurrency=16"]))
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(os.path.join(tmp, "runs.sqlite3"))
        trace = f'workload.trace_out="{os.path.join(tmp, "t.oracleGeneral")}"'
        for name, shape in engines:
            try:
                load_spec(None, [*base, *shape, trace])
            except SpecError as exc:
                print(f"trace cost, {name} engine: not measured ({exc.message})")
                continue
            for _ in range(pairs):
                plain, plain_cpu = await one_step([*base, *shape], store)
                traced, traced_cpu = await one_step([*base, *shape, trace], store)
                print(
                    f"trace cost, {name} engine: {plain:,.0f} ops/s without, "
                    f"{traced:,.0f} with --trace-out ({traced / plain:.2f}x); worker CPU "
                    f"{plain_cpu:.2f} -> {traced_cpu:.2f} us/op ({traced_cpu / plain_cpu:.2f}x)"
                )


def main(argv: list[str]) -> None:
    requests = int(argv[0]) if argv else 1_000_000
    seconds = float(argv[1]) if len(argv) > 1 else 3.0
    pairs = int(argv[2]) if len(argv) > 2 else 2
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().strip()}")
    simulation_speed(requests)
    asyncio.run(trace_cost(seconds, pairs))


if __name__ == "__main__":
    main(sys.argv[1:])
