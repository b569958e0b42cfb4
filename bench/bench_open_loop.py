"""Open-loop latency against closed loop, per engine, on one idle redis-server.

For each engine (the Python engine's `multiplexed` strategy and the native engine), with
16 clients and one worker, GET of 100-byte values on 1,000 keys:

1. closed loop at 1 client: the p50 every open-loop figure is compared with (what one
   request costs when nothing queues);
2. closed loop at 16 clients: the maximum rate those clients reach;
3. open loop at 1,000, 10,000 and 20,000 ops/s and at 50% and 80% of that maximum;
4. a search for the highest rate with p99 < 1 ms (`workbench search`), from 1/16 of that
   maximum, against the maximum.

Each open-loop line prints p50 and p99 (and their ratio to the closed-loop p50 at one
client), the send lag's p99, the schedule kept (issued / offered), the client's CPU (the
worker's, as a share of one core; of it, the native worker's idle polling: polls between
sends and replies nearer than a wake-up costs, docs/frames.md) and the verdict. It is a
benchmark, not a test: on a shared machine the figures carry the other processes' noise,
so print `cat /proc/loadavg` next to them. Under `chrt -f` (a stand-in for a quiet machine) the
native worker never polls idle (docs/frames.md): the kernel's real-time throttling would
stop a poller for 50 ms of every second. Above about half the closed-loop rate `chrt` is
no upper bound either: there the worker (94-99% of a core, polling or not) and the
server (75-80%) keep both CPUs of a 2-core VM busy enough to be throttled too (send lag
p99 36-45 ms at 70-110k ops/s, `bench/bench_fixed_rate.py`, h25).

Usage: python bench/bench_open_loop.py [seconds per step] [engine ...]
Engines: python, native (default both). The redis-server is started on a free loopback
port and stopped at the end.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from workbench_redis.server import start_redis

from workbench.results.events import Event, StepFinished
from workbench.results.live import RunView
from workbench.results.metrics import Recorded, Stats, summarise
from workbench.results.search_rules import search_spec
from workbench.results.store import Store
from workbench.run import session
from workbench.run.search import SearchRun
from workbench.sdk.servers import ServerProcess
from workbench.spec.steps import load_spec

STRATEGIES = {"python": "multiplexed", "native": "native"}
CLIENTS = 16


def overrides(server: ServerProcess, engine: str, seconds: float, *more: str) -> list[str]:
    return [
        "target.system=redis",
        f"target.options.url={server.target_options['url']}",
        f"strategy.name={STRATEGIES[engine]}",
        "workload.mix={get=1}",
        "workload.keys=1000",
        "workload.value_size=100",
        "load.workers=1",
        f"load.concurrency={CLIENTS}",
        "load.warmup=0.5",
        "load.interval=1",
        f"load.duration={seconds}",
        *more,
    ]


async def step(
    server: ServerProcess, store: Store, engine: str, seconds: float, *more: str
) -> tuple[Stats, str]:
    """One step's totals and its verdict line."""
    spec = load_spec(None, overrides(server, engine, seconds, *more))
    view = RunView()
    totals: Stats | None = None
    event: Event
    async for event in session.run(spec, store):
        view = view.apply(event)
        if isinstance(event, StepFinished):
            if event.status != "completed":
                raise SystemExit(f"{engine} {more}: step {event.status}: {event.reason}")
            totals = event.stats
    assert totals is not None
    return totals, view.steps[0].verdict.kind


def _us(ns: int) -> float:
    return ns / 1000


def _cpu(stats: Stats) -> float:
    return sum(stats.cpu.values()) / stats.duration if stats.duration else 0.0


def _polled(stats: Stats) -> float:
    """Of the client's CPU, the native worker's idle polling (docs/frames.md)."""
    polled = stats.server.get("idle_poll", {})
    return sum(polled.values()) / stats.duration if stats.duration else 0.0


async def bench(engine: str, seconds: float, server: ServerProcess, store: Store) -> None:
    one, _ = await step(server, store, engine, seconds, "load.concurrency=1")
    base = summarise(one).p(50.0) or 1.0
    closed, verdict = await step(server, store, engine, seconds)
    top = summarise(closed).ops_per_s
    print(
        f"{engine}: closed loop, 1 client p50 {base:.0f} us; {CLIENTS} clients "
        f"{top:,.0f} ops/s (client CPU {_cpu(closed):.0%} of a core, {verdict})",
        flush=True,
    )
    rates = [
        ("1,000", 1000.0),
        ("10,000", 10000.0),
        ("20,000", 20000.0),  # the Python engine's pacing target: send lag p99 <= 200 us
        ("50% max", top / 2),
        ("80% max", 0.8 * top),
    ]
    for name, rate in rates:
        stats, verdict = await step(server, store, engine, seconds, f"load.rate={rate:.0f}")
        s = summarise(stats)
        p50, p99 = s.p(50.0) or 0.0, s.p(99.0) or 0.0
        lag = Recorded(stats.send_lag).values_at((99.0,))[99.0] if stats.send_lag else 0
        issued = (stats.ops + stats.error_count) / stats.offered if stats.offered else 0.0
        print(
            f"  {engine:<6} {name:>8} ({rate:>9,.0f} ops/s): p50 {p50:7.0f} us "
            f"({p50 / base:4.1f}x), p99 {p99:7.0f} us ({p99 / base:5.1f}x), "
            f"send lag p99 {_us(lag):7.0f} us, issued {issued:6.1%}, "
            f"client CPU {_cpu(stats):4.0%} (idle polling {_polled(stats):4.0%}), {verdict}",
            flush=True,
        )
    await search(engine, seconds, top, server, store)


async def search(
    engine: str, seconds: float, top: float, server: ServerProcess, store: Store
) -> None:
    settings = [f"search.start={top / 16:.0f}", f"search.probe={seconds}", "search.max_probes=13"]
    spec = load_spec(None, [*overrides(server, engine, seconds), *settings])
    spec, checks = search_spec(spec, ["p99<1ms"])
    run = SearchRun(spec, checks)
    async for _ in run.events(store):
        pass
    best = run.search.best
    share = f" ({best.rate / top:.0%} of the closed-loop maximum)" if best else ""
    print(f"  {engine:<6} search p99<1ms: {run.search.conclusion()}{share}", flush=True)


async def main() -> None:
    args = sys.argv[1:]
    seconds = float(args.pop(0)) if args and args[0].replace(".", "").isdigit() else 3.0
    engines = args or ["python", "native"]
    server = start_redis()
    try:
        with tempfile.TemporaryDirectory(prefix="wbbench") as temp:
            store = Store(Path(temp) / "runs.sqlite")
            for engine in engines:
                await bench(engine, seconds, server, store)
    finally:
        server.stop()
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().strip()}")


if __name__ == "__main__":
    asyncio.run(main())
