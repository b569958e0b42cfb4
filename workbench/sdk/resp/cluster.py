"""The ``cluster`` strategy on redis-py: redis.asyncio's RedisCluster, one per client (the
slot map from CLUSTER SLOTS, CRC16 slots with hash tags, -MOVED and -ASK followed by
redis-py and counted), for any server that speaks the Redis Cluster protocol."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    NoScriptError,
    RedisClusterException,
)

from workbench.sdk.adapter import NODE_CPU, AdapterError
from workbench.sdk.resp.info import CPU_FIELDS, InfoReader
from workbench.sdk.resp.redispy import AsyncClient, Call
from workbench.sdk.resp.scripts import ScriptedConditionals
from workbench.sdk.resp.target import RespTarget
from workbench.sdk.servers import host_port


class CountingCluster(RedisCluster):
    """RedisCluster that counts the MOVED and ASK redirections it follows.

    redis-py follows both inside `_execute_command` and reports each through
    `_record_error_metric` (redis 8.1, pinned in constraints.txt); counting there is the
    only place that sees every one. The slot-migration test keeps this honest.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.moved = 0
        self.ask = 0

    async def _record_error_metric(self, error: Exception, *args: Any, **kwargs: Any) -> None:
        if isinstance(error, MovedError):
            self.moved += 1
        elif isinstance(error, AskError):
            self.ask += 1
        await super()._record_error_metric(error, *args, **kwargs)


class ClusterClient(AsyncClient, ScriptedConditionals):
    """A client's commands through its RedisCluster: get/set/delete and memcached's
    conditional writes (`scripts`), each routed by its key, redirections followed with
    the same arguments (a cas's token among them)."""

    def __init__(self, call: Call, raw: Call, target: RespTarget) -> None:
        super().__init__(call, target)
        self._raw = raw


class ClusterConnection:
    """One RedisCluster per client (a connection per node each): a client's commands never
    interleave with another's on a connection.

    redis-py sends ASKING as its own command on a pooled connection, then the redirected
    command on whichever connection is free: with clients sharing one RedisCluster another
    client's command can take the ASKING, and the op bounces between the nodes until
    "TTL exhausted". A full refresh (every 5th MOVED) closes only the client's own
    connections, too.
    """

    def __init__(self, target: RespTarget) -> None:
        self.target = target
        self.kwargs: dict[str, Any] = {
            "startup_nodes": [ClusterNode(target.host, target.port)],
            **target.cluster_kwargs(),
        }
        self.clusters: list[CountingCluster] = []
        self.spare: CountingCluster | None = None  # the one connect() checked with
        self.readers: dict[str, InfoReader] = {}  # INFO by node address (server_stats)
        self._counted = (0, 0)

    async def open(self) -> CountingCluster:
        """A RedisCluster that has read the slot map (CLUSTER SLOTS)."""
        r = CountingCluster(**self.kwargs)
        self.clusters.append(r)
        await r.initialize()
        return r

    async def client(self) -> ClusterClient:
        r, self.spare = self.spare or await self.open(), None
        name = self.target.system.name

        async def raw(*args: Any) -> Any:
            try:
                return await r.execute_command(*args)
            except NoScriptError:
                raise  # a script the node lacks: sent again by EVAL (`scripts`)
            except redis.ResponseError as exc:
                raise AdapterError("server", str(exc)) from exc
            except (RedisClusterException, ClusterDownError) as exc:
                # No node reachable, or the cluster lost slots: a lost connection, said so.
                raise AdapterError("connection", f"{name} cluster: {exc}") from exc

        async def call(*args: Any) -> Any:
            try:
                return await raw(*args)
            except NoScriptError as exc:
                raise AdapterError("server", str(exc)) from exc

        return ClusterClient(call, raw, self.target)

    def redirects(self) -> tuple[int, int]:
        """MOVED and ASK followed since the last call (the adapter contract's counts)."""
        now = (sum(r.moved for r in self.clusters), sum(r.ask for r in self.clusters))
        before, self._counted = self._counted, now
        return now[0] - before[0], now[1] - before[1]

    async def server_stats(self) -> dict[str, Any]:
        """INFO of every primary: the figures summed, and each node's CPU seconds as
        ``node_cpu@HOST:PORT`` (the coordinator reads the nodes' shares from them)."""
        r = self.spare or (self.clusters[0] if self.clusters else None)
        if r is None:
            return {}
        figures: dict[str, Any] = {}
        for node in r.get_primaries():
            address = f"{node.host}:{node.port}"
            if address not in self.readers:
                target = replace(self.target, host=node.host, port=int(node.port))
                self.readers[address] = InfoReader(target)
            try:
                info = await self.readers[address].read()
            except (OSError, redis.RedisError, AdapterError):
                continue  # a node gone: the others still report
            if all(k in info for k in CPU_FIELDS):
                figures[f"{NODE_CPU}{address}"] = sum(float(info[k]) for k in CPU_FIELDS)
            for k, v in info.items():  # a version is said once; every other figure summed
                figures[k] = v if isinstance(v, str) else figures.get(k, 0) + v
        return figures

    async def close(self) -> None:
        for reader in self.readers.values():
            await reader.close()
        for r in self.clusters:
            await r.aclose()


async def connect_cluster(target: RespTarget) -> ClusterConnection:
    """A cluster connection that has read the slot map: an unreachable cluster says so here."""
    conn = ClusterConnection(target)
    try:
        conn.spare = await conn.open()  # CLUSTER SLOTS now: an unreachable one says so here
    except redis.RedisError as exc:
        await conn.close()
        where = host_port(target.host, target.port)
        raise ConnectionRefusedError(f"{target.system.name} cluster at {where}: {exc}") from None
    return conn
