"""The Redis caching proxy of ``001_*.txt``, as an aiohttp server.

Run: ``python -m workbench_http.servers.caching_proxy --host 127.0.0.1 --port 8000
--redis-url redis://127.0.0.1:6379/0 [--max-keys 1000] [--ttl 10s] [--rate-limit 0]
[--loop auto|uvloop|asyncio]``.

``GET /lookup?key=K`` answers JSON ``{"key": K, "value": V, "status": S}`` with the
status also as the HTTP status:

- 200: found in the in-process LRU (a maximum key count, entries expiring after
  ``--ttl`` or when their Redis key does if sooner, expired ones dropped lazily when
  read), or else found in Redis (``GET`` and ``PTTL`` in one round trip), which then
  fills the LRU. A value is Redis's bytes decoded as UTF-8 (undecodable bytes replaced).
- 404: in neither.
- 400: a badly formed query (no key, an empty one, or one longer than 1024 characters);
  it never reaches the LRU or Redis.
- 503: Redis cannot be reached (or times out), or the client was throttled.

Throttling (the document's stub, made real): with ``--rate-limit R`` each client (the
``X-Client-Id`` header, else the peer address) has a token bucket of ``R`` requests per
second and ``--burst`` tokens; a request without a token is answered with
``--throttle-status`` (503 as in the document; 429 if you prefer to tell the two apart).

Beyond the document, so that the workbench can fill and empty it over HTTP:
``POST /`` with ``{"key": K, "value": V, "ttl": S}`` writes V to Redis (``SET``, with
``EX`` when a TTL is given) and drops K from the LRU (201; with ``If-None-Match: *`` only
if K is not in Redis, with ``If-Match: *`` only if it is, else 412); ``DELETE /lookup?key=K``
deletes it from both (200, or 404 if Redis did not have it). ``GET /stats`` gives the
LRU's hits, misses, expiries, evictions and size, and Redis hits, misses and errors.

The LRU is an ``OrderedDict`` used on the event loop only; Redis is reached through
``redis.asyncio`` (the hiredis parser when installed) with a small connection pool and
no retries, so that an unreachable Redis answers 503 at once.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator

import redis.asyncio as aioredis
from aiohttp import web
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from workbench_http.loopback import is_loopback_redis
from workbench_http.servers import (
    base_parser,
    check_host,
    duration,
    json_response,
    rate,
    run,
    server_tls,
    whole,
)

MAX_KEY_LENGTH = 1024


class LruCache:
    """A bounded LRU whose entries expire `ttl` seconds after they were filled (0: never)."""

    def __init__(self, max_keys: int, ttl: float) -> None:
        self.max_keys = max_keys
        self.ttl = ttl
        self.data: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self.hits = self.misses = self.expired = self.evicted = 0

    def get(self, key: str, now: float) -> str | None:
        entry = self.data.get(key)
        if entry is None:
            self.misses += 1
            return None
        value, expires = entry
        if expires and expires <= now:
            del self.data[key]
            self.expired += 1
            self.misses += 1
            return None
        self.data.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key: str, value: str, now: float, limit: float | None = None) -> None:
        """Fill `key`; it expires after the LRU's TTL, or after `limit` seconds if sooner."""
        if self.max_keys <= 0:
            return
        ttl = min(self.ttl, limit) if self.ttl and limit else (self.ttl or limit or 0.0)
        self.data[key] = (value, now + ttl if ttl else 0.0)
        self.data.move_to_end(key)
        while len(self.data) > self.max_keys:
            self.data.popitem(last=False)
            self.evicted += 1

    def drop(self, key: str) -> None:
        self.data.pop(key, None)


class TokenBuckets:
    """One token bucket per client: `rate` tokens a second, at most `burst`."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = max(burst, 1.0)
        self.buckets: dict[str, tuple[float, float]] = {}  # client: tokens, last refill

    def allow(self, client: str, now: float) -> bool:
        tokens, last = self.buckets.get(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self.buckets[client] = (tokens, now)
            return False
        self.buckets[client] = (tokens - 1.0, now)
        if len(self.buckets) > 100_000:  # forget idle clients rather than grow forever
            self.buckets.clear()
        return True


class Proxy:
    def __init__(
        self,
        redis: aioredis.Redis,
        lru: LruCache,
        limiter: TokenBuckets | None,
        throttle_status: int,
    ) -> None:
        self.redis = redis
        self.lru = lru
        self.limiter = limiter
        self.throttle_status = throttle_status
        self.redis_hits = self.redis_misses = self.redis_errors = 0
        self.bad_requests = self.throttled = self.requests = 0

    @staticmethod
    def answer(key: str | None, value: str | None, status: int) -> web.Response:
        return json_response({"key": key, "value": value, "status": status}, status)

    def _throttled(self, request: web.Request, now: float) -> bool:
        if self.limiter is None:
            return False
        client = request.headers.get("X-Client-Id") or (request.remote or "")
        if self.limiter.allow(client, now):
            return False
        self.throttled += 1
        return True

    async def lookup(self, request: web.Request) -> web.Response:
        self.requests += 1
        now = time.monotonic()
        if self._throttled(request, now):
            return self.answer(None, None, self.throttle_status)
        key = request.query.get("key")
        if not key or len(key) > MAX_KEY_LENGTH:
            self.bad_requests += 1
            return self.answer(key or None, None, 400)
        value = self.lru.get(key, now)
        if value is not None:
            return self.answer(key, value, 200)
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                # Queued one by one: redis-py types a command as the client's answer, not
                # as the pipeline that a chained `.get(key).pttl(key)` runs on.
                pipe.get(key)
                pipe.pttl(key)
                raw, pttl = await pipe.execute()
        except (RedisError, OSError, TimeoutError):
            self.redis_errors += 1
            return self.answer(key, None, 503)
        if raw is None:
            self.redis_misses += 1
            return self.answer(key, None, 404)
        self.redis_hits += 1
        value = raw.decode("utf-8", errors="replace")
        # An entry never outlives its Redis key: the LRU's TTL, or the key's remaining one.
        self.lru.put(key, value, time.monotonic(), pttl / 1000 if pttl > 0 else None)
        return self.answer(key, value, 200)

    async def store(self, request: web.Request) -> web.Response:
        self.requests += 1
        if self._throttled(request, time.monotonic()):
            return self.answer(None, None, self.throttle_status)
        try:
            body = json.loads(await request.read())
            key, value, ttl = body["key"], body["value"], body.get("ttl")
            if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
                raise ValueError("key must be a non-empty string")
            if not isinstance(value, str):
                raise ValueError("value must be a string")
            if ttl is not None and float(ttl) < 0:
                raise ValueError("ttl must be 0 or more")
        except (ValueError, KeyError, TypeError) as exc:
            self.bad_requests += 1
            return json_response(
                {"key": None, "value": None, "status": 400, "error": str(exc)}, 400
            )
        px = int(float(ttl) * 1000) if ttl else None
        # A precondition (memcached's add and replace) is Redis's SET NX / XX.
        nx = request.headers.get("If-None-Match") == "*"
        xx = request.headers.get("If-Match") == "*"
        data = value.encode("utf-8", errors="surrogatepass")
        try:
            done = await self.redis.set(key, data, px=px or None, nx=nx, xx=xx and not nx)
        except (RedisError, OSError, TimeoutError):
            self.redis_errors += 1
            return self.answer(key, None, 503)
        if not done:
            return json_response({"key": key, "status": 412}, 412)
        self.lru.drop(key)
        return json_response({"key": key, "status": 201}, 201)

    async def remove(self, request: web.Request) -> web.Response:
        self.requests += 1
        key = request.query.get("key")
        if not key or len(key) > MAX_KEY_LENGTH:
            self.bad_requests += 1
            return self.answer(key or None, None, 400)
        self.lru.drop(key)
        try:
            count = await self.redis.delete(key)
        except (RedisError, OSError, TimeoutError):
            self.redis_errors += 1
            return self.answer(key, None, 503)
        status = 200 if count else 404
        return self.answer(key, None, status)

    async def stats(self, request: web.Request) -> web.Response:
        lru = self.lru
        return json_response(
            {
                "lru_hits": lru.hits,
                "lru_misses": lru.misses,
                "lru_expired": lru.expired,
                "lru_evicted": lru.evicted,
                "lru_size": len(lru.data),
                "lru_max_keys": lru.max_keys,
                "redis_hits": self.redis_hits,
                "redis_misses": self.redis_misses,
                "redis_errors": self.redis_errors,
                "bad_requests": self.bad_requests,
                "throttled": self.throttled,
                "requests": self.requests,
            }
        )


# The application's proxy, set when its Redis client opens.
PROXY = web.AppKey("proxy", Proxy)


def make_redis(url: str, timeout: float, connections: int) -> aioredis.Redis:
    """A client over a blocking pool (waiting for a free connection, not failing) and no
    retries, so that a Redis that is down is an answer at once."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=connections,
        timeout=timeout,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )
    return aioredis.Redis(connection_pool=pool)


def build_app(
    redis_url: str,
    max_keys: int = 1000,
    ttl: float = 10.0,
    rate_limit: float = 0.0,
    burst: float = 0.0,
    throttle_status: int = 503,
    redis_timeout: float = 1.0,
    redis_connections: int = 32,
) -> web.Application:
    """The proxy's application; its Redis client is opened and closed with it."""
    limiter = TokenBuckets(rate_limit, burst or rate_limit) if rate_limit > 0 else None
    app = web.Application(client_max_size=64 * 1024**2)

    async def redis_ctx(app: web.Application) -> AsyncIterator[None]:
        client = make_redis(redis_url, redis_timeout, redis_connections)
        proxy = Proxy(client, LruCache(max_keys, ttl), limiter, throttle_status)
        app[PROXY] = proxy
        yield
        await client.aclose()
        await client.connection_pool.disconnect()

    app.cleanup_ctx.append(redis_ctx)

    async def lookup(request: web.Request) -> web.Response:
        return await app[PROXY].lookup(request)

    async def store(request: web.Request) -> web.Response:
        return await app[PROXY].store(request)

    async def remove(request: web.Request) -> web.Response:
        return await app[PROXY].remove(request)

    async def stats(request: web.Request) -> web.Response:
        return await app[PROXY].stats(request)

    app.router.add_get("/lookup", lookup)
    app.router.add_delete("/lookup", remove)
    app.router.add_post("/", store)
    app.router.add_get("/stats", stats)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = base_parser("The Redis caching proxy of 001: GET /lookup?key=K.")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0", help="backing Redis")
    parser.add_argument("--max-keys", type=whole, default=1000, help="LRU capacity (0: no LRU)")
    parser.add_argument(
        "--ttl", type=duration, default=10.0, help="LRU entry lifetime (0: until evicted)"
    )
    parser.add_argument(
        "--rate-limit", type=rate, default=0.0, help="requests per second per client (0: off)"
    )
    parser.add_argument("--burst", type=rate, default=0.0, help="token bucket size (0: the rate)")
    parser.add_argument("--throttle-status", type=int, default=503, choices=(429, 503))
    parser.add_argument(
        "--redis-timeout", type=duration, default=1.0, help="Redis connect and reply timeout"
    )
    parser.add_argument("--redis-connections", type=int, default=32, help="Redis pool size")
    args = parser.parse_args(argv)
    check_host(parser, args.host)
    if not is_loopback_redis(args.redis_url):
        parser.error(
            f"--redis-url must be on this machine (127.0.0.1, ::1, localhost), not {args.redis_url}"
        )
    if args.redis_connections < 1:
        parser.error("--redis-connections must be 1 or more")

    async def make() -> web.Application:
        return build_app(
            args.redis_url,
            args.max_keys,
            args.ttl,
            args.rate_limit,
            args.burst,
            args.throttle_status,
            args.redis_timeout,
            args.redis_connections,
        )

    run(make, args.host, args.port, args.loop, server_tls(args))


if __name__ == "__main__":
    main()
