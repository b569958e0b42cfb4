"""An in-process LRU cache bounded by entries and by bytes, with TTLs and pub/sub, and
memcached's conditional writes (add, replace, cas and gets, append, prepend, incr, decr,
touch) with memcached's outcomes.

An entry is a two-item list ``[value, expires]``, new on every write that changes the value
and changed in place by touch (which keeps memcached's cas unique). So the entry itself is
a gets' cas token: a cas is stored only if the key still holds that very entry. The token
keeps the entry alive, so its identity is never reused the way an ``id()`` could be.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, ParamSpec, TypeVar

from workbench.sdk.ops import EXISTS, NOT_FOUND, NOT_NUMERIC, NOT_STORED, STORED

P = ParamSpec("P")
R = TypeVar("R")

MAX_COUNTER = 1 << 64  # memcached's counters are unsigned 64-bit and wrap
# How C's strtoull reads a number: leading white space, a sign, digits.
_NUMBER = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]+)")
_SPACE = b" \t\n\v\f\r"


def counter(value: bytes) -> int | None:
    """The number memcached reads in a value for incr and decr (its ``safe_strtoull`` on
    the value and its CRLF): digits after optional white space and sign, then white space
    or the end; None when it reads none, or a negative or too large one."""
    m = _NUMBER.match(value)
    if m is None or (m.end() < len(value) and value[m.end()] not in _SPACE):
        return None
    n = int(m[2])
    if n >= MAX_COUNTER:
        return None  # strtoull's ERANGE
    if m[1] == b"-" and n:
        n = MAX_COUNTER - n  # strtoull negates; memcached refuses what reads as negative
        if n >= MAX_COUNTER // 2:
            return None
    return n


class LruCache:
    """LRU over entries and value bytes; expired entries are dropped when touched."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.data: OrderedDict[bytes, list[Any]] = OrderedDict()  # key -> [value, expires]
        self.bytes = 0
        self.evictions = 0
        self.expirations = 0
        self.channels: dict[bytes, list[asyncio.Queue[bytes]]] = {}

    def get(self, key: bytes) -> bytes | None:
        entry = self.data.get(key)
        if entry is None:
            return None
        # The entry stays a list (a slotted class costs a set ~15% more): its items typed here.
        value: bytes
        expires: float
        value, expires = entry
        if expires and expires <= time.monotonic():
            self._drop(key)
            self.expirations += 1
            return None
        self.data.move_to_end(key)
        return value

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        self._store(key, bytes(value), time.monotonic() + ttl if ttl else 0.0)

    def _store(self, key: bytes, stored: bytes, expires: float) -> None:
        """`stored` (the cache's own bytes) under `key` in a new entry, evicting past the
        bounds."""
        if key in self.data:
            self._drop(key)
        if len(stored) > self.max_bytes:
            return  # larger than the whole cache: not stored, as a server would refuse it
        self.data[key] = [stored, expires]
        self.bytes += len(stored)
        while len(self.data) > self.max_entries or self.bytes > self.max_bytes:
            oldest = next(iter(self.data))
            self._drop(oldest)
            self.evictions += 1

    def _live(self, key: bytes) -> list[Any] | None:
        """The key's entry, unexpired (an expired one is dropped), most recently used."""
        entry = self.data.get(key)
        if entry is None:
            return None
        if entry[1] and entry[1] <= time.monotonic():
            self._drop(key)
            self.expirations += 1
            return None
        self.data.move_to_end(key)
        return entry

    def gets(self, key: bytes) -> tuple[bytes, Any] | None:
        """The value and its cas token (the entry), or None for a miss."""
        entry = self._live(key)
        return None if entry is None else (entry[0], entry)

    def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        if self._live(key) is not None:
            return NOT_STORED
        self.set(key, value, ttl)
        return STORED

    def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        if self._live(key) is None:
            return NOT_STORED
        self.set(key, value, ttl)
        return STORED

    def cas(self, key: bytes, value: bytes | memoryview, ttl: float | None, token: Any) -> str:
        entry = self._live(key)
        if entry is None:
            return NOT_FOUND
        if entry is not token:
            return EXISTS
        self.set(key, value, ttl)
        return STORED

    def append(self, key: bytes, value: bytes | memoryview) -> str:
        entry = self._live(key)
        if entry is None:
            return NOT_STORED
        self._store(key, entry[0] + bytes(value), entry[1])
        return STORED

    def prepend(self, key: bytes, value: bytes | memoryview) -> str:
        entry = self._live(key)
        if entry is None:
            return NOT_STORED
        self._store(key, bytes(value) + entry[0], entry[1])
        return STORED

    def incr(self, key: bytes, delta: int) -> str:
        return self._add_delta(key, delta)

    def decr(self, key: bytes, delta: int) -> str:
        return self._add_delta(key, -delta)

    def _add_delta(self, key: bytes, delta: int) -> str:
        """memcached's incr and decr: an unsigned decimal, wrapping up, floored at 0 down;
        a shorter result is padded with spaces to the old length, as memcached rewrites a
        counter in place."""
        entry = self._live(key)
        if entry is None:
            return NOT_FOUND
        n = counter(entry[0])
        if n is None:
            return NOT_NUMERIC
        n = (n + delta) % MAX_COUNTER if delta > 0 else max(n + delta, 0)
        text = b"%d" % n
        self._store(key, text.ljust(len(entry[0])), entry[1])
        return STORED

    def touch(self, key: bytes, ttl: float | None) -> str:
        entry = self._live(key)
        if entry is None:
            return NOT_FOUND
        entry[1] = time.monotonic() + ttl if ttl else 0.0
        return STORED

    def delete(self, key: bytes) -> bool:
        if key in self.data:
            self._drop(key)
            return True
        return False

    def _drop(self, key: bytes) -> None:
        value, _ = self.data.pop(key)
        self.bytes -= len(value)

    def publish(self, channel: bytes, message: bytes) -> int:
        queues = self.channels.get(channel, ())
        for q in queues:
            q.put_nowait(message)
        return len(queues)

    async def subscribe(self, channels: Sequence[bytes]) -> AsyncIterator[bytes]:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        for ch in channels:
            self.channels.setdefault(ch, []).append(queue)
        return _drain(self, channels, queue)

    def stats(self) -> dict[str, int]:
        return {
            "curr_items": len(self.data),
            "used_memory": self.bytes,
            "evictions": self.evictions,
            "expirations": self.expirations,
        }


async def _drain(
    cache: LruCache, channels: Sequence[bytes], queue: asyncio.Queue[bytes]
) -> AsyncIterator[bytes]:
    try:
        while True:
            yield await queue.get()
    finally:
        for ch in channels:
            subs = cache.channels.get(ch, [])
            if queue in subs:
                subs.remove(queue)


class LockedCache:
    """The same cache behind a lock, for clients driven from threads."""

    def __init__(self, cache: LruCache) -> None:
        self.cache = cache
        self.lock = threading.Lock()

    def get(self, key: bytes) -> bytes | None:
        with self.lock:
            return self.cache.get(key)

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        with self.lock:
            self.cache.set(key, value, ttl)

    def delete(self, key: bytes) -> bool:
        with self.lock:
            return self.cache.delete(key)

    def call(self, op: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Any other of the cache's operations (a bound method of `cache`), under the lock."""
        with self.lock:
            return op(*args, **kwargs)
