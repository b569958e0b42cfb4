"""An in-process LRU cache bounded by entries and by bytes, with TTLs and pub/sub."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence


class LruCache:
    """LRU over entries and value bytes; expired entries are dropped when touched."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.data: OrderedDict[bytes, tuple[bytes, float]] = OrderedDict()
        self.bytes = 0
        self.evictions = 0
        self.expirations = 0
        self.channels: dict[bytes, list[asyncio.Queue[bytes]]] = {}

    def get(self, key: bytes) -> bytes | None:
        entry = self.data.get(key)
        if entry is None:
            return None
        value, expires = entry
        if expires and expires <= time.monotonic():
            self._drop(key)
            self.expirations += 1
            return None
        self.data.move_to_end(key)
        return value

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        stored = bytes(value)  # a cache keeps its own copy
        if key in self.data:
            self._drop(key)
        if len(stored) > self.max_bytes:
            return  # larger than the whole cache: not stored, as a server would refuse it
        self.data[key] = (stored, time.monotonic() + ttl if ttl else 0.0)
        self.bytes += len(stored)
        while len(self.data) > self.max_entries or self.bytes > self.max_bytes:
            oldest = next(iter(self.data))
            self._drop(oldest)
            self.evictions += 1

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
