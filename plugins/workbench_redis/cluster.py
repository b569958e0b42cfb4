"""Redis Cluster: a managed cluster of throw-away redis-servers, and the `cluster` strategy
(redis.asyncio.cluster.RedisCluster per client: topology from CLUSTER SLOTS, CRC16 slots
with hash tags, -MOVED and -ASK followed by redis-py and counted).

`start_cluster` starts N servers with `cluster-enabled yes` on free loopback ports, joins
them with `redis-cli --cluster create` and waits (bounded) for `cluster_state:ok` on every
node. The cluster is one `ServerProcess` (its first node) that stops all of them; each node
also dies with the workbench (the process toolkit's registry). With `tls`, one throw-away CA
signs the certificate every node serves (clients, the cluster bus and replication all speak
TLS); its directory is removed when the cluster stops.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis
import redis.asyncio as aredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import AskError, ClusterDownError, MovedError, RedisClusterException

from workbench.sdk import (
    LOOPBACK,
    NODE_CPU,
    AdapterError,
    ServerProcess,
    TlsFiles,
    free_port,
    make_tls_files,
    require_program,
)
from workbench_redis.info import CPU_FIELDS, InfoReader
from workbench_redis.pooled import AsyncClient
from workbench_redis.server import start_redis
from workbench_redis.target import RedisTarget, no_retries, parse_target

READY_TIMEOUT = 20.0  # seconds for the cluster to agree on cluster_state:ok


@dataclass
class ClusterProcess(ServerProcess):
    """The cluster as one managed server: node 0's process, and every node to stop."""

    nodes: list[ServerProcess] = field(default_factory=list)
    tls_dir: Path | None = None  # the throw-away CA of a TLS cluster

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        if self.tls_dir is not None:
            shutil.rmtree(self.tls_dir, ignore_errors=True)


def _tls_argv(port: int, files: TlsFiles) -> list[str]:
    return [
        "--port", "0", "--tls-port", str(port),
        "--tls-cert-file", str(files.server_cert),
        "--tls-key-file", str(files.server_key),
        "--tls-ca-cert-file", str(files.ca),
        # The cluster bus always asks the connecting node for a certificate: the client one.
        "--tls-client-cert-file", str(files.client_cert),
        "--tls-client-key-file", str(files.client_key),
        "--tls-auth-clients", "no",
        "--tls-cluster", "yes", "--tls-replication", "yes",
    ]  # fmt: skip


def _ready(host: str, port: int, known: int, files: TlsFiles | None) -> bool:
    """The node sees the cluster whole (every slot served, every node known) and, if it is a
    replica, has its primary's data: only then can it take over."""
    tls: dict[str, Any] = {"ssl": True, "ssl_ca_certs": str(files.ca)} if files else {}
    r = redis.Redis(host=host, port=port, socket_timeout=2, socket_connect_timeout=2, **tls)
    try:
        text = r.execute_command("CLUSTER", "INFO")
        role = r.execute_command("ROLE")
    finally:
        r.close()
    text = text.decode() if isinstance(text, bytes) else str(text)
    info = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    synced = role[0] in (b"master", "master") or role[3] in (b"connected", "connected")
    whole = info.get("cluster_state") == "ok" and int(info.get("cluster_known_nodes", 0)) >= known
    return whole and synced


def _wait_ready(host: str, started: list[ServerProcess], files: TlsFiles | None) -> None:
    """Until every node says cluster_state:ok with all its peers (replicas synced)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while not all(_ready(host, s.port, len(started), files) for s in started):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the cluster did not reach cluster_state:ok (replicas synced) in "
                f"{READY_TIMEOUT:g}s"
            )
        time.sleep(0.1)


def start_cluster(
    nodes: int = 3, host: str = LOOPBACK, binary: str = "", replicas: int = 0, tls: bool = False
) -> ClusterProcess:
    """N throw-away primaries (and `replicas` replicas of each) joined into one cluster with
    every slot assigned; with `tls`, over TLS only."""
    cli = require_program("redis-cli", "redis-tools")
    started: list[ServerProcess] = []
    total = nodes * (1 + replicas)
    tls_dir = Path(tempfile.mkdtemp(prefix="workbench-cluster-tls-")) if tls else None
    files = make_tls_files(tls_dir) if tls_dir is not None else None
    cli_tls = ["--tls", "--cacert", str(files.ca)] if files else []
    try:
        for _ in range(total):
            port = free_port(host)
            # The bus port given: the default (port + 10000) may not exist.
            extra = [
                "--cluster-enabled", "yes",
                "--cluster-node-timeout", "2000",
                "--cluster-port", str(free_port(host)),
                # A replica syncs at once (not after the 5 s diskless default).
                "--repl-diskless-sync-delay", "0",
            ]  # fmt: skip
            if files is not None:
                extra += _tls_argv(port, files)
            started.append(start_redis(port=port, host=host, binary=binary, extra=extra))
        addresses = [f"{host}:{s.port}" for s in started]
        create = [cli, *cli_tls, "--cluster", "create", *addresses, "--cluster-yes"]
        done = subprocess.run(
            [*create, "--cluster-replicas", str(replicas)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout[-400:]}")
        _wait_ready(host, started, files)
    except BaseException:
        for s in started:
            s.stop()
        if tls_dir is not None:
            shutil.rmtree(tls_dir, ignore_errors=True)
        raise
    first = started[0]
    target: dict[str, Any] = {"url": f"redis://{host}:{first.port}/0", "cluster": True}
    if files is not None:
        target.update(url=f"rediss://{host}:{first.port}/0", tls_ca=str(files.ca))
    return ClusterProcess(
        name="redis-cluster",
        process=first.process,
        host=first.host,
        port=first.port,
        version=f"{first.version} cluster of {nodes}"
        + (f" with {replicas} replica(s) each" if replicas else ""),
        target_options=target,
        log_path=first.log_path,
        nodes=started,
        tls_dir=tls_dir,
    )


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


class ClusterConnection:
    """One RedisCluster per client (a connection per node each): a client's commands never
    interleave with another's on a connection.

    redis-py sends ASKING as its own command on a pooled connection, then the redirected
    command on whichever connection is free: with clients sharing one RedisCluster another
    client's command can take the ASKING, and the op bounces between the nodes until
    "TTL exhausted". A full refresh (every 5th MOVED) closes only the client's own
    connections, too.
    """

    def __init__(self, target: RedisTarget) -> None:
        self.target = target
        self.kwargs: dict[str, Any] = {
            "startup_nodes": [ClusterNode(target.host, target.port)],
            "username": target.username,
            "password": target.password,
            "socket_connect_timeout": target.connect_timeout,
            "socket_timeout": target.timeout,
            "retry": no_retries(True),
        }
        if target.tls:
            self.kwargs.update(ssl=True, **target._ssl_kwargs())
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

    async def client(self) -> AsyncClient:
        r, self.spare = self.spare or await self.open(), None

        async def call(*args: Any) -> Any:
            try:
                return await r.execute_command(*args)
            except redis.ResponseError as exc:
                raise AdapterError("server", str(exc)) from exc
            except (RedisClusterException, ClusterDownError) as exc:
                # No node reachable, or the cluster lost slots: a lost connection, said so.
                raise AdapterError("connection", f"redis cluster: {exc}") from exc

        return AsyncClient(call, self.target)

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
                target = replace(self.target, host=node.host, port=node.port)
                self.readers[address] = InfoReader(target)
            try:
                info = await self.readers[address].read()
            except (OSError, redis.RedisError, AdapterError):
                continue  # a node gone: the others still report
            if all(k in info for k in CPU_FIELDS):
                figures[f"{NODE_CPU}{address}"] = sum(float(info[k]) for k in CPU_FIELDS)
            for k, v in info.items():
                figures[k] = figures.get(k, 0) + v
        return figures

    async def close(self) -> None:
        for reader in self.readers.values():
            await reader.close()
        for r in self.clusters:
            await r.aclose()


async def connect_cluster(system: dict[str, Any], strategy: dict[str, Any]) -> ClusterConnection:
    conn = ClusterConnection(parse_target(system))
    try:
        conn.spare = await conn.open()  # CLUSTER SLOTS now: an unreachable one says so here
    except redis.RedisError as exc:
        await conn.close()
        raise ConnectionRefusedError(f"redis cluster at {system['url']}: {exc}") from None
    return conn


__all__ = ["ClusterProcess", "aredis", "connect_cluster", "start_cluster"]
