"""Workbench Redis strategies against redis-benchmark, on the same server, in the same run.

Starts one throw-away redis-server on a free loopback port, measures the reference with
redis-benchmark (SET and GET, random keys over the same key space, same value size and
connection count; once without pipelining and once with -P 16), then runs the same
workload through the workbench with every Redis strategy and prints each one's
throughput as a ratio of the reference. redis-benchmark is written in C with one
event loop; a ratio near 1 means the workbench measures the server, not itself.

Usage: python bench/bench_redis_strategies.py [seconds per strategy] [clients]
The machine is shared and noisy: compare ratios within one run, not absolute figures.
"""

from __future__ import annotations

import asyncio
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from workbench_redis.server import start_redis

from workbench.results.events import StepFinished
from workbench.results.metrics import summarise
from workbench.results.store import Store
from workbench.run import session
from workbench.sdk.servers import ServerProcess
from workbench.spec.steps import load_spec

KEYS = 10_000
VALUE = 100
STRATEGIES = (
    "multiplexed",
    "multiplexed-k",
    "pipeline",
    "async-pool",
    "sync-pool",
    "sync-per-client",
)


def redis_benchmark(server: ServerProcess, clients: int, requests: int, pipeline: int) -> float:
    """Combined SET+GET requests per second (harmonic mean of the two tests)."""
    program = shutil.which("redis-benchmark")
    if program is None:
        sys.exit("redis-benchmark is not installed (apt-get install redis-tools)")
    done = subprocess.run(
        [
            program,
            "-h",
            server.host,
            "-p",
            str(server.port),
            "-t",
            "set,get",
            "-n",
            str(requests),
            "-c",
            str(clients),
            "-r",
            str(KEYS),
            "-d",
            str(VALUE),
            "-P",
            str(pipeline),
            "--csv",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    rows = {r["test"]: float(r["rps"]) for r in csv.DictReader(io.StringIO(done.stdout))}
    return 2 / (1 / rows["SET"] + 1 / rows["GET"])


async def workbench(
    server: ServerProcess, strategy: str, seconds: float, clients: int
) -> tuple[float, float, float]:
    spec = load_spec(
        None,
        [
            "target.system=redis",
            f"target.options.url={server.target_options['url']}",
            f"strategy.name={strategy}",
            f"load.duration={seconds}",
            "load.warmup=1",
            f"load.concurrency={clients}",
            "workload.mix={get=1, set=1}",
            f"workload.keys={KEYS}",
            f"workload.value_size={VALUE}",
        ],
    )
    result: tuple[float, float, float] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        async for event in session.run(spec, Store(Path(tmp) / "bench.sqlite")):
            if isinstance(event, StepFinished):
                s = summarise(event.stats)
                if event.stats.error_count:
                    print(
                        f"  {strategy}: {event.stats.error_count} errors {event.stats.first_errors}"
                    )
                result = (s.ops_per_s, s.p(50), s.p(99))
    if result is None:
        raise RuntimeError("the run ended without a step")
    return result


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    with start_redis() as server:
        print(
            f"{server.version} on {server.address}; {os.cpu_count()} CPUs; "
            f"{clients} clients, {KEYS} keys, {VALUE} B values, GET/SET 1:1"
        )
        plain = redis_benchmark(server, clients, 200_000, 1)
        piped = redis_benchmark(server, clients, 1_000_000, 16)
        print(f"redis-benchmark            {plain:>12,.0f} req/s   (reference)")
        print(
            f"redis-benchmark -P 16      {piped:>12,.0f} req/s   ({piped / plain:.2f}x reference)"
        )
        print(
            f"{'workbench strategy':<26} {'ops/s':>12}         {'vs ref':>7} {'vs -P16':>8}"
            f"  {'p50':>9} {'p99':>9}"
        )
        for strategy in STRATEGIES:
            rate, p50, p99 = asyncio.run(workbench(server, strategy, seconds, clients))
            print(
                f"{strategy:<26} {rate:>12,.0f} ops/s   {rate / plain:>6.2f}x {rate / piped:>7.2f}x"
                f"  {p50:>7.0f}µs {p99:>7.0f}µs"
            )


if __name__ == "__main__":
    main()
