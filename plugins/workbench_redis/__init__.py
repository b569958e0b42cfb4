"""Redis: six client strategies, from one blocking connection per client to auto-pipelining.

The strategies are the axis of `000_*.txt` and `002_*.txt`: how much a client pays per
command depends less on Redis than on how the client shares connections. Sweep
``strategy.name`` over them to see it.
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
    count_of,
    listen_address,
    one_per_worker,
    per_client,
    pool_of,
    runs_in_native_engine,
)
from workbench.sdk.ops import CONDITIONAL
from workbench_redis import facts
from workbench_redis.cluster import connect_cluster, start_cluster
from workbench_redis.info import InfoReader
from workbench_redis.pooled import AsyncPoolConnection, PipelineConnection, SyncConnection
from workbench_redis.resp import Multiplexed, MultiplexedClient
from workbench_redis.server import POLICY, start_redis
from workbench_redis.target import check_target, endpoints, parse_target

KV = frozenset({"get", "set", "delete"})
KV_PUBSUB = KV | {"publish", "subscribe"}


class MultiplexedConnection:
    def __init__(self, mux: Multiplexed, info: InfoReader) -> None:
        self.mux = mux
        self.info = info

    async def client(self) -> MultiplexedClient:
        return MultiplexedClient(self.mux)

    async def server_stats(self) -> dict[str, Any]:
        return await self.info.read()

    async def close(self) -> None:
        await self.info.close()
        await self.mux.close()


async def _multiplexed(system: dict[str, Any], k: int) -> MultiplexedConnection:
    target = parse_target(system)
    mux = Multiplexed(target, k)
    await mux.open()
    return MultiplexedConnection(mux, InfoReader(target))


async def _connect_multiplexed(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return await _multiplexed(system, 1)


async def _connect_multiplexed_k(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return await _multiplexed(system, strategy["connections"])


async def _connect_sync_per_client(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return SyncConnection(parse_target(system), pool_size=None)


async def _connect_sync_pool(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return SyncConnection(parse_target(system), pool_size=strategy["pool_size"])


async def _connect_async_pool(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return AsyncPoolConnection(parse_target(system), strategy["pool_size"])


async def _connect_pipeline(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return PipelineConnection(parse_target(system), strategy["batch"])


def _start(options: dict[str, Any]) -> ServerProcess:
    if options["cluster"]:
        if options["tls_auth_clients"]:
            raise TargetError(
                "a managed cluster takes no client certificates (tls_auth_clients); "
                "use tls = true alone",
                "target.server.tls_auth_clients",
            )
        return start_cluster(
            options["cluster_nodes"],
            binary=options["binary"],
            replicas=options["cluster_replicas"],
            tls=options["tls"],
        )
    host, port = listen_address(options)
    return start_redis(
        port,
        host,
        maxmemory=str(options["maxmemory"]) if options["maxmemory"] else "",
        policy=options["maxmemory_policy"],
        extra=("--io-threads", str(options["io_threads"])) if options["io_threads"] > 1 else (),
        binary=options["binary"],
        tls=options["tls"],
        tls_auth_clients=options["tls_auth_clients"],
    )


PIPELINE = Option(
    "pipeline",
    "int",
    1,
    "requests each connection keeps in flight, refilled after each reply",
    minimum=1,
    maximum=4096,
)

POOL_SIZE = Option("pool_size", "int", 16, "connections in the pool", minimum=1, maximum=4096)

plugin = CacheSystem(
    name="redis",
    description="Redis with redis-py and hiredis: per-client, pooled, pipelined, multiplexed",
    options=OptionSet(
        (
            Option(
                "url",
                "str",
                "redis://127.0.0.1:6379/0",
                "redis://HOST:PORT/DB or rediss:// for TLS (loopback only)",
            ),
            Option(
                "password_env",
                "str",
                "REDIS_PASSWORD",
                "environment variable holding the password (never stored)",
            ),
            Option(
                "username_env",
                "str",
                "REDIS_USERNAME",
                "environment variable holding the ACL user (never stored)",
            ),
            Option("connect_timeout", "duration", 5.0, "give up connecting after", minimum=0.001),
            Option("timeout", "duration", 5.0, "fail a command unanswered so long", minimum=0.001),
            *TLS_OPTIONS,
            Option("cluster", "bool", False, "a Redis Cluster: the cluster strategy follows slots"),
        )
    ),
    strategies=(
        Strategy(
            "multiplexed",
            "one connection per worker shared by all its clients, commands auto-pipelined",
            _connect_multiplexed,
            operations=KV_PUBSUB | CONDITIONAL,
            connections=one_per_worker,
        ),
        Strategy(
            "multiplexed-k",
            "a fixed set of K auto-pipelined connections per worker, used round robin",
            _connect_multiplexed_k,
            operations=KV_PUBSUB | CONDITIONAL,
            options=OptionSet(
                (Option("connections", "int", 4, "connections per worker", minimum=1, maximum=256),)
            ),
            connections=count_of("connections"),
        ),
        Strategy(
            "async-pool",
            "redis.asyncio with a blocking connection pool shared by the worker's clients",
            _connect_async_pool,
            operations=KV_PUBSUB,
            options=OptionSet((POOL_SIZE,)),
            connections=pool_of("pool_size"),
        ),
        Strategy(
            "pipeline",
            "redis.asyncio pipelines of up to N commands gathered from concurrent clients",
            _connect_pipeline,
            operations=KV_PUBSUB,
            options=OptionSet(
                (Option("batch", "int", 16, "commands per pipeline", minimum=1, maximum=100_000),)
            ),
            connections=one_per_worker,
        ),
        Strategy(
            "sync-per-client",
            "redis.Redis, one blocking connection per client, one thread each",
            _connect_sync_per_client,
            operations=KV,
            blocking=True,
            connections=per_client,
        ),
        Strategy(
            "sync-pool",
            "redis.Redis with a blocking connection pool shared by the clients' threads",
            _connect_sync_pool,
            operations=KV,
            options=OptionSet((POOL_SIZE,)),
            blocking=True,
            connections=pool_of("pool_size"),
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
            "native engine (Rust): one connection per client, `pipeline` requests in flight; "
            "subscribers on their own connections",
            runs_in_native_engine,
            operations=KV_PUBSUB | CONDITIONAL,
            options=OptionSet((PIPELINE,)),
            engine="native",
            connections=per_client,
            protocol=RESP,
        ),
    ),
    default_strategy="multiplexed",
    server=ServerLauncher(
        options=OptionSet(
            (
                Option("maxmemory", "size", 0, "memory limit for data (0: none)", minimum=0),
                Option(
                    "maxmemory_policy",
                    "choice",
                    POLICY,
                    "what Redis evicts at the limit",
                    choices=(
                        "noeviction",
                        "allkeys-lru",
                        "allkeys-lfu",
                        "allkeys-random",
                        "volatile-lru",
                        "volatile-lfu",
                        "volatile-random",
                        "volatile-ttl",
                    ),
                ),
                Option("io_threads", "int", 1, "redis I/O threads", minimum=1, maximum=128),
                Option("binary", "str", "", "redis-server program to run (empty: from PATH)"),
                Option("tls", "bool", False, "TLS only, with a throw-away CA the client trusts"),
                Option("cluster", "bool", False, "a Redis Cluster of cluster_nodes servers"),
                Option(
                    "cluster_nodes",
                    "int",
                    3,
                    "primaries of a managed cluster",
                    minimum=3,
                    maximum=16,
                ),
                Option(
                    "cluster_replicas",
                    "int",
                    0,
                    "replicas of each primary of a managed cluster (a failover takes over)",
                    minimum=0,
                    maximum=2,
                ),
                Option(
                    "tls_auth_clients",
                    "bool",
                    False,
                    "with tls: require a client certificate (mutual TLS)",
                ),
            )
        ),
        start=_start,
        programs=(("redis-server", ("redis-server", "--version")),),
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
