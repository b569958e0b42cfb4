"""The conditional writes a strategy declares, each against the live target: the outcome
each case must give (an add of a present key is not stored, an incr of a missing key is
not found, a cas with a stale token is refused) and the value it leaves."""

from __future__ import annotations

import contextlib
from typing import Any

from workbench.conformance.bounded import AdapterCalls, CheckFailed, OpenConnection, Skip
from workbench.conformance.checks.probes import probe_key, show, token
from workbench.conformance.settings import Target
from workbench.sdk.ops import (
    CONDITIONAL,
    EXISTS,
    NOT_FOUND,
    NOT_NUMERIC,
    NOT_STORED,
    OUTCOMES,
    STORED,
)


class Case:
    """One client's calls for the checks of one op, each outcome and value checked."""

    def __init__(self, calls: AdapterCalls, client: Any, prefix: str) -> None:
        self.calls, self.client, self.prefix = calls, client, prefix
        self.keys: list[bytes] = []

    def key(self, name: str) -> bytes:
        key = probe_key(self.prefix, name)
        self.keys.append(key)
        return key

    async def expect(self, want: str, op: str, key: bytes, *args: Any) -> None:
        got = await self.calls.call(self.client, op, key, *args)
        if got not in OUTCOMES:
            raise CheckFailed(f"{op} returned {got!r}, expected one of {', '.join(OUTCOMES)}")
        if got != want:
            raise CheckFailed(f"{op} of {key.decode()!r} answered {got}, expected {want}")

    async def holds(self, key: bytes, want: bytes | None, after: str) -> None:
        got = await self.calls.get(self.client, key)
        # memcached rewrites a shorter counter in place, padded with spaces.
        if (got.rstrip(b" ") if got is not None else None) != want:
            raise CheckFailed(f"after {after}, read back {show(got)}, expected {show(want)}")


async def _add_replace(c: Case, ops: frozenset[str]) -> None:
    key = c.key("add")
    if "add" in ops:
        await c.expect(STORED, "add", key, b"one", None)
        await c.holds(key, b"one", "an add of an absent key")
        await c.expect(NOT_STORED, "add", key, b"two", None)
        await c.holds(key, b"one", "an add of a present key")
    if "replace" in ops:
        await c.expect(NOT_STORED, "replace", c.key("absent"), b"x", None)
        await c.calls.set(c.client, key, b"one", None)
        await c.expect(STORED, "replace", key, b"three", None)
        await c.holds(key, b"three", "a replace of a present key")


async def _append_prepend(c: Case, ops: frozenset[str]) -> None:
    key = c.key("cat")
    absent = c.key("absent")
    if "append" in ops:
        await c.expect(NOT_STORED, "append", absent, b"x")
    if "prepend" in ops:
        await c.expect(NOT_STORED, "prepend", absent, b"x")
    await c.calls.set(c.client, key, b"ab", None)
    if "append" in ops:
        await c.expect(STORED, "append", key, b"cd")
        await c.holds(key, b"abcd", "an append")
    if "prepend" in ops:
        await c.expect(STORED, "prepend", key, b"xy")
        await c.holds(key, b"xy" + (b"abcd" if "append" in ops else b"ab"), "a prepend")


async def _incr_decr(c: Case, ops: frozenset[str]) -> None:
    key, word = c.key("n"), c.key("word")
    await c.calls.set(c.client, key, b"9", None)
    await c.calls.set(c.client, word, b"ten", None)
    if "incr" in ops:
        await c.expect(NOT_FOUND, "incr", c.key("absent"), 1)
        await c.expect(NOT_NUMERIC, "incr", word, 1)
        await c.expect(STORED, "incr", key, 1)
        await c.holds(key, b"10", "an incr of 9")
    if "decr" in ops:
        await c.expect(NOT_FOUND, "decr", c.key("absent"), 1)
        await c.expect(NOT_NUMERIC, "decr", word, 1)
        await c.calls.set(c.client, key, b"1", None)
        await c.expect(STORED, "decr", key, 1)
        await c.expect(STORED, "decr", key, 1)
        await c.holds(key, b"0", "two decr of 1 (a counter stops at 0)")


async def _cas_touch(c: Case, ops: frozenset[str]) -> None:
    key = c.key("cas")
    if "cas" in ops:
        if await c.calls.call(c.client, "gets", c.key("absent")) is not None:
            raise CheckFailed("a gets of an absent key returned a value, not None")
        await c.calls.set(c.client, key, b"v1", None)
        got = await c.calls.call(c.client, "gets", key)
        if not isinstance(got, tuple) or len(got) != 2 or bytes(got[0]) != b"v1":
            raise CheckFailed(f"gets returned {got!r:.80}, expected (b'v1', a cas token)")
        await c.expect(STORED, "cas", key, b"v2", None, got[1])
        await c.holds(key, b"v2", "a cas with the token of its gets")
        await c.expect(EXISTS, "cas", key, b"v3", None, got[1])
        await c.holds(key, b"v2", "a cas with a stale token")
        await c.expect(NOT_FOUND, "cas", c.key("gone"), b"v", None, got[1])
    if "touch" in ops:
        await c.expect(NOT_FOUND, "touch", c.key("absent"), 300.0)
        await c.calls.set(c.client, key, b"kept", None)
        await c.expect(STORED, "touch", key, 300.0)
        await c.holds(key, b"kept", "a touch")


async def check_conditional(t: Target) -> str:
    ops = frozenset(t.strategy.operations & CONDITIONAL)
    if not ops:
        raise Skip("strategy declares no conditional writes")
    async with OpenConnection(t) as s:
        case = Case(s.calls, await s.client(), f"wbcheck:{token()}:")
        try:
            await _add_replace(case, ops)
            await _append_prepend(case, ops)
            await _incr_decr(case, ops)
            await _cas_touch(case, ops)
        finally:
            if "delete" in t.strategy.operations:
                for key in case.keys:
                    with contextlib.suppress(Exception):
                        await s.calls.delete(case.client, key)
    return ", ".join(sorted(ops)) + ": each outcome and value as memcached gives them"
