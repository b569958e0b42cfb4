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
    RESP,
    TLS_OPTIONS,
    CacheSystem,
    Option,
    OptionSet,
    ServerLauncher,
    ServerProcess,
    Strategy,
    TargetError,
    listen_address,
    per_client,
    pool_of,
    runs_in_native_engine,
)
from workbench.sdk.ops import CONDITIONAL
from workbench_valkey import facts
from workbench_valkey.clients import connect_async_pool, connect_sync_per_client
from workbench_valkey.cluster import connect_cluster, start_valkey_cluster
from workbench_valkey.server import (
    find_program,
    io_threads_argv,
    memory_argv,
    start_valkey,
    version_of,
)
from workbench_valkey.target import check_target, endpoints

KV = frozenset({"get", "set", "delete"})
POLICIES = (
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
)


def _start(options: dict[str, Any]) -> ServerProcess:
    host, port = listen_address(options)
    program = find_program(options)
    if options["cluster"]:
        if options["tls_auth_clients"]:
            raise TargetError(
                "a managed cluster takes no client certificates (tls_auth_clients); "
                "use tls = true alone",
                "target.server.tls_auth_clients",
            )
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


SYSTEM_OPTIONS = OptionSet(
    (
        Option(
            "url",
            "str",
            facts.DEFAULT_URL,
            "valkey://HOST:PORT/DB or valkeys:// for TLS (loopback only)",
        ),
        Option(
            "password_env",
            "str",
            "VALKEY_PASSWORD",
            "environment variable holding the password (never stored)",
        ),
        Option(
            "username_env",
            "str",
            "VALKEY_USERNAME",
            "environment variable holding the ACL user (never stored)",
        ),
        Option("connect_timeout", "duration", 5.0, "give up connecting after", minimum=0.001),
        Option("timeout", "duration", 5.0, "fail a command unanswered so long", minimum=0.001),
        *TLS_OPTIONS,
        Option("cluster", "bool", False, "a Valkey Cluster: the cluster strategy follows slots"),
    )
)

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
        Strategy(
            "async-pool",
            "redis.asyncio with a blocking connection pool shared by the worker's clients",
            connect_async_pool,
            operations=KV,
            options=OptionSet(
                (Option("pool_size", "int", 16, "connections in the pool", minimum=1),)
            ),
            connections=pool_of("pool_size"),
        ),
        Strategy(
            "sync-per-client",
            "redis.Redis, one blocking connection per client, one thread each",
            connect_sync_per_client,
            operations=KV,
            blocking=True,
            connections=per_client,
        ),
        Strategy(
            "cluster",
            "redis.asyncio RedisCluster per client: CLUSTER SLOTS topology, MOVED/ASK followed",
            connect_cluster,
            operations=KV,
            connections=per_client,
        ),
        Strategy(
            "native",
            "native engine (Rust): one connection per client, `pipeline` requests in flight",
            runs_in_native_engine,
            operations=KV | CONDITIONAL,
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
                )
            ),
            engine="native",
            connections=per_client,
            protocol=RESP,
        ),
    ),
    default_strategy="async-pool",
    server=ServerLauncher(
        options=SERVER_OPTIONS,
        start=_start,
        programs=(("valkey-server", ("valkey-server", "--version")),),
    ),
    check=check_target,
    endpoints=endpoints,
    urls=facts.URLS,
    cache_size=facts.CACHE_SIZE,
    server_cores=facts.server_cores,
    figures=facts.FIGURES,
    refusals=facts.REFUSALS,
    libraries=facts.LIBRARIES,
)
