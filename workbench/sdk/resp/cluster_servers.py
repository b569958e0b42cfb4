"""A managed cluster of throw-away RESP servers (Redis Cluster and the forks that keep it).

`start_resp_cluster` starts the nodes with ``cluster-enabled yes`` on free loopback ports
(each with its bus port named: port + 10000 may not be free), has the plugin join them
(`join_by_meet`, or the plugin's own: ``redis-cli --cluster create`` for replicas) and
waits (bounded) until every node sees the cluster whole. The cluster is one `ServerProcess`
(its first node's) that stops all of them. With `tls`, one throw-away CA signs every node's
certificate, and clients, the cluster bus and replication all speak TLS; its directory is
removed when the cluster stops.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from workbench.sdk.errors import TargetError
from workbench.sdk.resp.target import RespSystem
from workbench.sdk.scratch import scratch_dir
from workbench.sdk.servers import LOOPBACK, ServerProcess, free_port
from workbench.sdk.tls_certs import TlsFiles, make_tls_files

READY_TIMEOUT = 30.0  # seconds for every node to see the whole cluster
SLOTS = 16384

# Starts one node on the given port with the given extra arguments.
StartNode = Callable[[int, list[str]], ServerProcess]
# Joins the started nodes, given as (port, cluster bus port), into one cluster (every slot
# served).
Join = Callable[[str, list[tuple[int, int]], TlsFiles | None], None]


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


def node_argv(port: int, bus: int, files: TlsFiles | None) -> list[str]:
    """A cluster node's arguments: after the recipe's ``--port``, since the last one counts."""
    argv = [
        "--cluster-enabled", "yes",
        "--cluster-node-timeout", "2000",
        "--cluster-port", str(bus),
        # A replica syncs at once (not after the 5 s diskless default).
        "--repl-diskless-sync-delay", "0",
    ]  # fmt: skip
    if files is not None:
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


def admin(host: str, port: int, files: TlsFiles | None) -> redis.Redis:
    """A blocking client for setting a node up (CLUSTER MEET, CLUSTER INFO)."""
    tls: dict[str, Any] = {"ssl": True, "ssl_ca_certs": str(files.ca)} if files else {}
    return redis.Redis(host=host, port=port, socket_timeout=5, socket_connect_timeout=5, **tls)


def join_by_meet(host: str, ports: list[tuple[int, int]], files: TlsFiles | None) -> None:
    """Every node its even share of the slots; every node but the first meets the first."""
    first, first_bus = ports[0]
    for i, (port, _) in enumerate(ports):
        r = admin(host, port, files)
        try:
            low, high = i * SLOTS // len(ports), (i + 1) * SLOTS // len(ports) - 1
            r.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
            if i:
                r.execute_command("CLUSTER", "MEET", host, first, first_bus)
        finally:
            r.close()


def _ready(host: str, port: int, known: int, files: TlsFiles | None) -> bool:
    """The node sees the cluster whole (every slot served, every node known) and, if it is a
    replica, has its primary's data: only then can it take over."""
    r = admin(host, port, files)
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
    deadline = time.monotonic() + READY_TIMEOUT
    while not all(_ready(host, s.port, len(started), files) for s in started):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the cluster did not reach cluster_state:ok (replicas synced) in "
                f"{READY_TIMEOUT:g}s"
            )
        time.sleep(0.1)


def start_resp_cluster(
    system: RespSystem,
    start_node: StartNode,
    primaries: int,
    host: str = LOOPBACK,
    tls: bool = False,
    join: Join = join_by_meet,
    replicas: int = 0,
) -> ClusterProcess:
    """`primaries` nodes (and `replicas` more for each, which `join` must make replicas:
    `join_by_meet` makes none) started by `start_node`, joined by `join` into one cluster;
    with `tls`, TLS only."""
    tls_dir = scratch_dir(f"{system.name}-cluster") if tls else None
    files = make_tls_files(tls_dir) if tls_dir is not None else None
    started: list[ServerProcess] = []
    ports: list[tuple[int, int]] = []
    try:
        for _ in range(primaries * (1 + replicas)):
            port, bus = free_port(host), free_port(host)
            started.append(start_node(port, node_argv(port, bus, files)))
            ports.append((port, bus))
        join(host, ports, files)
        _wait_ready(host, started, files)
    except BaseException:
        for s in started:
            s.stop()
        if tls_dir is not None:
            shutil.rmtree(tls_dir, ignore_errors=True)
        raise
    first = started[0]
    scheme = system.tls if files else system.plain
    target: dict[str, Any] = {"url": f"{scheme}://{host}:{first.port}/0", "cluster": True}
    if files is not None:
        target["tls_ca"] = str(files.ca)
    each = f" with {replicas} replica(s) each" if replicas else ""
    return ClusterProcess(
        name=f"{system.name}-cluster",
        process=first.process,
        host=first.host,
        port=first.port,
        version=f"{first.version} cluster of {primaries}{each}",
        target_options=target,
        log_path=first.log_path,
        nodes=started,
        tls_dir=tls_dir,
    )


def refuse_client_certs(options: Mapping[str, Any]) -> None:
    """A managed cluster's nodes ask each other for the client certificate on the bus, so
    a cluster cannot also require one of the workbench's clients (``tls_auth_clients``)."""
    if options.get("tls_auth_clients"):
        raise TargetError(
            "a managed cluster takes no client certificates (tls_auth_clients); "
            "use tls = true alone",
            "target.server.tls_auth_clients",
        )
