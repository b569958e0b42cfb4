"""umem-cache: a small multi-threaded C cache with a memory limit fixed at build time.

One strategy, ``conn-per-thread`` (asyncio): each virtual client holds one connection
per server thread, and a key travels on the connection of the thread it hashes to
(MurmurHash3_x64_128, seed 74, Lemire's reduction; see `workbench_umem.protocol`).
umem-cache's protocol cannot be pipelined: a miss waits for the client's value.

Operations: ``cache_aside`` and ``delete``, the ones umem-cache really has. Its read is
GET-OR-SET: a miss locks the key on the server (other clients asking for it wait) until
the value is sent, so there is no plain get, no plain set and no TTL; a profile asking
for them is refused before the run, saying why. A delete does not report whether the key
was there; deleting a key another client holds locked closes that client's connection,
which it sees as a ``connection`` error on its next operation. A miss counts as a
``get`` and the value sent in answer as a ``set`` (no reply comes back, so its latency
is the time to hand it to the socket).

Only loopback servers are accepted. A lost connection counts as ``connection``, a
missing reply as ``timeout``; the connection is dropped (releasing any lock it held) and
the next operation reconnects. umem-cache reports no statistics: ``server_stats`` gives
the memory limit when it is known (managed, or ``target.options.limit``).

With ``target.managed = true`` the workbench builds umem-cache for ``target.server``
``memory``, ``threads`` and ``max_conn`` from ``source`` (a directory or the
``umem-cache-<commit>.tar.gz``; by default the vendored tarball beside the checkout) into
``$XDG_CACHE_HOME/cache-workbench/umem/``, once per option set, or runs a given
``binary`` whose build options the user states. It listens on ``[::1]``.
"""

from __future__ import annotations

from typing import Any

from workbench.sdk import (
    CacheSize,
    CacheSystem,
    Option,
    OptionSet,
    ServerFigures,
    ServerLauncher,
    Strategy,
    per_client,
)
from workbench_umem.protocol import (
    KEYS,
    Link,
    UmemClient,
    check_target,
    open_links,
    parse_address,
    probe_threads,
)
from workbench_umem.server import start_umem

# Why the strategy lacks what a profile may ask for; shown in the spec error.
LACKS = {
    "get": (
        "umem-cache's only read is GET-OR-SET: a miss locks the key until the client sends "
        "the value, so a read is always the first half of cache_aside"
    ),
    "set": "umem-cache has no plain set: it stores a value only in answer to a miss (cache_aside)",
    "ttl": "umem-cache keeps no expiry time: its protocol has no TTL",
}


class UmemConnection:
    """One worker's view of the server: opens clients, reports the limit, closes them all."""

    def __init__(self, system: dict[str, Any]) -> None:
        self.address = parse_address(system["address"], options=system)
        self.threads = int(system["threads"])
        self.limit = int(system["limit"])
        self.connect_timeout = float(system["connect_timeout"])
        self.timeout = float(system["timeout"])
        self.links: list[Link] = []

    async def client(self) -> UmemClient:
        links = await open_links(self.address, self.threads, self.connect_timeout, self.timeout)
        self.links += links
        return UmemClient(links)

    async def server_stats(self) -> dict[str, Any]:
        return {"limit_bytes": self.limit} if self.limit else {}

    async def close(self) -> None:
        for link in self.links:
            link.drop()
        self.links.clear()


async def _connect(system: dict[str, Any], strategy: dict[str, Any]) -> UmemConnection:
    conn = UmemConnection(system)
    await probe_threads(conn.address, conn.threads, conn.connect_timeout or 5.0)
    return conn


plugin = CacheSystem(
    name="umem",
    description="umem-cache: GET-OR-SET with anti-dogpiling locks, one connection per thread",
    options=OptionSet(
        (
            Option(
                "address",
                "str",
                "[::1]:10047",
                "[host]:port of the server, loopback only (umem-cache listens on IPv6)",
            ),
            Option(
                "threads",
                "int",
                2,
                "the server's THREAD_NR: keys are dispatched over its threads",
                minimum=1,
                maximum=1024,
            ),
            Option(
                "limit",
                "size",
                0,
                "the server's MEM_LIMIT, for reports (0: unknown; umem-cache has no stats)",
                minimum=0,
            ),
            Option("connect_timeout", "duration", 2.0, "connection timeout (0: none)"),
            Option(
                "timeout",
                "duration",
                5.0,
                "time to wait for a reply before it is an error (0: none)",
            ),
        )
    ),
    strategies=(
        Strategy(
            "conn-per-thread",
            "asyncio: each client holds one connection per server thread; a key uses its "
            "thread's connection, one request at a time",
            _connect,
            operations=frozenset({"cache_aside", "delete"}),
            lacks=LACKS,
            connections=per_client,
        ),
    ),
    default_strategy="conn-per-thread",
    server=ServerLauncher(
        options=OptionSet(
            (
                Option(
                    "memory",
                    "size",
                    64 * 1024**2,
                    "memory limit for keys and values (MEM_LIMIT, compiled in)",
                    minimum=1024**2,
                ),
                Option(
                    "threads",
                    "int",
                    2,
                    "server threads (THREAD_NR, compiled in); the limit is split among them",
                    minimum=1,
                    maximum=1024,
                ),
                Option(
                    "max_conn",
                    "int",
                    512,
                    "connections, shared by the threads (MAX_CONN, compiled in)",
                    minimum=1,
                ),
                Option(
                    "source",
                    "str",
                    "",
                    "umem-cache source to build: a directory or umem-cache-<commit>.tar.gz "
                    "(empty: shared/vendor/ beside the workbench checkout)",
                ),
                Option(
                    "binary",
                    "str",
                    "",
                    "a built umem-cache to run instead; memory, threads and max_conn must "
                    "be what it was built with",
                ),
            )
        ),
        start=start_umem,
        # Built from source for each memory limit.
        programs=(("make", ("make", "--version")), ("cc", ("cc", "--version"))),
    ),
    check=check_target,
    cache_size=CacheSize("memory"),  # compiled in (MEM_LIMIT)
    figures=ServerFigures(limit_bytes="limit_bytes"),
    keys=KEYS,
)
