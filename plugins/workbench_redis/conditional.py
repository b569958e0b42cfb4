"""memcached's conditional writes in Redis's words, each one round trip, with memcached's
outcomes (`workbench.sdk.ops.OUTCOMES`). The mapping (docs/ops.md):

- add, replace: ``SET key value NX`` / ``XX`` (with ``PX`` for a TTL): OK is stored, nil
  not stored.
- append, prepend: a script: stored only if the key exists (Redis's APPEND would create
  it), the TTL kept.
- incr, decr: a script: not found for a missing key (INCRBY would create it), not numeric
  for a value that is not an unsigned decimal, and decr floored at 0, as memcached does.
- touch: a script: not found for a missing key, else ``PEXPIRE`` (``PERSIST`` for none).
- gets and cas: Redis keeps no cas unique, so a gets' token is the value's SHA-1, and cas
  is a script that sets the value only if the key's value still has that SHA-1. Unlike
  memcached's, it cannot tell a rewrite of the same bytes from no write at all.

Scripts go by ``EVALSHA``; a server that does not hold one yet (``NOSCRIPT``: new, or
restarted) gets it once by ``EVAL``, which also keeps it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from workbench.sdk import AdapterError
from workbench.sdk.ops import EXISTS, NOT_FOUND, NOT_NUMERIC, NOT_STORED, STORED

_APPEND = b"""if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_stored' end
redis.call('APPEND', KEYS[1], ARGV[1]) return 'stored'"""
_PREPEND = b"""local v = redis.call('GET', KEYS[1])
if not v then return 'not_stored' end
redis.call('SET', KEYS[1], ARGV[1] .. v, 'KEEPTTL') return 'stored'"""
_DELTA = b"""local v = redis.call('GET', KEYS[1])
if not v then return 'not_found' end
if #v > 20 or not string.match(v, '^%d+$') then return 'not_numeric' end
local n = redis.pcall('INCRBY', KEYS[1], ARGV[1])
if type(n) == 'table' then return 'not_numeric' end
if n < 0 then redis.call('SET', KEYS[1], '0', 'KEEPTTL') end
return 'stored'"""
_TOUCH = b"""if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_found' end
if ARGV[1] == '0' then redis.call('PERSIST', KEYS[1])
else redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 'stored'"""
_CAS = b"""local v = redis.call('GET', KEYS[1])
if not v then return 'not_found' end
if redis.sha1hex(v) ~= ARGV[1] then return 'exists' end
if ARGV[2] == '0' then redis.call('SET', KEYS[1], ARGV[3])
else redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2]) end
return 'stored'"""

_OUTCOMES = {o.encode(): o for o in (STORED, NOT_STORED, EXISTS, NOT_FOUND, NOT_NUMERIC)}


def _bulk(part: bytes) -> bytes:
    return b"$%d\r\n%b\r\n" % (len(part), part)


def _ms(ttl: float | None) -> bytes:
    """A TTL in milliseconds as an argument; b"0" for none."""
    return b"%d" % max(1, round(ttl * 1000)) if ttl else b"0"


class ConditionalCommands:
    """The methods of `resp.MultiplexedClient` for these kinds (it gives `call` and
    `call_with_value`)."""

    call: Any
    call_with_value: Any

    async def _script(
        self, script: bytes, key: bytes, args: tuple[bytes, ...], value: Any = None
    ) -> str:
        """Run `script` on `key` with `args`, then `value` last if any: its outcome."""
        sha = hashlib.sha1(script).hexdigest().encode()
        try:
            reply = await self._eval(b"EVALSHA", sha, key, args, value)
        except AdapterError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
            reply = await self._eval(b"EVAL", script, key, args, value)
        outcome = _OUTCOMES.get(reply)
        if outcome is None:
            raise AdapterError("protocol", f"unexpected reply from a script: {reply!r:.80}")
        return outcome

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
        tail = [condition, b"PX", _ms(ttl)] if ttl else [condition]
        head = b"*%d\r\n$3\r\nSET\r\n%b$%d\r\n" % (3 + len(tail), _bulk(key), len(value))
        reply = await self.call_with_value(head, value, b"\r\n" + b"".join(map(_bulk, tail)))
        return NOT_STORED if reply is None else STORED

    async def gets(self, key: bytes) -> tuple[bytes, bytes] | None:
        value = await self.call(b"*2\r\n$3\r\nGET\r\n" + _bulk(key))
        if value is None:
            return None
        return value, hashlib.sha1(value).hexdigest().encode()

    async def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._set_if(b"NX", key, value, ttl)

    async def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._set_if(b"XX", key, value, ttl)

    async def append(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._script(_APPEND, key, (), value)

    async def prepend(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._script(_PREPEND, key, (), value)

    async def cas(
        self, key: bytes, value: bytes | memoryview, ttl: float | None, token: bytes | None
    ) -> str:
        return await self._script(_CAS, key, (token or b"-", _ms(ttl)), value)

    async def incr(self, key: bytes, delta: int) -> str:
        return await self._script(_DELTA, key, (b"%d" % delta,))

    async def decr(self, key: bytes, delta: int) -> str:
        return await self._script(_DELTA, key, (b"%d" % -delta,))

    async def touch(self, key: bytes, ttl: float | None) -> str:
        return await self._script(_TOUCH, key, (_ms(ttl),))
