"""The native engine over TLS against redis-benchmark --tls, on a throw-away TLS redis-server
(not a test).

Starts one redis-server with `--tls-port` (certificates from a throw-away CA, as a managed
`target.server.tls = true` server gets) and interleaves redis-benchmark --tls and the native
engine A B A B in two shapes: 16 clients at pipeline 1, and 16 clients pipelined 16. Each
pair prints both rates, the client's and the server's CPU (% of one core) and the ratio
(target >= 1.0x). GET of 100-byte values that exist.

Then a managed three-node Redis Cluster: redis-benchmark --cluster -c 16 against
`workbench run --cluster-mode -c 16` (the Python `cluster` strategy on redis-py's
RedisCluster: the native engine has no cluster mode yet, so this shape measures a Python
client and is not expected to reach 1.0x), rates and the nodes' CPU.

Usage: python bench/bench_tls_cluster.py [seconds per measurement] [pairs]
The machine is shared and noisy: compare ratios within a pair, not absolute figures.
"""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from workbench_redis.cluster import start_cluster
from workbench_redis.server import start_redis

from workbench.native_build import binary_path
from workbench.servers import ServerProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_native import (  # a sibling script, not a package
    KEYS,
    VALUE,
    _exit_on_term,
    _spec,
    measured,
    native,
    pair_line,
    reference,
    workbench_run,
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
    binary = binary_path()
    if binary is None:
        sys.exit("the native engine is not built: run ./dev setup")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; a shared machine")
    print(f"GET of {VALUE} B values, {KEYS} keys, {seconds:g} s per measurement, A B A B\n")
    with start_redis(tls=True) as redis:
        options = {"url": redis.target_options["url"], "tls_ca": redis.target_options["tls_ca"]}
        subprocess.run(
            ["redis-benchmark", "-h", redis.host, "-p", str(redis.port), *tls_args(redis),
             "-t", "set", "-n", str(KEYS * 3), "-r", str(KEYS), "-d", str(VALUE), "-q"],
            capture_output=True, check=True,
        )  # fmt: skip
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
    cluster_shape(seconds, pairs)


def cluster_shape(seconds: float, pairs: int) -> None:
    with start_cluster(3) as cluster, tempfile.TemporaryDirectory() as scratch:
        pids = [n.pid for n in cluster.nodes]
        print(f"\nRedis Cluster of 3 ({cluster.version})")
        rate = 30_000.0
        for _ in range(pairs):
            n = max(int(seconds * rate), 10_000)

            def ref_run(n: int = n) -> tuple[float, float]:
                out, _wall, cpu = reference(
                    ["redis-benchmark", "-h", cluster.host, "-p", str(cluster.port), "--cluster",
                     "-t", "get", "-n", str(n), "-c", "16", "-r", str(KEYS), "-d", str(VALUE),
                     "--csv"]
                )  # fmt: skip
                table = out[out.find('"test"') :]  # --cluster prints the nodes first
                rows = {r["test"]: float(r["rps"]) for r in csv.DictReader(io.StringIO(table))}
                return rows.get("GET", 0.0), cpu / (n / rows["GET"]) if rows.get("GET") else 0.0

            ref, sref = measured(pids, ref_run)
            rate = ref[0] or rate
            url = cluster.target_options["url"]

            def wb_run(url: str = url) -> tuple[float, float]:
                flags = ["--cluster-mode", "-c", "16", "-w", "1", "--ratio", "0:1"]
                got, _ = workbench_run(url, flags, seconds, Path(scratch) / "runs.sqlite")
                return got, float("nan")  # a Python client: its CPU is not read here

            wb, swb = measured(pids, wb_run)
            line = pair_line("cluster c=16 vs redis-benchmark --cluster", ref, wb, (sref, swb))
            print(line.replace("| native ", "| python cluster "))


if __name__ == "__main__":
    main()
