"""The native engine over TLS against redis-benchmark --tls, on a throw-away TLS redis-server
(not a test).

Starts one redis-server with `--tls-port` (certificates from a throw-away CA, as a managed
`target.server.tls = true` server gets) and interleaves redis-benchmark --tls and the native
engine A B A B in two shapes: 16 clients at pipeline 1, and 16 clients pipelined 16. Each
pair prints both rates, the client's and the server's CPU (% of one core) and the ratio
(target >= 1.0x). GET of 100-byte values that exist.

Then a three-node Redis Cluster: the native engine's cluster mode (16 clients, each with a
connection to every node: 48 connections) against redis-benchmark --cluster -c 48 (each
of its clients one connection to one node), at pipeline 1 and 16, with the nodes' CPU
summed as the server's; memtier_benchmark --cluster-mode too when it is on PATH. Both
sides GET 100-byte values that exist, with keys of the same length and as many keys on
each node; the run prints what each side does, and per pair the nodes' CPU per GET and
GETs per read for each tool.

Usage: python bench/bench_tls_cluster.py [seconds per measurement] [pairs] [tls,cluster]
The machine is shared and noisy: compare ratios within a pair, not absolute figures.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import redis
from workbench_redis.cluster import start_cluster
from workbench_redis.server import start_redis

from workbench.native_build import binary_path
from workbench.servers import ServerProcess
from workbench.spec.model import Spec, spec_from_dict, spec_to_dict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_native import (  # a sibling script, not a package
    KEYS,
    VALUE,
    _exit_on_term,
    _spec,
    children_cpu,
    hit_share,
    loadavg,
    measured,
    memtier_run,
    native,
    pair_line,
    prefill_reference,
    reference,
)


def tls_args(server: ServerProcess) -> list[str]:
    return ["--tls", "--cacert", str(server.target_options["tls_ca"])]


def redis_benchmark_tls(
    server: ServerProcess, clients: int, pipeline: int, requests: int
) -> tuple[float, float]:
    out, _wall, cpu = reference(
        ["redis-benchmark", "-h", server.host, "-p", str(server.port), *tls_args(server),
         "-t", "get", "-n", str(requests), "-c", str(clients), "-P", str(pipeline),
         "-r", str(KEYS), "-d", str(VALUE), "--csv"]
    )  # fmt: skip
    rows = {r["test"]: float(r["rps"]) for r in csv.DictReader(io.StringIO(out))}
    rate = rows["GET"]
    return rate, cpu / (requests / rate)


def main() -> None:
    signal.signal(signal.SIGTERM, _exit_on_term)
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    sections = set((sys.argv[3] if len(sys.argv) > 3 else "tls,cluster").split(","))
    binary = binary_path()
    if binary is None:
        sys.exit("the native engine is not built: run ./dev setup")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; a shared machine")
    print(f"GET of {VALUE} B values, {KEYS} keys, {seconds:g} s per measurement, A B A B\n")
    if "tls" in sections:
        tls_shapes(seconds, pairs)
    if "cluster" in sections:
        cluster_shape(seconds, pairs)


def tls_shapes(seconds: float, pairs: int) -> None:
    """16 clients at pipeline 1 and pipelined 16 over TLS, against redis-benchmark --tls."""
    binary = binary_path()
    assert binary is not None
    with start_redis(tls=True) as redis:
        options = {"url": redis.target_options["url"], "tls_ca": redis.target_options["tls_ca"]}
        prefill_reference(["-h", redis.host, "-p", str(redis.port), *tls_args(redis)], 1)
        native(binary, _spec("redis", options, 16, 1, 0.5, prefill=True))
        print(f"TLS Redis {redis.version}, one server process (TLS 1.3, throw-away CA)")
        shapes = (
            ("TLS P=1 c=16 vs redis-benchmark --tls -c 16", 16, 1),
            ("TLS P=16 c=16 vs redis-benchmark --tls -c 16 -P 16", 16, 16),
        )
        for label, c, p in shapes:
            rate = 30_000.0 if p == 1 else 200_000.0  # a first guess; then what it measured
            for _ in range(pairs):
                n = max(int(seconds * rate), 10_000)
                ref, sref = measured(
                    [redis.pid], lambda c=c, p=p, n=n: redis_benchmark_tls(redis, c, p, n)
                )
                rate = ref[0] or rate
                wb, swb = measured(
                    [redis.pid],
                    lambda c=c, p=p: native(binary, _spec("redis", options, c, p, seconds, False)),
                )
                print(pair_line(label, ref, wb, (sref, swb)) + " (target >= 1.0x)")


NODES = 3
# redis-benchmark --cluster's keys: key:{tag}:__rand_int__ = "key:" + "{06S}" + ":" + 12
# digits, its tag each node's first slot (22 bytes); the native keys get the same length.
REF_KEY_LENGTH = 22


def redis_benchmark_cluster(
    cluster: ServerProcess, connections: int, pipeline: int, requests: int
) -> tuple[float, float]:
    """redis-benchmark --cluster: each of its clients is one connection to one node."""
    out, _wall, cpu = reference(
        ["redis-benchmark", "-h", cluster.host, "-p", str(cluster.port), "--cluster",
         "-t", "get", "-n", str(requests), "-c", str(connections), "-P", str(pipeline),
         "-r", str(KEYS), "-d", str(VALUE), "--csv"]
    )  # fmt: skip
    table = out[out.find('"test"') :]  # --cluster prints the nodes first
    rows = {r["test"]: float(r["rps"]) for r in csv.DictReader(io.StringIO(table))}
    rate = rows.get("GET", 0.0)
    return rate, cpu / (requests / rate) if rate else 0.0


def cluster_spec(options: dict[str, Any], clients: int, pipeline: int, seconds: float,
                 prefill: bool) -> Spec:  # fmt: skip
    """The native side of the cluster pairs: as many keys on each node as redis-benchmark
    -r KEYS gives each node (KEYS x NODES over all slots), of its key length."""
    data = spec_to_dict(_spec("redis", options, clients, pipeline, seconds, prefill))
    data["workload"].update(keys=KEYS * NODES, key_length=REF_KEY_LENGTH)
    return spec_from_dict(data)


def node_work(ports: list[int]) -> tuple[int, int]:
    """The nodes' GETs and socket reads so far, summed (INFO commandstats and stats)."""
    gets = reads = 0
    for port in ports:
        r = redis.Redis(port=port)
        try:
            gets += int(r.info("commandstats").get("cmdstat_get", {}).get("calls", 0))
            reads += int(r.info("stats")["total_reads_processed"])
        finally:
            r.close()
    return gets, reads


def nodes_line(label: str, cpu: float, gets: int, reads: int) -> str:
    """The nodes' CPU per GET and GETs per read: the like-for-like measures of a pair, which
    the load of a shared machine moves far less than the rates."""
    per_op = cpu / gets * 1e6 if gets else float("nan")
    per_read = gets / reads if reads else float("nan")
    return f"{label} {per_op:.2f} us/GET, {per_read:.1f} GETs/read"


def cluster_header() -> None:
    print(
        f"\nRedis Cluster of {NODES}: what each side does (GET of {VALUE}-byte values, all set"
        " beforehand: both hit shares are printed)\n"
        f"  redis-benchmark --cluster -c 48 [-P 16] -r {KEYS} -d {VALUE}: 16 connections to"
        " each node, each client one connection to one node; its keys key:{tag}:<12 digits>"
        f" ({REF_KEY_LENGTH} B) carry the node's first slot as a hash tag: {KEYS:,} keys per"
        " node, all in one slot; at -P 16 a connection writes 16 GETs, waits for all 16"
        " replies, then writes 16 more\n"
        f"  native cluster mode, 16 clients x {NODES} nodes: 16 connections to each node;"
        f" {KEYS * NODES:,} keys of {REF_KEY_LENGTH} B (about {KEYS:,} per node) spread over"
        " every slot by CRC16, drawn uniformly; at pipeline 16 a client parks each drawn GET"
        " in its node's queue and writes a node the queue (at most 16) in one batch once all"
        " replies of the node's last batch are in\n"
        "  Per pair: rates, client and nodes' CPU (nodes summed), hit shares, and the nodes'"
        " CPU per GET and GETs per read for each tool (measures the load moves little)"
    )


def cluster_shape(seconds: float, pairs: int) -> None:
    """The native engine's cluster mode against redis-benchmark --cluster (and memtier
    --cluster-mode when it is on PATH), with as many connections on each side: 16 native
    clients hold a connection to each of the 3 nodes, so redis-benchmark gets -c 48.
    Like for like: the same value size, key length and keys per node; both tools' keys
    are set beforehand and each pair prints both hit shares (until this was checked,
    redis-benchmark's cluster GETs all missed, a cheaper reply for the nodes than the
    native engine's hits), the nodes' CPU per GET and GETs per read, the load average and
    the client's CPU less the native engine's idle polling."""
    binary = binary_path()
    assert binary is not None
    with start_cluster(NODES) as cluster:
        pids = [n.pid for n in cluster.nodes]
        ports = [n.port for n in cluster.nodes]
        nodes = [["-h", n.host, "-p", str(n.port)] for n in cluster.nodes]
        options = {"url": cluster.target_options["url"], "cluster": True}
        native(binary, cluster_spec(options, 16, 1, 0.5, prefill=True))  # keys exist
        prefill_reference(["-h", cluster.host, "-p", str(cluster.port), "--cluster"], NODES)
        print(f"Redis {cluster.version}")
        cluster_header()
        shapes = (
            ("cluster c=16x3 vs redis-benchmark --cluster -c 48", 16, 1),
            ("cluster c=16x3 P=16 vs --cluster -c 48 -P 16", 16, 16),
        )
        for label, c, p in shapes:
            rate = 30_000.0 if p == 1 else 200_000.0
            for _ in range(pairs):
                before = loadavg()
                n = max(int(seconds * rate), 10_000)
                w0, c0 = node_work(ports), children_cpu(pids)
                (ref, sref), ref_hits = hit_share(
                    nodes,
                    lambda p=p, n=n: measured(
                        pids, lambda: redis_benchmark_cluster(cluster, 48, p, n)
                    ),
                )
                w1, c1 = node_work(ports), children_cpu(pids)
                rate = ref[0] or rate
                idle = [0.0]
                spec = cluster_spec(options, c, p, seconds, False)
                (wb, swb), wb_hits = hit_share(
                    nodes,
                    lambda spec=spec, idle=idle: measured(
                        pids, lambda: native(binary, spec, polled=idle)
                    ),
                )
                w2, c2 = node_work(ports), children_cpu(pids)
                print(pair_line(label, ref, wb, (sref, swb)) + " (target >= 1.0x)")
                busy = wb[1] - idle[0]
                less = (
                    f", native less idle polling {wb[0] / busy / (ref[0] / ref[1]):.2f}x"
                    if (busy > 0 and ref[1])
                    else ""
                )
                print(
                    f"    hits ref {ref_hits:.1%} native {wb_hits:.1%}; idle polling"
                    f" {idle[0] * 100:.0f}%{less}; load average {before} -> {loadavg()}"
                )
                print(
                    "    nodes: "
                    + nodes_line("ref", c1 - c0, w1[0] - w0[0], w1[1] - w0[1])
                    + " | "
                    + nodes_line("native", c2 - c1, w2[0] - w1[0], w2[1] - w1[1])
                )
                if shutil.which("memtier_benchmark"):
                    flags = ["--cluster-mode", "-t", "1", "-c", str(c), "--pipeline", str(p),
                             "--ratio", "0:1", "-d", str(VALUE)]  # fmt: skip
                    mt = memtier_run(cluster.host, cluster.port, flags, seconds)
                    print(f"  {'memtier --cluster-mode -t 1 -c ' + str(c):<34} {mt:>13,.0f}/s")


if __name__ == "__main__":
    main()
