"""Valkey Cluster: a managed cluster of throw-away valkey-servers, each given an even range
of the slots and introduced by CLUSTER MEET, on the SDK's recipe
(`workbench.sdk.resp.cluster_servers`); the ``cluster`` strategy is the SDK's
(`workbench.sdk.resp.cluster`)."""

from __future__ import annotations

from workbench.sdk import LOOPBACK, ServerProcess
from workbench.sdk.resp.cluster_servers import ClusterProcess, start_resp_cluster
from workbench.sdk.resp_server import start_resp_server
from workbench_valkey.target import SYSTEM


def start_valkey_cluster(
    program: str,
    version: str,
    nodes: int = 3,
    host: str = LOOPBACK,
    tls: bool = False,
    extra: list[str] | None = None,
) -> ClusterProcess:
    """`nodes` throw-away primaries joined into one cluster with every slot served; with
    `tls`, TLS only. `extra` goes to every node (memory, io-threads)."""

    def start_node(port: int, argv: list[str]) -> ServerProcess:
        return start_resp_server(
            program,
            "valkey",
            ("valkey", "valkeys"),
            version,
            port,
            host,
            extra=[*(extra or []), *argv],
        )

    return start_resp_cluster(SYSTEM, start_node, nodes, host, tls)
