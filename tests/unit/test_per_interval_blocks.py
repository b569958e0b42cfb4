"""What a long run does every interval keeps nothing: counted in interpreter blocks.

A soak run's Python worker and its coordinator each grew by about one small block per
interval, each kept by one of CPython 3.11's tuple free lists (up to 2,000 per size):
- `tuple(<generator>)` (the worker's interval frame key check, the live view's step
  update): CPython sizes that tuple at a guess of 10 and resizes it in place, and when
  dropped it went to the free list of its final size, which nothing else took from;
- `Stats(**fields)` with all 20 fields (reading a worker's interval): the call's 20-item
  tuple of keyword names, and 3.11 never takes from the free list of 20-item tuples.

Each path runs in a fresh interpreter, whose free lists are still empty (this test
process may have filled them already), and the blocks it holds after a warm-up are
counted: no clock is read.
"""

from __future__ import annotations

import subprocess
import sys

INTERVALS = 400
WARMUP = 30
# Bounded caches (the dict, float and small-tuple free lists) may still take a few blocks
# after the warm-up; the bug kept one per interval, 400 here.
ALLOWED_BLOCKS = 40

_COUNT = f"""
before = None
for i in range({WARMUP + INTERVALS}):
    if i == {WARMUP}:
        before = sys.getallocatedblocks()
    one_interval(i)
print(sys.getallocatedblocks() - before)
"""

_WORKER = """
import asyncio, os, sys
from array import array
from workbench.engine import frames
from workbench.engine.accounting import Buffers, to_stats
from workbench.engine.wire import write_frame
from workbench.sdk.ops import GET, SET

out = os.open(os.devnull, os.O_WRONLY)
loop = asyncio.new_event_loop()

def one_interval(i):
    buf = Buffers()
    buf.lat[GET] = array("q", range(200_000 + i, 260_000 + i, 97))
    buf.lat[SET] = array("q", range(300_000 + i, 330_000 + i, 89))
    buf.hits, buf.misses, buf.bytes_in, buf.bytes_out = 600 + i, 3, 60_000, 9_000
    stats = loop.run_until_complete(to_stats(buf, 0.1))
    stats.cpu = {"0": 0.001 * (i % 13)}
    write_frame(out, frames.interval(i, 0.1 * (i + 1), stats))
"""

_COORDINATOR = """
import json, sys
from workbench.engine import frames
from workbench.engine.wire import pack
from workbench.results.events import Interval, RunStarted, StepStarted
from workbench.results.live import RunView
from workbench.results.metrics import Stats, fold, new_histogram

view = RunView().apply(RunStarted("r", "n", {}, [{"index": 0, "title": "run"}], {}, 0.0))
view = view.apply(StepStarted("r", 0, "run", {}, {}, 1, 16, {}))

def one_interval(i):
    global view
    hist = {}
    for n, kind in enumerate(("get", "set")):
        hist[kind] = new_histogram()
        fold(hist[kind], [40_000 + 7 * i + n, 90_000 + i, 1_300_000 + 11 * i])
    sent = Stats(duration=0.5, hist=hist, hits=2, misses=1, bytes_in=300, bytes_out=90)
    frame = json.loads(pack(frames.interval(i, 0.5 * (i + 1), sent))[4:])  # as it arrives
    stats = Stats.from_dict(frame["stats"])
    view = view.apply(Interval("r", 0, i, frame["elapsed"], stats))
    view.steps[0].verdict  # what the faces read every interval
"""


def _kept_blocks(program: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", program + _COUNT], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_a_python_workers_interval_reports_keep_no_block_per_interval() -> None:
    kept = _kept_blocks(_WORKER)
    assert kept < ALLOWED_BLOCKS, (
        f"{INTERVALS} interval reports (fold, frame, write) kept {kept} blocks "
        f"(allowed {ALLOWED_BLOCKS}): about one per interval is what a soak run's worker grew by"
    )


def test_the_coordinator_keeps_no_block_per_interval() -> None:
    """A worker's interval frame read back into Stats, then applied to the live view."""
    kept = _kept_blocks(_COORDINATOR)
    assert kept < ALLOWED_BLOCKS, (
        f"{INTERVALS} interval frames read and applied to the live view kept {kept} blocks "
        f"(allowed {ALLOWED_BLOCKS}): about one per interval is what a soak run's coordinator "
        "grew by"
    )


def test_the_interval_frame_still_checks_its_keys() -> None:
    """The check the fix rewrote still refuses a body whose keys drifted from STATS_KEYS."""
    program = (
        "from workbench.engine import frames\n"
        "from workbench.results.metrics import Stats\n"
        "class Drifted(Stats):\n"
        "    def to_dict(self):\n"
        "        body = super().to_dict(); body['extra'] = 1; return body\n"
        "try:\n"
        "    frames.interval(0, 1.0, Drifted())\n"
        "except AssertionError:\n"
        "    print('refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused"
