"""memcached's conditional writes in Redis's words, each one round trip, with memcached's
outcomes (`workbench.sdk.ops.OUTCOMES`), on the plugin's lean RESP client. The mapping
(docs/ops.md):

- add, replace: ``SET key value NX`` / ``XX`` (with ``PX`` for a TTL): OK is stored, nil
  not stored.
- append, prepend, incr, decr, touch and cas: the SDK's scripts (`workbench.sdk.resp.
  scripts`, which says what each does); a gets' token is the value's SHA-1, which cas
  compares. Unlike memcached's, it cannot tell a rewrite of the same bytes from no write.

Scripts go by ``EVALSHA``; a server that does not hold one yet (``NOSCRIPT``: new, or
restarted) gets it once by ``EVAL``, which also keeps it.
"""

from __future__ import annotations

from typing import Any

from workbench.sdk import AdapterError
from workbench.sdk.ops import NOT_STORED, STORED
from workbench.sdk.resp.scripts import (
    APPEND,
    CAS,
    DELTA,
    PREPEND,
    TOUCH,
    ms,
    outcome_of,
    sha_of,
    value_token,
)


def _bulk(part: bytes) -> bytes:
    return b"$%d\r\n%b\r\n" % (len(part), part)


class ConditionalCommands:
    """The methods of `resp.MultiplexedClient` for these kinds (it gives `call` and
    `call_with_value`)."""

    call: Any
    call_with_value: Any

    async def _script(
        self, script: bytes, key: bytes, args: tuple[bytes, ...], value: Any = None
    ) -> str:
        """Run `script` on `key` with `args`, then `value` last if any: its outcome."""
        try:
            reply = await self._eval(b"EVALSHA", sha_of(script), key, args, value)
        except AdapterError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
            reply = await self._eval(b"EVAL", script, key, args, value)
        return outcome_of(reply)

    async def _eval(
        self, command: bytes, script: bytes, key: bytes, args: tuple[bytes, ...], value: Any
    ) -> Any:
        parts = (command, script, b"1", key, *args)
        head = b"*%d\r\n" % (len(parts) + (value is not None)) + b"".join(map(_bulk, parts))
        if value is None:
            return await self.call(head)
        return await self.call_with_value(head + b"$%d\r\n" % len(value), value, b"\r\n")

    async def _set_if(
        self, condition: bytes, key: bytes, value: bytes | memoryview, ttl: float | None
    ) -> str:
        tail = [condition, b"PX", ms(ttl)] if ttl else [condition]
        head = b"*%d\r\n$3\r\nSET\r\n%b$%d\r\n" % (3 + len(tail), _bulk(key), len(value))
        reply = await self.call_with_value(head, value, b"\r\n" + b"".join(map(_bulk, tail)))
        return NOT_STORED if reply is None else STORED

    async def gets(self, key: bytes) -> tuple[bytes, bytes] | None:
        value = await self.call(b"*2\r\n$3\r\nGET\r\n" + _bulk(key))
        if value is None:
            return None
        return value, value_token(value)

    async def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._set_if(b"NX", key, value, ttl)

    async def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._set_if(b"XX", key, value, ttl)

    async def append(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._script(APPEND, key, (), value)

    async def prepend(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._script(PREPEND, key, (), value)

    async def cas(
        self, key: bytes, value: bytes | memoryview, ttl: float | None, token: bytes | None
    ) -> str:
        return await self._script(CAS, key, (token or b"-", ms(ttl)), value)

    async def incr(self, key: bytes, delta: int) -> str:
        return await self._script(DELTA, key, (b"%d" % delta,))

    async def decr(self, key: bytes, delta: int) -> str:
        return await self._script(DELTA, key, (b"%d" % -delta,))

    async def touch(self, key: bytes, ttl: float | None) -> str:
        return await self._script(TOUCH, key, (ms(ttl),))
