"""A Python worker's per-interval report path keeps nothing: counted in interpreter blocks.

A soak run's Python worker grew by one small block per interval: the interval frame's key
check built a 19-item tuple from a generator, and each one ended on CPython's free list for
that size (nothing else takes from it), up to 2,000 of them. The path is run in a fresh
interpreter, whose free lists are still empty (this test process may have filled them
already), and the blocks it holds after a warm-up are counted: no clock is read.
"""

from __future__ import annotations

import subprocess
import sys

INTERVALS = 400
WARMUP = 20
# Bounded caches (the dict, float and small-tuple free lists) may still take a few blocks
# after the warm-up; the bug kept one per interval, 400 here.
ALLOWED_BLOCKS = 40

_PROGRAM = f"""
import asyncio, os, sys
from array import array
from workbench.engine import frames
from workbench.engine.accounting import Buffers, to_stats
from workbench.engine.wire import write_frame
from workbench.workload import GET, SET

async def main():
    out = os.open(os.devnull, os.O_WRONLY)

    async def report(i):
        buf = Buffers()
        buf.lat[GET] = array("q", range(200_000 + i, 260_000 + i, 97))
        buf.lat[SET] = array("q", range(300_000 + i, 330_000 + i, 89))
        buf.hits, buf.misses, buf.bytes_in, buf.bytes_out = 600 + i, 3, 60_000, 9_000
        stats = await to_stats(buf, 0.1)
        stats.cpu = {{"0": 0.001 * (i % 13)}}
        write_frame(out, frames.interval(i, 0.1 * (i + 1), stats))

    for i in range({WARMUP}):
        await report(i)
    before = sys.getallocatedblocks()
    for i in range({WARMUP}, {WARMUP + INTERVALS}):
        await report(i)
    print(sys.getallocatedblocks() - before)

asyncio.run(main())
"""


def test_interval_reports_keep_no_block_per_interval() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    kept = int(done.stdout.split()[-1])
    assert kept < ALLOWED_BLOCKS, (
        f"{INTERVALS} interval reports kept {kept} blocks (allowed {ALLOWED_BLOCKS}): "
        "about one per interval is what a Python worker's soak run grew by"
    )


def test_interval_frame_still_checks_its_keys() -> None:
    """The check the fix rewrote still refuses a body whose keys drifted from STATS_KEYS."""
    program = (
        "from workbench.engine import frames\n"
        "from workbench.metrics import Stats\n"
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
