"""What has arrived from the workers of one step, as the coordinator tallies it: the
pending intervals, who is armed, done or lost, the running totals, and the rules read from
them (a step failed by its errors; workers lost to silence)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.engine.hiccup_meter import StepHiccups
from workbench.results.metrics import Stats

# A step whose errors exceed this share of the ops it attempted measured an outage, not
# the cache: it is failed.
FAILED_ERROR_SHARE = 0.5
# When no worker at all has sent an interval for that long, the hold-up is more likely on
# the way to the coordinator (Ray holds back every actor's frames while a node joins) than
# in every host at once: each silent worker then gets this long before it counts as lost.
SILENT_ALL_AT_LEAST = 10.0


def step_failure(stats: Stats) -> str:
    """Why a completed step counts as failed ("" if it does not)."""
    attempted = stats.ops + stats.error_count
    if not attempted:
        return "nothing was measured"
    if stats.error_count > FAILED_ERROR_SHARE * attempted:
        share = stats.error_count / attempted
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(stats.errors.items()))
        return (
            f"{share:.0%} of {attempted} operations failed ({kinds}), "
            f"over the {FAILED_ERROR_SHARE:.0%} a step may lose"
        )
    return ""


@dataclass
class ServerTotals:
    """A step's server figures as its intervals arrive: the last interval's, with CPU
    summed and the machine's busy share averaged over time (running sums, not a list)."""

    last: dict[str, Any] = field(default_factory=dict)
    cpu_seconds: float | None = None
    busy_time: float = 0.0  # busy share x seconds
    busy_span: float = 0.0
    busy_seen: bool = False
    idle_poll: dict[str, float] = field(default_factory=dict)  # worker -> seconds, summed

    def add(self, stats: Stats) -> None:
        server = stats.server
        self.last = dict(server)
        if "cpu_seconds" in server:
            self.cpu_seconds = (self.cpu_seconds or 0.0) + server["cpu_seconds"]
        for worker, seconds in server.get("idle_poll", {}).items():
            self.idle_poll[worker] = self.idle_poll.get(worker, 0.0) + seconds
        if "host_busy" in server:
            self.busy_seen = True
            self.busy_time += server["host_busy"] * stats.duration
            self.busy_span += stats.duration

    def figures(self) -> dict[str, Any]:
        out = dict(self.last)
        if self.cpu_seconds is not None:
            out["cpu_seconds"] = round(self.cpu_seconds, 4)
        if self.busy_seen and self.busy_span > 0:
            out["host_busy"] = round(self.busy_time / self.busy_span, 4)
        out.pop("idle_poll", None)
        if self.idle_poll:
            out["idle_poll"] = {k: round(v, 6) for k, v in self.idle_poll.items()}
        return out


@dataclass
class StepTally:
    """What has arrived from the workers of one step."""

    live: set[int]
    pending: dict[int, dict[int, Stats]] = field(default_factory=dict)  # index -> worker -> stats
    # index -> worker's CPU key -> its idle polling (s): a native frame's "polled"
    polled: dict[int, dict[str, float]] = field(default_factory=dict)
    elapsed: dict[int, float] = field(default_factory=dict)  # of the pending intervals
    # What was emitted, as running totals: an hour of intervals holds no more than one.
    emitted: int = 0
    total: Stats = field(default_factory=Stats)  # the emitted intervals merged
    server: ServerTotals = field(default_factory=ServerTotals)
    armed: set[int] = field(default_factory=set)
    done: dict[int, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # A trace file that could not be read to its end (`trace_feed.UNREADABLE`): fails the
    # step whatever was measured before it.
    unreadable: str = ""
    stop_sent: bool = False
    measured: dict[int, tuple[int, int]] = field(default_factory=dict)  # worker -> intervals, ops
    lost: set[int] = field(default_factory=set)  # workers that vanished before step_done
    go_at: float | None = None  # monotonic time the "go" was sent
    # Per worker, of its last measured interval: when it came (monotonic), where it ended
    # (seconds into the measured phase) and its index.
    heard: dict[int, float] = field(default_factory=dict)
    last_elapsed: dict[int, float] = field(default_factory=dict)
    last_index: dict[int, int] = field(default_factory=dict)
    began: float | None = None  # monotonic start of the measured phase, from its first interval
    overrun: bool = False  # the workers still going past the planned end were ended
    hiccups: StepHiccups | None = None  # the step's side of the hiccup meter, if one runs

    @property
    def finished(self) -> bool:
        return len(self.done) >= len(self.live)


def lost_to_silence(heard: dict[int, float], allowed: dict[int, float], now: float) -> list[int]:
    """Of the workers in `allowed` (each with the silence it may keep, in s), those silent
    for longer, by when each last sent an interval (`heard`, monotonic). While no worker at
    all has been heard within the shortest allowance, each gets `SILENT_ALL_AT_LEAST`."""
    if not allowed:
        return []
    everyone_quiet = now - max(heard.values()) >= min(allowed.values())
    return [
        worker
        for worker, silence in sorted(allowed.items())
        if now - heard[worker] >= (max(silence, SILENT_ALL_AT_LEAST) if everyone_quiet else silence)
    ]
