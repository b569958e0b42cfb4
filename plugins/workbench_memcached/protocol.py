"""A lean memcached text-protocol client on an asyncio Protocol, shared by many callers.

memcached answers the requests of one connection in the order it read them, so one
connection serves any number of concurrent callers: each request is queued with a
future, the requests written during one loop turn go out in one write (natural
pipelining), and the replies resolve the futures first in, first out.

Nothing here reads the clock per operation. A per-connection watchdog ticks every quarter
of ``timeout`` and, when requests are pending and no reply has arrived for a whole
timeout, fails them all with `TimeoutError` and drops the connection (after a lost
reply the FIFO is out of step, so the connection cannot be reused). A connection that
closes fails its pending requests with `ConnectionError`; the next request reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

from workbench.sdk import (
    AdapterError,
    TargetError,
    TlsSettings,
    closed_after_handshake,
    plain_port_timeout,
    tls_error,
)
from workbench_memcached.conditional import GETS, ConditionalCommands, outcome_of
from workbench_memcached.expiry import exptime
from workbench_memcached.targets import DEFAULT_PORT as DEFAULT_PORT
from workbench_memcached.targets import KEYS as KEYS
from workbench_memcached.targets import MAX_KEY as MAX_KEY
from workbench_memcached.targets import Address as Address
from workbench_memcached.targets import Rendezvous as Rendezvous
from workbench_memcached.targets import address_text as address_text
from workbench_memcached.targets import check_key as check_key
from workbench_memcached.targets import check_target as check_target
from workbench_memcached.targets import parse_servers as parse_servers

GET, STORE, DELETE, STATS = 0, 1, 2, 3  # and conditional.py's OUTCOME, DELTA, TOUCH, GETS
STALL_TICKS = 5  # watchdog ticks of timeout/4 without a reply: the oldest request timed out
STAT_NAMES = (
    "curr_items",
    "bytes",
    "evictions",
    "get_hits",
    "get_misses",
    "curr_connections",
    "limit_maxbytes",
)
_ERRORS = (b"SERVER_ERROR", b"CLIENT_ERROR", b"ERROR")
_END = b"\r\nEND\r\n"


class Wire(asyncio.Protocol):
    """One TCP connection to memcached; requests queued, replies matched in order."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.loop = link.loop
        self.transport: asyncio.Transport | None = None
        self.pending: deque[tuple[int, asyncio.Future[Any]]] = deque()
        self.out: list[Any] = []
        self.flushing = False
        self.rest = bytearray()  # unparsed reply bytes
        self.need = 0  # bytes `rest` must hold before a value can be complete
        self.stats: dict[str, str] = {}
        self.closed = False
        # Why it closed, raised again by a later send: with TLS 1.3 a server's refusal
        # (e.g. no client certificate) can arrive before the first request is queued.
        self.failure: tuple[Callable[..., BaseException], tuple[str, ...], str] = (
            ConnectionResetError,
            (),
            f"memcached at {link.address}: connection closed",
        )
        self.replies = 0
        self.seen = 0
        self.stalled = 0
        self.watch: asyncio.TimerHandle | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream connection (TCP, TLS) is given a Transport, not only a BaseTransport.
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError, AttributeError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(self.link.no_delay))
        if self.link.timeout > 0:
            self.watch = self.loop.call_later(self.link.timeout / 4, self._tick)

    def connection_lost(self, exc: Exception | None) -> None:
        failed = tls_error(exc, self.link.address) if exc is not None else None
        if failed is not None:  # e.g. the server wanted a client certificate (mutual TLS)
            self.fail(AdapterError, str(failed), "tls")
            return
        tls = self.link.tls
        if tls is not None and not tls.cert and not self.replies:
            self.fail(AdapterError, str(closed_after_handshake(self.link.address, exc)), "tls")
            return
        reason = f": {exc}" if exc else ""
        if self.link.ssl is None and not self.replies:
            reason += " before any reply (is it a TLS port? set target.options.tls = true)"
        self.fail(
            ConnectionResetError, f"memcached at {self.link.address} closed the connection{reason}"
        )

    def data_received(self, data: bytes) -> None:
        rest = self.rest
        if rest:
            rest += data
            if len(rest) < self.need:
                return
            buf: bytes | bytearray = rest
        else:
            buf = data
        try:
            pos = self._parse(buf)
        except (AdapterError, ValueError) as exc:
            self.fail(AdapterError, f"memcached at {self.link.address}: {exc}", "protocol")
            return
        if buf is rest:
            del rest[:pos]
        elif pos < len(buf):
            self.rest = bytearray(buf[pos:])
        if self.need:
            self.need -= pos

    # requests

    def send(self, kind: int, head: bytes, value: Any = None) -> asyncio.Future[Any]:
        """Queue one request; the future resolves with its reply."""
        if self.closed:
            raise self.closed_error()
        fut = self.loop.create_future()
        self.pending.append((kind, fut))
        out = self.out
        out.append(head)
        if value is not None:
            out.append(value)
            out.append(b"\r\n")
        if not self.flushing:
            self.flushing = True
            self.loop.call_soon(self._flush)
        return fut

    def _flush(self) -> None:
        self.flushing = False
        out = self.out
        if self.closed or not out or self.transport is None:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        self.transport.write(data)

    def fail(self, exc_type: Callable[..., BaseException], message: str, *kind: str) -> None:
        """Close for good: every pending request fails with its own ``exc_type(message)``."""
        if self.closed:
            return
        self.closed = True
        self.failure = (exc_type, kind, message)
        if self.link.wire is self:
            self.link.wire = None
        if self.watch is not None:
            self.watch.cancel()
        pending, self.pending = self.pending, deque()
        self.out.clear()
        for _, fut in pending:
            if not fut.done():
                fut.set_exception(exc_type(*kind, message))
        if self.transport is not None:
            self.transport.abort()

    def closed_error(self) -> BaseException:
        exc_type, kind, message = self.failure
        return exc_type(*kind, message)

    def close(self) -> None:
        self.fail(ConnectionResetError, f"memcached at {self.link.address}: connection closed")

    def _tick(self) -> None:
        if self.closed:
            return
        if self.pending and self.replies == self.seen:
            self.stalled += 1
            if self.stalled >= STALL_TICKS:
                self.fail(
                    TimeoutError,
                    f"no reply from memcached at {self.link.address} within {self.link.timeout:g}s",
                )
                return
        else:
            self.stalled = 0
        self.seen = self.replies
        self.watch = self.loop.call_later(self.link.timeout / 4, self._tick)

    # replies

    def _parse(self, buf: bytes | bytearray) -> int:
        """Resolve every complete reply in ``buf``; return how many bytes were used.

        A get's VALUE block is read here (the hot path); every one-line reply goes to
        `_line_reply`.
        """
        pending = self.pending
        find = buf.find
        copy = type(buf) is not bytes
        pos = 0
        n = len(buf)
        while pending:
            eol = find(b"\r\n", pos)
            if eol < 0:
                break
            line = buf[pos:eol]
            kind, fut = pending[0]
            if kind in (GET, GETS) and line[:1] == b"V":  # VALUE <key> <flags> <bytes>
                start = eol + 2
                if kind == GET:
                    end = start + int(line[line.rindex(b" ") :])
                else:  # ... <cas unique>
                    fields = line.split(b" ")
                    end = start + int(fields[3])
                if n < end + 7:
                    self.need = end + 7  # made relative to the kept bytes by the caller
                    break
                if buf[end : end + 7] != _END:
                    raise AdapterError(
                        "protocol", f"expected END after a value; got {buf[end : end + 7]!r}"
                    )
                result: Any = bytes(buf[start:end]) if copy else buf[start:end]
                if kind == GETS:
                    result = (result, int(fields[4]))
                pos = end + 7
            else:
                pos = eol + 2
                answered, result = self._line_reply(kind, line, fut)
                if not answered:
                    continue
            self.need = 0
            pending.popleft()
            self.replies += 1
            if not fut.done():
                fut.set_result(result)
        else:
            if pos < n:
                raise AdapterError("protocol", f"a reply nobody asked for: {buf[pos : pos + 60]!r}")
        return pos

    def _line_reply(
        self, kind: int, line: bytes | bytearray, fut: asyncio.Future[Any]
    ) -> tuple[bool, Any]:
        """A one-line reply to the oldest request: (whether it is answered now, its result).

        An error line answers it with an error (`_reply_error` resolves it); a STAT line
        is kept until the END of the statistics.
        """
        if kind in (GET, GETS):
            if line == b"END":
                return True, None  # a miss
        elif kind == STORE:
            if line == b"STORED":
                return True, None
        elif kind == DELETE:
            if line == b"DELETED":
                return True, True
            if line == b"NOT_FOUND":
                return True, False
        elif kind > STATS:  # a conditional write (conditional.py)
            outcome = outcome_of(kind, line)
            if outcome is not None:
                return True, outcome
        elif line[:5] == b"STAT ":  # STATS: STAT lines up to END
            parts = line.split(b" ", 2)
            if len(parts) == 3:
                self.stats[parts[1].decode()] = parts[2].decode(errors="replace")
            return False, None
        elif line == b"END":
            result, self.stats = self.stats, {}
            return True, result
        self._reply_error(line, fut)
        return False, None

    def _reply_error(self, line: bytes | bytearray, fut: asyncio.Future[Any]) -> None:
        """An error line answers the oldest request (memcached skips the rest of it)."""
        if not line.startswith(_ERRORS):
            raise AdapterError("protocol", f"unexpected reply {line[:80]!r}")
        self.pending.popleft()
        self.replies += 1
        self.stats = {}
        if not fut.done():
            text = bytes(line).decode(errors="replace")
            fut.set_exception(AdapterError("server", f"memcached at {self.link.address}: {text}"))


class Link:
    """A connection to one server that reconnects on the next request after a loss."""

    def __init__(
        self,
        address: Address,
        connect_timeout: float,
        timeout: float,
        no_delay: bool,
        loop: asyncio.AbstractEventLoop,
        tls: TlsSettings | None = None,
    ) -> None:
        self.host, self.port = address
        self.tls = tls
        self.ssl = tls.context() if tls else None
        self.address = address_text(address)
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.no_delay = no_delay
        self.loop = loop
        self.wire: Wire | None = None
        self.opening: asyncio.Task[Wire] | None = None

    async def open(self) -> Wire:
        """The live connection, connecting first if needed (one attempt shared by all)."""
        wire = self.wire
        if wire is not None:
            return wire
        if self.opening is None:
            self.opening = self.loop.create_task(self._open())
            self.opening.add_done_callback(_retrieve)
        return await asyncio.shield(self.opening)

    async def _open(self) -> Wire:
        try:
            connect = self.loop.create_connection(
                lambda: Wire(self),
                self.host,
                self.port,
                ssl=self.ssl,
                server_hostname=((self.tls.sni or None) if self.tls else None)
                if self.ssl
                else None,
            )
            try:
                _, wire = await asyncio.wait_for(connect, self.connect_timeout or None)
            except TimeoutError:
                if self.tls:
                    raise plain_port_timeout(self.address, self.connect_timeout) from None
                raise TimeoutError(
                    f"connecting to memcached at {self.address} timed out "
                    f"after {self.connect_timeout:g}s"
                ) from None
            except OSError as exc:
                failed = tls_error(exc, self.address)
                if failed is not None:
                    raise failed from None
                raise ConnectionRefusedError(
                    f"cannot connect to memcached at {self.address}: {exc.strerror or exc}"
                ) from None
            if wire.closed:  # lost between the handshake and here: never keep a dead wire
                raise wire.closed_error()
            self.wire = wire
            return wire
        finally:
            self.opening = None

    async def stats(self) -> dict[str, str]:
        wire = self.wire or await self.open()
        result: dict[str, str] = await wire.send(STATS, b"stats\r\n")
        return result

    def close(self) -> None:
        if self.opening is not None:
            self.opening.cancel()
        if self.wire is not None:
            self.wire.close()


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


class Links:
    """Every connection of one worker: K per server, picked by key hash and round-robin."""

    def __init__(
        self,
        servers: Sequence[Address],
        per_server: int,
        connect_timeout: float,
        timeout: float,
        no_delay: bool,
        tls: TlsSettings | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        self.groups = [
            [Link(a, connect_timeout, timeout, no_delay, loop, tls) for _ in range(per_server)]
            for a in servers
        ]
        self.all = [link for group in self.groups for link in group]
        self.hasher = Rendezvous([address_text(a) for a in servers])
        self.turn = 0
        self.pick: Callable[[bytes], Link]
        if len(self.all) == 1:
            only = self.all[0]
            self.pick = lambda key: only
        elif len(self.groups) == 1:
            self.pick = self._round_robin
        else:
            self.pick = self._hashed

    def _round_robin(self, key: bytes) -> Link:
        group = self.groups[0]
        self.turn = turn = (self.turn + 1) % len(group)
        return group[turn]

    def _hashed(self, key: bytes) -> Link:
        group = self.groups[self.hasher.index(key)]
        self.turn = turn = (self.turn + 1) % len(group)
        return group[turn]

    async def open_all(self, where: str = "target.options.servers") -> None:
        """Connect every link now; an unreachable server is one clear TargetError."""
        results = await asyncio.gather(*(link.open() for link in self.all), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                self.close()
                if isinstance(result, AdapterError):  # a TLS failure keeps its kind
                    raise result
                raise TargetError(str(result), where) from None

    def close(self) -> None:
        for link in self.all:
            link.close()


class MultiplexedClient(ConditionalCommands):
    """One virtual client: its requests share the worker's connections with the others."""

    __slots__ = ("pick",)

    def __init__(self, pick: Callable[[bytes], Link]) -> None:
        self.pick = pick

    async def get(self, key: bytes) -> bytes | None:
        link = self.pick(key)
        wire = link.wire or await link.open()
        result: bytes | None = await wire.send(GET, b"get " + key + b"\r\n")
        return result

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        link = self.pick(key)
        wire = link.wire or await link.open()
        head = b"set %b 0 %d %d\r\n" % (key, 0 if ttl is None else exptime(ttl), len(value))
        await wire.send(STORE, head, value)

    async def delete(self, key: bytes) -> bool:
        link = self.pick(key)
        wire = link.wire or await link.open()
        result: bool = await wire.send(DELETE, b"delete " + key + b"\r\n")
        return result

    async def close(self) -> None:
        return None


CPU_STAT_NAMES = ("rusage_user", "rusage_system")  # seconds, as decimals


def to_stats(replies: Sequence[dict[str, str]]) -> dict[str, int | float]:
    """The figures of ``stats`` summed over servers: counts as ints, CPU seconds as floats."""
    out: dict[str, int | float] = {}
    for reply in replies:
        for name in (*STAT_NAMES, *CPU_STAT_NAMES):
            text = reply.get(name)
            if text is None:
                continue
            with contextlib.suppress(ValueError):
                value = float(text) if name in CPU_STAT_NAMES else int(text)
                out[name] = out.get(name, 0) + value
    return out
