"""Checks with several clients or the connection itself: concurrency, pub/sub, stats, close."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from workbench.conformance.bounded import (
    AdapterCalls,
    CheckFailed,
    OpenConnection,
    Skip,
    bounded,
    describe,
)
from workbench.conformance.checks.probes import probe_key, show, token
from workbench.conformance.settings import Target
from workbench.sdk.ops import NEEDS

CLIENTS = 32  # virtual clients in the concurrency check
KEYS_PER_CLIENT = 16
MESSAGES = 20  # published in the pub/sub check
STATS_TIMEOUT = 2.0  # what the engine allows server_stats


ROUNDS = 2  # each client writes then reads its keys this many times


@dataclass(frozen=True)
class OwnKeys:
    """The keys one virtual client owns in the concurrency check, and what it writes."""

    prefix: str
    client: int

    def key(self, j: int) -> bytes:
        return probe_key(self.prefix, self.client, j)

    def value(self, j: int, round_: int) -> bytes:
        i = self.client
        return f"client {i} key {j} round {round_} ".encode() * (1 + (i * 7 + j) % 40)

    def check(self, j: int, round_: int, got: bytes | None) -> None:
        want = self.value(j, round_)
        if got != want:
            raise CheckFailed(
                f"client {self.client} read {show(got)} for its own key {j}, expected {show(want)}"
            )


async def _asyncio_client(d: AdapterCalls, c: Any, own: OwnKeys, deletes: bool) -> None:
    for round_ in range(ROUNDS):
        for j in range(KEYS_PER_CLIENT):
            await d.set(c, own.key(j), own.value(j, round_), None)
        for j in range(KEYS_PER_CLIENT):
            own.check(j, round_, await d.get(c, own.key(j)))
    if deletes:
        for j in range(KEYS_PER_CLIENT):
            await d.delete(c, own.key(j))


def _blocking_client(c: Any, own: OwnKeys, deletes: bool) -> None:
    # As the engine does: one thread per virtual client, for the client's whole life.
    for round_ in range(ROUNDS):
        for j in range(KEYS_PER_CLIENT):
            c.set(own.key(j), own.value(j, round_), None)
        for j in range(KEYS_PER_CLIENT):
            own.check(j, round_, c.get(own.key(j)))
    if deletes:
        for j in range(KEYS_PER_CLIENT):
            c.delete(own.key(j))


async def _stats_meanwhile(conn: Any, budget: float) -> None:
    # The engine asks for server figures while the clients run.
    for _ in range(3):
        await asyncio.sleep(0.01)
        await bounded("server_stats() during the load", conn.server_stats(), budget)


async def check_concurrency(t: Target) -> str:
    prefix = f"wbcheck:{token()}:"
    deletes = "delete" in t.strategy.operations
    budget = t.op_timeout * 4
    async with OpenConnection(t) as s:
        clients = [await s.client() for _ in range(CLIENTS)]
        owners = [OwnKeys(prefix, i) for i in range(CLIENTS)]
        if t.blocking:
            runs = [
                bounded(f"client {o.client}", partial(_blocking_client, c, o, deletes), budget)
                for c, o in zip(clients, owners, strict=True)
            ]
        else:
            runs = [
                _asyncio_client(s.calls, c, o, deletes)
                for c, o in zip(clients, owners, strict=True)
            ]
        results = await asyncio.gather(
            *runs, _stats_meanwhile(s.conn, budget), return_exceptions=True
        )
    for r in results:
        if isinstance(r, CheckFailed):
            raise r
        if isinstance(r, BaseException):
            raise CheckFailed(f"a client failed: {describe(r)}")
    mode = "threads" if t.blocking else "tasks"
    return (
        f"{CLIENTS} clients in {mode}, {KEYS_PER_CLIENT} own keys each, each sees its own; "
        "server_stats() meanwhile"
    )


async def _next(messages: AsyncIterator[bytes], timeout: float) -> bytes:
    try:
        return await asyncio.wait_for(messages.__anext__(), timeout)
    except TimeoutError:
        raise CheckFailed(f"no message arrived within {timeout:g}s") from None
    except StopAsyncIteration:
        raise CheckFailed("the subscription ended") from None


async def check_pubsub(t: Target) -> str:
    ops = t.strategy.operations
    if not ops & NEEDS["publish"]:
        raise Skip("strategy declares no publish/subscribe")
    if not NEEDS["publish"] <= ops:
        raise CheckFailed("declares only one of publish and subscribe; the engine needs both")
    if t.blocking:
        raise CheckFailed("a blocking strategy declares pub/sub; the engine cannot drive it")
    if t.strategy.engine == "native":
        # The probe answers one request at a time; subscribers live only in the native
        # workers' loop, checked against a real server by tests/native/test_native_pubsub.py.
        raise Skip("the native engine subscribes in its workers, not through the probe")
    tok = token()
    ch_a, ch_b = f"wbcheck:{tok}:a".encode(), f"wbcheck:{tok}:b".encode()
    iterators: list[Any] = []
    async with OpenConnection(t) as s:
        d = s.calls
        subs = [await s.client() for _ in range(2)]
        pub = await s.client()
        try:
            for c in subs:
                it = await d.call(c, "subscribe", [ch_a])
                if not hasattr(it, "__anext__"):
                    raise CheckFailed(
                        f"subscribe returned {type(it).__name__}, not an async iterator"
                    )
                iterators.append(it)
            # Published right after subscribe returned: none may be lost.
            sent = [f"message {i} ".encode() + bytes(range(256)) * (i % 3) for i in range(MESSAGES)]
            await d.call(pub, "publish", ch_b, b"not for channel a")
            for m in sent:
                await d.call(pub, "publish", ch_a, m)
            for n, it in enumerate(iterators):
                for i, want in enumerate(sent):
                    got = await _next(it, t.op_timeout)
                    if isinstance(got, memoryview | bytearray):
                        got = bytes(got)
                    if got != want:
                        raise CheckFailed(
                            f"subscriber {n} got {show(got)} as message {i}, expected "
                            f"{show(want)} (in order, only its channel's)"
                        )
        finally:
            for it in iterators:
                closer = getattr(it, "aclose", None)
                if closer is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(closer(), t.op_timeout)
    return f"2 subscribers got {MESSAGES} messages each, in order, nothing from another channel"


async def check_server_stats(t: Target) -> str:
    async with OpenConnection(t) as s:
        c = await s.client()
        await s.calls.set(c, f"wbcheck:{token()}:stats".encode(), b"v", 60)
        result = s.conn.server_stats()
        if not inspect.isawaitable(result):
            raise CheckFailed("server_stats() must be a coroutine")
        try:
            stats = await asyncio.wait_for(result, STATS_TIMEOUT)
        except TimeoutError:
            raise CheckFailed(
                f"server_stats() took over {STATS_TIMEOUT:g}s (the engine gives up then)"
            ) from None
    if not isinstance(stats, dict):
        raise CheckFailed(f"server_stats() returned {type(stats).__name__}, not a dict")
    bad = [k for k, v in stats.items() if not isinstance(k, str)]
    bad += [
        k for k, v in stats.items() if not (v is None or isinstance(v, bool | int | float | str))
    ]
    if bad:
        raise CheckFailed(f"keys must be str and values numbers or str: {bad[:5]}")
    try:
        json.dumps(stats)
    except (TypeError, ValueError) as exc:
        raise CheckFailed(f"not JSON-serialisable: {exc}") from None
    if not stats:
        return "no server statistics (an empty dict is allowed)"
    return f"{len(stats)} figures: {', '.join(sorted(stats)[:6])}{'...' if len(stats) > 6 else ''}"


async def check_close(t: Target) -> str:
    d = AdapterCalls(t)
    conn = await d.connect()
    clients = [await d.client(conn) for _ in range(3)]
    await d.set(clients[0], f"wbcheck:{token()}:close".encode(), b"v", 60)
    for c in clients:
        await d.close_client(c)
    await d.close_conn(conn)
    return "clients and connection close within the bound"
