"""What each verdict claims about the figures printed beside it, as a table.

A verdict's line carries its figures (``worker 97% of a core``, ``send lag p99 3.38ms``...)
and its advice says what they mean. Each kind claims a few things about those figures;
`contradictions` lists the claims a verdict breaks. `workbench.results.verdict` is written so
that none is ever broken, and tests/unit/test_verdict_rules.py holds every verdict of a
grid of recorded figures to this table.

`STANDS` says which verdicts let a step's own figure stand for the system measured: a
report's conclusions compare only those steps (`figure_stands`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from workbench.results.verdict import (
    FELL_BEHIND,
    GENERATOR_BOUND,
    KEPT_SCHEDULE,
    LATENCY_BOUND,
    MACHINE_BOUND,
    MACHINE_BUSY,
    MACHINE_STALLED,
    ON_SCHEDULE,
    SEND_LAG_FLOOR_NS,
    SEND_LAG_SHARE,
    SENT_LATE,
    SERVER_BOUND,
    SERVER_BUSY,
    SERVER_STALLED,
    STALL_FACTOR,
    STALL_ROOM,
    TOO_FEW_CLIENTS,
    TOO_FEW_SHARE,
    UNKNOWN,
    WORKER_BUSY,
    Verdict,
)

Figures = Mapping[str, Any]
Claim = tuple[str, Callable[[Figures], bool]]


def _n(f: Figures, key: str) -> float:
    value = f.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def busiest_worker(f: Figures) -> float:
    return max((f.get("workers_core_share") or {}).values(), default=0.0)


def server_busy(f: Figures) -> bool:
    return _n(f, "server_share") >= SERVER_BUSY


def machine_full(f: Figures) -> bool:
    hosts = (f.get("hosts_busy") or {}).values()
    return _n(f, "machine_busy") >= MACHINE_BUSY or any(h >= MACHINE_BUSY for h in hosts)


def kept(f: Figures) -> bool:
    share = f.get("kept_share")
    return share is None or share >= KEPT_SCHEDULE


def lagged(f: Figures) -> bool:
    """Sends late against the latency (the verdict's `lagged`)."""
    lag = _n(f, "send_lag_p99_us")
    return lag * 1000 > SEND_LAG_FLOOR_NS and lag >= SEND_LAG_SHARE * _n(f, "latency_p99_us")


def long_wait(f: Figures, key: str = "latency_max_us") -> bool:
    return _n(f, key) >= STALL_FACTOR * max(_n(f, "latency_p50_us"), 0.001)


def machine_explains(f: Figures) -> bool:
    """The machine stalled on our CPUs and no long wait is left unexplained."""
    stalls = _n(f, "machine_stalls") > 0
    return stalls and not long_wait(f, "unexplained_wait_us") and not _n(f, "unanswered")


def room(f: Figures) -> float:
    """rate x p50 latency as a share of the clients (0 when unknown)."""
    clients = _n(f, "clients")
    return _n(f, "in_flight_needed") / clients if clients else 0.0


CLAIMS: dict[str, tuple[Claim, ...]] = {
    SERVER_BOUND: (("the server used most of its cores", server_busy),),
    MACHINE_BOUND: (("a load machine was full", machine_full),),
    GENERATOR_BOUND: (
        ("a worker used a full core", lambda f: busiest_worker(f) >= WORKER_BUSY),
        ("the server had room", lambda f: not server_busy(f)),
    ),
    FELL_BEHIND: (("the schedule was not kept", lambda f: not kept(f) or lagged(f)),),
    SENT_LATE: (
        ("the offered ops were issued", kept),
        ("the sends were late against the latency", lagged),
        ("no worker used a full core", lambda f: busiest_worker(f) < WORKER_BUSY),
    ),
    MACHINE_STALLED: (
        ("the machine stalled on the server's or the workers' CPUs", machine_explains),
        ("a wait was long against the p50", long_wait),
    ),
    SERVER_STALLED: (
        ("no worker used a full core", lambda f: busiest_worker(f) < WORKER_BUSY),
        (
            "a wait was long against the p50, or ops went unanswered",
            lambda f: long_wait(f) or _n(f, "unanswered") > 0,
        ),
        ("the clients had room for the rate", lambda f: room(f) < STALL_ROOM),
        ("the machine's stalls do not explain the waits", lambda f: not machine_explains(f)),
    ),
    TOO_FEW_CLIENTS: (
        ("the schedule was not kept", lambda f: not kept(f)),
        ("rate x p50 latency needs most of the clients", lambda f: room(f) >= TOO_FEW_SHARE),
    ),
    ON_SCHEDULE: (
        ("the offered ops were issued", kept),
        ("the sends were on time", lambda f: not lagged(f)),
        ("no worker used a full core", lambda f: busiest_worker(f) < WORKER_BUSY),
        ("the server had room", lambda f: not server_busy(f)),
    ),
    LATENCY_BOUND: (
        ("no worker used a full core", lambda f: busiest_worker(f) < WORKER_BUSY),
        ("the server had room", lambda f: not server_busy(f)),
    ),
    UNKNOWN: (),
}

# Verdicts whose step's figure is the system's (or the client strategy's) to compare: not
# the load machine's, and not a schedule the generator failed to keep.
STANDS = (SERVER_BOUND, GENERATOR_BOUND, LATENCY_BOUND, ON_SCHEDULE, SERVER_STALLED, UNKNOWN)


def contradictions(verdict: Verdict) -> list[str]:
    """The claims of `verdict`'s kind that its own figures break."""
    return [text for text, holds in CLAIMS[verdict.kind] if not holds(verdict.figures)]


def figure_stands(verdict: Verdict) -> bool:
    """Whether a step's figure may be compared with another's (its verdict in `STANDS`)."""
    return verdict.kind in STANDS
