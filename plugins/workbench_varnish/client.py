"""The Python engine's strategy for Varnish: one aiohttp session per worker, its
keep-alive pool shared by the worker's virtual clients.

The requests are the ones the managed VCL answers (`workbench_varnish.vcl`): ``GET
/?key=K`` (200 a hit, 404 a miss), ``PUT /?key=K&ttl=S`` with the value as the body (204
stored), ``DELETE /?key=K`` (200 deleted, 404 absent). Keys travel percent-encoded, every
byte outside ``A-Z a-z 0-9 - . _ ~``, as the native engine's http1 codec sends them, so
both engines name an object alike. Any other status is an error ``http-NNN``.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

import aiohttp
from yarl import URL

from workbench.sdk import AdapterError
from workbench_varnish.stats import read_varnishstat
from workbench_varnish.target import VarnishTarget, parse_target


def _error(status: int) -> AdapterError:
    return AdapterError(f"http-{status}", f"Varnish answered {status}")


class VarnishClient:
    def __init__(self, session: aiohttp.ClientSession, target: VarnishTarget) -> None:
        self.session = session
        self.target = target

    def _url(self, key: bytes, ttl: str | None = None) -> URL:
        query = f"?key={quote(key, safe='')}" + ("" if ttl is None else f"&ttl={ttl}")
        return URL(self.target.base_url + "/" + query, encoded=True)

    async def _request(self, method: str, url: URL, data: Any = None) -> tuple[int, bytes]:
        try:
            async with self.session.request(
                method, url, data=data, allow_redirects=False
            ) as response:
                return response.status, await response.read()
        except aiohttp.ClientConnectionError as exc:  # disconnects included
            raise AdapterError("connection", str(exc) or type(exc).__name__) from exc
        except aiohttp.ClientPayloadError as exc:
            raise AdapterError("protocol", str(exc)) from exc

    async def get(self, key: bytes) -> bytes | None:
        status, body = await self._request("GET", self._url(key))
        if status == 200:
            return body
        if status == 404:
            return None
        raise _error(status)

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        # The origin rounds a TTL up to whole seconds (max-age); "" is none.
        url = self._url(key, f"{ttl:g}" if ttl else "")
        status, _ = await self._request("PUT", url, bytes(value))
        if status != 204:
            raise _error(status)

    async def delete(self, key: bytes) -> bool:
        status, _ = await self._request("DELETE", self._url(key))
        if status in (200, 404):
            return status == 200
        raise _error(status)

    async def close(self) -> None:
        return None


class VarnishConnection:
    def __init__(self, target: VarnishTarget, pool_size: int) -> None:
        self.target = target
        timeout = aiohttp.ClientTimeout(
            total=target.timeout or None, connect=target.connect_timeout or None
        )
        connector = aiohttp.TCPConnector(limit=pool_size, force_close=False)
        self.session = aiohttp.ClientSession(
            connector=connector, timeout=timeout, auto_decompress=False
        )

    async def client(self) -> VarnishClient:
        return VarnishClient(self.session, self.target)

    async def server_stats(self) -> dict[str, Any]:
        return await read_varnishstat(self.target.instance)

    async def close(self) -> None:
        await self.session.close()
        await asyncio.sleep(0)  # lets the connector's transports close


async def connect_keep_alive(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return VarnishConnection(parse_target(system), strategy["pool_size"])
