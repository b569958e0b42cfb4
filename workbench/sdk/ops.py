"""The op kinds: one table that every list of operations and every op code comes from.

A row says all the workbench knows about one kind of operation: its name, a stable numeric
code, whether it carries a value, whether a client issues it, whether a workload mix may
weigh it, whether reports keep a latency histogram of it, how reports group it, the names
trace files give it, and whether the workbench runs it yet. Lists elsewhere (the mix's
operations, a strategy's declarable operations, the recorded kinds, a trace's known ops)
are filters of this table, never lists of their own, so they cannot disagree.

A code is an op's identity wherever a number stands for it: the Python hot path, the
native engine's order (the mix names operations by code), the recorded latencies of an
interval. Codes are never reused or renumbered; a new kind takes the next free one.

Kinds that trace files hold but the workbench does not issue yet (add, cas, incr, ...) are
rows with ``runs=False``: a replay recognises them and skips them by name. Running one
later is that row changed to ``runs=True`` (with its adapter method), nothing else here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# How reports group op kinds (`OpKind.group`).
READ = "read"
WRITE = "write"
REMOVE = "remove"
MESSAGE = "message"  # pub/sub: a message's own size, its own throughput


@dataclass(frozen=True)
class OpKind:
    """One kind of operation."""

    name: str
    code: int
    group: str  # how reports group it: READ, WRITE, REMOVE or MESSAGE
    carries_value: bool = False  # the request sends a value (a delivery brings one)
    issued: bool = True  # a client sends it; "deliver" is received, not issued
    in_mix: bool = True  # a workload mix may weigh it
    recorded: bool = True  # reports keep a latency histogram of it
    # The names trace files give it (Twitter's "gets" is a get); empty: no trace holds it.
    trace_names: tuple[str, ...] = ()
    # The operations a strategy must declare to run it; empty: the kind itself.
    needs: frozenset[str] = frozenset()
    runs: bool = True  # False: recognised in traces, not issued by the workbench yet

    @property
    def required(self) -> frozenset[str]:
        """What a strategy must declare (`Strategy.operations`) to run this kind."""
        return self.needs or frozenset({self.name})


def _traced_only(name: str, code: int, group: str) -> OpKind:
    """A kind trace files hold that the workbench does not issue yet (issue 37)."""
    return OpKind(
        name,
        code,
        group,
        carries_value=group == WRITE,
        in_mix=False,
        recorded=False,
        trace_names=(name,),
        runs=False,
    )


KINDS: tuple[OpKind, ...] = (
    OpKind("get", 0, READ, trace_names=("get", "gets")),
    OpKind("set", 1, WRITE, carries_value=True, trace_names=("set",)),
    OpKind("delete", 2, REMOVE, trace_names=("delete",)),
    # A get, then a set on a miss: recorded as its get and its set, never under its own
    # name. A strategy may also declare it as its own operation (`spec.resolve.needs`).
    OpKind(
        "cache_aside",
        3,
        READ,
        carries_value=True,
        recorded=False,
        needs=frozenset({"get", "set"}),
    ),
    OpKind("publish", 4, MESSAGE, carries_value=True, needs=frozenset({"publish", "subscribe"})),
    # A pub/sub message a subscriber received.
    OpKind("deliver", 5, MESSAGE, carries_value=True, issued=False, in_mix=False),
    # Subscribers are set up for a mix that publishes; a mix never weighs subscribe itself.
    OpKind("subscribe", 6, MESSAGE, in_mix=False, recorded=False),
    _traced_only("add", 7, WRITE),
    _traced_only("replace", 8, WRITE),
    _traced_only("cas", 9, WRITE),
    _traced_only("append", 10, WRITE),
    _traced_only("prepend", 11, WRITE),
    _traced_only("incr", 12, WRITE),
    _traced_only("decr", 13, WRITE),
)

BY_NAME: dict[str, OpKind] = {k.name: k for k in KINDS}
BY_CODE: dict[int, OpKind] = {k.code: k for k in KINDS}

# Codes as plain ints: the hot paths compare against these.
GET = BY_NAME["get"].code
SET = BY_NAME["set"].code
DELETE = BY_NAME["delete"].code
CACHE_ASIDE = BY_NAME["cache_aside"].code
PUBLISH = BY_NAME["publish"].code
DELIVER = BY_NAME["deliver"].code
SUBSCRIBE = BY_NAME["subscribe"].code


def names(kinds: Iterable[OpKind]) -> tuple[str, ...]:
    return tuple(k.name for k in kinds)


# The operations a workload mix may weigh, by name, with their codes (in code order).
MIX_CODES: dict[str, int] = {k.name: k.code for k in KINDS if k.in_mix and k.runs}
# The operations a strategy may declare it supports (`Strategy.operations`).
OPERATIONS: tuple[str, ...] = names(k for k in KINDS if k.issued and k.runs)
# The op kinds an interval records a latency histogram for, in the order reports list them.
RECORDED: tuple[str, ...] = names(k for k in KINDS if k.recorded and k.runs)
# The recorded kinds no client issues (a delivery): never counted among the ops done.
RECEIVED: tuple[str, ...] = names(k for k in KINDS if k.recorded and not k.issued)
# The recorded kinds whose requests carry a value (a delivery brings one).
WITH_VALUE: tuple[str, ...] = names(k for k in KINDS if k.recorded and k.carries_value)
# Every op name a trace file may hold, the ones not run yet included (a replay skips those).
TRACE_OPS: tuple[str, ...] = tuple(n for k in KINDS for n in k.trace_names)
# The trace op names a replay issues as recorded, with the code each is issued as.
AS_RECORDED: dict[str, int] = {n: k.code for k in KINDS if k.runs for n in k.trace_names}
# What each mix operation needs a strategy to declare.
NEEDS: dict[str, frozenset[str]] = {name: BY_NAME[name].required for name in MIX_CODES}


def kind(name: str) -> OpKind:
    """The kind of that name (KeyError for an unknown one)."""
    return BY_NAME[name]


def in_group(group: str) -> tuple[str, ...]:
    """The recorded kinds reports group under `group`."""
    return names(k for k in KINDS if k.group == group and k.recorded and k.runs)


def table() -> list[dict[str, object]]:
    """The registry as plain data, for the native engine's order and for docs."""
    return [
        {
            "name": k.name,
            "code": k.code,
            "carries_value": k.carries_value,
            "issued": k.issued,
            "in_mix": k.in_mix,
            "recorded": k.recorded,
            "group": k.group,
            "trace_names": list(k.trace_names),
            "needs": sorted(k.required),
            "runs": k.runs,
        }
        for k in KINDS
    ]
