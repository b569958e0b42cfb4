"""A long run does not grow the coordinator: hundreds of short intervals against a real
redis-server, in both engines, with the coordinator's allocations traced (tracemalloc).

After the first intervals, what the process holds may grow only by the view's bounded
chart points (about 520 bytes an interval until 512 of them), far below one interval's
histograms (about 270 KB per op kind): before the coordinator kept running totals, it grew
by about 540 KB per interval. Allocations are counted, never time.

What is traced at one moment also holds the histograms in flight: a worker ahead of the
other leaves its intervals pending, several megabytes on a loaded machine. So after every
interval the live histograms are counted, and the memory read without their counters;
the growth is that of the least reading of a window (the moments least was in flight),
from the first window to the last, and the least count of live histograms may not grow.

The hiccup meter's slices that no interval has taken yet are in flight the same way: the
meter writes one every 50 ms of wall time, an interval takes its own once the coordinator
reaches it, and a coordinator that tracemalloc slows on a loaded machine falls behind the
clock (39.9 s behind by interval 150 in one such run: 870 slices of about 3 KB held, 10 KB
an interval). Their arrays and tuples are read off too, and their count may never pass
the meter's own bound (`KEEP_SLICES`).
"""

from __future__ import annotations

import ctypes
import gc
import sys
import tracemalloc
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from workbench.engine.hiccup_meter import KEEP_SLICES, Slice
from workbench.results.events import Interval
from workbench.results.live import RunView
from workbench.results.store import Store
from workbench.run import session
from workbench.sdk.servers import ServerProcess
from workbench.spec.native_binary import binary_path
from workbench.spec.steps import load_spec

INTERVALS = 160  # of 0.1 s: SETTLED, then at least 4 windows
SETTLED = 50  # intervals before the baseline: imports, caches and connections warmed
BOUND = 4 * 1024  # bytes per interval after that (one histogram is about 270 KB)
WINDOW = 25  # readings (one per interval) of which the least counts


def _slice_bytes(s: Slice) -> int:
    """A pending slice's own containers (its strings and small ints are shared)."""
    parts: list[object] = [s, s.hist, s.cpus, s.events, s.seen, s.waited]
    parts += [*s.cpus, *s.events, *s.seen, *s.waited, *(e[3] for e in s.events)]
    return sum(sys.getsizeof(p) for p in parts)


def _held() -> tuple[int, int, int]:
    """(traced bytes without the live histograms' counters and the meter's pending slices,
    live histograms, pending slices).

    Only histograms themselves count: each one's encoder holds a weak proxy to it, which
    passes `isinstance` too. Counted twice, every histogram in flight took its counters
    away twice, so a moment with two more in flight read about 0.5 MB lower, and one such
    moment in the first window passed for growth on a loaded machine.
    """
    gc.collect()
    objects = gc.get_objects()
    live = [o for o in objects if type(o) is HdrHistogram]
    slices = [o for o in objects if type(o) is Slice]
    counters = {ctypes.addressof(h.counts): ctypes.sizeof(h.counts) for h in live}
    pending = sum(_slice_bytes(s) for s in slices)
    traced = tracemalloc.get_traced_memory()[0]
    return traced - sum(counters.values()) - pending, len(live), len(slices)


@pytest.mark.redis
@pytest.mark.parametrize("strategy", ["native", "multiplexed"])
async def test_the_coordinators_memory_stays_flat_over_hundreds_of_intervals(
    redis_server: ServerProcess, tmp_path: Path, strategy: str
) -> None:
    if strategy == "native" and binary_path() is None:
        pytest.fail("the native engine is not built: run ./dev setup")
    spec = load_spec(
        None,
        [
            "target.system=redis",
            f"target.options.url={redis_server.target_options['url']}",
            f"strategy.name={strategy}",
            "load.warmup=0",
            "load.interval=0.1",
            f"load.duration={INTERVALS * 0.1}",
            "load.workers=2",
            "load.concurrency=4",
            # Paced: the coordinator's memory follows its intervals, not its ops, and a
            # closed loop would burn both cores for the whole 16 s of the run.
            "load.rate=2000",
            "workload.keys=1000",
        ],
    )
    store = Store(tmp_path / "runs.sqlite3")
    traced: list[int] = []  # after every interval from the SETTLED-th on
    histograms: list[int] = []
    pending: list[int] = []  # the meter's slices no interval has taken yet
    view = RunView()  # the faces' state, applied as the CLI and the TUI apply it
    # Everything alive before the run (the test session's modules, other tests' objects) is
    # set aside: each reading's collection and census then walk only what the run made,
    # instead of the whole interpreter's heap after every interval. It stays set aside
    # after (no unfreeze): the session froze its own heap the same way (tests/conftest.py),
    # and what is frozen here was alive, its garbage collected just before.
    gc.collect()
    gc.freeze()
    tracemalloc.start()
    try:
        async for event in session.run(spec, store):
            view = view.apply(event)
            done = event.index + 1 if isinstance(event, Interval) else 0
            if done >= SETTLED:
                held, live, slices = _held()
                traced.append(held)
                histograms.append(live)
                pending.append(slices)
    finally:
        tracemalloc.stop()
    assert view.status == "completed", view.error
    step = view.steps[0]
    assert step.timeline.intervals >= INTERVALS * 0.9, "hundreds of intervals were measured"
    assert len(traced) >= 4 * WINDOW
    first, last = min(traced[:WINDOW]), min(traced[-WINDOW:])
    growth = (last - first) / (len(traced) - WINDOW)
    assert growth < BOUND, f"{growth:.0f} bytes per interval after the first {SETTLED}"
    # Three histograms an interval were kept before (get, set, send lag): none may be now.
    assert min(histograms[-WINDOW:]) <= min(histograms[:WINDOW]) + 3, "histograms are kept"
    assert max(pending) <= KEEP_SLICES, "the meter's slices outgrew its bound"
    # The view's totals are everything measured, the stored intervals every interval.
    assert step.totals.ops == store.load(view.run_id).steps[0].stats.ops
    assert len(store.load(view.run_id).steps[0].intervals) == step.timeline.intervals
