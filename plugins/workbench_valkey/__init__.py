"""Valkey: the BSD-licensed fork of Redis, which speaks Redis's RESP.

Strategies: ``async-pool`` (redis.asyncio, one connection pool per worker shared by its
clients), ``sync-per-client`` (redis.Redis, one blocking connection per client) and
``native`` (the native engine's RESP codec, one connection per client with ``pipeline``
requests in flight). The target is ``valkey://HOST:PORT/DB``, or ``valkeys://`` for TLS
with the TLS options every system has.

With ``target.managed = true`` the workbench starts a throw-away valkey-server: the one on
PATH, a given ``binary``, or one built once from the source tarball named by
``target.server.source`` (`workbench_valkey.server`). ``io_threads`` gives it that many
threads for I/O, and the CPU verdict counts that many cores; ``maxmemory`` and
``maxmemory_policy`` set its memory limit (``--simulate`` and ``mrc`` size it there).
"""

from __future__ import annotations

from typing import Any

from workbench.sdk import (
    CacheSystem,
    Option,
    OptionSet,
    ServerLauncher,
    ServerProcess,
    listen_address,
)
from workbench.sdk.ops import CONDITIONAL
from workbench.sdk.resp import POLICIES, strategies, target_options
from workbench.sdk.resp.cluster_servers import refuse_client_certs
from workbench_valkey.cluster import start_valkey_cluster
from workbench_valkey.facts import FACTS
from workbench_valkey.server import (
    find_program,
    io_threads_argv,
    memory_argv,
    start_valkey,
    version_of,
)
from workbench_valkey.target import DEFAULT_URL, SYSTEM

KV = frozenset({"get", "set", "delete"})


def _start(options: dict[str, Any]) -> ServerProcess:
    host, port = listen_address(options)
    program = find_program(options)
    if options["cluster"]:
        refuse_client_certs(options)
        extra = [*memory_argv(int(options["maxmemory"]), options["maxmemory_policy"])]
        extra += io_threads_argv(int(options["io_threads"]))
        return start_valkey_cluster(
            program, version_of(program), options["cluster_nodes"], host, options["tls"], extra
        )
    return start_valkey(
        program,
        port,
        host,
        maxmemory=int(options["maxmemory"]),
        policy=options["maxmemory_policy"],
        io_threads=int(options["io_threads"]),
        tls=options["tls"],
        tls_auth_clients=options["tls_auth_clients"],
    )


SYSTEM_OPTIONS = target_options(SYSTEM, "Valkey", DEFAULT_URL)

SERVER_OPTIONS = OptionSet(
    (
        Option("maxmemory", "size", 0, "memory limit for data (0: none)", minimum=0),
        Option(
            "maxmemory_policy",
            "choice",
            "allkeys-lru",
            "what Valkey evicts at the limit",
            choices=POLICIES,
        ),
        Option(
            "io_threads",
            "int",
            1,
            "threads doing I/O, the main thread included (cores the server may use)",
            minimum=1,
            maximum=128,
        ),
        Option("binary", "str", "", "valkey-server program to run (empty: from PATH)"),
        Option(
            "source",
            "str",
            "",
            "Valkey source tarball or directory to build valkey-server from (cached)",
        ),
        Option("tls", "bool", False, "TLS only, with a throw-away CA the client trusts"),
        Option(
            "tls_auth_clients",
            "bool",
            False,
            "with tls: require a client certificate (mutual TLS)",
        ),
        Option("cluster", "bool", False, "a Valkey Cluster of cluster_nodes primaries"),
        Option("cluster_nodes", "int", 3, "primaries of a managed cluster", minimum=3, maximum=16),
    )
)

plugin = CacheSystem(
    name="valkey",
    description="Valkey (the BSD fork of Redis) over RESP: redis-py pool, per-client, native",
    options=SYSTEM_OPTIONS,
    strategies=(
        strategies.async_pool(SYSTEM, KV),
        strategies.sync_per_client(SYSTEM, KV),
        strategies.cluster(SYSTEM, KV),
        strategies.native(KV | CONDITIONAL),
    ),
    default_strategy="async-pool",
    server=ServerLauncher(
        options=SERVER_OPTIONS,
        start=_start,
        programs=(("valkey-server", ("valkey-server", "--version")),),
    ),
    check=SYSTEM.check,
    endpoints=SYSTEM.endpoints,
    **FACTS.declared(),
)
