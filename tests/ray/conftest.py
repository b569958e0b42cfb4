"""Ray clusters for the tests: two nodes on 127.0.0.1 (`two_nodes`), or machines made of
network namespaces with addresses of their own (`hosts`, see netbed.py).

`two_nodes`: a two-node Ray cluster on this machine, on 127.0.0.1 only, stopped by its pids.

`ray start --address=...` refuses a loopback address for a second node (it swaps
127.0.0.1 for the machine's outward address), so the nodes are started the way Ray's own
tests start several nodes on one machine: `ray.cluster_utils.Cluster`, each node with one
CPU, the second with its own "node2" resource. Every process is listed by pid before the
cluster is torn down, and the fixture fails if any of them is still alive afterwards.
"""

from __future__ import annotations

import os

# Read when ray is imported: keeps every Ray address, the driver's included, on 127.0.0.1.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import contextlib
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import netbed
import pytest
from ray.cluster_utils import Cluster  # `./dev test` installs the ray extra

OBJECT_STORE = 80 * 1024 * 1024
FAST_HEALTH_CHECKS = {  # a killed node is noticed in about 1.5 s, not 30 s
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
}


@dataclass
class TwoNodes:
    address: str
    cluster: Any
    second: Any  # the Node with the "node2" resource

    def raylet_pid(self, node: Any) -> int:
        return node.all_processes["raylet"][0].process.pid


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found.add(int(entry))
    return found


def _tree(pids: set[int]) -> set[int]:
    """The pids and all their descendants."""
    todo, seen = list(pids), set()
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo += _children(pid)
    return seen


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _node_pids(node: Any) -> set[int]:
    return {p.process.pid for infos in node.all_processes.values() for p in infos}


def _started_in(temp: str) -> set[int]:
    """Processes whose command line names the cluster's directory (its Ray processes)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as f:
                if temp.encode() in f.read():
                    found.add(int(entry))
    return found


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[TwoNodes]:
    temp = tempfile.mkdtemp(prefix="wbray", dir="/tmp")  # short: Ray's socket paths must fit
    saved = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = temp  # Ray notes the cluster's address there, not in /tmp/ray
    os.makedirs(os.path.join(temp, "ray"))
    common = {
        "node_ip_address": "127.0.0.1",
        "num_cpus": 1,
        "object_store_memory": OBJECT_STORE,
        "include_dashboard": False,
        "temp_dir": temp,
    }
    cluster = Cluster(shutdown_at_exit=False)
    nodes = []
    try:
        nodes.append(
            cluster.add_node(
                **common,
                gcs_server_port=_free_port(),
                dashboard_host="127.0.0.1",
                _system_config=FAST_HEALTH_CHECKS,
            )
        )
        nodes.append(cluster.add_node(**common, resources={"node2": 1}))
        yield TwoNodes(cluster.address, cluster, nodes[1])
    finally:
        # Every process of both nodes, and everything they started (the worker actors).
        pids = _tree(set().union(_started_in(temp), *(_node_pids(n) for n in nodes)))
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for n in nodes:  # reap the ones this process started
            for infos in n.all_processes.values():
                for p in infos:
                    with contextlib.suppress(Exception):
                        p.process.wait(timeout=5)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        if saved is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = saved
        shutil.rmtree(temp, ignore_errors=True)
        left = [p for p in pids if alive(p)]
        assert not left, f"Ray processes still alive after SIGKILL: {left}"


@pytest.fixture(scope="module")
def hosts() -> Iterator[netbed.Bed]:
    """Three machines on one switch (netbed): srv (10.77.0.1) runs redis-server on its own;
    a (10.77.0.2) is the Ray head, where the workbench runs; b (10.77.0.3) a Ray node.
    Token authentication on, as docs/distributed.md sets it up. Removed afterwards by pid
    and by the names of the namespaces made."""
    reason = netbed.why_not()
    if reason:
        pytest.skip(reason)
    bed = netbed.Bed.make(["srv", "a", "b"])
    try:
        netbed.redis_on(bed["srv"], 6379, "--protected-mode", "no")
        token = netbed.ray_token(bed["a"])
        netbed.copy_token(token, bed["b"])
        netbed.ray_head(bed["a"])
        netbed.ray_join(bed["b"], bed["a"])
        yield bed
    finally:
        left = bed.remove()
        assert not left, f"processes of the test bed still alive: {left}"
