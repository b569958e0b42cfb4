"""Trace replay against Redis in the Python engine, beside the synthetic workload of the
same shape (not a test).

A synthetic trace (zipf 0.9 over K objects, sizes uniform(10,1000)) is replayed
get-set-on-miss against a fresh managed Redis; then the same shape is run as the engine's
own workload (cache_aside, zipf(0.9) over K keys, the same op count). Pairs run
interleaved A B A B; the ratio of ops/s within a pair is the figure to read.

Usage: python bench/bench_trace_replay.py [requests] [objects] [pairs]
The machine may be shared: compare ratios within a pair, not absolute figures.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

from workbench import session
from workbench.events import StepFinished
from workbench.spec.steps import load_spec
from workbench.store import Store
from workbench.traces.formats import writer
from workbench.traces.synth import synth

COMMON = [
    "target.system=redis",
    "target.managed=true",
    'strategy.name="multiplexed"',
    "load.concurrency=16",
    "load.workers=2",
    "load.warmup=0",
    "load.interval=1",
]


async def ops_per_s(overrides: list[str], store: Store) -> float:
    spec = load_spec(None, overrides)
    async for e in session.run(spec, store):
        if isinstance(e, StepFinished):
            assert e.status == "completed", e.reason
            return e.stats.ops / e.stats.duration
    raise AssertionError("no step finished")


async def main(requests: int, objects: int, pairs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "bench.oracleGeneral.zst")
        writer("oracleGeneral")(synth(requests, objects, seed=1), trace)
        store = Store(os.path.join(tmp, "runs.sqlite"))
        replay = [*COMMON, f'workload.trace.path="{trace}"', "load.duration=600"]
        shaped = [
            *COMMON,
            "workload.mix={cache_aside=1}",
            f"workload.keys={objects}",
            'workload.key_distribution="zipf(0.9)"',
            'workload.value_size="uniform(10,1000)"',
            f"load.ops={requests}",
            "load.duration=600",
        ]
        for pair in range(pairs):
            a = await ops_per_s(replay, store)
            b = await ops_per_s(shaped, store)
            print(
                f"pair {pair + 1}: trace replay {a:,.0f} ops/s, synthetic {b:,.0f} ops/s, "
                f"ratio {a / b:.2f}"
            )
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().strip()}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    asyncio.run(main(*(args + [200_000, 10_000, 2][len(args) :])))
