"""Histogram-sized blocks get their own mappings, so a dropped histogram goes back to the
kernel instead of holding a long run's heap up (glibc only).

Measured in a fresh interpreter: in this one, earlier tests leave holes in the heap that a
new histogram may fill whatever the threshold.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys

import pytest

from workbench.engine.allocator import MAP_FROM
from workbench.results.metrics import new_histogram

PROBE = """
import ctypes, gc, json, sys
from workbench.engine.allocator import map_large_blocks
from workbench.results.metrics import new_histogram

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
fixed = map_large_blocks() if sys.argv[1] == "fixed" else None
# Holes the imports left in the heap, large enough for a histogram, would take one of
# them whatever the threshold: fill them (until a block that size is mapped) and keep them.
holes = []
while not holes or mallinfo2().hblks == mapped:
    mapped = mallinfo2().hblks
    holes.append(ctypes.create_string_buffer(300_000))
# Dropped histograms first: they are what raises glibc's own threshold past their size.
dropped = [new_histogram() for _ in range(4)]
del dropped
# Freed now, not by a collection that the allocations below happen to set off (how many
# objects the imports made decides when that comes).
gc.collect()
before = mallinfo2().hblks
kept = [new_histogram() for _ in range(8)]
made = mallinfo2().hblks - before
del kept
print(json.dumps({"fixed": fixed, "made": made, "left": mallinfo2().hblks - before}))
"""


def _probe(mode: str) -> dict[str, object]:
    try:
        ctypes.CDLL(None).mallinfo2  # noqa: B018 (glibc 2.33 or later)
    except AttributeError:
        pytest.skip("not glibc 2.33 or later: no mallinfo2")
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_every_histogram_has_a_mapping_of_its_own_and_returns_it_when_dropped() -> None:
    assert ctypes.sizeof(new_histogram().counts) >= MAP_FROM, "counts above the threshold"
    fixed = _probe("fixed")
    assert fixed["fixed"] is True, "glibc's mallopt accepted the threshold"
    assert fixed["made"] == 8, "each of 8 histograms in a mapping of its own"
    assert fixed["left"] == 0, "and each mapping gone when its histogram was dropped"
    # glibc's own dynamic threshold: after a freed histogram, the next come from the heap.
    assert _probe("dynamic")["made"] < 8
