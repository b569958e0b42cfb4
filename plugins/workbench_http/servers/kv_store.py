"""The in-memory key-value store of ``004_*.txt``, as an aiohttp server.

Run: ``python -m workbench_http.servers.kv_store --host 127.0.0.1 --port 9889
[--mode dict|partitioned] [--partitions 16] [--expiration 2s] [--cleanup-interval 10s]``.

HTTP interface (keys are query parameters, so that ``GET /`` is the document's wrk URL):

- ``POST /`` with a JSON body ``{"key": K, "value": V, "ttl": S}`` (``ttl`` in seconds,
  optional or null: the server's ``--expiration``, 0 meaning never) stores the text V:
  201 when the key is new, 200 when it replaced a live value, 400 on a bad body.
- ``PUT /?key=K[&ttl=S]`` stores the raw request body (any bytes) the same way.
- Either with ``If-None-Match: *`` stores only a key with no live value, with
  ``If-Match: *`` only one with a live value (memcached's add and replace); 412 when not.
- ``GET /?key=K``: 200 with ``{"key": K, "value": V}`` for a text value, or the raw bytes
  (``application/octet-stream``) for a value stored with PUT; 404 ``{"key": K, "value":
  null}`` when absent or expired; 400 when the key is missing.
- ``DELETE /?key=K``: 200 when it removed a live value, 404 otherwise.
- ``GET /stats``: counters, the key count and the storage mode.

Expiry is checked lazily on every read, and a periodic clean-up task removes the expired
entries no one reads (the document's "maintenance" scheduler).

Storage modes, after the document's map and partitioned-sync-map:

- ``dict``: one dict. The clean-up sweeps it in one go on the event loop, so a large
  store pauses every request for the length of a sweep.
- ``partitioned``: N dicts chosen by the key's hash, each with its own lock. The clean-up
  runs in a thread and holds one partition's lock at a time, so requests for the other
  partitions go on while it sweeps. (On one event loop the locks are otherwise
  uncontended: they cost a little, as the document's sync maps do.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
import time
from typing import Any

from aiohttp import web

from workbench_http.servers import (
    base_parser,
    check_host,
    duration,
    json_response,
    run,
    server_tls,
    whole,
)

MAX_KEY_LENGTH = 1024

Entry = tuple[str | bytes, float]  # value, expiry on the monotonic clock (0: never)


class Counters:
    __slots__ = ("deletes", "expired", "gets", "hits", "misses", "sets", "swept")

    def __init__(self) -> None:
        self.gets = self.hits = self.misses = self.sets = self.deletes = 0
        self.expired = self.swept = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class DictStorage:
    """One dict; expiry checked on read and swept on the loop."""

    mode = "dict"

    def __init__(self, counters: Counters) -> None:
        self.data: dict[str, Entry] = {}
        self.counters = counters

    def get(self, key: str, now: float) -> str | bytes | None:
        entry = self.data.get(key)
        if entry is None:
            return None
        value, expires = entry
        if expires and expires <= now:
            del self.data[key]
            self.counters.expired += 1
            return None
        return value

    def set(self, key: str, value: str | bytes, expires: float, now: float) -> bool:
        """Store; True when it replaced a live value."""
        old = self.data.get(key)
        self.data[key] = (value, expires)
        return old is not None and not (old[1] and old[1] <= now)

    def delete(self, key: str, now: float) -> bool:
        old = self.data.pop(key, None)
        return old is not None and not (old[1] and old[1] <= now)

    def __len__(self) -> int:
        return len(self.data)

    async def sweep(self) -> int:
        now = time.monotonic()
        dead = [k for k, (_, exp) in self.data.items() if exp and exp <= now]
        for k in dead:
            del self.data[k]
        return len(dead)


class PartitionedStorage:
    """N dicts by key hash, a lock each; swept one partition at a time from a thread."""

    mode = "partitioned"

    def __init__(self, counters: Counters, partitions: int) -> None:
        self.parts: list[dict[str, Entry]] = [{} for _ in range(partitions)]
        self.locks = [threading.Lock() for _ in range(partitions)]
        self.n = partitions
        self.counters = counters

    def get(self, key: str, now: float) -> str | bytes | None:
        i = hash(key) % self.n
        part = self.parts[i]
        with self.locks[i]:
            entry = part.get(key)
            if entry is None:
                return None
            value, expires = entry
            if expires and expires <= now:
                del part[key]
                self.counters.expired += 1
                return None
            return value

    def set(self, key: str, value: str | bytes, expires: float, now: float) -> bool:
        i = hash(key) % self.n
        part = self.parts[i]
        with self.locks[i]:
            old = part.get(key)
            part[key] = (value, expires)
        return old is not None and not (old[1] and old[1] <= now)

    def delete(self, key: str, now: float) -> bool:
        i = hash(key) % self.n
        with self.locks[i]:
            old = self.parts[i].pop(key, None)
        return old is not None and not (old[1] and old[1] <= now)

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def _sweep_all(self) -> int:
        removed = 0
        for part, lock in zip(self.parts, self.locks, strict=True):
            with lock:
                now = time.monotonic()
                dead = [k for k, (_, exp) in part.items() if exp and exp <= now]
                for k in dead:
                    del part[k]
            removed += len(dead)
        return removed

    async def sweep(self) -> int:
        return await asyncio.to_thread(self._sweep_all)


class KvStore:
    def __init__(
        self, storage: DictStorage | PartitionedStorage, counters: Counters, expiration: float
    ) -> None:
        self.storage = storage
        self.counters = counters
        self.expiration = expiration

    def _expiry(self, ttl: Any, now: float) -> float:
        if ttl is None or ttl == "":
            ttl = self.expiration
        ttl = float(ttl)
        if not math.isfinite(ttl) or ttl < 0:  # NaN compares false: it would never expire
            raise ValueError("ttl must be a finite number of seconds, 0 or more")
        return now + ttl if ttl > 0 else 0.0

    @staticmethod
    def _key(request: web.Request) -> str | None:
        key = request.query.get("key")
        if not key or len(key) > MAX_KEY_LENGTH:
            return None
        return key

    def _refused(self, request: web.Request, key: str, now: float) -> web.Response | None:
        """412 when a store's precondition (If-None-Match: * or If-Match: *) is not met."""
        absent = request.headers.get("If-None-Match") == "*"
        present = request.headers.get("If-Match") == "*"
        if not (absent or present):
            return None
        live = self.storage.get(key, now) is not None
        if (absent and live) or (present and not live):
            return json_response({"key": key, "status": "precondition failed"}, 412)
        return None

    async def get(self, request: web.Request) -> web.StreamResponse:
        key = self._key(request)
        if key is None:
            return json_response({"key": None, "value": None, "error": "key required"}, 400)
        self.counters.gets += 1
        value = self.storage.get(key, time.monotonic())
        if value is None:
            self.counters.misses += 1
            return json_response({"key": key, "value": None}, 404)
        self.counters.hits += 1
        if isinstance(value, bytes):
            return web.Response(body=value, content_type="application/octet-stream")
        return json_response({"key": key, "value": value})

    async def post(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
            key, value = body["key"], body["value"]
            if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
                raise ValueError("key must be a non-empty string")
            if not isinstance(value, str):
                raise ValueError("value must be a string")
            now = time.monotonic()
            expires = self._expiry(body.get("ttl"), now)
        except (ValueError, KeyError, TypeError) as exc:
            return json_response({"error": f"bad body: {exc}"}, 400)
        refused = self._refused(request, key, now)
        if refused is not None:
            return refused
        replaced = self.storage.set(key, value, expires, now)
        self.counters.sets += 1
        return json_response(
            {"key": key, "status": "updated" if replaced else "created"}, 200 if replaced else 201
        )

    async def put(self, request: web.Request) -> web.StreamResponse:
        key = self._key(request)
        if key is None:
            return json_response({"error": "key required"}, 400)
        now = time.monotonic()
        try:
            expires = self._expiry(request.query.get("ttl"), now)
        except ValueError as exc:
            return json_response({"error": f"bad ttl: {exc}"}, 400)
        value = await request.read()
        refused = self._refused(request, key, now)
        if refused is not None:
            return refused
        replaced = self.storage.set(key, value, expires, now)
        self.counters.sets += 1
        return json_response(
            {"key": key, "status": "updated" if replaced else "created"}, 200 if replaced else 201
        )

    async def delete(self, request: web.Request) -> web.StreamResponse:
        key = self._key(request)
        if key is None:
            return json_response({"error": "key required"}, 400)
        self.counters.deletes += 1
        found = self.storage.delete(key, time.monotonic())
        return json_response({"key": key, "deleted": found}, 200 if found else 404)

    async def stats(self, request: web.Request) -> web.StreamResponse:
        return json_response(
            {
                "mode": self.storage.mode,
                "partitions": getattr(self.storage, "n", 1),
                "keys": len(self.storage),
                **self.counters.as_dict(),
            }
        )

    async def cleanup_loop(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self.counters.swept += await self.storage.sweep()


def build_app(
    mode: str = "dict",
    partitions: int = 16,
    expiration: float = 0.0,
    cleanup_interval: float = 10.0,
) -> web.Application:
    counters = Counters()
    storage: DictStorage | PartitionedStorage = (
        PartitionedStorage(counters, partitions) if mode == "partitioned" else DictStorage(counters)
    )
    store = KvStore(storage, counters, expiration)
    app = web.Application(client_max_size=64 * 1024**2)
    app["store"] = store
    app.router.add_get("/stats", store.stats)
    app.router.add_get("/", store.get)
    app.router.add_post("/", store.post)
    app.router.add_put("/", store.put)
    app.router.add_delete("/", store.delete)

    async def cleanup_ctx(app: web.Application) -> Any:
        task = (
            asyncio.create_task(store.cleanup_loop(cleanup_interval)) if cleanup_interval else None
        )
        yield
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app.cleanup_ctx.append(cleanup_ctx)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = base_parser("The key-value store of 004: POST to store, GET to read, expiry.")
    parser.add_argument("--mode", choices=("dict", "partitioned"), default="dict")
    parser.add_argument(
        "--partitions", type=whole, default=16, help="partitions (partitioned mode)"
    )
    parser.add_argument(
        "--expiration", type=duration, default=0.0, help="TTL of keys stored without one (0: never)"
    )
    parser.add_argument(
        "--cleanup-interval",
        type=duration,
        default=10.0,
        help="seconds between sweeps of expired keys (0: lazy expiry only)",
    )
    args = parser.parse_args(argv)
    check_host(parser, args.host)
    if args.partitions < 1:
        parser.error("--partitions must be 1 or more")

    async def make() -> web.Application:
        return build_app(args.mode, args.partitions, args.expiration, args.cleanup_interval)

    run(make, args.host, args.port, args.loop, server_tls(args))


if __name__ == "__main__":
    main()
