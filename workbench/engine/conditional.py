"""Issuing the op kinds beyond get and set: delete, the conditional writes (add, replace,
cas, append, prepend, incr, decr, touch) and gets, on an async or a blocking client.

Off the hot path of get and set: the client loops call here only for these codes. A
conditional write's adapter method returns its outcome (`workbench.sdk.ops.OUTCOMES`),
which is the op's reply the loop records (`accounting.record`). A gets returns
``(value, token)`` or None for a miss; its token waits in the worker's `Tokens` for the
key's next cas, which sends it (a cas without one sends None: the server refuses it,
exists or not found). Every key's requests
are one worker's (the key space and a trace's keys are split by key), so a worker's
tokens are all its cas could have seen.
"""

from __future__ import annotations

from typing import Any

from workbench.sdk.ops import (
    ADD,
    APPEND,
    BY_CODE,
    CAS,
    DECR,
    DELETE,
    GETS,
    INCR,
    PREPEND,
    REPLACE,
)
from workbench.workload.generator import ValueBuffer

# Tokens kept at most; past it they are dropped whole (a cas then finds none and is
# refused). A gets and its cas are usually close together, so few are ever kept.
TOKEN_LIMIT = 1 << 20
DELTA = 1  # what incr and decr add or take: traces do not record the amount


class Tokens:
    """The cas tokens of a worker's gets, by key, until the key's next cas takes one."""

    __slots__ = ("by_key",)

    def __init__(self) -> None:
        self.by_key: dict[bytes, Any] = {}

    def keep(self, key: bytes, token: Any) -> None:
        if len(self.by_key) >= TOKEN_LIMIT:
            self.by_key.clear()
        self.by_key[key] = token

    def take(self, key: bytes) -> Any:
        return self.by_key.pop(key, None)


def sent_bytes(code: int, size: int) -> int:
    """What the request writes: the value of a write that carries one, else nothing."""
    return size if BY_CODE[code].carries_value else 0


def _call(client: Any, code: int, key: bytes, value: Any, ttl: float | None, tokens: Tokens) -> Any:
    """The adapter's method called: its result, or a coroutine of it for an async client."""
    if code == DELETE:
        return client.delete(key)
    if code == GETS:
        return client.gets(key)
    if code == ADD:
        return client.add(key, value, ttl)
    if code == REPLACE:
        return client.replace(key, value, ttl)
    if code == CAS:
        return client.cas(key, value, ttl, tokens.take(key))
    if code == APPEND:
        return client.append(key, value)
    if code == PREPEND:
        return client.prepend(key, value)
    if code == INCR:
        return client.incr(key, DELTA)
    if code == DECR:
        return client.decr(key, DELTA)
    return client.touch(key, ttl)


def _settle(code: int, key: bytes, result: Any, tokens: Tokens) -> Any:
    """The op's reply from the method's result: a gets' value (None: a miss), a
    conditional write's outcome, None for a delete."""
    if code == DELETE:
        return None
    if code != GETS:
        return result
    if result is None:
        tokens.take(key)
        return None
    tokens.keep(key, result[1])
    return result[0]


async def issue(
    client: Any,
    code: int,
    key: bytes,
    view: memoryview,
    index: int,
    size: int,
    ttl: float | None,
    tokens: Tokens,
) -> tuple[Any, int]:
    """Issue one op of these kinds with the key's value (of `size` bytes, at the key's
    offset in the value buffer `view`): its reply (`_settle`) and the bytes it sent."""
    off = index % ValueBuffer.SPREAD
    result = await _call(client, code, key, view[off : off + size], ttl, tokens)
    return _settle(code, key, result, tokens), sent_bytes(code, size)


def issue_blocking(
    client: Any, code: int, key: bytes, value: Any, ttl: float | None, tokens: Tokens
) -> Any:
    """`issue` for a blocking client (its methods are plain calls): the reply."""
    return _settle(code, key, _call(client, code, key, value, ttl, tokens), tokens)
