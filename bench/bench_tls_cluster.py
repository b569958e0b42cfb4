"""The native engine over TLS and over a three-node Redis Cluster against memtier_benchmark
(when it is on PATH) or redis-benchmark (not a test).

Starts one redis-server with `--tls-port` (certificates from a throw-away CA, as a managed
`target.server.tls = true` server gets), then a three-node cluster, and interleaves the
reference tool and the native engine A B A B in four shapes:
- TLS, 16 clients at pipeline 1 and pipelined 16 (memtier --tls / redis-benchmark --tls);
- cluster, 16 clients each with a connection to every node (48 connections), at pipeline 1
  and 16 (memtier --cluster-mode -c 16 / redis-benchmark --cluster -c 48).

memtier is the like-for-like peer: its --cluster-mode keys (memtier-0 .. memtier-N) spread
over every slot by CRC16, as the native keys do, and each of its clients holds a connection
to every node, as each native client does. redis-benchmark --cluster puts all of a node's
keys in ONE slot (a 3-byte hash tag), which costs a node less per GET (see the header the
run prints). Both sides GET 100-byte values that exist, from as many keys of the same
length, with as many connections and as many in flight on each.

Each pair prints both rates, client CPU and the servers' CPU (% of one core, nodes summed),
the ratio (target >= 1.0x), both hit shares, ops per client CPU-second, and for each tool
each node's CPU (% of a core over the run's wall time: memtier's is its test time and about
a second of connecting and reporting, native's includes its 0.5 s warm-up) and CPU per GET,
and the nodes' CPU per GET and GETs per read (counted by the nodes: steadier figures).

Usage: python bench/bench_tls_cluster.py [seconds per measurement] [pairs] [tls,cluster]
       [peers: memtier,redis-benchmark; default memtier when on PATH, else redis-benchmark]
The machine is shared and noisy: compare ratios within a pair, not absolute figures.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.cluster import RedisCluster
from workbench_redis.cluster import start_cluster
from workbench_redis.server import start_redis

from workbench.sdk.servers import ServerProcess
from workbench.spec.model import Spec, spec_from_dict, spec_to_dict
from workbench.spec.native_binary import binary_path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_native import (  # a sibling script, not a package
    KEYS,
    VALUE,
    _exit_on_term,
    _spec,
    loadavg,
    measured,
    memtier,
    native,
    pair_line,
    prefill_reference,
    proc_cpu,
    reference,
)

NODES = 3
CLIENTS = 16  # native clients, each with a connection to every node of a cluster
# redis-benchmark's keys: key:__rand_int__ is "key:" + 12 digits (16 bytes); with --cluster,
# key:{tag}:__rand_int__ carries each node's first slot as a 3-byte tag (22 bytes).
REDIS_BENCHMARK_KEY_LENGTH = 16
REDIS_BENCHMARK_CLUSTER_KEY_LENGTH = 22


def memtier_key_length(keys: int) -> int:
    """The length of most of memtier's keys memtier-0 .. memtier-`keys`: those with as many
    digits as the largest index below `keys` (9 in 10 of 10,000; 2 in 3 of 30,000)."""
    return len("memtier-") + len(str(keys - 1))


@dataclass
class Target:
    """What the pairs run against: one TLS server, or the nodes of a cluster."""

    name: str
    server: ServerProcess
    nodes: list[ServerProcess]
    cli: list[str]  # redis-cli and redis-benchmark arguments for TLS (none for plain)
    options: dict[str, Any]  # the native spec's target options

    @property
    def pids(self) -> list[int]:
        return [n.pid for n in self.nodes]

    @property
    def cluster(self) -> bool:
        return len(self.nodes) > 1

    @property
    def keys(self) -> int:
        """Keys per run: KEYS on each node (redis-benchmark -r KEYS gives each node KEYS)."""
        return KEYS * len(self.nodes)


@dataclass
class Peer:
    """A reference tool: its name, how to run one measurement and the native keys that are
    like its keys."""

    name: str
    run: Callable[[Target, int, int, float], tuple[float, float]]  # -> (ops/s, CPU share)
    key_length: Callable[[Target], int]
    prefill: Callable[[Target], None]
    flags: Callable[[Target, int, int], str]  # its command line, for the labels


def memtier_flags(target: Target, clients: int, pipeline: int) -> list[str]:
    mode = ["--cluster-mode"] if target.cluster else []
    tls = ["--tls", "--cacert", str(target.options["tls_ca"])] if "tls_ca" in target.options else []
    return [*mode, *tls, "-t", "1", "-c", str(clients), "--pipeline", str(pipeline),
            "--ratio", "0:1", "-d", str(VALUE)]  # fmt: skip


def memtier_reference(
    target: Target, clients: int, pipeline: int, seconds: float
) -> tuple[float, float]:
    """memtier: one thread of `clients` clients; in --cluster-mode each client holds a
    connection to every node, and --pipeline applies per connection, as in the native engine."""
    flags = memtier_flags(target, clients, pipeline)
    return memtier(target.server.host, target.server.port, flags, seconds, target.keys)


def memtier_label(target: Target, clients: int, pipeline: int) -> str:
    mode = "--cluster-mode" if target.cluster else "--tls"
    return f"memtier {mode} -t 1 -c {clients} --pipeline {pipeline}"


def prefill_memtier_redis(target: Target) -> None:
    """Set memtier-0 .. memtier-N (its GETs draw from 0 to --key-maximum), so that its GETs
    all hit as the native engine's prefilled ones do."""
    value = b"x" * VALUE
    host, port = target.server.host, target.server.port
    tls: dict[str, Any] = (
        {"ssl": True, "ssl_ca_certs": str(target.options["tls_ca"])}
        if "tls_ca" in target.options
        else {}
    )
    client: Any = (
        RedisCluster(host=host, port=port) if target.cluster else redis.Redis(host, port, **tls)
    )
    try:
        for start in range(0, target.keys + 1, 1000):
            pipe = client.pipeline(transaction=False)
            for i in range(start, min(start + 1000, target.keys + 1)):
                pipe.set(f"memtier-{i}", value)
            pipe.execute()
    finally:
        client.close()


def redis_benchmark_reference(
    target: Target, clients: int, pipeline: int, seconds: float
) -> tuple[float, float]:
    """redis-benchmark -n sized from its last rate; with --cluster each of its clients is one
    connection to one node, so -c 48 holds as many connections as 16 native clients do."""
    key = (target.name, pipeline)
    requests = max(int(seconds * _rates.get(key, 30_000.0 if pipeline == 1 else 200_000.0)), 10_000)
    cluster = ["--cluster"] if target.cluster else []
    out, _wall, cpu = reference(
        ["redis-benchmark", "-h", target.server.host, "-p", str(target.server.port), *target.cli,
         *cluster, "-t", "get", "-n", str(requests), "-c", str(clients * len(target.nodes)),
         "-P", str(pipeline), "-r", str(KEYS), "-d", str(VALUE), "--csv"]
    )  # fmt: skip
    table = out[out.find('"test"') :]  # --cluster prints the nodes first
    rows = {r["test"]: float(r["rps"]) for r in csv.DictReader(io.StringIO(table))}
    rate = rows.get("GET", 0.0)
    if rate:
        _rates[key] = rate
    return rate, cpu / (requests / rate) if rate else 0.0


_rates: dict[tuple[str, int], float] = {}


def redis_benchmark_label(target: Target, clients: int, pipeline: int) -> str:
    mode = "--cluster" if target.cluster else "--tls"
    return f"redis-benchmark {mode} -c {clients * len(target.nodes)} -P {pipeline}"


PEERS = {
    "memtier": Peer(
        "memtier",
        memtier_reference,
        lambda t: memtier_key_length(t.keys),
        prefill_memtier_redis,
        memtier_label,
    ),
    "redis-benchmark": Peer(
        "redis-benchmark",
        redis_benchmark_reference,
        lambda t: REDIS_BENCHMARK_CLUSTER_KEY_LENGTH if t.cluster else REDIS_BENCHMARK_KEY_LENGTH,
        lambda t: prefill_reference(
            ["-h", t.server.host, "-p", str(t.server.port), *t.cli]
            + (["--cluster"] if t.cluster else []),
            len(t.nodes),
        ),
        redis_benchmark_label,
    ),
}


def native_spec(target: Target, peer: Peer, clients: int, pipeline: int, seconds: float,
                prefill: bool) -> Spec:  # fmt: skip
    """The native side: as many keys as the peer's (KEYS per node, over every slot), as
    long as most of its keys."""
    data = spec_to_dict(_spec("redis", target.options, clients, pipeline, seconds, prefill))
    data["workload"].update(keys=target.keys, key_length=peer.key_length(target))
    return spec_from_dict(data)


@dataclass
class NodeCounters:
    """What one node did so far: CPU seconds, GETs, socket reads, keyspace hits and misses."""

    cpu: float
    gets: int
    reads: int
    hits: int
    misses: int

    def __sub__(self, other: NodeCounters) -> NodeCounters:
        return NodeCounters(
            self.cpu - other.cpu,
            self.gets - other.gets,
            self.reads - other.reads,
            self.hits - other.hits,
            self.misses - other.misses,
        )


def node_counters(target: Target) -> list[NodeCounters]:
    """Each node's counters (its /proc CPU, INFO commandstats and stats via redis-cli)."""
    counters = []
    for node in target.nodes:
        out = subprocess.run(
            ["redis-cli", "-h", node.host, "-p", str(node.port), *target.cli, "INFO", "all"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        info = dict(ln.strip().split(":", 1) for ln in out.splitlines() if ":" in ln)
        get = dict(kv.split("=") for kv in info.get("cmdstat_get", "calls=0").split(","))
        counters.append(
            NodeCounters(
                proc_cpu(node.pid),
                int(get["calls"]),
                int(info["total_reads_processed"]),
                int(info["keyspace_hits"]),
                int(info["keyspace_misses"]),
            )
        )
    return counters


def served(target: Target, run: Callable[[], Any]) -> tuple[Any, list[NodeCounters], float]:
    """`run()`'s result, what each node did meanwhile, and the wall seconds it took."""
    before, t0 = node_counters(target), time.monotonic()
    result = run()
    wall = time.monotonic() - t0
    return result, [a - b for a, b in zip(node_counters(target), before, strict=True)], wall


def nodes_summary(label: str, nodes: list[NodeCounters], wall: float) -> str:
    """Hit share; each node's CPU (% of a core over the run's wall time) and CPU per GET;
    the nodes' CPU per GET and GETs per read: the like-for-like measures, which the load of
    a shared machine moves far less than the rates."""
    gets = sum(n.gets for n in nodes)
    reads = sum(n.reads for n in nodes)
    looked = sum(n.hits + n.misses for n in nodes)
    hits = sum(n.hits for n in nodes) / looked if looked else float("nan")
    per_node = " ".join(
        f"{n.cpu / wall * 100:.0f}%/{n.cpu / n.gets * 1e6 if n.gets else float('nan'):.2f}"
        for n in nodes
    )
    per_get = sum(n.cpu for n in nodes) / gets * 1e6 if gets else float("nan")
    per_read = gets / reads if reads else float("nan")
    return (
        f"{label}: hits {hits:.1%}, node CPU/us per GET {per_node}; {per_get:.2f} us/GET,"
        f" {per_read:.1f} GETs/read"
    )


def pairs_of(target: Target, peer: Peer, seconds: float, pairs: int, binary: Path) -> None:
    """A B A B at pipeline 1 and 16, 16 clients (each with a connection to every node)."""
    c = CLIENTS
    for pipeline in (1, 16):
        label = f"{target.name} c=16{'x3' if target.cluster else ''} P={pipeline}"
        print(f"  {label}: {peer.flags(target, c, pipeline)} against native")
        for _ in range(pairs):
            before = loadavg()
            (ref, sref), ref_nodes, ref_wall = served(
                target,
                lambda p=pipeline: measured(target.pids, lambda: peer.run(target, c, p, seconds)),
            )
            idle = [0.0]
            spec = native_spec(target, peer, c, pipeline, seconds, False)
            (wb, swb), wb_nodes, wb_wall = served(
                target,
                lambda spec=spec, idle=idle: measured(
                    target.pids, lambda: native(binary, spec, polled=idle)
                ),
            )
            print(pair_line(label, ref, wb, (sref, swb)) + " (target >= 1.0x)")
            busy = wb[1] - idle[0]  # the client's CPU less its idle polling for replies
            print(
                f"    ops per client CPU-second {peer.name} {ref[0] / ref[1] if ref[1] else 0:,.0f}"
                f" native {wb[0] / wb[1] if wb[1] else 0:,.0f}"
                f" ({wb[0] / busy if busy > 0 else 0:,.0f} without its idle polling,"
                f" {idle[0] * 100:.0f}% of a core); load average {before} -> {loadavg()}"
            )
            print(
                "    "
                + nodes_summary(peer.name, ref_nodes, ref_wall)
                + " | "
                + nodes_summary("native", wb_nodes, wb_wall)
            )


def header(target: Target, peer: Peer) -> None:
    length = peer.key_length(target)
    spread = "over every slot by CRC16" if target.cluster else "on one server"
    if peer.name == "memtier":
        theirs = (
            f"memtier-0 .. memtier-{target.keys} (most {length} B) {spread}, drawn uniformly;"
            " --pipeline keeps up to that many in flight on each connection"
        )
    elif target.cluster:
        theirs = (
            f"key:{{tag}}:<12 digits> ({length} B): {KEYS:,} keys per node, all in ONE slot"
            " (each node's first slot as a 3-byte hash tag: the node hashes 3 bytes and"
            " touches one slot, a lighter GET than keys spread over every slot); -P writes a"
            " batch and waits for all its replies"
        )
    else:
        theirs = f"key:<12 digits> ({length} B), {KEYS:,} keys; -P batches as above"
    print(
        f"\n{target.name}, peer {peer.name}: GET of {VALUE}-byte values, all set beforehand"
        f" (both hit shares are printed)\n  {peer.name}: {theirs}\n"
        f"  native: {target.keys:,} keys of {length} B {spread}, drawn uniformly; 16 clients"
        + (
            f" each with a connection to each of the {len(target.nodes)} nodes; a client parks"
            " each GET in its node's queue, draws until a node whose last batch is answered"
            " has a whole batch queued (at most 4 x pipeline x nodes parked), and writes it"
            if target.cluster
            else ""
        )
    )


def main() -> None:
    signal.signal(signal.SIGTERM, _exit_on_term)
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    sections = (sys.argv[3] if len(sys.argv) > 3 else "tls,cluster").split(",")
    default_peer = "memtier" if shutil.which("memtier_benchmark") else "redis-benchmark"
    peers = [
        PEERS[name] for name in (sys.argv[4] if len(sys.argv) > 4 else default_peer).split(",")
    ]
    if any(p.name == "memtier" for p in peers) and not shutil.which("memtier_benchmark"):
        sys.exit("memtier_benchmark is not on PATH")
    binary = binary_path()
    if binary is None:
        sys.exit("the native engine is not built: run ./dev setup")
    print(f"{os.cpu_count()} CPUs, load average {loadavg()}; a shared machine")
    print(f"{seconds:g} s per measurement, {pairs} pairs, A B A B; peers {[p.name for p in peers]}")
    if "tls" in sections:
        with start_redis(tls=True) as server:
            ca = str(server.target_options["tls_ca"])
            options = {"url": server.target_options["url"], "tls_ca": ca}
            target = Target("TLS", server, [server], ["--tls", "--cacert", ca], options)
            print(f"\nTLS Redis {server.version}, one server process (TLS 1.3, throw-away CA)")
            run_target(target, peers, seconds, pairs, binary)
    if "cluster" in sections:
        with start_cluster(NODES) as cluster:
            options = {"url": cluster.target_options["url"], "cluster": True}
            target = Target("cluster", cluster, list(cluster.nodes), [], options)
            print(f"\nRedis Cluster of {NODES}, Redis {cluster.version}")
            run_target(target, peers, seconds, pairs, binary)


def run_target(target: Target, peers: list[Peer], seconds: float, pairs: int, binary: Path) -> None:
    for peer in peers:
        peer.prefill(target)
        native(binary, native_spec(target, peer, CLIENTS, 1, 0.5, prefill=True))  # its keys exist
        header(target, peer)
        pairs_of(target, peer, seconds, pairs, binary)


if __name__ == "__main__":
    main()
