"""Draws the README's picture of the workbench: the Run screen during a sweep, as Textual
saves a screenshot itself (SVG), from fixed figures so that it is the same every time.

    .venv/bin/python docs/images/make-tui-picture.py      # writes docs/images/tui.svg

tests/tui/test_readme_picture.py draws it again and fails when the picture is not current.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from workbench.results.events import Interval, RunStarted, StepFinished, StepStarted
from workbench.results.live import RunView
from workbench.results.metrics import Stats, merged, new_histogram
from workbench.spec.model import Spec, TargetSpec, spec_to_dict
from workbench.tui.app import make_app

ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "docs" / "images" / "tui.svg"

SIZE = (120, 34)  # columns, rows: wide enough for every panel, short enough for a page
T0 = 1_795_854_900.0  # 2026-11-28 10:15 UTC


# A sweep of Redis over 1 to 64 clients, as this machine measures one: ops/s per step, the
# mean latency follows (clients / rate), and each interval varies a little.
RATES = {1: 21_800, 4: 77_500, 16: 139_000, 64: 151_000}
INTERVALS = 8


def interval(clients: int, k: int, rng: random.Random) -> Stats:
    """One second of GET/SET 9:1 at `clients`, latencies spread log-normally with a tail."""
    rate = RATES[clients] * rng.uniform(0.95, 1.04)
    mean_ns = 1e9 * clients / rate
    get, put = new_histogram(), new_histogram()
    for _ in range(300):
        ns = int(mean_ns * math.exp(rng.gauss(-0.06, 0.35)))
        tail = 1 + (rng.random() < 0.006) * rng.uniform(1.5, 4)
        get.record_value(int(ns * tail), int(rate * 0.9 / 300))
        put.record_value(int(ns * tail * 1.08), int(rate * 0.1 / 300))
    gets = get.get_total_count()
    hot = int(gets * 0.8)
    return Stats(
        duration=1.0,
        hist={"get": get, "set": put},
        hits=int(hot * 0.995) + int((gets - hot) * 0.71),
        misses=gets - int(hot * 0.995) - int((gets - hot) * 0.71),
        bytes_in=gets * 100,
        bytes_out=put.get_total_count() * 100,
        hot_gets=hot,
        hot_hits=int(hot * 0.995),
        server={"used_memory": 9_400_000 + 310_000 * k, "evicted_keys": 0},
    )


def events() -> list:
    """The sweep's events: three steps done, the fourth five seconds in."""
    rng = random.Random(38)
    run_id, name = "20261128-101500-e7a1", "redis 127.0.0.1:6379 native c1,4,16,64"
    data = spec_to_dict(Spec(name=name, target=TargetSpec("redis", managed=True)))
    data["load"].update(workers=2, duration=8.0)
    data["sweep"] = [{"path": "load.concurrency", "values": list(RATES), "labels": []}]
    steps = [
        {"index": i, "label": {"load.concurrency": str(c)}, "title": f"concurrency={c}"}
        for i, c in enumerate(RATES)
    ]
    out: list = [RunStarted(run_id, name, data, steps, {"host": "vm", "cpus": 2}, T0)]
    for i, clients in enumerate(RATES):
        out.append(
            StepStarted(run_id, i, steps[i]["title"], steps[i]["label"], data, workers=2,
                        clients=clients, system="redis", strategy="native",
                        connections=f"{clients} clients = {clients} connections, 2 workers")
        )  # fmt: skip
        last = i == len(RATES) - 1
        parts = [interval(clients, k, rng) for k in range(5 if last else INTERVALS)]
        out += [Interval(run_id, i, k, float(k + 1), s) for k, s in enumerate(parts)]
        if not last:
            out.append(StepFinished(run_id, i, "completed", merged(parts, concurrent=False)))
    return out


async def picture() -> str:
    """The screenshot's SVG text."""
    os.environ["TZ"] = "UTC"
    time.tzset()
    view = RunView()
    for event in events():
        view = view.apply(event)
    with tempfile.TemporaryDirectory() as folder:
        app = make_app(Path(folder) / "runs.sqlite3", profiles_dir=Path(folder))
        async with app.run_test(size=SIZE) as pilot:
            app.live = view
            await app.switch_mode("run")
            for _ in range(3):
                await pilot.pause()
                await app.workers.wait_for_complete()
            return app.export_screenshot(title="Cache Workbench")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else PICTURE
    out.write_text(asyncio.run(picture()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
