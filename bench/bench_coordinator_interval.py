"""The coordinator's own CPU per interval while a native worker runs an open-loop step.

One redis-server, one native worker, 16 clients, GET of 100-byte values on 1,000 keys, at
a fixed `load.rate` with 0.5 s intervals (a search probe's). The coordinator here is this
process: the session, the store, and a live view (`RunView.apply`) as a search keeps one.
Printed: its CPU (process time, not wall-clock) between the step's first and last Interval
event, per interval, which is what it takes from the machine while the worker and the
server are busiest; and the step's whole, start and stop included.

It depends on how spread the step's latencies are (a wider histogram has more buckets to
summarise), so it varies from run to run; print `cat /proc/loadavg` next to it. h29, at
70,000 ops/s on a shared 2-core VM: 4.7-10.1 ms per interval before one summary per
interval and the lazy step summary, 3.0-5.9 ms after.

Usage: python bench/bench_coordinator_interval.py [rate] [seconds]. The redis-server is
started on a free loopback port and stopped at the end.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from workbench_redis.server import start_redis

from workbench.results.events import Interval
from workbench.results.live import RunView
from workbench.results.store import Store
from workbench.run import session
from workbench.spec.steps import load_spec


async def main(rate: str, seconds: str) -> None:
    server = start_redis()
    try:
        with tempfile.TemporaryDirectory(prefix="wbbench") as temp:
            store = Store(Path(temp) / "runs.sqlite")
            spec = load_spec(
                None,
                [
                    "target.system=redis",
                    f"target.options.url={server.target_options['url']}",
                    "strategy.name=native",
                    "workload.mix={get=1}",
                    "workload.keys=1000",
                    "load.workers=1",
                    "load.concurrency=16",
                    "load.warmup=0.2",
                    "load.interval=0.5",
                    f"load.duration={seconds}",
                    f"load.rate={rate}",
                ],
            )
            view, marks = RunView(), []
            began = time.process_time()
            async for event in session.run(spec, store):
                view = view.apply(event)
                if isinstance(event, Interval):
                    marks.append(time.process_time())
            whole = time.process_time() - began
            store.close()
    finally:
        server.stop()
    if len(marks) < 2:
        raise SystemExit("fewer than two intervals: give the step more seconds")
    steady = (marks[-1] - marks[0]) / (len(marks) - 1)
    print(
        f"{rate} ops/s: coordinator {steady * 1e3:.2f} ms CPU per 0.5 s interval (between the"
        f" first and last Interval), {whole * 1e3:.0f} ms for the step's {len(marks)} intervals"
        " with start and stop"
    )
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().strip()}")


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(main(args[0] if args else "70000", args[1] if len(args) > 1 else "10"))
