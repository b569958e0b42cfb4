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

A kind trace files hold that the workbench does not issue would be a row with
``runs=False``: a replay recognises it and skips it by name. Running one is that row changed
to ``runs=True`` (with its adapter method), nothing else here.

Conditional writes (add, replace, cas, append, prepend, incr, decr, touch) each end in an
outcome (`OUTCOMES`): the engine counts them apart per kind, as ``add: 806 (stored 212,
not stored 594)``. A ``gets`` is a get that also brings the cas token a later cas sends.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
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
    # Its reply is an outcome (`OUTCOMES`), counted apart per kind.
    has_outcome: bool = False
    # A kind sent in its place to a strategy that lacks it (a gets is a get without its
    # token); empty: none, the request is skipped.
    stands_in: str = ""

    @property
    def required(self) -> frozenset[str]:
        """What a strategy must declare (`Strategy.operations`) to run this kind."""
        return self.needs or frozenset({self.name})


def _conditional(name: str, code: int, carries_value: bool, *needs: str) -> OpKind:
    """A conditional write: its reply is an outcome, counted apart (issue 37)."""
    return OpKind(
        name,
        code,
        WRITE,
        carries_value=carries_value,
        trace_names=(name,),
        has_outcome=True,
        needs=frozenset((name, *needs)),
    )


KINDS: tuple[OpKind, ...] = (
    OpKind("get", 0, READ, trace_names=("get",)),
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
    _conditional("add", 7, True),
    _conditional("replace", 8, True),
    # A set that is stored only if the key's cas token is still the one its gets brought.
    # A strategy with cas has gets, which brings the token.
    _conditional("cas", 9, True, "gets"),
    _conditional("append", 10, True),
    _conditional("prepend", 11, True),
    _conditional("incr", 12, False),  # by 1: traces do not record the amount
    _conditional("decr", 13, False),
    _conditional("touch", 14, False),  # a new TTL, the value untouched
    # A get that also brings the cas token; sent as a get to a strategy without cas.
    OpKind("gets", 15, READ, trace_names=("gets",), stands_in="get"),
)

# What a conditional write did (`OpKind.has_outcome`), in the order reports list them.
STORED = "stored"  # done: stored, appended, incremented, touched
NOT_STORED = "not_stored"  # add of a present key; replace, append, prepend of a missing one
EXISTS = "exists"  # cas refused: the key changed since its gets
NOT_FOUND = "not_found"  # cas, incr, decr or touch of a missing key
NOT_NUMERIC = "not_numeric"  # incr or decr of a value that is no decimal number
OUTCOMES: tuple[str, ...] = (STORED, NOT_STORED, EXISTS, NOT_FOUND, NOT_NUMERIC)


def outcome_text(outcome: str) -> str:
    """An outcome as reports write it ("not stored")."""
    return outcome.replace("_", " ")


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
ADD = BY_NAME["add"].code
REPLACE = BY_NAME["replace"].code
CAS = BY_NAME["cas"].code
APPEND = BY_NAME["append"].code
PREPEND = BY_NAME["prepend"].code
INCR = BY_NAME["incr"].code
DECR = BY_NAME["decr"].code
TOUCH = BY_NAME["touch"].code
GETS = BY_NAME["gets"].code
# The kinds whose reply is a value, a hit or a miss (a cache-aside's is its get's).
READS = frozenset({GET, GETS, CACHE_ASIDE})
# The kinds whose reply is an outcome, by code.
WITH_OUTCOME = frozenset(k.code for k in KINDS if k.has_outcome)


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
# The conditional writes by name, with the gets whose token a cas sends: what a strategy
# speaking memcached's commands declares besides get, set and delete.
CONDITIONAL: frozenset[str] = frozenset(n for k in KINDS if k.has_outcome for n in k.required)
# What each mix operation needs a strategy to declare.
# (`replay_code` says what a replay issues for a trace op, given what a strategy declares.)
NEEDS: dict[str, frozenset[str]] = {name: BY_NAME[name].required for name in MIX_CODES}


def replay_code(trace_name: str, supported: AbstractSet[str]) -> int | None:
    """The code a replay `as-recorded` issues for a trace's op name to a strategy that
    declares `supported`: its kind's, else the kind it stands in for; None: skipped."""
    code = AS_RECORDED.get(trace_name)
    if code is None:
        return None
    k = BY_CODE[code]
    if k.required <= supported:
        return code
    if k.stands_in and BY_NAME[k.stands_in].required <= supported:
        return BY_NAME[k.stands_in].code
    return None


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
            "has_outcome": k.has_outcome,
            "stands_in": k.stands_in,
        }
        for k in KINDS
    ]
