"""Workers lost mid-step, told without waiting for their machine: a remote worker whose
intervals stopped, a worker still going well past a timed step's planned end, and the
notice that says which was lost, when, and how much it had measured (kept). The
coordinator's (`workbench.engine.coordinator`, which has these as methods).
"""

from __future__ import annotations

import time

from workbench.engine import frames
from workbench.engine.launchers import Handle
from workbench.engine.step_tally import StepTally, lost_to_silence
from workbench.results.events import Event, Notice
from workbench.spec.steps import Step

SILENT_INTERVALS = 2  # a remote worker this many interval lengths without an interval is lost
# ...and at least this long: Ray relays frames in batches, and a busy machine can hold
# an interval back a second without anything being lost.
SILENT_AT_LEAST = 2.0
# Seconds past a timed step's planned end (after the pub/sub delivery wait) that workers
# get to send their end of step; closing thousands of connections fits well within it.
OVERRUN_GRACE = 30.0


class WorkerLoss:
    """The coordinator's run id, worker handles and dead workers are this one's."""

    run_id: str
    handles: list[Handle]
    dead: set[int]

    def _silent(self, step: Step, tally: StepTally) -> list[Event]:
        """Remote workers whose intervals stopped `SILENT_INTERVALS` interval lengths ago (at
        least `SILENT_AT_LEAST` s): lost now, whatever the cluster thinks of their machine.

        Only while intervals are due: in a step of a set duration, until a worker has sent
        its last one (it may then take its time to close its connections)."""
        load = step.spec.load
        if not tally.heard or load.ops is not None or not load.duration or tally.stop_sent:
            return []
        last = frames.interval_count(load.duration, load.interval) - 1
        limit = max(SILENT_INTERVALS * load.interval, SILENT_AT_LEAST)
        allowed: dict[int, float] = {}
        for worker in sorted(tally.live - set(tally.done)):
            index = tally.last_index.get(worker, -1)
            if not remote(self.handles[worker]) or worker not in tally.heard or index >= last:
                continue
            # Before its last interval a worker may wait for pub/sub deliveries too.
            allowed[worker] = limit + (frames.DELIVERY_WAIT if index == last - 1 else 0.0)
        now = time.monotonic()
        return [
            self._abandon(step, tally, worker, f"no interval for {now - tally.heard[worker]:.1f} s")
            for worker in lost_to_silence(tally.heard, allowed, now)
        ]

    def _overrun(self, step: Step, tally: StepTally) -> list[Event]:
        """Workers not done `OVERRUN_GRACE` s after a timed step's planned end: killed (a
        remote one abandoned) and lost, so the step ends with what they measured."""
        load = step.spec.load
        if tally.began is None or load.ops is not None or not load.duration:
            return []
        if tally.overrun or tally.stop_sent:  # after a stop, STOP_GRACE bounds the wait
            return []
        late = time.monotonic() - (tally.began + load.duration + frames.DELIVERY_WAIT)
        if late < OVERRUN_GRACE:
            return []
        tally.overrun = True
        events: list[Event] = []
        for worker in sorted(tally.live - set(tally.done)):
            handle = self.handles[worker]
            if not remote(handle):
                handle.kill()  # its end of output arrives as a death: lost then (`_take`)
                continue
            why = f"not done {late:.1f} s after the planned end"
            events.append(self._abandon(step, tally, worker, why))
        return events

    def _abandon(self, step: Step, tally: StepTally, worker: int, why: str) -> Notice:
        """A remote worker counted as lost now, without waiting on its machine."""
        self.handles[worker].abandon(why)  # type: ignore[attr-defined]
        self.dead.add(worker)
        tally.live.discard(worker)
        tally.lost.add(worker)
        return Notice(self.run_id, step.index, "error", self._lost(step, tally, worker))

    def _lost(self, step: Step, tally: StepTally, worker: int) -> str:
        """Which worker was lost, when (its last interval), and how much it had measured."""
        load = step.spec.load
        if worker in tally.last_elapsed:
            when = (
                f"its last interval ended {tally.last_elapsed[worker]:.1f} s into the "
                "measured phase"
            )
        elif tally.go_at is None:
            when = "before the load began"
        else:
            warmup = 0.0 if load.warmup_ops else load.warmup
            into = time.monotonic() - tally.go_at - frames.GO_LEAD - warmup
            when = f"{into:.1f} s into the measured phase" if into >= 0 else "during warm-up"
        intervals, ops = tally.measured.get(worker, (0, 0))
        return (
            f"worker lost: {self.handles[worker].describe_exit()}, {when}, after measuring "
            f"{ops} ops in {intervals} intervals (kept); the other workers go on"
        )


def remote(handle: Handle) -> bool:
    """A worker on another machine, maybe (a Ray actor): its silence can mean it is gone."""
    return bool(getattr(handle, "remote", False))
