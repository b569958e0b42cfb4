"""memcached's conditional writes and gets on the lean text-protocol client: add, replace,
cas, append, prepend, incr, decr and touch, each one command and one reply line, which
is the write's outcome (`workbench.sdk.ops.OUTCOMES`).

The reply lines: a storage command answers STORED, NOT_STORED (add of a present key;
replace, append or prepend of a missing one), EXISTS or NOT_FOUND (cas); incr and decr
answer the new number or NOT_FOUND, and refuse a value that is no decimal number with
``CLIENT_ERROR cannot increment or decrement non-numeric value``; touch answers TOUCHED or
NOT_FOUND. A gets answers ``VALUE <key> <flags> <bytes> <cas unique>`` and the value.
"""

from __future__ import annotations

from typing import Any

from workbench.sdk.ops import EXISTS, NOT_FOUND, NOT_NUMERIC, NOT_STORED, STORED
from workbench_memcached.expiry import exptime

# Request kinds of `protocol.Wire` beyond get, store, delete and stats: how a reply reads.
OUTCOME, DELTA, TOUCH, GETS = 4, 5, 6, 7

_STORAGE = {b"STORED": STORED, b"NOT_STORED": NOT_STORED, b"EXISTS": EXISTS}
_NON_NUMERIC = b"CLIENT_ERROR cannot increment or decrement non-numeric value"


def outcome_of(kind: int, line: bytes | bytearray) -> str | None:
    """The outcome a one-line reply to a request of `kind` says; None: not one (an error)."""
    if line == b"NOT_FOUND":
        return NOT_FOUND
    if kind == OUTCOME:
        return _STORAGE.get(bytes(line))
    if kind == DELTA:
        if line.isdigit():
            return STORED
        return NOT_NUMERIC if line == _NON_NUMERIC else None
    return STORED if line == b"TOUCHED" else None


def _exptime(ttl: float | None) -> int:
    return 0 if ttl is None else exptime(ttl)


class ConditionalCommands:
    """The methods of `protocol.MultiplexedClient` for these kinds (it gives `pick`)."""

    __slots__ = ()
    pick: Any

    async def _send(self, key: bytes, kind: int, head: bytes, value: Any = None) -> Any:
        link = self.pick(key)
        wire = link.wire or await link.open()
        return await wire.send(kind, head, value)

    async def _store(
        self, command: bytes, key: bytes, value: bytes | memoryview, ttl: float | None
    ) -> str:
        head = b"%b %b 0 %d %d\r\n" % (command, key, _exptime(ttl), len(value))
        reply: str = await self._send(key, OUTCOME, head, value)
        return reply

    async def gets(self, key: bytes) -> tuple[bytes, int] | None:
        reply: tuple[bytes, int] | None = await self._send(key, GETS, b"gets " + key + b"\r\n")
        return reply

    async def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._store(b"add", key, value, ttl)

    async def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._store(b"replace", key, value, ttl)

    async def append(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._store(b"append", key, value, None)

    async def prepend(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._store(b"prepend", key, value, None)

    async def cas(
        self, key: bytes, value: bytes | memoryview, ttl: float | None, token: int | None
    ) -> str:
        # No token (no gets brought one): 0, which no item has while cas is on.
        head = b"cas %b 0 %d %d %d\r\n" % (key, _exptime(ttl), len(value), token or 0)
        reply: str = await self._send(key, OUTCOME, head, value)
        return reply

    async def incr(self, key: bytes, delta: int) -> str:
        reply: str = await self._send(key, DELTA, b"incr %b %d\r\n" % (key, delta))
        return reply

    async def decr(self, key: bytes, delta: int) -> str:
        reply: str = await self._send(key, DELTA, b"decr %b %d\r\n" % (key, delta))
        return reply

    async def touch(self, key: bytes, ttl: float | None) -> str:
        reply: str = await self._send(key, TOUCH, b"touch %b %d\r\n" % (key, _exptime(ttl)))
        return reply
