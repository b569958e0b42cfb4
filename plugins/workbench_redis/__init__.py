"""Redis: six client strategies, from one blocking connection per client to auto-pipelining.

The strategies are the axis of `000_*.txt` and `002_*.txt`: how much a client pays per
command depends less on Redis than on how the client shares connections. Sweep
``strategy.name`` over them to see it.
"""

from __future__ import annotations

from typing import Any

from workbench.sdk import (
    CacheSystem,
    Option,
    OptionSet,
    ServerLauncher,
    ServerProcess,
    Strategy,
    count_of,
    listen_address,
    one_per_worker,
)
from workbench.sdk.ops import CONDITIONAL
from workbench.sdk.resp import POLICIES, InfoReader, strategies, target_options
from workbench.sdk.resp.cluster_servers import refuse_client_certs
from workbench_redis.cluster import start_cluster
from workbench_redis.facts import FACTS
from workbench_redis.pooled import PipelineConnection
from workbench_redis.resp import Multiplexed, MultiplexedClient
from workbench_redis.server import POLICY, start_redis
from workbench_redis.target import DEFAULT_URL, SYSTEM

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
    target = SYSTEM.target(system)
    mux = Multiplexed(target, k)
    await mux.open()
    return MultiplexedConnection(mux, InfoReader(target))


async def _connect_multiplexed(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return await _multiplexed(system, 1)


async def _connect_multiplexed_k(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return await _multiplexed(system, strategy["connections"])


async def _connect_pipeline(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return PipelineConnection(SYSTEM.target(system), strategy["batch"])


def _start(options: dict[str, Any]) -> ServerProcess:
    if options["cluster"]:
        refuse_client_certs(options)
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


plugin = CacheSystem(
    name="redis",
    description="Redis with redis-py and hiredis: per-client, pooled, pipelined, multiplexed",
    options=target_options(SYSTEM, "Redis", DEFAULT_URL),
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
        strategies.async_pool(SYSTEM, KV_PUBSUB),
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
        strategies.sync_per_client(SYSTEM, KV),
        strategies.sync_pool(SYSTEM, KV),
        strategies.cluster(SYSTEM, KV | CONDITIONAL),
        strategies.native(KV_PUBSUB | CONDITIONAL, "; subscribers on their own connections"),
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
                    choices=POLICIES,
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
    check=SYSTEM.check,
    endpoints=SYSTEM.endpoints,
    **FACTS.declared(),
)
