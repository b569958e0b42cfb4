"""The HTTP `lean` strategy against wrk, on one nginx serving a static 100-byte file.

Starts nginx (one process, no master) on a free loopback port, then interleaves, for
each repetition and each connection count: wrk -t1 -cN, and the workbench with one
worker and N virtual clients on each named strategy (GET only). Prints each figure and
its ratio to wrk in the same repetition, then the median ratio per strategy.
wrk is written in C with one event loop; a ratio near 1 means the workbench measures
the server, not itself.

It also prints the lean client's own CPU time per request (driven in this process, the
same connections and keys), the figure least disturbed by other load on the machine.

Usage: python bench/bench_http_lean.py [seconds] [repetitions] [strategy ...]
The machine is shared and noisy: compare ratios within one run, not absolute figures.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench.results.events import StepFinished
from workbench.results.metrics import summarise
from workbench.results.store import Store
from workbench.run import session
from workbench.sdk.adapter import Strategy
from workbench.sdk.discovery import load_plugin
from workbench.sdk.servers import ServerProcess, free_port, launch
from workbench.spec.steps import load_spec

try:  # the loop the engine's workers use, when installed
    from uvloop import run as run_loop
except ImportError:
    from asyncio import run as run_loop

VALUE = 100
CONNECTIONS = (16, 64)
NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            root {dir};
            default_type application/octet-stream;
            try_files /value.bin =404;
        }}
    }}
}}
"""


def start_nginx(directory: Path) -> ServerProcess:
    program = shutil.which("nginx") or "/usr/sbin/nginx"
    port = free_port()
    (directory / "value.bin").write_bytes(b"v" * VALUE)
    conf = directory / "nginx.conf"
    conf.write_text(NGINX_CONF.format(dir=directory, port=port))
    argv = [program, "-p", str(directory), "-c", str(conf), "-e", str(directory / "error.log")]
    return launch("nginx", argv, "127.0.0.1", port, version="nginx")


def wrk(server: ServerProcess, connections: int, seconds: float) -> float:
    program = shutil.which("wrk")
    if program is None:
        sys.exit("wrk is not installed (apt-get install wrk)")
    done = subprocess.run(
        [program, "-t1", f"-c{connections}", f"-d{seconds:g}s", f"http://{server.address}/"],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    )
    found = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
    if found is None:
        raise RuntimeError(f"no Requests/sec in wrk's output:\n{done.stdout}")
    return float(found.group(1))


async def workbench(
    server: ServerProcess, strategy: str, connections: int, seconds: float
) -> float:
    spec = load_spec(
        None,
        [
            "target.system=http",
            f'target.options.base_url="http://{server.address}"',
            'target.options.get="GET /?key={key}"',
            f'strategy.name="{strategy}"',
            f"load.duration={seconds}",
            "load.warmup=1",
            "load.workers=1",
            f"load.concurrency={connections}",
            "workload.mix={get=1}",
        ],
    )
    rate: float | None = None
    with tempfile.TemporaryDirectory() as tmp:
        async for event in session.run(spec, Store(Path(tmp) / "bench.sqlite")):
            if isinstance(event, StepFinished):
                if event.stats.error_count:
                    print(f"  {strategy}: {event.stats.error_count} errors")
                rate = summarise(event.stats).ops_per_s
    if rate is None:
        raise RuntimeError("the run ended without a step")
    return rate


async def client_cpu(strategy: Strategy, url: str, connections: int, per_client: int) -> float:
    """CPU microseconds this process spends per GET through `strategy`'s clients."""
    system = load_plugin("http")
    options = system.options.resolve(
        {"base_url": url, "get": "GET /?key={key}", "value_field": ""}, "target.options"
    )
    conn = await strategy.connect(options, strategy.options.resolve({}, "strategy.options"))
    clients = [await conn.client() for _ in range(connections)]
    keys = [f"k{i}".encode() for i in range(100)]

    async def gets(client: Any) -> None:
        for i in range(per_client):
            await client.get(keys[i % len(keys)])

    await asyncio.gather(*(c.get(b"warm") for c in clients))  # connected before timing
    began = time.process_time()
    await asyncio.gather(*(gets(c) for c in clients))
    spent = time.process_time() - began
    await conn.close()
    return spent / (connections * per_client) * 1e6


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    repetitions = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    strategies = sys.argv[3:] or ["lean"]
    ratios: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, start_nginx(Path(tmp)) as server:
        url = f"http://{server.address}"
        print(f"nginx on {server.address}, {VALUE} B static file, {seconds:g}s per figure")
        for rep in range(repetitions):
            for n in CONNECTIONS:
                reference = wrk(server, n, seconds)
                print(f"rep {rep + 1} c={n:<3} wrk -t1 {reference:>12,.0f} req/s")
                for strategy in strategies:
                    rate = asyncio.run(workbench(server, strategy, n, seconds))
                    ratio = rate / reference
                    ratios.setdefault((strategy, n), []).append(ratio)
                    line = f"{strategy:<8} {rate:>12,.0f} ops/s  {ratio:.2f}x"
                    print(f"rep {rep + 1} c={n:<3} {line}")
                    cpu = run_loop(client_cpu(load_plugin("http").strategy(strategy), url, n, 1500))
                    print(f"rep {rep + 1} c={n:<3} {strategy:<8} client CPU {cpu:.1f} µs/request")
    for (strategy, n), values in ratios.items():
        print(f"median ratio {strategy} c={n}: {statistics.median(values):.2f}x of wrk")


if __name__ == "__main__":
    main()
