"""Histogram-sized blocks straight from the kernel and back, so a long run's memory stays
flat (glibc's malloc; elsewhere nothing changes).

A latency histogram's counters are one block of about 270 KB (33,792 eight-byte counts:
one hour at 3 significant digits). Every interval the coordinator decodes each worker's
histograms, merges them, folds them into the totals and summarises them, then drops them:
some fifteen such blocks an interval; a Python worker makes and drops a few. glibc maps a
block that large on its own at first, but the first one freed raises its threshold above
that size ("dynamic mmap threshold"), and from then on they come from the heap, which grows
and shrinks around them with small long-lived objects in between: a soak run's coordinator
held 14-15 MB of heap and its RSS stepped up and down by a megabyte at a time. With the
threshold fixed at 128 KiB every histogram has its own mapping, returned when it is freed
(measured: the heap at 10 MB, and the RSS 2-3 MB lower), at the cost of a few page faults
per histogram.
"""

from __future__ import annotations

import ctypes

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
MAP_FROM = 128 * 1024  # blocks this large or larger get their own mapping

_done: list[bool] = []


def map_large_blocks() -> bool:
    """Fix glibc's mmap threshold at `MAP_FROM` for this process (once); False where there
    is no glibc mallopt (macOS, musl's does nothing)."""
    if not _done:
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            _done.append(False)
        else:
            mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
            mallopt.restype = ctypes.c_int
            _done.append(mallopt(_M_MMAP_THRESHOLD, MAP_FROM) == 1)
    return _done[0]
