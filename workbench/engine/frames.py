"""The frames workers and the coordinator exchange, and the interval grid both follow.

One definition, used by the Python worker, the coordinator and docs/frames.md (which a
native worker follows): the frame builders below give every key a frame carries, and
`metrics.STATS_KEYS` every key of an interval's statistics.
"""

from __future__ import annotations

import math
from typing import Any

from workbench.metrics import STATS_KEYS, Stats

# Coordinator -> worker
STEP, GO, STOP = "step", "go", "stop"
# Worker -> coordinator
READY, ARMED, INTERVAL, ERROR, STEP_DONE = "ready", "armed", "interval", "error", "step_done"
STEP_STATUSES = ("completed", "interrupted", "failed")
LATE_DELIVERIES = -1  # interval index of pub/sub deliveries that arrived after the load stopped
GO_LEAD = 0.05  # seconds between sending "go" and the start it names


def ready(pid: int, engine: dict[str, str]) -> dict[str, Any]:
    return {"type": READY, "pid": pid, "engine": engine}


def armed() -> dict[str, Any]:
    return {"type": ARMED}


def interval(index: int, elapsed: float, stats: Stats, *, warmup: bool = False) -> dict[str, Any]:
    body = stats.to_dict()
    assert tuple(body) == STATS_KEYS
    return {"type": INTERVAL, "index": index, "elapsed": elapsed, "warmup": warmup, "stats": body}


def error(kind: str, message: str, trace: str) -> dict[str, Any]:
    return {"type": ERROR, "kind": kind, "message": message, "trace": trace}


def step_done(status: str) -> dict[str, Any]:
    assert status in STEP_STATUSES
    return {"type": STEP_DONE, "status": status}


def go(start: float) -> dict[str, Any]:
    """`start`: time.time() at which the load begins (warm-up first, then the grid)."""
    return {"type": GO, "start": start}


def interval_ends(duration: float, interval: float) -> list[float]:
    """Ends of the measured intervals of a phase of `duration` seconds (the fold rule).

    Boundaries fall at k*interval; the phase ends at `duration`. A tail shorter than half
    an interval after the last boundary is folded into the last interval; a longer tail
    is its own, shorter interval.
    """
    full = math.floor(duration / interval + 1e-9)
    ends = [k * interval for k in range(1, full + 1)]
    tail = duration - (ends[-1] if ends else 0.0)
    if ends and tail < interval / 2:
        ends[-1] = duration
    elif tail > 1e-9 or not ends:
        ends.append(duration)
    return ends


def folds_into_last(since_boundary: float, interval: float) -> bool:
    """Whether a phase ending `since_boundary` s after a boundary folds its tail back."""
    return since_boundary < interval / 2
