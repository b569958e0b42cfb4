"""The embedded cache: an in-process LRU with TTLs and pub/sub, needing no server.

Each worker process holds its own cache (``shared_state=False``), so the engine splits
the key space between workers (each owns every N-th key and draws from the global
popularity restricted to them) and, with it, the capacity (``max_entries`` and
``max_bytes`` are totals: each of N workers holds 1/N), so N workers act as one cache and
every hit rate means what it says whatever the number of workers. It is the
"simplistic cache" of the client-strategy document: get, set, delete, publish, subscribe,
and memcached's conditional writes with memcached's outcomes (`workbench_embedded.cache`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from workbench.sdk import (
    CacheSize,
    CacheSystem,
    Option,
    OptionSet,
    ServerFigures,
    Strategy,
    no_connections,
)
from workbench.sdk.ops import CONDITIONAL
from workbench_embedded.cache import LockedCache, LruCache


class DirectClient:
    """Calls the cache on the worker's event loop: the cost of the cache itself."""

    def __init__(self, cache: LruCache) -> None:
        self.cache = cache

    async def get(self, key: bytes) -> bytes | None:
        return self.cache.get(key)

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        self.cache.set(key, value, ttl)

    async def delete(self, key: bytes) -> bool:
        return self.cache.delete(key)

    async def gets(self, key: bytes) -> tuple[bytes, Any] | None:
        return self.cache.gets(key)

    async def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return self.cache.add(key, value, ttl)

    async def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return self.cache.replace(key, value, ttl)

    async def cas(
        self, key: bytes, value: bytes | memoryview, ttl: float | None, token: Any
    ) -> str:
        return self.cache.cas(key, value, ttl, token)

    async def append(self, key: bytes, value: bytes | memoryview) -> str:
        return self.cache.append(key, value)

    async def prepend(self, key: bytes, value: bytes | memoryview) -> str:
        return self.cache.prepend(key, value)

    async def incr(self, key: bytes, delta: int) -> str:
        return self.cache.incr(key, delta)

    async def decr(self, key: bytes, delta: int) -> str:
        return self.cache.decr(key, delta)

    async def touch(self, key: bytes, ttl: float | None) -> str:
        return self.cache.touch(key, ttl)

    async def publish(self, channel: bytes, message: bytes) -> None:
        self.cache.publish(channel, message)

    async def subscribe(self, channels: Sequence[bytes]) -> AsyncIterator[bytes]:
        return await self.cache.subscribe(channels)

    async def close(self) -> None:
        return None


class EmbeddedConnection:
    def __init__(self, cache: LruCache, blocking: bool) -> None:
        self.cache = cache
        self.blocking = blocking
        self.locked = LockedCache(cache)

    async def client(self) -> Any:
        return ThreadClient(self.locked) if self.blocking else DirectClient(self.cache)

    async def server_stats(self) -> dict[str, Any]:
        return self.cache.stats()

    async def close(self) -> None:
        return None


class ThreadClient:
    """Blocking client over the locked cache: one thread per virtual client."""

    def __init__(self, locked: LockedCache) -> None:
        self.locked = locked

    def get(self, key: bytes) -> bytes | None:
        return self.locked.get(key)

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        self.locked.set(key, value, ttl)

    def delete(self, key: bytes) -> bool:
        return self.locked.delete(key)

    def gets(self, key: bytes) -> tuple[bytes, Any] | None:
        return self.locked.call(self.locked.cache.gets, key)

    def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return self.locked.call(self.locked.cache.add, key, value, ttl)

    def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return self.locked.call(self.locked.cache.replace, key, value, ttl)

    def cas(self, key: bytes, value: bytes | memoryview, ttl: float | None, token: Any) -> str:
        return self.locked.call(self.locked.cache.cas, key, value, ttl, token)

    def append(self, key: bytes, value: bytes | memoryview) -> str:
        return self.locked.call(self.locked.cache.append, key, value)

    def prepend(self, key: bytes, value: bytes | memoryview) -> str:
        return self.locked.call(self.locked.cache.prepend, key, value)

    def incr(self, key: bytes, delta: int) -> str:
        return self.locked.call(self.locked.cache.incr, key, delta)

    def decr(self, key: bytes, delta: int) -> str:
        return self.locked.call(self.locked.cache.decr, key, delta)

    def touch(self, key: bytes, ttl: float | None) -> str:
        return self.locked.call(self.locked.cache.touch, key, ttl)

    def close(self) -> None:
        return None


def _make_cache(system: dict[str, Any]) -> LruCache:
    return LruCache(system["max_entries"], system["max_bytes"])


async def _connect_direct(system: dict[str, Any], strategy: dict[str, Any]) -> EmbeddedConnection:
    return EmbeddedConnection(_make_cache(system), blocking=False)


async def _connect_threads(system: dict[str, Any], strategy: dict[str, Any]) -> EmbeddedConnection:
    return EmbeddedConnection(_make_cache(system), blocking=True)


plugin = CacheSystem(
    name="embedded",
    description="In-process LRU cache (entries and bytes bounded, TTL, pub/sub); no server needed",
    options=OptionSet(
        (
            Option(
                "max_entries",
                "int",
                1_000_000,
                "evict the least recently used past this many keys (in all: each of N "
                "workers holds 1/N of them, as it holds 1/N of the keys)",
                minimum=1,
            ),
            Option(
                "max_bytes",
                "size",
                1024**3,
                "evict the least recently used past this many value bytes (in all: "
                "each of N workers holds 1/N of them, as it holds 1/N of the keys)",
                minimum=1,
            ),
        )
    ),
    strategies=(
        Strategy(
            "direct",
            "clients call the cache on the worker's event loop",
            _connect_direct,
            operations=frozenset({"get", "set", "delete", "publish", "subscribe"}) | CONDITIONAL,
            connections=no_connections,
        ),
        Strategy(
            "threads",
            "one thread per client, the cache behind a lock",
            _connect_threads,
            operations=frozenset({"get", "set", "delete"}) | CONDITIONAL,
            blocking=True,
            connections=no_connections,
        ),
    ),
    default_strategy="direct",
    shared_state=False,
    split_options=("max_entries", "max_bytes"),
    # The cache's size: its bytes, or its entries when they bind first.
    cache_size=CacheSize("max_bytes", server=False, entries="max_entries"),
    figures=ServerFigures(used_bytes="used_memory", items="curr_items"),
)
