"""Redis Cluster: a managed cluster of throw-away redis-servers joined by
``redis-cli --cluster create`` (which also makes replicas), on the SDK's recipe
(`workbench.sdk.resp.cluster_servers`); the ``cluster`` strategy is the SDK's
(`workbench.sdk.resp.cluster`).
"""

from __future__ import annotations

import subprocess

from workbench.sdk import LOOPBACK, ServerProcess, TlsFiles, require_program
from workbench.sdk.resp.cluster_servers import ClusterProcess, start_resp_cluster
from workbench_redis.server import start_redis
from workbench_redis.target import SYSTEM


def _create(replicas: int, host: str, ports: list[tuple[int, int]], files: TlsFiles | None) -> None:
    """``redis-cli --cluster create``: every slot assigned, `replicas` replicas a primary."""
    cli = require_program("redis-cli", "redis-tools")
    cli_tls = ["--tls", "--cacert", str(files.ca)] if files else []
    addresses = [f"{host}:{port}" for port, _ in ports]
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


def start_cluster(
    nodes: int = 3, host: str = LOOPBACK, binary: str = "", replicas: int = 0, tls: bool = False
) -> ClusterProcess:
    """N throw-away primaries (and `replicas` replicas of each) joined into one cluster with
    every slot assigned; with `tls`, over TLS only."""
    require_program("redis-cli", "redis-tools")  # before any node starts

    def start_node(port: int, argv: list[str]) -> ServerProcess:
        return start_redis(port=port, host=host, binary=binary, extra=argv)

    return start_resp_cluster(
        SYSTEM,
        start_node,
        nodes,
        host,
        tls,
        join=lambda h, ports, files: _create(replicas, h, ports, files),
        replicas=replicas,
    )
