"""The familiar flags' typer declarations (memtier_benchmark's and redis-benchmark's
names), each help naming the flag it stands for, and the table `familiar_flags`
(`workbench.cli.flags`) gives `run` and `search` from."""

from __future__ import annotations

from typing import Any

# The typer declarations, each help naming the memtier / redis-benchmark flag it stands for.
PANEL = "Familiar flags (memtier_benchmark, redis-benchmark)"


def _opt(*names: str, help: str, metavar: str) -> Any:
    import typer

    # Square brackets would be read as rich markup in --help.
    return typer.Option(
        *names, help=help.replace("[", "\\["), metavar=metavar, rich_help_panel=PANEL
    )


CLIENTS = _opt(
    "--clients",
    "-c",
    metavar="N",
    help="virtual clients in all (load.concurrency); redis-benchmark -c, "
    "memtier --clients x --threads; a list sweeps",
)
WORKERS = _opt(
    "--workers",
    "-w",
    metavar="N",
    help="worker processes, 0: one per core (load.workers); memtier -t/--threads",
)
DATA_SIZE = _opt(
    "--data-size",
    "-d",
    metavar="SIZE",
    help="value size: 100, 4KiB, uniform(8,3000), weighted(100:9,4KiB:1) (workload.value_size); "
    "memtier -d/--data-size, redis-benchmark -d",
)
REQUESTS = _opt(
    "--requests",
    "-n",
    metavar="N",
    help="total operations, ends the step (load.ops); redis-benchmark -n, "
    "memtier -n x clients x threads",
)
TEST_TIME = _opt(
    "--test-time",
    metavar="DURATION",
    help="measured time: 60, 60s, 1m, 500ms (load.duration); memtier --test-time",
)
RATIO = _opt(
    "--ratio",
    metavar="SET:GET",
    help="set:get weights, e.g. 1:10 (workload.mix); memtier --ratio",
)
KEY_PATTERN = _opt(
    "--key-pattern",
    metavar="PATTERN",
    help="uniform, zipf, gaussian, sequential, hotcold, or memtier's R:R, Z:Z, G:G, S:S, "
    "or a form like zipf(1.2) (workload.key_distribution); memtier --key-pattern",
)
KEY_MAXIMUM = _opt(
    "--key-maximum",
    metavar="N",
    help="keys in the key space (workload.keys); memtier --key-maximum, redis-benchmark -r",
)
PIPELINE = _opt(
    "--pipeline",
    metavar="N",
    help="requests in flight per connection on the native engine (the default strategy: "
    "strategy.options.pipeline, as memtier), else commands per round trip of a pipelining "
    "strategy (redis pipeline: strategy.options.batch); memtier --pipeline, redis-benchmark -P",
)
RATE = _opt(
    "--rate",
    metavar="OPS/S",
    help="open loop at this total rate (load.rate); memtier --rate-limiting x connections, wrk2 -R",
)
TTL = _opt(
    "--ttl",
    metavar="TTL",
    help="expiry of set keys: 60, 2s, range(1,5), none (workload.ttl); memtier --expiry-range",
)
SERVER = _opt(
    "--server",
    "-s",
    metavar="URL|HOST[:PORT]",
    help="redis://HOST:PORT[/DB], memcached://HOST:PORT, http://HOST:PORT: picks the system "
    "and its address (target.*); a bare HOST[:PORT] takes the scheme of -P, else of the "
    "profile's system, else redis; memtier -s/--server",
)
HOST = _opt("--host", "-h", metavar="HOST",
            help="the server's host, as -s HOST; redis-benchmark -h")  # fmt: skip
PORT = _opt("--port", "-p", metavar="PORT",
            help="the server's port (with -s/-h HOST, else on 127.0.0.1); memtier and "
            "redis-benchmark -p")  # fmt: skip
PROTOCOL = _opt("--protocol", "-P", metavar="NAME",
                help="the scheme of a bare -s HOST: redis, resp2, resp3, memcache_text (memtier "
                "-P/--protocol) or a system's (memcached, http, valkey...)")  # fmt: skip
REPEAT = _opt(
    "--repeat",
    metavar="N",
    help="run each step N times, interleaved (A B A B); reports give median [min max] "
    "(load.repeat)",
)


DATA_SIZE_RANGE = _opt(
    "--data-size-range",
    metavar="MIN-MAX",
    help="value sizes uniform in MIN..MAX, e.g. 32-1024 (workload.value_size = "
    "uniform(MIN,MAX)); memtier --data-size-range",
)
DATA_SIZE_LIST = _opt(
    "--data-size-list",
    metavar="SIZE:WEIGHT,...",
    help="value sizes with weights, e.g. 32:7,1024:3 (workload.value_size = weighted(...)); "
    "memtier --data-size-list",
)
KEY_MINIMUM = _opt(
    "--key-minimum",
    metavar="N",
    help="with --key-maximum: MAX-MIN+1 keys (workload.keys); memtier --key-minimum",
)
EXPIRY_RANGE = _opt(
    "--expiry-range",
    metavar="MIN-MAX",
    help="set keys expire in MIN..MAX seconds (workload.ttl = range(MIN,MAX)); "
    "memtier --expiry-range",
)
PRINT_PERCENTILES = _opt(
    "--print-percentiles",
    metavar="P,P,...",
    help="the percentiles each step's summary lists, e.g. 50,99,99.9; memtier --print-percentiles",
)

HIDE_HISTOGRAM = _opt("--hide-histogram", metavar="",
                      help="no percentile ladder in summaries (memtier's)")  # fmt: skip

TLS = _opt(
    "--tls",
    metavar="",
    help="speak TLS: rediss://, https://, memcached target.options.tls; a managed server "
    "gets a throw-away CA (target.server.tls); memtier --tls, redis-benchmark --tls",
)
CERT = _opt(
    "--cert",
    metavar="PEM",
    help="client certificate for mutual TLS (target.options.tls_cert); memtier --cert",
)
KEY = _opt(
    "--key",
    metavar="PEM",
    help="private key of --cert (target.options.tls_key); memtier --key",
)
CACERT = _opt(
    "--cacert",
    metavar="PEM",
    help="CA that signed the server (target.options.tls_ca); memtier --cacert",
)
TLS_SKIP_VERIFY = _opt(
    "--tls-skip-verify",
    metavar="",
    help="no certificate verification, said in the report (target.options.tls_insecure); "
    "memtier --tls-skip-verify",
)
SNI = _opt(
    "--sni",
    metavar="NAME",
    help="server name sent and verified (target.options.tls_sni); memtier --sni",
)

CLUSTER_MODE = _opt(
    "--cluster-mode",
    "--cluster",
    metavar="",
    help="a Redis Cluster: the cluster strategy follows CLUSTER SLOTS (target.options.cluster; "
    "a managed server becomes a 3-node cluster, target.server.cluster); memtier "
    "--cluster-mode, redis-benchmark --cluster",
)


# Every familiar flag: (parameter name, type, declaration). `run` and `search` take them all
# through `familiar_flags`, so the two commands can never drift apart.
FLAG_PARAMETERS: tuple[tuple[str, Any, Any], ...] = (
    ("server", str | None, SERVER),
    ("host", str | None, HOST),
    ("port", int | None, PORT),
    ("protocol", str | None, PROTOCOL),
    ("clients", str | None, CLIENTS),
    ("workers", str | None, WORKERS),
    ("data_size", str | None, DATA_SIZE),
    ("data_size_range", str | None, DATA_SIZE_RANGE),
    ("data_size_list", str | None, DATA_SIZE_LIST),
    ("requests", str | None, REQUESTS),
    ("test_time", str | None, TEST_TIME),
    ("ratio", str | None, RATIO),
    ("key_pattern", str | None, KEY_PATTERN),
    ("key_minimum", int | None, KEY_MINIMUM),
    ("key_maximum", str | None, KEY_MAXIMUM),
    ("pipeline", int | None, PIPELINE),
    ("rate", str | None, RATE),
    ("ttl", str | None, TTL),
    ("expiry_range", str | None, EXPIRY_RANGE),
    ("repeat", int | None, REPEAT),
    ("print_percentiles", str | None, PRINT_PERCENTILES),
    ("hide_histogram", bool | None, HIDE_HISTOGRAM),
    ("tls", bool | None, TLS),
    ("cert", str | None, CERT),
    ("key", str | None, KEY),
    ("cacert", str | None, CACERT),
    ("tls_skip_verify", bool | None, TLS_SKIP_VERIFY),
    ("sni", str | None, SNI),
    ("cluster_mode", bool | None, CLUSTER_MODE),
)
