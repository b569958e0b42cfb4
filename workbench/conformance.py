"""The conformance kit: does a plugin keep the contract of `workbench.adapter`?

Runs one strategy of one cache system against a live target, the way a worker does
(connect, one client per virtual client, operations, close), and reports one
`CheckResult` per check: pass, fail (with the reason) or skip (with why). Every call into
the adapter is bounded by a timeout, so a hanging adapter fails a check instead of
hanging the kit; blocking strategies are driven from threads, as the engine drives them.

Used by ``workbench plugins check`` and by the test suites of the built-in plugins and
of scaffolded ones. It imports no UI library.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import random
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.adapter import (
    OPERATIONS,
    CacheSystem,
    ManagedServer,
    Strategy,
    error_kind,
)
from workbench.adapter import check_declaration as validate_declaration
from workbench.errors import PluginError, SpecError, TargetError, WorkbenchError
from workbench.options import Option, OptionSet, parse_option

OP_TIMEOUT = 10.0  # seconds any one adapter call may take before it counts as hung
CONNECT_TIMEOUT = 15.0
STATS_TIMEOUT = 2.0  # what the engine allows server_stats
SIZES = (0, 1, 100, 1024, 16 * 1024, 100 * 1024, 1024 * 1024)
CLIENTS = 32  # virtual clients in the concurrency check
KEYS_PER_CLIENT = 16
MESSAGES = 20  # published in the pub/sub check
TTL_SLACK = 2.5  # seconds past a TTL by which the key must be gone (memcached: 1 s clock)
GONE_KINDS = ("connection", "timeout")

CHECKS = (
    "declaration",
    "options",
    "connect",
    "miss",
    "round-trip",
    "delete",
    "ttl",
    "concurrency",
    "pubsub",
    "server-stats",
    "close",
    "server-gone",
)


@dataclass(frozen=True)
class CheckResult:
    """One line of the report."""

    system: str
    strategy: str
    name: str
    status: str  # "pass", "fail" or "skip"
    seconds: float
    reason: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def line(self) -> str:
        text = f"{self.status.upper():4}  {self.name:<13} {self.seconds:6.2f}s"
        return f"{text}  {self.reason}" if self.reason else text


class CheckFailed(Exception):
    """A check found the adapter wrong; the message says how."""


class Skip(Exception):  # an outcome, not an error
    """A check does not apply to this strategy or target; the message says why."""


@dataclass
class Target:
    """Everything needed to drive one strategy: resolved options and, maybe, a server."""

    system: CacheSystem
    strategy: Strategy
    system_options: dict[str, Any]
    strategy_options: dict[str, Any]
    server_options: dict[str, Any] = field(default_factory=dict)
    managed: bool = False
    op_timeout: float = OP_TIMEOUT

    @property
    def blocking(self) -> bool:
        return self.strategy.blocking


# ---------------------------------------------------------------------------------------
# Settings: `--set name=value` routed to the system, the strategy or the managed server.


def split_settings(settings: Iterable[str]) -> dict[str, str]:
    """``["url=redis://...", "strategy.pool=4"]`` as a dict; a malformed one is a SpecError."""
    out: dict[str, str] = {}
    for item in settings:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise SpecError(f"expected option=value; got {item!r}", "--set")
        out[name.strip()] = value.strip()
    return out


_PREFIXES = (
    ("target.options.", "system"),
    ("target.server.", "server"),
    ("server.", "server"),
    ("strategy.options.", "strategy"),
    ("strategy.", "strategy"),
)


def _prefixed(key: str) -> tuple[str, str]:
    for prefix, kind in _PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :], kind
    return key, "bare"


def route_settings(
    system: CacheSystem, strategies: Sequence[Strategy], raw: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]]:
    """Raw settings split into system, per-strategy and server options (still unparsed).

    ``target.options.X`` / ``strategy.options.X`` / ``target.server.X`` (or the short
    ``server.X`` and ``strategy.X``) say where a setting goes; a bare ``X`` goes to the
    system when it declares X, else to every checked strategy that declares X.
    """
    sys_raw: dict[str, Any] = {}
    strat_raw: dict[str, dict[str, Any]] = {s.name: {} for s in strategies}
    server_raw: dict[str, Any] = {}
    for key, value in raw.items():
        name, kind = _prefixed(key)
        if kind == "bare":
            if system.options.get(name) is not None:
                kind = "system"
            elif any(s.options.get(name) is not None for s in strategies):
                kind = "strategy"
            else:
                known = [*system.options.names()]
                known += sorted({n for s in strategies for n in s.options.names()})
                raise SpecError(
                    f"unknown option {name!r}; {system.name} options: {', '.join(known) or 'none'}",
                    f"--set {key}",
                )
        if kind == "system":
            sys_raw[name] = value
        elif kind == "server":
            if system.server is None:
                raise SpecError(f"{system.name} declares no server launcher", f"--set {key}")
            server_raw[name] = value
        else:
            takers = [s for s in strategies if s.options.get(name) is not None]
            if not takers:
                # Let OptionSet.resolve name the known options of the first strategy.
                takers = list(strategies[:1])
            for s in takers:
                strat_raw[s.name][name] = value
    return sys_raw, strat_raw, server_raw


def targets(
    system: CacheSystem,
    strategy: str | None = None,
    settings: Iterable[str] | Mapping[str, Any] = (),
    managed: bool = False,
    op_timeout: float = OP_TIMEOUT,
) -> list[Target]:
    """One target per strategy to check (all of them unless one is named)."""
    strategies = [system.strategy(strategy)] if strategy else list(system.strategies)
    raw = dict(settings) if isinstance(settings, Mapping) else split_settings(settings)
    sys_raw, strat_raw, server_raw = route_settings(system, strategies, raw)
    if managed and system.server is None:
        raise SpecError(
            f"{system.name} declares no server launcher; point it at a running server with "
            "--set instead of --managed",
            "--managed",
        )
    system_options = system.options.resolve(sys_raw, "target.options")
    server_options = (
        system.server.options.resolve(server_raw, "target.server") if system.server else {}
    )
    return [
        Target(
            system,
            s,
            system_options,
            s.options.resolve(strat_raw[s.name], "strategy.options"),
            server_options,
            managed,
            op_timeout,
        )
        for s in strategies
    ]


# ---------------------------------------------------------------------------------------
# Bounded calls into the adapter.


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
        awaitable = call  # type: ignore[assignment]
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        raise CheckFailed(f"{what} did not return within {timeout:g}s") from None


class Driver:
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

    async def set(self, client: Any, key: bytes, value: bytes | memoryview, ttl: float | None):  # type: ignore[no-untyped-def]
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
            raise CheckFailed(f"a cache-aside write found the key present: {_show(got)}")
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
            pending = t.strategy.connect(dict(opts), dict(t.strategy_options))
            if not inspect.isawaitable(pending):
                raise CheckFailed("Strategy.connect must be an async function")
            conn = await bounded("connect", pending, CONNECT_TIMEOUT)
        except CheckFailed:
            raise
        except WorkbenchError as exc:
            raise CheckFailed(f"connect failed: {exc}") from None
        except Exception as exc:
            raise CheckFailed(f"connect failed: {_describe(exc)}") from None
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


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


class Session:
    """An open connection with clients, closed (bounded) at the end of a check."""

    def __init__(self, target: Target) -> None:
        self.driver = Driver(target)
        self.conn: Any = None
        self.clients: list[Any] = []

    async def __aenter__(self) -> Session:
        self.conn = await self.driver.connect()
        return self

    async def client(self) -> Any:
        c = await self.driver.client(self.conn)
        self.clients.append(c)
        return c

    async def __aexit__(self, *exc: object) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                await self.driver.close_client(c)
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await self.driver.close_conn(self.conn)


def _token() -> str:
    return f"{random.getrandbits(40):010x}"


def _key(prefix: str, *parts: object) -> bytes:
    return (prefix + ":".join(str(p) for p in parts)).encode()


def _show(value: bytes | None, limit: int = 24) -> str:
    if value is None:
        return "None"
    head = value[:limit]
    return f"{len(value)} bytes {head!r}{'...' if len(value) > limit else ''}"


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:g} MiB"
    if n >= 1024:
        return f"{n / 1024:g} KiB"
    return f"{n} B"


# ---------------------------------------------------------------------------------------
# The checks. Each raises CheckFailed or Skip, or returns a short note on success.


def _bad_value(opt: Option) -> Any:
    return {
        "int": "not-a-number",
        "float": "not-a-number",
        "bool": "maybe",
        "choice": "no-such-choice",
        "size": "lots",
        "duration": "soon",
        "list": 42,
    }.get(opt.kind)


def _option_sets(t: Target) -> list[tuple[str, OptionSet]]:
    sets = [("target.options", t.system.options), ("strategy.options", t.strategy.options)]
    if t.system.server is not None:
        sets.append(("target.server", t.system.server.options))
    return sets


async def check_declaration(t: Target) -> str:
    try:
        validate_declaration(t.system, t.system.name)
    except PluginError as exc:
        raise CheckFailed(exc.message) from None
    problems = []
    if not t.system.description.strip():
        problems.append("the system has no description")
    if not t.strategy.description.strip():
        problems.append(f"strategy {t.strategy.name!r} has no description")
    if t.strategy.blocking and t.strategy.operations & {"publish", "subscribe"}:
        problems.append(
            "a blocking strategy declares pub/sub; the engine drives pub/sub on "
            "asyncio clients only"
        )
    ops = t.strategy.operations
    if not ({"get", "set"} <= ops or "cache_aside" in ops):
        problems.append("every strategy must support get and set, or cache_aside")
    for where, options in _option_sets(t):
        names = options.names()
        if len(set(names)) != len(names):
            problems.append(f"{where}: duplicate option names {names}")
        for opt in options.options:
            if not opt.name.isidentifier():
                problems.append(f"{where}.{opt.name}: option names must be identifiers")
            if not opt.help.strip():
                problems.append(f"{where}.{opt.name}: no help text")
            if opt.kind == "choice" and not opt.choices:
                problems.append(f"{where}.{opt.name}: a choice option with no choices")
            if opt.default is not None and not opt.required:
                try:
                    parse_option(opt, opt.default, f"{where}.{opt.name}")
                except SpecError as exc:
                    problems.append(f"default {opt.default!r} is invalid: {exc}")
    if problems:
        raise CheckFailed("; ".join(problems))
    ops = ", ".join(o for o in OPERATIONS if o in t.strategy.operations)
    return f"{'blocking' if t.blocking else 'asyncio'}; {ops}"


async def check_options(t: Target) -> str:
    problems = []
    tried = 0
    for where, options in _option_sets(t):
        for opt in options.options:
            bad = _bad_value(opt)
            if bad is None:
                continue
            tried += 1
            field_ = f"{where}.{opt.name}"
            try:
                options.resolve({opt.name: bad}, where)
            except SpecError as exc:
                if exc.where != field_ or not exc.message:
                    problems.append(f"{field_}: error names {exc.where!r}: {exc.message}")
            else:
                problems.append(f"{field_}: accepted {bad!r}")
        try:
            options.resolve({"no_such_option": "1"}, where)
        except SpecError as exc:
            if "no_such_option" not in exc.where:
                problems.append(f"{where}: unknown option reported as {exc}")
        else:
            problems.append(f"{where}: accepted an unknown option")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"{tried} option(s) reject bad values naming the field; unknown names rejected"


async def check_connect(t: Target) -> str:
    async with Session(t) as s:
        await s.client()
        await s.client()
    return "connect, two clients, close"


async def check_miss(t: Target) -> str:
    p = f"wbcheck:{_token()}:"
    async with Session(t) as s:
        c = await s.client()
        d = s.driver
        for i in range(3):
            got = await d.get(c, _key(p, "absent", i))
            if got is not None:
                raise CheckFailed(f"a key never set read back as {_show(got)}, not None")
        await d.set(c, _key(p, "gone"), b"x", None)
        if "delete" in t.strategy.operations:
            await d.delete(c, _key(p, "gone"))
            got = await d.get(c, _key(p, "gone"))
            if got is not None:
                raise CheckFailed(f"a deleted key read back as {_show(got)}, not None")
    return "absent keys read as None"


async def check_round_trip(t: Target) -> str:
    p = f"wbcheck:{_token()}:"
    rng = random.Random(7)
    # Like the engine's value buffer: values are slices of one big buffer (memoryview).
    pool = rng.randbytes(max(SIZES) + 4096)
    view = memoryview(pool)
    async with Session(t) as s:
        c = await s.client()
        d = s.driver
        keys = []
        try:
            for size in SIZES:
                plain = rng.randbytes(size)
                if size >= 6:  # protocol delimiters at both ends and a NUL
                    plain = b"\r\n\x00" + plain[3:-2] + b"\r\n"
                off = 1 + size % 4093
                for kind, value in (("bytes", plain), ("memoryview", view[off : off + size])):
                    key = _key(p, size, kind)
                    keys.append(key)
                    await d.set(c, key, value, None)
                    got = await d.get(c, key)
                    want = bytes(value)
                    if got != want:
                        raise CheckFailed(
                            f"{_size(size)} {kind} value read back as {_show(got)}, "
                            f"expected {_show(want)}"
                        )
            # Overwrite: the second value wins, also when it is shorter.
            key = _key(p, "overwrite")
            keys.append(key)
            await d.set(c, key, b"a" * 2000, None)
            await d.set(c, key, b"bb", None)
            got = await d.get(c, key)
            if got != b"bb":
                raise CheckFailed(f"after overwriting, read back {_show(got)}, expected b'bb'")
        finally:
            if "delete" in t.strategy.operations:
                for key in keys:
                    with contextlib.suppress(Exception):
                        await d.delete(c, key)
    return f"byte-exact at {_size(SIZES[0])}..{_size(SIZES[-1])}, bytes and memoryview; overwrite"


async def check_delete(t: Target) -> str:
    if "delete" not in t.strategy.operations:
        raise Skip("strategy declares no delete")
    p = f"wbcheck:{_token()}:"
    async with Session(t) as s:
        c = await s.client()
        d = s.driver
        key = _key(p, "k")
        await d.set(c, key, b"value", None)
        existed = await d.delete(c, key)
        got = await d.get(c, key)
        if got is not None:
            raise CheckFailed(f"after delete, read back {_show(got)}, not None")
        absent = await d.delete(c, _key(p, "never"))
        if existed is None and absent is None:
            return "deleted keys miss; delete does not say whether the key was there (None)"
        if existed is not True or absent is not False:
            raise CheckFailed(
                f"delete returned {existed!r} for a present key and {absent!r} for an absent "
                "one; expected True and False"
            )
    return "deleted keys miss; delete returns True/False"


async def check_ttl(t: Target) -> str:
    if not t.strategy.supports_ttl():
        raise Skip(t.strategy.lacks.get("ttl") or "strategy declares no set, so no TTL")
    p = f"wbcheck:{_token()}:"
    short, sub = 2.0, 0.5
    async with Session(t) as s:
        c = await s.client()
        d = s.driver
        keys = {
            "none": (_key(p, "none"), None),
            "long": (_key(p, "long"), 300.0),
            "short": (_key(p, "short"), short),
            "sub": (_key(p, "sub"), sub),
        }
        start = time.monotonic()
        for key, ttl in keys.values():
            await d.set(c, key, b"v", ttl)
        got = await d.get(c, keys["short"][0])
        if got != b"v" and time.monotonic() - start < short - 1.0:
            raise CheckFailed(f"a key set with ttl={short:g}s missed at once ({_show(got)})")
        deadline = start + short + TTL_SLACK
        pending = {"short", "sub"}
        gone_at: dict[str, float] = {}
        while pending and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            for name in sorted(pending):
                if await d.get(c, keys[name][0]) is None:
                    gone_at[name] = time.monotonic() - start
                    pending.discard(name)
        if "sub" in pending or ("sub" not in gone_at) or gone_at["sub"] > sub + TTL_SLACK:
            raise CheckFailed(
                f"a key set with ttl={sub:g}s was still there after "
                f"{time.monotonic() - start:.1f}s (a sub-second TTL must not mean no expiry)"
            )
        if "short" in pending:
            raise CheckFailed(
                f"a key set with ttl={short:g}s was still there after {short + TTL_SLACK:g}s"
            )
        if gone_at["short"] < short - 1.05:
            raise CheckFailed(
                f"a key set with ttl={short:g}s expired after {gone_at['short']:.1f}s"
            )
        for name in ("none", "long"):
            got = await d.get(c, keys[name][0])
            if got != b"v":
                raise CheckFailed(f"a key set with ttl={keys[name][1]} expired ({_show(got)})")
        if "delete" in t.strategy.operations:
            for name in ("none", "long"):
                with contextlib.suppress(Exception):
                    await d.delete(c, keys[name][0])
    return (
        f"ttl={short:g}s gone after {gone_at['short']:.1f}s, ttl={sub:g}s after "
        f"{gone_at['sub']:.1f}s; ttl=None and 300s kept"
    )


async def check_concurrency(t: Target) -> str:
    p = f"wbcheck:{_token()}:"
    async with Session(t) as s:
        clients = [await s.client() for _ in range(CLIENTS)]
        d = s.driver

        def value(i: int, j: int, round_: int) -> bytes:
            return f"client {i} key {j} round {round_} ".encode() * (1 + (i * 7 + j) % 40)

        deletes = "delete" in t.strategy.operations
        rounds = 2
        budget = t.op_timeout * 4

        def mismatch(i: int, j: int, got: bytes | None, want: bytes) -> CheckFailed:
            return CheckFailed(
                f"client {i} read {_show(got)} for its own key {j}, expected {_show(want)}"
            )

        async def one(i: int, c: Any) -> None:
            for round_ in range(rounds):
                for j in range(KEYS_PER_CLIENT):
                    await d.set(c, _key(p, i, j), value(i, j, round_), None)
                for j in range(KEYS_PER_CLIENT):
                    got = await d.get(c, _key(p, i, j))
                    if got != value(i, j, round_):
                        raise mismatch(i, j, got, value(i, j, round_))
            if deletes:
                for j in range(KEYS_PER_CLIENT):
                    await d.delete(c, _key(p, i, j))

        def one_thread(i: int, c: Any) -> None:
            # As the engine does: one thread per virtual client, for the client's whole life.
            for round_ in range(rounds):
                for j in range(KEYS_PER_CLIENT):
                    c.set(_key(p, i, j), value(i, j, round_), None)
                for j in range(KEYS_PER_CLIENT):
                    got = c.get(_key(p, i, j))
                    if got != value(i, j, round_):
                        raise mismatch(i, j, got, value(i, j, round_))
            if deletes:
                for j in range(KEYS_PER_CLIENT):
                    c.delete(_key(p, i, j))

        if t.blocking:
            runs = [
                bounded(f"client {i}", lambda i=i, c=c: one_thread(i, c), budget)
                for i, c in enumerate(clients)
            ]
        else:
            runs = [one(i, c) for i, c in enumerate(clients)]

        async def stats_meanwhile() -> None:
            # The engine asks for server figures while the clients run.
            for _ in range(3):
                await asyncio.sleep(0.01)
                await bounded("server_stats() during the load", s.conn.server_stats(), budget)

        results = await asyncio.gather(*runs, stats_meanwhile(), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                if isinstance(r, CheckFailed):
                    raise r
                raise CheckFailed(f"a client failed: {_describe(r)}")
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
    if not ops & {"publish", "subscribe"}:
        raise Skip("strategy declares no publish/subscribe")
    if not {"publish", "subscribe"} <= ops:
        raise CheckFailed("declares only one of publish and subscribe; the engine needs both")
    if t.blocking:
        raise CheckFailed("a blocking strategy declares pub/sub; the engine cannot drive it")
    tok = _token()
    ch_a, ch_b = f"wbcheck:{tok}:a".encode(), f"wbcheck:{tok}:b".encode()
    iterators: list[Any] = []
    async with Session(t) as s:
        d = s.driver
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
                            f"subscriber {n} got {_show(got)} as message {i}, expected "
                            f"{_show(want)} (in order, only its channel's)"
                        )
        finally:
            for it in iterators:
                closer = getattr(it, "aclose", None)
                if closer is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(closer(), t.op_timeout)
    return f"2 subscribers got {MESSAGES} messages each, in order, nothing from another channel"


async def check_server_stats(t: Target) -> str:
    async with Session(t) as s:
        c = await s.client()
        await s.driver.set(c, f"wbcheck:{_token()}:stats".encode(), b"v", 60)
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
    d = Driver(t)
    conn = await d.connect()
    clients = [await d.client(conn) for _ in range(3)]
    await d.set(clients[0], f"wbcheck:{_token()}:close".encode(), b"v", 60)
    for c in clients:
        await d.close_client(c)
    await d.close_conn(conn)
    return "clients and connection close within the bound"


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


async def check_server_gone(t: Target) -> str:
    if t.system.server is None:
        if not t.system.shared_state:
            raise Skip("in-process system: there is no server to lose")
        raise Skip("system declares no server launcher, so the kit cannot stop a server")
    if not t.managed:
        raise Skip("needs --managed, so that the kit may start and stop a server")
    server = await _start_server(t)
    d = Driver(t)
    conn = None
    client = None
    notes = []
    try:
        options = {**t.system_options, **server.target_options}
        conn = await d.connect(options)
        client = await d.client(conn)
        key = f"wbcheck:{_token()}:gone".encode()
        await d.set(client, key, b"before", None)
        if await d.get(client, key) != b"before":
            raise CheckFailed("the fresh managed server did not keep a value")
        await _stop_server(server)
        ops: list[tuple[str, tuple[Any, ...]]] = [("get", (key,)), ("set", (key, b"x", None))]
        if "delete" in t.strategy.operations:
            ops.append(("delete", (key,)))
        for op, args in ops:
            began = time.monotonic()
            try:
                result = await d.call(client, op, *args)
            except CheckFailed as exc:
                raise CheckFailed(
                    f"with the server stopped, {exc} (it must raise, not hang)"
                ) from None
            except Exception as exc:
                kind = error_kind(exc)
                if kind not in GONE_KINDS:
                    raise CheckFailed(
                        f"with the server stopped, {op} raised {_describe(exc)}, counted as "
                        f"{kind!r}; expected connection or timeout (raise "
                        "AdapterError('connection', ...) or a ConnectionError)"
                    ) from None
                notes.append(f"{op}: {kind} in {time.monotonic() - began:.2f}s")
            else:
                what = "a miss (None)" if op == "get" and result is None else repr(result)[:40]
                raise CheckFailed(
                    f"with the server stopped, {op} returned {what} instead of raising"
                )
    finally:
        for closer in (
            (lambda: d.close_client(client)) if client is not None else None,
            (lambda: d.close_conn(conn)) if conn is not None else None,
        ):
            if closer is not None and (hang := await _close_must_not_hang(closer)):
                notes.append(hang)
        with contextlib.suppress(Exception):
            await _stop_server(server)
    hung = [n for n in notes if n.startswith("close hung")]
    if hung:
        raise CheckFailed("; ".join(hung))
    return "; ".join(notes)


async def _close_must_not_hang(closer: Callable[[], Awaitable[Any]]) -> str | None:
    """Run a close with the server gone: failing is fine, hanging is not (its note)."""
    try:
        await closer()
    except CheckFailed as exc:
        return f"close hung: {exc}"
    except Exception:
        return None  # the server is gone: a close that raises is the expected outcome
    return None


RUNNERS: dict[str, Callable[[Target], Awaitable[str]]] = {
    "declaration": check_declaration,
    "options": check_options,
    "connect": check_connect,
    "miss": check_miss,
    "round-trip": check_round_trip,
    "delete": check_delete,
    "ttl": check_ttl,
    "concurrency": check_concurrency,
    "pubsub": check_pubsub,
    "server-stats": check_server_stats,
    "close": check_close,
    "server-gone": check_server_gone,
}
# Checks that need no live target; the others are not run when `connect` fails.
OFFLINE = ("declaration", "options", "connect", "server-gone")
CHECK_TIMEOUT = 60.0  # no check may take longer, whatever the adapter does


async def _run_one(name: str, t: Target) -> CheckResult:
    began = time.monotonic()
    status, reason = "pass", ""
    try:
        reason = await asyncio.wait_for(RUNNERS[name](t), CHECK_TIMEOUT)
    except Skip as exc:
        status, reason = "skip", str(exc)
    except CheckFailed as exc:
        status, reason = "fail", str(exc)
    except TimeoutError:
        status, reason = "fail", f"the check did not finish within {CHECK_TIMEOUT:g}s"
    except Exception as exc:
        status, reason = "fail", f"unexpected {_describe(exc)}"
    return CheckResult(
        t.system.name, t.strategy.name, name, status, time.monotonic() - began, reason
    )


async def run_target(
    t: Target,
    only: Sequence[str] = (),
    on_result: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Every check (or those in `only`) on one strategy, in order."""
    unknown = [n for n in only if n not in RUNNERS]
    if unknown:
        raise SpecError(f"unknown check {unknown[0]!r}; checks: {', '.join(CHECKS)}", "--only")
    results: list[CheckResult] = []
    connected = True
    for name in CHECKS:
        if only and name not in only:
            continue
        if not connected and name not in OFFLINE:
            r = CheckResult(
                t.system.name, t.strategy.name, name, "skip", 0.0, "not run: connect failed"
            )
        else:
            r = await _run_one(name, t)
            if name == "connect" and r.failed:
                connected = False
        results.append(r)
        if on_result is not None:
            on_result(r)
    return results


async def run_checks(
    system: CacheSystem | str,
    strategy: str | None = None,
    settings: Iterable[str] | Mapping[str, Any] = (),
    managed: bool = False,
    only: Sequence[str] = (),
    on_target: Callable[[Target], None] | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
    op_timeout: float = OP_TIMEOUT,
) -> list[CheckResult]:
    """The kit on one system: every strategy (or the named one), against a live target.

    With `managed`, a server is started through the system's launcher for the checks
    (and stopped after), and `server-gone` starts and stops one of its own.
    Bad settings raise SpecError before anything runs; a broken plugin, PluginError.
    """
    if isinstance(system, str):
        from workbench.plugins import load_plugin

        system = load_plugin(system)
    else:
        validate_declaration(system, system.name)
    plan = targets(system, strategy, settings, managed, op_timeout)
    server: ManagedServer | None = None
    results: list[CheckResult] = []
    try:
        selected = [n for n in CHECKS if not only or n in only]
        if managed and any(n not in ("declaration", "options", "server-gone") for n in selected):
            assert system.server is not None
            try:
                server = await asyncio.to_thread(system.server.start, dict(plan[0].server_options))
            except WorkbenchError:
                raise
            except Exception as exc:
                raise TargetError(
                    f"the {system.name} server launcher failed: {_describe(exc)}", "--managed"
                ) from exc
            for t in plan:
                t.system_options = {**t.system_options, **server.target_options}
        for t in plan:
            if on_target is not None:
                on_target(t)
            results += await run_target(t, only, on_result)
    finally:
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(server.stop)
    return results


def check_plugin(
    system: CacheSystem | str,
    strategy: str | None = None,
    settings: Iterable[str] | Mapping[str, Any] = (),
    managed: bool = False,
    only: Sequence[str] = (),
    on_result: Callable[[CheckResult], None] | None = None,
    op_timeout: float = OP_TIMEOUT,
) -> list[CheckResult]:
    """`run_checks` from synchronous code (a test, a script): runs its own event loop."""
    return asyncio.run(
        run_checks(
            system, strategy, settings, managed, only, on_result=on_result, op_timeout=op_timeout
        )
    )


def failures(results: Iterable[CheckResult]) -> str:
    """The failed checks as text, for an assertion message; empty when all passed."""
    return "\n".join(f"{r.system}/{r.strategy} {r.name}: {r.reason}" for r in results if r.failed)
