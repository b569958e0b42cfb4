"""Bounded calls into the adapter: a hanging adapter fails a check, never hangs the kit.

`AdapterCalls` calls one client's methods the way the engine does (blocking strategies
from threads, asyncio ones awaited), each within a timeout; `OpenConnection` is a
connection with its clients, closed (bounded) when a check ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from workbench.conformance.checks.probes import show
from workbench.conformance.settings import Target
from workbench.engine.native import probe_connect
from workbench.sdk.errors import WorkbenchError

CONNECT_TIMEOUT = 15.0


class CheckFailed(Exception):
    """A check found the adapter wrong; the message says how."""


class Skip(Exception):  # an outcome, not an error
    """A check does not apply to this strategy or target; the message says why."""


def describe(exc: BaseException) -> str:
    """An exception as one short line for a check's reason."""
    return f"{type(exc).__name__}: {exc}"[:300]


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking call in a daemon thread: one that hangs cannot keep the kit alive."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the awaiting task
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting
                loop.call_soon_threadsafe(settle, False, exc)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, True, result)

    threading.Thread(target=work, daemon=True, name="workbench-check").start()
    return await future


async def bounded(what: str, call: Awaitable[Any] | Callable[[], Any], timeout: float) -> Any:
    """Await `call` (a coroutine, or a blocking callable run in a thread) within `timeout`."""
    if callable(call) and not inspect.isawaitable(call):
        awaitable: Awaitable[Any] = _in_thread(call)
    else:
        awaitable = call
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        raise CheckFailed(f"{what} did not return within {timeout:g}s") from None


class AdapterCalls:
    """Calls one client's methods the way the engine does, each bounded in time."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.timeout = target.op_timeout
        ops = target.strategy.operations
        # cache_aside without a plain set (a get-or-set server): writes go as a fill.
        self.fills = "set" not in ops and "cache_aside" in ops

    async def call(self, client: Any, op: str, *args: Any) -> Any:
        method = getattr(client, op, None)
        if method is None:
            raise CheckFailed(f"client has no {op}() method")
        if self.target.blocking:
            return await bounded(op, lambda: method(*args), self.timeout)

        async def run() -> Any:
            result = method(*args)
            if not inspect.isawaitable(result):
                raise CheckFailed(
                    f"{op}() of an asyncio strategy returned {type(result).__name__}, "
                    "not a coroutine (declare blocking=True for plain methods)"
                )
            return await result

        return await bounded(op, run(), self.timeout)

    async def get(self, client: Any, key: bytes) -> bytes | None:
        got = await self.call(client, "get", key)
        if got is not None and not isinstance(got, bytes | bytearray):
            raise CheckFailed(f"get returned {type(got).__name__}, expected bytes or None")
        return None if got is None else bytes(got)

    async def set(
        self, client: Any, key: bytes, value: bytes | memoryview, ttl: float | None
    ) -> Any:
        if self.fills:
            return await self.fill(client, key, value)
        return await self.call(client, "set", key, value, ttl)

    async def fill(self, client: Any, key: bytes, value: bytes | memoryview) -> None:
        """A write the only way a cache_aside-only strategy has: a get that misses (after
        a delete, so that it does), then the set that answers it; no TTL."""
        if "delete" in self.target.strategy.operations:
            await self.delete(client, key)
        got = await self.get(client, key)
        if got is not None:
            raise CheckFailed(f"a cache-aside write found the key present: {show(got)}")
        await self.call(client, "set", key, value, None)

    async def delete(self, client: Any, key: bytes) -> Any:
        return await self.call(client, "delete", key)

    async def close_client(self, client: Any) -> None:
        method = getattr(client, "close", None)
        if method is None:
            raise CheckFailed("client has no close() method")
        if self.target.blocking and not inspect.iscoroutinefunction(method):
            await bounded("client close", method, self.timeout)
        else:
            result = method()
            if inspect.isawaitable(result):
                await bounded("client close", result, self.timeout)

    async def connect(self, system_options: dict[str, Any] | None = None) -> Any:
        t = self.target
        opts = t.system_options if system_options is None else system_options
        try:
            connect = t.strategy.connect
            if t.strategy.engine == "native":  # through the native engine's own codecs
                connect = probe_connect(t.system, t.strategy)
            pending = connect(dict(opts), dict(t.strategy_options))
            if not inspect.isawaitable(pending):
                raise CheckFailed("Strategy.connect must be an async function")
            conn = await bounded("connect", pending, CONNECT_TIMEOUT)
        except CheckFailed:
            raise
        except WorkbenchError as exc:
            raise CheckFailed(f"connect failed: {exc}") from None
        except Exception as exc:
            raise CheckFailed(f"connect failed: {describe(exc)}") from None
        for method in ("client", "server_stats", "close"):
            if not callable(getattr(conn, method, None)):
                raise CheckFailed(f"connect gave {type(conn).__name__}, which has no {method}()")
        return conn

    async def client(self, conn: Any) -> Any:
        result = conn.client()
        if not inspect.isawaitable(result):
            raise CheckFailed("Connection.client() must be a coroutine")
        return await bounded("Connection.client()", result, CONNECT_TIMEOUT)

    async def close_conn(self, conn: Any) -> None:
        result = conn.close()
        if inspect.isawaitable(result):
            await bounded("Connection.close()", result, self.timeout)


class OpenConnection:
    """An open connection with clients, closed (bounded) at the end of a check."""

    def __init__(self, target: Target) -> None:
        self.calls = AdapterCalls(target)
        self.conn: Any = None
        self.clients: list[Any] = []

    async def __aenter__(self) -> OpenConnection:
        self.conn = await self.calls.connect()
        return self

    async def client(self) -> Any:
        c = await self.calls.client(self.conn)
        self.clients.append(c)
        return c

    async def __aexit__(self, *exc: object) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                await self.calls.close_client(c)
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await self.calls.close_conn(self.conn)
