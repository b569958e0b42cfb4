"""umem-cache's binary protocol on asyncio streams: one connection per server thread.

The protocol (umem-cache's README, commit 9ba02d4; little-endian throughout):

- connect: send ``[reserved u32][thread-id u32]``, receive one byte, 0. A thread id the
  server does not have, or a thread with no free connection slot, closes the connection.
- GET-OR-SET: send ``[0][key-size u8][key]``, receive ``[value-size u64][miss u8]``. On a
  hit the value follows. On a miss this connection holds the key's lock (other
  connections asking for the key wait) until it sends ``[value-size u64][value]``; no
  reply follows.
- DEL: send ``[1][key-size u8][key]``, receive one byte, 0. It does not say whether the
  key was there; deleting a key another connection holds locked closes that connection.
- Keys go to threads on the client side: MurmurHash3_x64_128 with seed 74, its first 64
  bits as a little-endian integer ``h``, thread ``(h * threads) >> 64`` (Lemire).

A miss waits for its value, so nothing can be pipelined behind a GET-OR-SET: a
connection carries one request at a time, and each virtual client owns one connection
per server thread. A connection whose state is unknown (a timeout, a cancelled request,
a lost reply) is dropped, which also releases a lock it held, and the next request
reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable, Mapping
from typing import Any

import mmh3

from workbench.sdk import AdapterError, KeyRule, TargetError, require_loopback

GET_OR_SET, DEL = 0, 1
SEED = 74
MAX_KEY = 255
KEYS = KeyRule(max_bytes=MAX_KEY)  # a binary protocol with one byte of key size
HANDSHAKE = struct.Struct("<II")  # reserved, thread id
REPLY = struct.Struct("<QB")  # value size, miss
SIZE = struct.Struct("<Q")
READ_LIMIT = 4 * 1024 * 1024  # stream buffer: a 1 MiB value arrives without many pauses

Address = tuple[str, int]


def thread_of(key: bytes, threads: int) -> int:
    """The server thread that owns `key`, as every umem-cache client computes it."""
    first, _ = mmh3.hash64(key, SEED, signed=False)
    return (first * threads) >> 64


def parse_address(
    text: str, where: str = "target.options.address", options: Mapping[str, Any] | None = None
) -> Address:
    """``[::1]:PORT`` (or ``localhost:PORT``) as (host, port); loopback only unless
    `options` (the system's) carry the engine's remote-target opt-in."""
    text = text.strip()
    if text.startswith("["):
        host, sep, port_text = text[1:].partition("]:")
    else:
        host, sep, port_text = text.rpartition(":")
    try:
        if not sep or not host:
            raise ValueError
        port = int(port_text)
        if not 0 < port < 65536:
            raise ValueError
    except ValueError:
        raise TargetError(
            f"expected [host]:port such as [::1]:10047; got {text!r}", where
        ) from None
    require_loopback(host, where, options)
    return host, port


def check_target(options: Mapping[str, Any], longest_key: bytes) -> None:
    """The spec check's: the address parses, and every key fits the key-size byte."""
    parse_address(options["address"], options=options)
    problem = KEYS.problem(longest_key)
    if problem is not None:
        raise TargetError(f"expected umem-cache keys {problem}", "workload.key_prefix")


def address_text(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _command(code: int, key: bytes) -> bytes:
    if len(key) > MAX_KEY:
        raise AdapterError(
            "invalid", f"umem-cache keys are at most {MAX_KEY} bytes; got {len(key)}"
        )
    return bytes((code, len(key))) + key


class Link:
    """One connection to one server thread, reconnected on the next request after a loss.

    Used by one virtual client at a time (the engine awaits each of its operations).
    """

    def __init__(
        self, address: Address, thread: int, connect_timeout: float, timeout: float
    ) -> None:
        self.address = address
        self.name = address_text(address)
        self.thread = thread
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.locked: bytes | None = None  # the key whose lock a miss left with this connection

    async def open(self) -> None:
        """Connect and greet the thread; a refusal or a closed greeting is a connection error."""
        host, port = self.address
        try:
            async with asyncio.timeout(self.connect_timeout or None):
                reader, writer = await asyncio.open_connection(host, port, limit=READ_LIMIT)
        except TimeoutError:
            raise TimeoutError(
                f"connecting to umem-cache at {self.name} timed out after {self.connect_timeout:g}s"
            ) from None
        except OSError as exc:
            raise ConnectionRefusedError(
                f"cannot connect to umem-cache at {self.name}: {exc.strerror or exc}"
            ) from None
        self.reader, self.writer = reader, writer
        try:
            async with asyncio.timeout(self.timeout or None):
                writer.write(HANDSHAKE.pack(0, self.thread))
                answer = await reader.readexactly(1)
        except BaseException as exc:
            self.drop()
            if isinstance(exc, asyncio.IncompleteReadError | ConnectionError):
                raise ConnectionResetError(
                    f"umem-cache at {self.name} closed the connection to thread {self.thread}: "
                    "it has no such thread, or the thread has no free connection (max_conn is "
                    "shared by the threads)"
                ) from None
            raise
        if answer != b"\x00":
            self.drop()
            raise AdapterError(
                "protocol", f"umem-cache at {self.name} answered the greeting with {answer!r}"
            )

    def drop(self) -> None:
        """Close at once; the server releases a lock this connection held."""
        writer, self.reader, self.writer, self.locked = self.writer, None, None, None
        if writer is not None:
            writer.transport.abort()

    async def _ready(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.locked is not None:
            # A miss not answered with a value: the only way to give the lock back.
            self.drop()
        if self.writer is None:
            await self.open()
        assert self.reader is not None and self.writer is not None
        return self.reader, self.writer

    async def get_or_set(self, key: bytes) -> bytes | None:
        """The value, or None for a miss, after which this connection holds the key's lock."""
        request = _command(GET_OR_SET, key)
        reader, writer = await self._ready()
        async with self._guard():
            writer.write(request)
            size, miss = REPLY.unpack(await reader.readexactly(REPLY.size))
            if miss == 1:
                self.locked = key
                return None
            if miss != 0:
                raise AdapterError("protocol", f"umem-cache at {self.name}: miss byte {miss}")
            return await reader.readexactly(size) if size else b""

    async def fill(self, value: bytes | memoryview) -> None:
        """Answer this connection's miss with the value; the server replies nothing."""
        assert self.writer is not None and self.locked is not None
        writer = self.writer
        async with self._guard():
            writer.write(SIZE.pack(len(value)))
            writer.write(value)
            self.locked = None
            await writer.drain()

    async def delete(self, key: bytes) -> None:
        request = _command(DEL, key)
        reader, writer = await self._ready()
        async with self._guard():
            writer.write(request)
            answer = await reader.readexactly(1)
            if answer != b"\x00":
                raise AdapterError(
                    "protocol", f"umem-cache at {self.name} answered DEL with {answer!r}"
                )

    @contextlib.asynccontextmanager
    async def _guard(self) -> Any:
        """Bound a request in time; on any failure the connection is dropped (state unknown)."""
        try:
            async with asyncio.timeout(self.timeout or None):
                yield
        except TimeoutError:
            self.drop()
            raise TimeoutError(
                f"no reply from umem-cache at {self.name} (thread {self.thread}) "
                f"within {self.timeout:g}s"
            ) from None
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self.drop()
            raise ConnectionResetError(
                f"umem-cache at {self.name} closed the connection (thread {self.thread})"
            ) from exc
        except BaseException:
            self.drop()
            raise


class UmemClient:
    """One virtual client: a connection per server thread, each key on its thread's.

    ``get`` is GET-OR-SET: a miss leaves the key locked on this client's connection, and
    the ``set`` that follows for that key answers it (cache-aside, as the engine drives
    it). A ``set`` that follows no miss stores the value only if the key is absent:
    umem-cache cannot overwrite. There is no TTL.
    """

    __slots__ = ("links", "pick")
    pick: Callable[[bytes], Link]  # the link (server thread) a key lives on

    def __init__(self, links: list[Link]) -> None:
        self.links = links
        if len(links) == 1:
            only = links[0]
            self.pick = lambda key: only
        else:
            count = len(links)
            self.pick = lambda key: links[thread_of(key, count)]

    async def get(self, key: bytes) -> bytes | None:
        link = self.pick(key)
        return await link.get_or_set(key)

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        if ttl is not None:
            raise AdapterError("unsupported", "umem-cache keeps no expiry time (no TTL)")
        link = self.pick(key)
        if link.locked != key and await link.get_or_set(key) is not None:
            return  # present: umem-cache has no overwrite
        await link.fill(value)

    async def delete(self, key: bytes) -> None:
        """Deleted; umem-cache does not say whether the key was there (None)."""
        link = self.pick(key)
        await link.delete(key)

    async def close(self) -> None:
        for link in self.links:
            link.drop()


async def open_links(
    address: Address, threads: int, connect_timeout: float, timeout: float
) -> list[Link]:
    """A connected link to each of the server's threads."""
    links = [Link(address, i, connect_timeout, timeout) for i in range(threads)]
    results = await asyncio.gather(*(link.open() for link in links), return_exceptions=True)
    failed = next((r for r in results if isinstance(r, BaseException)), None)
    if failed is not None:
        for link in links:
            link.drop()
        raise failed
    return links


async def probe_threads(address: Address, threads: int, timeout: float) -> None:
    """Check that the server has exactly `threads` threads, as keys are dispatched over them.

    The last thread must greet; thread id `threads` must be refused. Any other outcome
    is one TargetError naming the fix.
    """
    where = "target.options.address"
    last = Link(address, threads - 1, timeout, timeout)
    try:
        await last.open()
    except (OSError, AdapterError) as exc:
        if isinstance(exc, ConnectionRefusedError | TimeoutError):
            raise TargetError(str(exc), where) from None
        raise TargetError(
            f"{exc}; if it has fewer than {threads} threads, set target.options.threads "
            "to the THREAD_NR it was built with",
            "target.options.threads",
        ) from None
    finally:
        last.drop()
    extra = Link(address, threads, timeout, timeout)
    try:
        await extra.open()
    except (OSError, AdapterError):
        return  # refused, as it should be
    finally:
        extra.drop()
    raise TargetError(
        f"umem-cache at {address_text(address)} has more than {threads} threads; set "
        "target.options.threads to the THREAD_NR it was built with",
        "target.options.threads",
    )
