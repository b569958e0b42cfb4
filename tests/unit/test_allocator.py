"""Histogram-sized blocks get their own mappings, so a dropped histogram goes back to the
kernel instead of holding a long run's heap up (glibc only)."""

from __future__ import annotations

import ctypes

import pytest

from workbench.engine.allocator import MAP_FROM, map_large_blocks
from workbench.metrics import new_histogram


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",  # blocks in mappings of their own
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mapped_blocks() -> int:
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        pytest.skip("not glibc 2.33 or later: no mallinfo2")
    mallinfo2.restype = _MallInfo2
    return int(mallinfo2().hblks)


def test_every_histogram_has_a_mapping_of_its_own_and_returns_it_when_dropped() -> None:
    assert map_large_blocks(), "glibc's mallopt accepted the threshold"
    assert ctypes.sizeof(new_histogram().counts) >= MAP_FROM, "counts above the threshold"
    # Dropped histograms first: they are what raises glibc's own threshold past their size.
    dropped = [new_histogram() for _ in range(4)]
    del dropped
    before = _mapped_blocks()
    histograms = [new_histogram() for _ in range(8)]
    # One may still land in a hole the heap already had; none makes the heap grow.
    assert _mapped_blocks() >= before + len(histograms) - 1
    del histograms
    assert _mapped_blocks() == before
