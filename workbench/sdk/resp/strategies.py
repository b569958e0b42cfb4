"""The strategies every RESP system can offer as they are, each a `Strategy` for a
`RespSystem`: redis-py's asyncio pool and blocking clients, the cluster client, and the
native engine's RESP codec. A plugin lists the ones it offers beside its own."""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from workbench.sdk.adapter import (
    Connection,
    Strategy,
    per_client,
    pool_of,
    runs_in_native_engine,
)
from workbench.sdk.options import Option, OptionSet
from workbench.sdk.protocols import RESP
from workbench.sdk.resp.cluster import connect_cluster
from workbench.sdk.resp.redispy import AsyncPoolConnection, SyncConnection
from workbench.sdk.resp.target import RespSystem

POOL_SIZE = Option("pool_size", "int", 16, "connections in the pool", minimum=1, maximum=4096)
PIPELINE = Option(
    "pipeline",
    "int",
    1,
    "requests each connection keeps in flight, refilled after each reply",
    minimum=1,
    maximum=4096,
)


def async_pool(system: RespSystem, operations: Set[str]) -> Strategy:
    async def connect(options: dict[str, Any], strategy: dict[str, Any]) -> Connection:
        return AsyncPoolConnection(system.target(options), strategy["pool_size"])

    return Strategy(
        "async-pool",
        "redis.asyncio with a blocking connection pool shared by the worker's clients",
        connect,
        operations=frozenset(operations),
        options=OptionSet((POOL_SIZE,)),
        connections=pool_of("pool_size"),
    )


def sync_per_client(system: RespSystem, operations: Set[str]) -> Strategy:
    async def connect(options: dict[str, Any], strategy: dict[str, Any]) -> Connection:
        return SyncConnection(system.target(options))

    return Strategy(
        "sync-per-client",
        "redis.Redis, one blocking connection per client, one thread each",
        connect,
        operations=frozenset(operations),
        blocking=True,
        connections=per_client,
    )


def sync_pool(system: RespSystem, operations: Set[str]) -> Strategy:
    async def connect(options: dict[str, Any], strategy: dict[str, Any]) -> Connection:
        return SyncConnection(system.target(options), pool_size=strategy["pool_size"])

    return Strategy(
        "sync-pool",
        "redis.Redis with a blocking connection pool shared by the clients' threads",
        connect,
        operations=frozenset(operations),
        options=OptionSet((POOL_SIZE,)),
        blocking=True,
        connections=pool_of("pool_size"),
    )


def cluster(system: RespSystem, operations: Set[str]) -> Strategy:
    async def connect(options: dict[str, Any], strategy: dict[str, Any]) -> Connection:
        return await connect_cluster(system.target(options))

    return Strategy(
        "cluster",
        "redis.asyncio RedisCluster per client: CLUSTER SLOTS topology, MOVED/ASK followed",
        connect,
        operations=frozenset(operations),
        connections=per_client,
    )


def native(operations: Set[str], description: str = "") -> Strategy:
    return Strategy(
        "native",
        "native engine (Rust): one connection per client, `pipeline` requests in flight"
        + description,
        runs_in_native_engine,
        operations=frozenset(operations),
        options=OptionSet((PIPELINE,)),
        engine="native",
        connections=per_client,
        protocol=RESP,
    )
