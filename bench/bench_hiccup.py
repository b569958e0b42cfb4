"""The hiccup meter's cost (issue 35), on a throw-away redis-server (not a test).

- The meter's own CPU, as a share of one core per CPU it watches (target: under 1%):
  `workbench-native --hiccup` and its Python stand-in, each for SECONDS on the machine as
  it is and beside a closed loop of native GETs, from its threads' schedstat (the time
  each was on a CPU, to the ns).
- Instructions per op of the load path (valgrind, user space) with the meter running
  beside it and without, A B A B: a native worker's pipelined GETs (bench_native's
  measure: 50k against 250k ops, the difference per op). The meter is a process of its
  own, so the worker runs the same code either way: the figure says that nothing was put
  on the load path (target: at most 1% more).
- The load's own rate beside the meter: closed-loop native GETs (16 clients, one worker)
  with the meter and without (`machine.hiccup_tick=0`), A B A B, each pair's ratio: what
  the meter's wake-ups cost the CPUs the load runs on.

Usage: python bench/bench_hiccup.py [seconds] [pairs]
The machine is shared and noisy: read the ratios within a pair, with the load average.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from workbench_redis.server import start_redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_native import instructions, loadavg  # a sibling script, not a package

from workbench.engine.hiccup_meter import meter_command
from workbench.results.store import Store
from workbench.run import session
from workbench.spec.native_binary import binary_path
from workbench.spec.steps import load_spec

FALLBACK = [sys.executable, "-m", "workbench.engine.hiccup_fallback"]


def cpu_seconds(pid: int) -> float:
    """CPU seconds of every thread of `pid`, to the ns (/proc/PID/task/*/schedstat: the
    time each was on a CPU; /proc/PID/stat counts in whole ticks of 10 ms)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


def meter_share(argv: list[str], seconds: float) -> float:
    """The meter's CPU over `seconds`, as a share of one core per CPU it watches (its
    start-up left out: measured from its first second on)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
    return (c1 - c0) / (t1 - t0) / len(os.sched_getaffinity(0))


def closed_loop(url: str, seconds: float, meter: bool, store: Store) -> float:
    """ops/s of a closed loop of native GETs (16 clients, one worker), with or without the
    machine's hiccup meter beside it."""
    sets = [
        "target.system=redis",
        f"target.options.url={url}",
        "strategy.name=native",
        "workload.mix={get=1}",
        "workload.keys=1000",
        "load.concurrency=16",
        "load.workers=1",
        f"load.duration={seconds}",
        "load.warmup=0.5",
        f"load.interval={seconds}",
    ]
    if not meter:
        sets.append("machine.hiccup_tick=0")

    async def run() -> float:
        ops = duration = 0.0
        async for event in session.run(load_spec(None, sets), store):
            if type(event).__name__ == "StepFinished":
                ops, duration = event.stats.ops, event.stats.duration  # type: ignore[attr-defined]
        return ops / duration if duration else 0.0

    return asyncio.run(run())


def meter_cpu(native: list[str], url: str, seconds: float, store: Store) -> None:
    print(f"The meter's CPU, % of one core per CPU ({len(os.sched_getaffinity(0))} CPUs)")
    for name, argv in (("native", native), ("python", [*FALLBACK, *native[-4:]])):
        idle = meter_share(argv, seconds)
        busy: list[float] = []
        load = subprocess.Popen(  # a closed loop beside it, in its own process
            [sys.executable, __file__, "--load", url, str(seconds + 2)],
            stdout=subprocess.DEVNULL,
        )
        try:
            time.sleep(1.5)
            busy.append(meter_share(argv, seconds))
        finally:
            load.wait(timeout=120)
        print(
            f"  {name}: idle machine {idle:.2%}, beside a closed loop {busy[0]:.2%}"
            f" (load average {loadavg()})"
        )


def load_path(binary: Path, native: list[str], url: str, pairs: int) -> None:
    if not shutil.which("valgrind"):
        print("Instructions per op: valgrind is not on PATH")
        return
    print("Instructions per pipelined GET of a native worker (valgrind, 50k vs 250k ops)")
    for _ in range(pairs):
        per_op = {}
        for meter in (False, True):
            proc = subprocess.Popen(native, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            if not meter:
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait(timeout=10)
            try:
                small = instructions(binary, url, 50_000, 4)
                large = instructions(binary, url, 250_000, 4)
            finally:
                if meter:
                    proc.stdin.close()  # type: ignore[union-attr]
                    proc.wait(timeout=10)
            per_op[meter] = (large - small) / 200_000
        ratio = per_op[True] / per_op[False]
        print(f"  without {per_op[False]:,.1f}, with the meter {per_op[True]:,.1f} ({ratio:.4f}x)")


def rates(url: str, seconds: float, pairs: int, store: Store) -> None:
    print(f"Closed-loop native GETs, 16 clients, one worker, {seconds:g} s, A B A B")
    for _ in range(pairs):
        before = loadavg()
        without = closed_loop(url, seconds, False, store)
        with_meter = closed_loop(url, seconds, True, store)
        print(
            f"  without {without:,.0f} ops/s, with the meter {with_meter:,.0f} "
            f"({with_meter / without:.3f}x); load average {before} -> {loadavg()}"
        )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--load":  # the closed loop beside the meter
        closed_loop(sys.argv[2], float(sys.argv[3]), False, Store(":memory:"))
        return
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    binary = binary_path()
    native = meter_command(0.001, 0.001)
    if binary is None or native[0] == sys.executable:
        sys.exit("the native engine is not built: ./dev setup")
    server = start_redis()
    url = server.target_options["url"]
    store = Store(Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-hiccup-{os.getpid()}.sqlite")
    try:
        print(f"load average {loadavg()} at start")
        meter_cpu(native, url, seconds, store)
        rates(url, seconds, pairs, store)
        load_path(binary, native, url, pairs)
    finally:
        server.stop()
        store.close()
        Path(store.path).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
