"""Redis's conditional writes that are scripts go by EVALSHA, in both engines: the
server's command stats show EVALSHA for them, EVAL only where the server lacked the
script, and a SCRIPT FLUSH mid-run (every script gone) costs no op its right outcome: the
hits and each op's outcome counts still equal the dictionary model's exactly."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import redis
from support import collect, completed_clean, finished
from test_trace_every_op import NATIVE, PREFIX, SEED, build_trace, expected
from workbench_redis.server import start_redis

from workbench.results.events import Interval
from workbench.results.store import Store

SCRIPTED = ("append", "prepend", "incr", "decr", "touch", "cas")
# One op in flight: an op sent again after NOSCRIPT has nothing of its key behind it.
ENGINES = {
    "native": ['strategy.name="native"', "strategy.options.pipeline=1"],
    "multiplexed": ['strategy.name="multiplexed"'],
}


class FlushOnce:
    """SCRIPT FLUSH on the server when the run's second interval is in, in a thread."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.intervals = 0
        self.done = threading.Event()

    def flush(self) -> None:
        r = redis.Redis(port=self.port, socket_timeout=5)
        r.script_flush()
        r.close()
        self.done.set()

    def on_event(self, e: Any) -> None:
        if isinstance(e, Interval):
            self.intervals += 1
            if self.intervals == 2:
                threading.Thread(target=self.flush, daemon=True).start()


@pytest.mark.parametrize(
    "engine", [pytest.param("native", marks=NATIVE), pytest.param("multiplexed")]
)
async def test_scripts_go_by_evalsha_and_outlive_a_script_flush(
    tmp_path: Path, engine: str
) -> None:
    trace = tmp_path / "every-op.twitter.csv"
    rows = build_trace(trace, 600)  # one request a trace second: 1.5 s at speed 400
    model = expected(rows, "redis")
    with start_redis() as server:
        flush = FlushOnce(server.port)
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url=redis://127.0.0.1:{server.port}",
                *ENGINES[engine],
                f'workload.trace.path="{trace}"',
                'workload.trace.ops="as-recorded"',
                "workload.trace.speed=400",
                f'workload.key_prefix="{PREFIX}"',
                f"seed={SEED}",
                "load.workers=1",
                "load.concurrency=1",
                "load.duration=60",
            ],
            Store(tmp_path / "runs.sqlite"),
            on_event=flush.on_event,
        )
        assert flush.done.wait(10), "the flush ran"
        r = redis.Redis(port=server.port)
        stats = r.info("commandstats")
        r.close()
    (step,) = finished(events)
    completed_clean(step)
    s = step.stats
    assert (s.hits, s.misses) == (model.hits, model.misses)
    assert s.outcomes == {op: dict(c) for op, c in model.outcomes.items()}
    scripted = sum(op in SCRIPTED for _, op, _, _ in rows)
    sha = stats.get("cmdstat_evalsha", {}).get("calls", 0)
    full = stats.get("cmdstat_eval", {}).get("calls", 0)
    # Every script op went by EVALSHA; after the flush the next met NOSCRIPT and went
    # once more by EVAL (so did the first of each script, to the Python engine's client).
    assert sha == scripted, (sha, scripted)
    assert 1 <= full <= 2 * 5, full
