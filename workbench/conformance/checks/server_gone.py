"""The server-gone check: with the managed server stopped, operations raise, never hang."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from workbench.conformance.bounded import (
    CONNECT_TIMEOUT,
    AdapterCalls,
    CheckFailed,
    Skip,
    describe,
)
from workbench.conformance.checks.probes import token
from workbench.conformance.settings import Target
from workbench.sdk.adapter import ManagedServer, error_kind
from workbench.sdk.errors import WorkbenchError

GONE_KINDS = ("connection", "timeout")


async def _start_server(t: Target) -> ManagedServer:
    assert t.system.server is not None
    try:
        server = await asyncio.wait_for(
            asyncio.to_thread(t.system.server.start, dict(t.server_options)), CONNECT_TIMEOUT * 2
        )
    except TimeoutError:
        raise CheckFailed("the server launcher did not return within 30s") from None
    except WorkbenchError as exc:
        raise CheckFailed(f"the server launcher failed: {exc}") from None
    for attr in ("pid", "target_options", "stop"):
        if not hasattr(server, attr):
            raise CheckFailed(f"the launcher gave {type(server).__name__}, which has no {attr}")
    return server


async def _stop_server(server: ManagedServer) -> None:
    await asyncio.wait_for(asyncio.to_thread(server.stop), CONNECT_TIMEOUT)


def _why_not_applicable(t: Target) -> str | None:
    if t.system.server is None:
        if not t.system.shared_state:
            return "in-process system: there is no server to lose"
        return "system declares no server launcher, so the kit cannot stop a server"
    if not t.managed:
        return "needs --managed, so that the kit may start and stop a server"
    return None


async def _op_must_raise(d: AdapterCalls, client: Any, op: str, args: tuple[Any, ...]) -> str:
    """One operation against the stopped server: it must raise a connection or timeout error.

    Returns the note "op: kind in N s"; a hang, a result or another error fails the check.
    """
    began = time.monotonic()
    try:
        result = await d.call(client, op, *args)
    except CheckFailed as exc:
        raise CheckFailed(f"with the server stopped, {exc} (it must raise, not hang)") from None
    except Exception as exc:
        kind = error_kind(exc)
        if kind not in GONE_KINDS:
            raise CheckFailed(
                f"with the server stopped, {op} raised {describe(exc)}, counted as "
                f"{kind!r}; expected connection or timeout (raise "
                "AdapterError('connection', ...) or a ConnectionError)"
            ) from None
        return f"{op}: {kind} in {time.monotonic() - began:.2f}s"
    what = "a miss (None)" if op == "get" and result is None else repr(result)[:40]
    raise CheckFailed(f"with the server stopped, {op} returned {what} instead of raising")


async def check_server_gone(t: Target) -> str:
    if (why := _why_not_applicable(t)) is not None:
        raise Skip(why)
    server = await _start_server(t)
    d = AdapterCalls(t)
    conn = None
    client = None
    notes = []
    try:
        conn = await d.connect({**t.system_options, **server.target_options})
        client = await d.client(conn)
        key = f"wbcheck:{token()}:gone".encode()
        await d.set(client, key, b"before", None)
        if await d.get(client, key) != b"before":
            raise CheckFailed("the fresh managed server did not keep a value")
        await _stop_server(server)
        ops: list[tuple[str, tuple[Any, ...]]] = [("get", (key,)), ("set", (key, b"x", None))]
        if "delete" in t.strategy.operations:
            ops.append(("delete", (key,)))
        for op, args in ops:
            notes.append(await _op_must_raise(d, client, op, args))
    finally:
        hung = await _close_all_must_not_hang(d, client, conn)
        with contextlib.suppress(Exception):
            await _stop_server(server)
    if hung:
        raise CheckFailed("; ".join(hung))
    return "; ".join(notes)


async def _close_all_must_not_hang(d: AdapterCalls, client: Any, conn: Any) -> list[str]:
    """Close the client and the connection with the server gone; a note for each that hung."""
    closers: list[Callable[[], Awaitable[Any]]] = []
    if client is not None:
        closers.append(lambda: d.close_client(client))
    if conn is not None:
        closers.append(lambda: d.close_conn(conn))
    return [hang for closer in closers if (hang := await _close_must_not_hang(closer))]


async def _close_must_not_hang(closer: Callable[[], Awaitable[Any]]) -> str | None:
    """Run a close with the server gone: failing is fine, hanging is not (its note)."""
    try:
        await closer()
    except CheckFailed as exc:
        return f"close hung: {exc}"
    except Exception:
        return None  # the server is gone: a close that raises is the expected outcome
    return None
