"""memcached: pymemcache's blocking clients, and a lean asyncio text-protocol client.

Strategies:

- ``multiplexed`` (default): asyncio. Each worker holds ``connections`` connections per
  server, shared by all its virtual clients; requests are written as they come (those of
  one loop turn in one write) and memcached's in-order replies are matched first in,
  first out: natural pipelining. The lean path, meant to measure the server.
- ``client-per-client``: blocking, one pymemcache ``Client`` (one connection per server)
  per virtual client, each driven from its own thread.
- ``pooled``: blocking, one pymemcache ``PooledClient`` per server shared by the threads;
  with ``pool_size`` N at most N connections per server, and a thread waits for a free one.

Several ``servers`` spread keys by rendezvous hashing (`protocol.Rendezvous`), the same
in every strategy, so a key lives on the same server whichever strategy wrote it. The
blocking strategies hash over pymemcache clients themselves rather than through
pymemcache's ``HashClient``: that one answers a failing server with the default value (a
get would count as a miss, not an error) during its retry window, drops a server for 60
seconds once it is marked dead, and keeps that bookkeeping without a lock, which threads
sharing one client race on.

Only loopback servers are accepted. A set's TTL becomes ``exptime = ceil(ttl)`` (none: 0;
beyond 30 days, the unix time it ends, as memcached reads such values). Error replies
(``SERVER_ERROR``, ``CLIENT_ERROR``, ``ERROR``: a value over the item size limit, say)
count as ``server`` errors; a lost connection as ``connection`` and a missing reply as
``timeout``, and the next operation reconnects. memcached has no pub/sub.

With ``target.managed = true`` the workbench starts ``memcached`` on a free loopback port
with ``target.server.memory_mb`` (-m), ``max_item_size`` (-I) and ``threads`` (-t).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pymemcache.client.base import Client as PymemcacheClient
from pymemcache.client.base import PooledClient
from pymemcache.exceptions import MemcacheError

from workbench.sdk import (
    TLS_OPTIONS,
    CacheSystem,
    ConnectionCount,
    Option,
    OptionSet,
    ServerLauncher,
    ServerProcess,
    Strategy,
    TlsSettings,
    closed_after_handshake,
    count_of,
    listen_address,
    per_client,
    pool_of,
    runs_in_native_engine,
    tls_settings,
)
from workbench.sdk.ops import CONDITIONAL
from workbench_memcached import facts
from workbench_memcached.endpoints import endpoints, native_protocol, placement
from workbench_memcached.errors import translate
from workbench_memcached.expiry import exptime
from workbench_memcached.protocol import (
    KEYS,
    Address,
    Links,
    MultiplexedClient,
    Rendezvous,
    address_text,
    check_target,
    parse_servers,
    to_stats,
)
from workbench_memcached.server import MAX_ITEM_SIZE, MEMORY_MB, THREADS, start_memcached


class _Bounded:
    """A PooledClient behind a semaphore: threads wait for a free connection."""

    def __init__(self, pooled: PooledClient, size: int) -> None:
        self.pooled = pooled
        self.slots = threading.BoundedSemaphore(size)
        self.server = pooled.server

    def get(self, key: bytes) -> Any:
        with self.slots:
            return self.pooled.get(key)

    def set(self, key: bytes, value: bytes, expire: int, noreply: bool) -> Any:
        with self.slots:
            return self.pooled.set(key, value, expire=expire, noreply=noreply)

    def delete(self, key: bytes, noreply: bool) -> Any:
        with self.slots:
            return self.pooled.delete(key, noreply=noreply)

    def version(self) -> Any:
        with self.slots:
            return self.pooled.version()

    def close(self) -> None:
        self.pooled.close()


def _picker(clients: Sequence[Any], hasher: Rendezvous) -> Callable[[bytes], Any]:
    if len(clients) == 1:
        only = clients[0]
        return lambda key: only
    index = hasher.index
    return lambda key: clients[index(key)]


def _name(client: Any) -> str:
    server = client.server
    return address_text(server) if isinstance(server, tuple) else str(server)


class BlockingClient:
    """A virtual client driven from its own thread over pymemcache clients (one per server)."""

    __slots__ = ("clients", "owned", "pick")

    def __init__(self, clients: Sequence[Any], hasher: Rendezvous, owned: bool) -> None:
        self.clients = clients
        self.pick = _picker(clients, hasher)
        self.owned = owned

    def get(self, key: bytes) -> bytes | None:
        client = self.pick(key)
        try:
            value: bytes | None = client.get(key)
        except (MemcacheError, OSError) as exc:
            raise translate(exc, _name(client)) from exc
        return value

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        client = self.pick(key)
        data = value if isinstance(value, bytes) else bytes(value)
        try:
            client.set(key, data, expire=0 if ttl is None else exptime(ttl), noreply=False)
        except (MemcacheError, OSError) as exc:
            raise translate(exc, _name(client)) from exc

    def delete(self, key: bytes) -> bool:
        client = self.pick(key)
        try:
            return bool(client.delete(key, noreply=False))
        except (MemcacheError, OSError) as exc:
            raise translate(exc, _name(client)) from exc

    def close(self) -> None:
        if self.owned:
            for client in self.clients:
                client.close()


def _tls(system: dict[str, Any]) -> TlsSettings | None:
    return tls_settings(system, "target.options") if system["tls"] else None


def _client_options(system: dict[str, Any]) -> dict[str, Any]:
    tls = _tls(system)
    return {
        "tls_context": tls.context() if tls else None,
        "connect_timeout": system["connect_timeout"] or None,
        "timeout": system["timeout"] or None,
        "no_delay": system["no_delay"],
        "default_noreply": False,
    }


async def _stats_links(system: dict[str, Any], servers: list[Address]) -> Links:
    """One connection per server for ``stats``; opening them checks that all answer."""
    links = Links(
        servers, 1, system["connect_timeout"], system["timeout"], system["no_delay"], _tls(system)
    )
    await links.open_all()
    return links


async def _server_stats(links: Links) -> dict[str, Any]:
    replies = await asyncio.gather(*(link.stats() for link in links.all))
    return to_stats(replies)


def _handshake(client: Any, tls: TlsSettings) -> None:
    """One `version` on a new TLS client, before the load: its handshake is never inside a
    measured op, and a server that wants a client certificate refuses here, where a
    reset or EOF before any reply can only be that refusal (see closed_after_handshake)."""
    try:
        client.version()
    except (MemcacheError, OSError) as exc:
        failed = translate(exc, _name(client))
        if failed.kind != "tls" and not tls.cert:
            raise closed_after_handshake(_name(client), exc) from exc
        raise failed from exc


class BlockingConnection:
    """The blocking strategies' connection: makes (or shares) pymemcache clients."""

    def __init__(
        self,
        servers: list[Address],
        make: Callable[[Address], Any],
        shared: bool,
        stats: Links,
        tls: TlsSettings | None = None,
    ) -> None:
        self.tls = tls
        self.servers = servers
        self.make = make
        self.hasher = Rendezvous([address_text(a) for a in servers])
        self.shared = [make(a) for a in servers] if shared else None
        self.stats = stats
        self.owned: list[BlockingClient] = []

    async def client(self) -> BlockingClient:
        if self.shared is not None:
            return BlockingClient(self.shared, self.hasher, owned=False)
        client = BlockingClient([self.make(a) for a in self.servers], self.hasher, owned=True)
        self.owned.append(client)
        if self.tls is not None:
            for one in client.clients:
                await asyncio.to_thread(_handshake, one, self.tls)
        return client

    async def server_stats(self) -> dict[str, Any]:
        return await _server_stats(self.stats)

    async def close(self) -> None:
        self.stats.close()
        for client in self.shared or ():
            client.close()
        for owned in self.owned:
            owned.close()


class MultiplexedConnection:
    def __init__(self, links: Links, stats: Links) -> None:
        self.links = links
        self.stats = stats

    async def client(self) -> MultiplexedClient:
        return MultiplexedClient(self.links.pick)

    async def server_stats(self) -> dict[str, Any]:
        return await _server_stats(self.stats)

    async def close(self) -> None:
        self.links.close()
        self.stats.close()


async def _connect_multiplexed(
    system: dict[str, Any], strategy: dict[str, Any]
) -> MultiplexedConnection:
    servers = parse_servers(system["servers"], options=system)
    stats = await _stats_links(system, servers)
    links = Links(
        servers,
        strategy["connections"],
        system["connect_timeout"],
        system["timeout"],
        system["no_delay"],
        _tls(system),
    )
    try:
        await links.open_all()
    except BaseException:
        stats.close()
        raise
    return MultiplexedConnection(links, stats)


async def _connect_per_client(
    system: dict[str, Any], strategy: dict[str, Any]
) -> BlockingConnection:
    servers = parse_servers(system["servers"], options=system)
    stats = await _stats_links(system, servers)
    options = _client_options(system)
    return BlockingConnection(
        servers,
        lambda a: PymemcacheClient(a, **options),
        shared=False,
        stats=stats,
        tls=_tls(system),
    )


async def _connect_pooled(system: dict[str, Any], strategy: dict[str, Any]) -> BlockingConnection:
    servers = parse_servers(system["servers"], options=system)
    stats = await _stats_links(system, servers)
    options = _client_options(system)
    size = strategy["pool_size"]

    def make(address: Address) -> Any:
        pooled = PooledClient(address, max_pool_size=size or None, **options)
        return _Bounded(pooled, size) if size else pooled

    connection = BlockingConnection(servers, make, shared=True, stats=stats)
    tls = _tls(system)
    if tls is not None:  # one pooled connection per server checked (and kept) before the load
        try:
            for client in connection.shared or ():
                await asyncio.to_thread(_handshake, client, tls)
        except BaseException:
            await connection.close()
            raise
    return connection


def start_server(options: dict[str, Any]) -> ServerProcess:
    """A throw-away memcached on a free loopback port (or where `workbench serve` asks)."""
    host, port = listen_address(options)
    return start_memcached(
        port,
        host,
        memory_mb=options["memory_mb"],
        max_item_size=options["max_item_size"],
        threads=options["threads"],
        binary=options["binary"],
        tls=options["tls"],
        tls_auth_clients=options["tls_auth_clients"],
    )


def _on_each_server(count: ConnectionCount) -> ConnectionCount:
    """`count` connections to each server the `servers` option lists (keys hash over them)."""

    def each(system_options: Mapping[str, Any], options: Mapping[str, Any], clients: int) -> int:
        return count(system_options, options, clients) * max(1, len(system_options["servers"]))

    return each


plugin = CacheSystem(
    name="memcached",
    description="memcached: a lean asyncio multiplexed client, or pymemcache clients and pools",
    options=OptionSet(
        (
            Option(
                "servers",
                "list",
                ["127.0.0.1:11211"],
                "host:port of each server, loopback only; several: keys hashed over them",
            ),
            Option("connect_timeout", "duration", 2.0, "connection timeout (0: none)"),
            Option(
                "timeout",
                "duration",
                5.0,
                "time to wait for a reply before it is an error (0: none)",
            ),
            Option("no_delay", "bool", True, "set TCP_NODELAY (send small requests at once)"),
            Option("tls", "bool", False, "speak TLS to every server (memcached -Z)"),
            *TLS_OPTIONS,
        )
    ),
    placement=placement,
    endpoints=endpoints,
    strategies=(
        Strategy(
            "multiplexed",
            "asyncio: the worker's clients share connections, requests pipelined as they come",
            _connect_multiplexed,
            options=OptionSet(
                (
                    Option(
                        "connections",
                        "int",
                        1,
                        "connections per server per worker, used round-robin",
                        minimum=1,
                    ),
                )
            ),
            connections=_on_each_server(count_of("connections")),
            operations=frozenset({"get", "set", "delete"}) | CONDITIONAL,
        ),
        Strategy(
            "client-per-client",
            "one pymemcache Client (its own connection) per client, one thread each",
            _connect_per_client,
            blocking=True,
            connections=_on_each_server(per_client),
        ),
        Strategy(
            "pooled",
            "one pymemcache PooledClient per server shared by the clients' threads",
            _connect_pooled,
            options=OptionSet(
                (
                    Option(
                        "pool_size",
                        "int",
                        0,
                        "connections per server (0: as many as threads are busy at once)",
                        minimum=0,
                    ),
                )
            ),
            blocking=True,
            connections=_on_each_server(pool_of("pool_size")),
        ),
        Strategy(
            "native",
            "native engine (Rust): one connection per client and server, `pipeline` in flight",
            runs_in_native_engine,
            options=OptionSet(
                (
                    Option(
                        "pipeline",
                        "int",
                        1,
                        "requests each connection keeps in flight, refilled after each reply",
                        minimum=1,
                        maximum=4096,
                    ),
                    Option(
                        "protocol",
                        "choice",
                        "text",
                        "text: get/set/delete; meta: mg/ms/md (the protocol memcached's "
                        "authors recommend)",
                        choices=("text", "meta"),
                    ),
                )
            ),
            operations=frozenset({"get", "set", "delete"}) | CONDITIONAL,
            engine="native",
            connections=_on_each_server(per_client),
            protocol=native_protocol,
        ),
    ),
    default_strategy="multiplexed",
    server=ServerLauncher(
        options=OptionSet(
            (
                Option("memory_mb", "int", MEMORY_MB, "memory for items in MiB (-m)", minimum=1),
                Option(
                    "max_item_size",
                    "size",
                    MAX_ITEM_SIZE,
                    "largest item, e.g. 1m or 2m (-I)",
                    minimum=1024,
                    maximum=1024**3,
                ),
                Option("threads", "int", THREADS, "server threads (-t)", minimum=1),
                Option("binary", "str", "", "memcached program to run (empty: from PATH)"),
                Option(
                    "tls", "bool", False, "TLS only (-Z), with a throw-away CA the client trusts"
                ),
                Option(
                    "tls_auth_clients",
                    "bool",
                    False,
                    "with tls: require a client certificate (mutual TLS)",
                ),
            )
        ),
        start=start_server,
        programs=(("memcached", ("memcached", "-V")),),
    ),
    check=check_target,
    urls=facts.URLS,
    cache_size=facts.CACHE_SIZE,
    server_cores=facts.server_cores,
    figures=facts.FIGURES,
    refusals=facts.REFUSALS,
    libraries=facts.LIBRARIES,
    keys=KEYS,
)
