"""A reference HTTP origin, for plugins of HTTP caches.

An HTTP cache is measured in front of an origin. This one serves what was stored in it, so
a cache in front of it can be filled with the workload's own keys and values:

- ``PUT /?key=K[&ttl=S]`` stores the raw request body under K (201 new, 200 replaced);
  ``ttl`` in seconds, empty or absent for none;
- ``GET /?key=K``: 200 with the bytes and ``Cache-Control: max-age`` of the time left to
  live, rounded up to a whole second (a year when it has no TTL), or 404 when absent or
  expired;
- ``DELETE /?key=K``: 200 when it removed a live value, else 404;
- ``GET /stats``: its counters and key count, as JSON.

Run it as a server the workbench manages: `start_origin` (``python -m
workbench.sdk.origin --host H --port P``). It listens on loopback only, prints ``READY``
once it listens and stops on SIGTERM or SIGINT. It keeps everything it is given: its
memory is the data set's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import signal
import time

from aiohttp import web

from workbench.sdk.remote import is_loopback
from workbench.sdk.servers import LOOPBACK, ServerProcess, start_python_server

FOREVER = 365 * 24 * 3600  # max-age of a value with no TTL: a year
MODULE = "workbench.sdk.origin"


class Store:
    def __init__(self) -> None:
        self.values: dict[str, tuple[bytes, float]] = {}  # value, expiry (0: never)
        self.counts = {"gets": 0, "hits": 0, "misses": 0, "puts": 0, "deletes": 0}

    def live(self, key: str) -> tuple[bytes, float] | None:
        entry = self.values.get(key)
        if entry is not None and entry[1] and entry[1] <= time.monotonic():
            del self.values[key]
            return None
        return entry


def _key(request: web.Request) -> str:
    key = request.query.get("key")
    if key is None:
        raise web.HTTPBadRequest(text="expected ?key=K\n")
    return key


def _ttl(request: web.Request) -> float:
    text = request.query.get("ttl", "")
    try:
        ttl = float(text) if text else 0.0
    except ValueError:
        raise web.HTTPBadRequest(text=f"expected ttl in seconds; got {text!r}\n") from None
    if not math.isfinite(ttl) or ttl < 0:
        raise web.HTTPBadRequest(text=f"expected ttl of 0 or more seconds; got {text!r}\n")
    return ttl


def app(store: Store) -> web.Application:
    async def put(request: web.Request) -> web.Response:
        key, ttl = _key(request), _ttl(request)
        body = await request.read()
        new = store.live(key) is None
        store.values[key] = (body, time.monotonic() + ttl if ttl else 0.0)
        store.counts["puts"] += 1
        return web.Response(status=201 if new else 200)

    async def get(request: web.Request) -> web.Response:
        if request.path == "/stats":
            return web.json_response({**store.counts, "keys": len(store.values)})
        key = _key(request)
        store.counts["gets"] += 1
        entry = store.live(key)
        if entry is None:
            store.counts["misses"] += 1
            return web.Response(status=404)
        store.counts["hits"] += 1
        left = math.ceil(entry[1] - time.monotonic()) if entry[1] else FOREVER
        return web.Response(
            body=entry[0],
            content_type="application/octet-stream",
            headers={"Cache-Control": f"max-age={max(1, left)}"},
        )

    async def delete(request: web.Request) -> web.Response:
        key = _key(request)
        store.counts["deletes"] += 1
        found = store.live(key) is not None
        store.values.pop(key, None)
        return web.Response(status=200 if found else 404)

    application = web.Application(client_max_size=64 << 20)
    application.router.add_route("PUT", "/", put)
    application.router.add_route("GET", "/{tail:.*}", get)
    application.router.add_route("DELETE", "/", delete)
    return application


async def serve(host: str, port: int) -> None:
    runner = web.AppRunner(app(Store()), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    print(f"READY http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    with contextlib.suppress(asyncio.CancelledError):
        await stop.wait()
    await runner.cleanup()


def start_origin(port: int = 0, host: str = LOOPBACK) -> ServerProcess:
    """The origin on a free loopback port (or `port`), stopped at exit like every server."""
    return start_python_server(MODULE, (), port, host, version="reference origin")


def main() -> None:
    parser = argparse.ArgumentParser(description="the workbench's reference HTTP origin")
    parser.add_argument("--host", default=LOOPBACK, help="loopback address to listen on")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    if not is_loopback(args.host):
        parser.error(f"--host must be a loopback address, not {args.host}")
    asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
