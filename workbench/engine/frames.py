"""The frames workers and the coordinator exchange, and the interval grid both follow.

One definition, used by the Python worker, the coordinator and docs/frames.md (which a
native worker follows): the frame builders below give every key a frame carries, and
`metrics.STATS_KEYS` every key of an interval's statistics (and `OPTIONAL_STATS_KEYS` those
sent only when they have something).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from workbench.engine.native_order import compile_order
from workbench.results.metrics import OPTIONAL_STATS_KEYS, STATS_KEYS, Stats
from workbench.spec.model import Spec, spec_from_dict, spec_to_dict
from workbench.spec.resolve import ResolvedStep
from workbench.workload.oracle_trace import part_path

# Coordinator -> worker
STEP, GO, STOP = "step", "go", "stop"
# Worker -> coordinator
READY, ARMED, INTERVAL, ERROR, STEP_DONE = "ready", "armed", "interval", "error", "step_done"
STEP_STATUSES = ("completed", "interrupted", "failed")
# Before its last interval, a worker waits this long at most for the pub/sub deliveries still
# on their way (it stops after 0.3 s with none): they land in that interval.
DELIVERY_WAIT = 3.0
GO_LEAD = 0.05  # seconds between sending "go" and the start it names


@dataclass(frozen=True)
class StepOrder:
    """A "step" frame: the step's spec and what it resolved to, as worker `worker` of
    `workers` gets it (`resolved` is that worker's own: build it with `for_worker`)."""

    spec: Spec
    resolved: ResolvedStep
    workers: int
    worker: int

    @property
    def trace_part(self) -> str:
        """Where this worker writes its part of the step's op trace ("": none is asked)."""
        trace = self.spec.workload.trace_out
        return part_path(trace, self.worker) if trace else ""

    @classmethod
    def for_worker(cls, spec: Spec, resolved: ResolvedStep, workers: int, worker: int) -> StepOrder:
        """Worker `worker`'s order: the resolved step with its share of a per-worker
        capacity (`ResolvedStep.for_worker`)."""
        return cls(spec, resolved.for_worker(workers, worker), workers, worker)

    def frame(self) -> dict[str, Any]:
        """The frame: the resolved step's keys (system_options, strategy_options, ...) at
        the top, beside the spec and this worker's place; for the native engine, which
        reads numbers only, the step compiled (`native_order.compile_order`) as well."""
        head = {"type": STEP, "spec": spec_to_dict(self.spec)}
        out = {**head, **self.resolved.to_dict(), "workers": self.workers, "worker": self.worker}
        if self.resolved.engine == "native":
            out["native"] = compile_order(self)
        return out

    @classmethod
    def read(cls, frame: dict[str, Any]) -> StepOrder:
        """A received frame (its system options are already this worker's own)."""
        spec = spec_from_dict(frame["spec"])
        return cls(spec, ResolvedStep.from_dict(frame), frame["workers"], frame["worker"])


def ready(pid: int, engine: dict[str, str]) -> dict[str, Any]:
    return {"type": READY, "pid": pid, "engine": engine}


def armed() -> dict[str, Any]:
    return {"type": ARMED}


# The check below compares lists, never `tuple(<generator>)`: CPython builds that tuple at a
# guessed size and resizes it in place, so every call left one more 19-item tuple on the
# interpreter's free list for that size (up to 2,000, which nothing else ever takes). A
# Python worker grew by one small block per interval for its first 2,000 intervals: about
# +1.4 MB/h over a 30-minute soak at one-second intervals.
_STATS_KEY_LIST = list(STATS_KEYS)


def interval(index: int, elapsed: float, stats: Stats, *, warmup: bool = False) -> dict[str, Any]:
    body = stats.to_dict()
    assert [k for k in body if k not in OPTIONAL_STATS_KEYS] == _STATS_KEY_LIST
    return {"type": INTERVAL, "index": index, "elapsed": elapsed, "warmup": warmup, "stats": body}


def error(kind: str, message: str, trace: str) -> dict[str, Any]:
    return {"type": ERROR, "kind": kind, "message": message, "trace": trace}


def step_done(status: str) -> dict[str, Any]:
    assert status in STEP_STATUSES
    return {"type": STEP_DONE, "status": status}


def go(start: float) -> dict[str, Any]:
    """`start`: time.time() at which the load begins (warm-up first, then the grid)."""
    return {"type": GO, "start": start}


def interval_count(duration: float, interval: float) -> int:
    """How many measured intervals a phase of `duration` seconds has (the fold rule).

    Boundaries fall at k*interval; the phase ends at `duration`. A tail shorter than half
    an interval after the last boundary is folded into the last interval; a longer tail
    is its own, shorter interval.
    """
    full = math.floor(duration / interval + 1e-9)
    tail = duration - full * interval
    if full and tail < interval / 2:
        return full
    return full + 1 if tail > 1e-9 or not full else full


def interval_ends(duration: float, interval: float) -> Iterator[float]:
    """Ends of the measured intervals of a phase of `duration` seconds, one at a time:
    never held as a list (a phase of 1e9 s at 1 s intervals would be a billion floats)."""
    count = interval_count(duration, interval)
    for k in range(1, count):
        yield k * interval
    yield duration


def folds_into_last(since_boundary: float, interval: float) -> bool:
    """Whether a phase ending `since_boundary` s after a boundary folds its tail back."""
    return since_boundary < interval / 2
