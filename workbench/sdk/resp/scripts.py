"""memcached's conditional writes as Redis scripts, stated once for every RESP client
(the Redis plugin's lean client, the ``cluster`` strategy on redis-py; the native engine
keeps the same bytes in ``native/src/protocols/resp.rs``, one script cache entry whichever
sent it). Each script answers its outcome's name (`workbench.sdk.ops.OUTCOMES`):

- append, prepend: stored only if the key exists (Redis's APPEND would create it), the
  TTL kept.
- incr, decr: not found for a missing key (INCRBY would create it), not numeric for a
  value that is not an unsigned decimal, and decr floored at 0, as memcached does.
- touch: not found for a missing key, else ``PEXPIRE`` (``PERSIST`` for none).
- cas: Redis keeps no cas unique, so a gets' token is the value's SHA-1 (`value_token`),
  and cas sets the value only if the key's value still has that SHA-1.

Scripts go by ``EVALSHA``; a server that does not hold one (``NOSCRIPT``: new, restarted,
after SCRIPT FLUSH) gets it once by ``EVAL``, which also keeps it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import redis

from workbench.sdk.adapter import AdapterError
from workbench.sdk.ops import EXISTS, NOT_FOUND, NOT_NUMERIC, NOT_STORED, STORED

APPEND = b"""if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_stored' end
redis.call('APPEND', KEYS[1], ARGV[1]) return 'stored'"""
PREPEND = b"""local v = redis.call('GET', KEYS[1])
if not v then return 'not_stored' end
redis.call('SET', KEYS[1], ARGV[1] .. v, 'KEEPTTL') return 'stored'"""
DELTA = b"""local v = redis.call('GET', KEYS[1])
if not v then return 'not_found' end
if #v > 20 or not string.match(v, '^%d+$') then return 'not_numeric' end
local n = redis.pcall('INCRBY', KEYS[1], ARGV[1])
if type(n) == 'table' then return 'not_numeric' end
if n < 0 then redis.call('SET', KEYS[1], '0', 'KEEPTTL') end
return 'stored'"""
TOUCH = b"""if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_found' end
if ARGV[1] == '0' then redis.call('PERSIST', KEYS[1])
else redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 'stored'"""
CAS = b"""local v = redis.call('GET', KEYS[1])
if not v then return 'not_found' end
if redis.sha1hex(v) ~= ARGV[1] then return 'exists' end
if ARGV[2] == '0' then redis.call('SET', KEYS[1], ARGV[3])
else redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2]) end
return 'stored'"""

_OUTCOMES = {o.encode(): o for o in (STORED, NOT_STORED, EXISTS, NOT_FOUND, NOT_NUMERIC)}


def sha_of(script: bytes) -> bytes:
    """The name EVALSHA sends `script` by: its SHA-1 in hex."""
    return hashlib.sha1(script).hexdigest().encode()


def value_token(value: bytes) -> bytes:
    """A gets' cas token: the value's SHA-1 in hex, as the cas script's ``sha1hex``."""
    return hashlib.sha1(value).hexdigest().encode()


def ms(ttl: float | None) -> bytes:
    """A TTL in milliseconds as an argument; b"0" for none."""
    return b"%d" % max(1, round(ttl * 1000)) if ttl else b"0"


def outcome_of(reply: Any) -> str:
    """The outcome a script answered, by its name."""
    outcome = _OUTCOMES.get(reply)
    if outcome is None:
        raise AdapterError("protocol", f"unexpected reply from a script: {reply!r:.80}")
    return outcome


class ScriptedConditionals:
    """add ... touch, gets and cas over redis-py's ``call(*args)`` (a cluster client routes
    EVALSHA by its one key, and follows -MOVED and -ASK with the same arguments, a cas's
    token among them). `call` raises AdapterError for an error reply; `_raw` is redis-py's
    own call, whose NoScriptError says a script is missing."""

    call: Callable[..., Awaitable[Any]]
    _raw: Callable[..., Awaitable[Any]]

    async def _script(self, script: bytes, key: bytes, *args: Any) -> str:
        try:
            reply = await self._raw("EVALSHA", sha_of(script), 1, key, *args)
        except redis.exceptions.NoScriptError:
            reply = await self.call("EVAL", script, 1, key, *args)
        return outcome_of(reply)

    async def _set_if(self, only: str, key: bytes, value: Any, ttl: float | None) -> str:
        tail = (only, "PX", ms(ttl)) if ttl else (only,)
        return NOT_STORED if await self.call("SET", key, value, *tail) is None else STORED

    async def gets(self, key: bytes) -> tuple[bytes, bytes] | None:
        value = await self.call("GET", key)
        return None if value is None else (value, value_token(value))

    async def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._set_if("NX", key, value, ttl)

    async def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._set_if("XX", key, value, ttl)

    async def append(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._script(APPEND, key, value)

    async def prepend(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._script(PREPEND, key, value)

    async def cas(
        self, key: bytes, value: bytes | memoryview, ttl: float | None, token: bytes | None
    ) -> str:
        return await self._script(CAS, key, token or b"-", ms(ttl), value)

    async def incr(self, key: bytes, delta: int) -> str:
        return await self._script(DELTA, key, delta)

    async def decr(self, key: bytes, delta: int) -> str:
        return await self._script(DELTA, key, -delta)

    async def touch(self, key: bytes, ttl: float | None) -> str:
        return await self._script(TOUCH, key, ms(ttl))
