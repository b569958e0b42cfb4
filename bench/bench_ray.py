"""The Ray launcher's own cost: the same spec with local worker processes and with Ray actors.

Runs A (local) and B (Ray) interleaved, A B A B ..., on this machine, with equal worker
counts, and prints each run's throughput and client CPU, then the median ratio B/A
(target >= 0.9x). One private local Ray is started once for the whole benchmark (the
launcher reuses a connection it finds), so its start-up is not in the figures; its idle
processes run during both A and B.

On one machine this measures only Ray's own overhead (actor runtime, frames through Ray,
its background processes on the same cores), never what spreading load over several
machines gains.

Usage: python bench/bench_ray.py [rounds] [--set path=value ...]
Default spec: the embedded cache, 2 workers, 16 clients, 5 s measured after 1 s warm-up.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import tempfile
from pathlib import Path

from workbench.engine.launchers import RAY_LOOPBACK_ONLY

os.environ.setdefault(RAY_LOOPBACK_ONLY, "0")  # read when ray is imported: loopback only
import ray

from workbench import session
from workbench.events import StepFinished
from workbench.metrics import Stats, summarise
from workbench.spec.steps import load_spec
from workbench.store import Store

BASE = [
    "load.workers=2",
    "load.concurrency=16",
    "load.duration=5",
    "load.warmup=1",
    "load.interval=1",
]


async def one_run(overrides: list[str], store: Store) -> Stats:
    spec = load_spec(None, overrides)
    totals: Stats | None = None
    async for event in session.run(spec, store):
        if isinstance(event, StepFinished):
            if event.status != "completed":
                raise SystemExit(f"run {event.status}: {event.reason}")
            totals = event.stats
    assert totals is not None
    return totals


def describe(name: str, stats: Stats) -> tuple[float, float]:
    s = summarise(stats)
    cpu = sum(stats.cpu.values())
    per_s = cpu / stats.duration if stats.duration else 0.0
    print(
        f"  {name:<5} {s.ops_per_s:>12,.0f} ops/s   p50 {s.p(50.0) or 0:>7.1f} us   "
        f"client CPU {per_s:4.2f} cores, {1e6 * cpu / max(1, s.ops):6.2f} us/op",
        flush=True,
    )
    return s.ops_per_s, per_s


def main() -> None:
    args = sys.argv[1:]
    rounds = int(args.pop(0)) if args and args[0].isdigit() else 3
    extra = [a for a in args if a != "--set"]
    base = [*BASE, *extra]
    logging.getLogger("ray").setLevel(logging.ERROR)
    temp = tempfile.mkdtemp(prefix="wbbench")
    ray.init(
        address="local",
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=100 * 1024 * 1024,
        _temp_dir=temp,
        configure_logging=False,
    )
    print(
        f"local vs Ray launcher, {rounds} rounds, {os.cpu_count()} CPUs: {' '.join(base)}",
        flush=True,
    )
    store = Store(Path(temp) / "runs.sqlite3")
    local: list[tuple[float, float]] = []
    remote: list[tuple[float, float]] = []
    try:
        for i in range(rounds):
            print(f"round {i + 1}", flush=True)
            local.append(describe("local", asyncio.run(one_run(base, store))))
            remote.append(
                describe("ray", asyncio.run(one_run([*base, "load.launcher=ray"], store)))
            )
    finally:
        ray.shutdown()
    ratios = [b[0] / a[0] for a, b in zip(local, remote, strict=True) if a[0]]
    ratio = statistics.median(ratios)
    print(
        f"ray/local throughput: median {ratio:.2f}x (rounds: "
        f"{', '.join(f'{r:.2f}' for r in ratios)}); target >= 0.9x: "
        f"{'met' if ratio >= 0.9 else 'NOT met'}"
    )
    cpu_a = statistics.median(a[1] for a in local)
    cpu_b = statistics.median(b[1] for b in remote)
    print(f"client CPU (median): local {cpu_a:.2f} cores, ray {cpu_b:.2f} cores")


if __name__ == "__main__":
    main()
