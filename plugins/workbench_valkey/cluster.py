"""Valkey Cluster: a managed cluster of throw-away valkey-servers, and the ``cluster``
strategy (redis.asyncio's RedisCluster, one per client: the slot map from CLUSTER SLOTS,
-MOVED and -ASK followed by redis-py).

`start_valkey_cluster` starts N primaries with ``cluster-enabled yes`` on free loopback
ports (each with its bus port named, since port + 10000 may not be free), gives each an
even range of the 16384 slots, introduces them with CLUSTER MEET and waits (bounded) for
``cluster_state:ok`` on every node. The cluster is one managed server (its first node's
process) whose `nodes` the engine reads CPU from and which stops them all. With `tls`, one
throw-away CA signs every node's certificate, and clients, the cluster bus and
replication all speak TLS.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ClusterDownError, RedisClusterException

from workbench.sdk import (
    LOOPBACK,
    NODE_CPU,
    AdapterError,
    ServerProcess,
    TlsFiles,
    free_port,
    make_tls_files,
)
from workbench.sdk.resp_server import start_resp_server
from workbench_valkey.clients import CPU_FIELDS, AsyncClient, InfoReader, failure
from workbench_valkey.target import ValkeyTarget, parse_target

SLOTS = 16384
READY_TIMEOUT = 30.0  # seconds for every node to see the whole cluster


@dataclass
class ValkeyCluster(ServerProcess):
    """The cluster as one managed server: node 0's process, and every node to stop."""

    nodes: list[ServerProcess] = field(default_factory=list)
    tls_dir: Path | None = None

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        if self.tls_dir is not None:
            shutil.rmtree(self.tls_dir, ignore_errors=True)


def _node_argv(port: int, bus: int, files: TlsFiles | None) -> list[str]:
    argv = [
        "--cluster-enabled", "yes",
        "--cluster-node-timeout", "2000",
        "--cluster-port", str(bus),
    ]  # fmt: skip
    if files is not None:  # after the recipe's --port: the last one counts
        argv += [
            "--port", "0", "--tls-port", str(port),
            "--tls-cert-file", str(files.server_cert),
            "--tls-key-file", str(files.server_key),
            "--tls-ca-cert-file", str(files.ca),
            # The cluster bus asks the connecting node for a certificate: the client one.
            "--tls-client-cert-file", str(files.client_cert),
            "--tls-client-key-file", str(files.client_key),
            "--tls-auth-clients", "no",
            "--tls-cluster", "yes", "--tls-replication", "yes",
        ]  # fmt: skip
    return argv


def _admin(host: str, port: int, files: TlsFiles | None) -> redis.Redis:
    tls: dict[str, Any] = {"ssl": True, "ssl_ca_certs": str(files.ca)} if files else {}
    return redis.Redis(host=host, port=port, socket_timeout=5, socket_connect_timeout=5, **tls)


def _join(host: str, ports: list[tuple[int, int]], files: TlsFiles | None) -> None:
    """Every node its share of the slots; every node but the first meets the first."""
    first, first_bus = ports[0]
    for i, (port, _) in enumerate(ports):
        r = _admin(host, port, files)
        try:
            low, high = i * SLOTS // len(ports), (i + 1) * SLOTS // len(ports) - 1
            r.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
            if i:
                r.execute_command("CLUSTER", "MEET", host, first, first_bus)
        finally:
            r.close()


def _ready(host: str, port: int, known: int, files: TlsFiles | None) -> bool:
    r = _admin(host, port, files)
    try:
        info = r.cluster("INFO")
    finally:
        r.close()
    return info.get("cluster_state") == "ok" and int(info.get("cluster_known_nodes", 0)) >= known


def _wait_ready(host: str, ports: list[int], files: TlsFiles | None) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while not all(_ready(host, p, len(ports), files) for p in ports):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the cluster did not reach cluster_state:ok in {READY_TIMEOUT:g}s")
        time.sleep(0.1)


def start_valkey_cluster(
    program: str,
    version: str,
    nodes: int = 3,
    host: str = LOOPBACK,
    tls: bool = False,
    extra: list[str] | None = None,
) -> ValkeyCluster:
    """`nodes` throw-away primaries joined into one cluster with every slot served; with
    `tls`, TLS only. `extra` goes to every node (memory, io-threads)."""
    tls_dir = Path(tempfile.mkdtemp(prefix="workbench-valkey-cluster-")) if tls else None
    files = make_tls_files(tls_dir) if tls_dir is not None else None
    started: list[ServerProcess] = []
    ports: list[tuple[int, int]] = []
    try:
        for _ in range(nodes):
            port, bus = free_port(host), free_port(host)
            argv = [*(extra or []), *_node_argv(port, bus, files)]
            started.append(
                start_resp_server(
                    program, "valkey", ("valkey", "valkeys"), version, port, host, extra=argv
                )
            )
            ports.append((port, bus))
        _join(host, ports, files)
        _wait_ready(host, [p for p, _ in ports], files)
    except BaseException:
        for s in started:
            s.stop()
        if tls_dir is not None:
            shutil.rmtree(tls_dir, ignore_errors=True)
        raise
    first = started[0]
    scheme = "valkeys" if files else "valkey"
    target: dict[str, Any] = {"url": f"{scheme}://{host}:{first.port}/0", "cluster": True}
    if files is not None:
        target["tls_ca"] = str(files.ca)
    return ValkeyCluster(
        name="valkey-cluster",
        process=first.process,
        host=first.host,
        port=first.port,
        version=f"{version} cluster of {nodes}",
        target_options=target,
        log_path=first.log_path,
        nodes=started,
        tls_dir=tls_dir,
    )


class ClusterConnection:
    """One RedisCluster per client (a connection per node each), so that a client's
    ASKING and the command it announces never land on different connections."""

    def __init__(self, target: ValkeyTarget) -> None:
        self.target = target
        self.kwargs = {k: v for k, v in target.kwargs(True).items() if k != "db"}
        self.clusters: list[RedisCluster] = []
        self.spare: RedisCluster | None = None  # the one connect() checked with
        self.readers: dict[str, InfoReader] = {}  # INFO by node address

    async def open(self) -> RedisCluster:
        r = RedisCluster(**self.kwargs)
        self.clusters.append(r)
        await r.initialize()  # CLUSTER SLOTS
        return r

    async def client(self) -> AsyncClient:
        r, self.spare = self.spare or await self.open(), None
        return ClusterClient(r, self.target)  # type: ignore[arg-type]

    async def server_stats(self) -> dict[str, Any]:
        """INFO of every primary: the figures summed, and each node's CPU seconds as
        ``node_cpu@HOST:PORT`` (the engine reads the nodes' shares from them)."""
        r = self.spare or (self.clusters[0] if self.clusters else None)
        figures: dict[str, Any] = {}
        for node in r.get_primaries() if r is not None else ():
            address = f"{node.host}:{node.port}"
            if address not in self.readers:
                self.readers[address] = InfoReader(
                    replace(self.target, host=node.host, port=node.port)
                )
            try:
                info = await self.readers[address].read()
            except (OSError, redis.RedisError):
                continue  # a node gone: the others still report
            if all(k in info for k in CPU_FIELDS):
                figures[f"{NODE_CPU}{address}"] = sum(float(info[k]) for k in CPU_FIELDS)
            for k, v in info.items():
                figures[k] = v if isinstance(v, str) else figures.get(k, 0) + v
        return figures

    async def close(self) -> None:
        for reader in self.readers.values():
            await reader.close()
        for r in self.clusters:
            await r.aclose()


class ClusterClient(AsyncClient):
    async def _call(self, *args: Any) -> Any:
        try:
            return await self.r.execute_command(*args)
        except (RedisClusterException, ClusterDownError) as exc:
            # No node reachable, or the cluster lost slots: a lost connection, said so.
            raise AdapterError("connection", f"valkey cluster: {exc}") from exc
        except (redis.ResponseError, redis.ConnectionError) as exc:
            raise failure(exc, self.target) from exc


async def connect_cluster(system: dict[str, Any], strategy: dict[str, Any]) -> ClusterConnection:
    conn = ClusterConnection(parse_target(system))
    try:
        conn.spare = await conn.open()  # an unreachable cluster says so here
    except redis.RedisError as exc:
        await conn.close()
        raise ConnectionRefusedError(f"valkey cluster at {system['url']}: {exc}") from None
    return conn
