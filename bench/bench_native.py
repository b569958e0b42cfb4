"""The native engine against the C tools, on throw-away servers, in one run (not a test).

Starts one redis-server, one memcached and one nginx on free loopback ports and, for each
shape, interleaves the reference tool and the workbench's native strategy A B A B. Each
pair prints both rates, the ratio (workbench / reference), and the CPU the client and the
server used (% of one core over the measured time). GET of 100-byte values that exist.

- Redis P=1 at c=16 and c=64 against redis-benchmark -c N (target >= 1.0x);
  64 in flight (native c=4 pipeline=16) against redis-benchmark -c 4 -P 16 (>= 0.9x).
- memcached, the same shapes, against memtier_benchmark when on PATH, else memcslap
  (libmemcached-tools: one blocking client per thread, no pipelining; its 64-in-flight
  peer is -c 64 threads). Against memtier the native keys are as long as its keys (12 B),
  its CPU is counted over its test time, and each pair prints memcached's CPU per GET
  under each tool; then memcached's syscalls per GET at 64 in flight (its text `get`
  flushes every reply: one sendmsg per GET for either tool, the bound of that shape).
- HTTP against wrk -t1 on nginx (return 200 of 100 bytes), c=16 and c=64 (>= 1.0x).
- Pipelined Redis: native c=4 and c=16 with pipeline 16 against redis-benchmark -c N -P 16,
  A B A B, each pair with the load average beside it, then both tools' instructions per op
  under valgrind (user space; the figures the shared machine does not disturb).
- Recording cost: the native build against one built with --features norecord (<= 3%).
- memtier's own command lines through `workbench run`, translated as docs/cli.md says
  (-c per thread x -t = -c in all, -t = -w, warm-up 0), against memtier_benchmark when it is
  on PATH: both rates (the CLI's default strategy, the native engine, does the work).
- Redis pub/sub: native publishers with 2 subscribers on one channel against
  redis-benchmark running `PUBLISH wb:ch:0 <1 KiB>` as a command line, with 2 redis-cli
  subscribers attached; both publish rates, and the native deliveries against expected.
- memcached's meta protocol (mg/ms/md) against its text protocol, both native, on one
  server (memtier has no meta mode).

Usage: python bench/bench_native.py [seconds per measurement] [pairs] [sections]
(sections: a comma list of redis, pipelined, memcached, http, recording, memtier, pubsub,
meta;
default all)
The machine is shared and noisy: compare ratios within a pair, not absolute figures.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench_memcached.server import start_memcached
from workbench_redis.server import start_redis

from workbench.engine.frames import StepOrder
from workbench.sdk.servers import LOOPBACK, ServerProcess, free_port
from workbench.spec.model import Spec, spec_from_dict, spec_to_dict
from workbench.spec.native_binary import binary_path
from workbench.spec.resolve import resolve_step

ROOT = Path(__file__).resolve().parent.parent
KEYS = 10_000
VALUE = 100
_HEADER = struct.Struct(">I")
TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def children_cpu(pids: list[int]) -> float:
    return sum(proc_cpu(p) for p in pids)


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return _HEADER.pack(len(body)) + body


def _spec(system: str, options: dict[str, Any], clients: int, pipeline: int, seconds: float,
          prefill: bool, protocol: str = "", key_length: int = 16) -> Spec:  # fmt: skip
    data = spec_to_dict(Spec())
    data["target"] = {"system": system, "options": options}
    strategy: dict[str, Any] = {"pipeline": pipeline} if pipeline > 1 else {}
    if protocol:
        strategy["protocol"] = protocol
    data["strategy"] = {"name": "native", "options": strategy}
    data["workload"].update(
        mix={"get": 1.0},
        keys=KEYS,
        value_size=str(VALUE),
        prefill=prefill,
        key_length=key_length,
    )
    data["load"].update(concurrency=clients, duration=seconds, warmup=0.5, interval=seconds)
    return spec_from_dict(data)


def native(
    binary: Path,
    spec: Spec,
    wrap: tuple[str, ...] = (),
    delivered: list[int] | None = None,
    polled: list[float] | None = None,
) -> tuple[float, float]:
    """(ops/s, client CPU seconds per second) of one native worker running `spec`;
    `delivered` gets the pub/sub deliveries and the expected ones added, `polled` the
    share of the time the worker polled idle for replies (part of its CPU)."""
    delivered = [0, 0] if delivered is None else delivered
    polled = [0.0] if polled is None else polled
    idle = 0.0
    order = StepOrder.for_worker(spec, resolve_step(spec), workers=1, worker=0).frame()
    proc = subprocess.Popen([*wrap, str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_frame(order))
    proc.stdin.flush()
    ops = duration = cpu = 0.0
    while True:
        head = proc.stdout.read(4)
        if len(head) < 4:
            break
        msg = json.loads(proc.stdout.read(_HEADER.unpack(head)[0]))
        if msg["type"] == "armed":
            proc.stdin.write(_frame({"type": "go", "start": time.time() + 0.05}))
            proc.stdin.flush()
        elif msg["type"] == "interval":
            st = msg["stats"]
            # A GET-only load: hits and misses count ops in the norecord build too; a
            # publish-only load counts its publishes.
            ops += st["hits"] + st["misses"] + st.get("published", 0)
            delivered[0] += st.get("delivered", 0)
            delivered[1] += st.get("expected_deliveries", 0)
            duration += st["duration"]
            cpu += sum(st.get("cpu", {}).values())
            idle += msg.get("polled", 0.0)
            if st["errors"]:
                print(f"    native errors: {st['errors']} {st['first_errors']}")
        elif msg["type"] in ("step_done", "error"):
            if msg["type"] == "error":
                print(f"    native error: {msg['message']}")
            if msg["type"] == "step_done":
                break
    proc.stdin.close()
    proc.wait(timeout=30)
    polled[0] += idle / duration
    return ops / duration, cpu / duration


PUBSUB_SUBS = 2
PUBSUB_BYTES = 1024


def _pubsub_spec(url: str, clients: int, pipeline: int, seconds: float) -> Spec:
    data = spec_to_dict(_spec("redis", {"url": url}, clients, pipeline, seconds, False))
    data["workload"].update(mix={"publish": 1.0})
    data["workload"]["pubsub"] = {
        "channels": 1,
        "subscribers_per_channel": PUBSUB_SUBS,
        "message_size": PUBSUB_BYTES,
    }
    return spec_from_dict(data)


def redis_benchmark_publish(
    server: ServerProcess, clients: int, pipeline: int, requests: int
) -> tuple[float, float]:
    """(publishes/s, client CPU share) of redis-benchmark running PUBLISH as a command
    line, with PUBSUB_SUBS redis-cli subscribers attached (their CPU is the client's too)."""
    subs = [
        subprocess.Popen(
            ["redis-cli", "-h", server.host, "-p", str(server.port), "SUBSCRIBE", "wb:ch:0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(PUBSUB_SUBS)
    ]
    try:
        time.sleep(0.3)  # subscribed before the first publish
        before = children_cpu([s.pid for s in subs])
        payload = "x" * PUBSUB_BYTES
        out, _wall, cpu = reference(
            ["redis-benchmark", "-h", server.host, "-p", str(server.port), "-n", str(requests),
             "-c", str(clients), "-P", str(pipeline), "--csv", "PUBLISH", "wb:ch:0", payload]
        )  # fmt: skip
        cpu += children_cpu([s.pid for s in subs]) - before
    finally:
        for s in subs:
            s.terminate()
            s.wait(timeout=10)
    rows = list(csv.DictReader(io.StringIO(out)))
    rate = float(rows[-1]["rps"]) if rows else 0.0
    return rate, cpu / (requests / rate) if rate else 0.0


def _callgrind(run: Any) -> int:
    """Instructions (valgrind's count, user space) of `run(wrap)`."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "callgrind.log"
        wrap = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                f"--log-file={log}")  # fmt: skip
        run(wrap)
        m = re.search(r"Collected : (\d+)", log.read_text())
        return int(m.group(1)) if m else 0


def instructions(binary: Path, url: str, ops: int, clients: int = 4) -> int:
    """Instructions one native worker runs for an op budget (pipeline 16)."""
    data = spec_to_dict(_spec("redis", {"url": url}, clients, 16, 1.0, False))
    data["load"].update(duration=None, ops=ops, warmup=0.0, interval=60.0)
    return _callgrind(lambda wrap: native(binary, spec_from_dict(data), wrap))


def reference_instructions(server: ServerProcess, ops: int, clients: int) -> int:
    """Instructions redis-benchmark -P 16 runs for `ops` GETs."""
    argv = ["redis-benchmark", "-h", server.host, "-p", str(server.port), "-t", "get",
            "-n", str(ops), "-c", str(clients), "-P", "16", "-r", str(KEYS), "-d", str(VALUE),
            "-q"]  # fmt: skip
    return _callgrind(lambda wrap: subprocess.run([*wrap, *argv], capture_output=True, check=True))


def prefill_reference(server_args: list[str], nodes: int) -> None:
    """Set every one of redis-benchmark's KEYS keys (key:__rand_int__, random draws) on each
    of `nodes` nodes (--cluster: its keys carry each node's first slot as a hash tag): 30
    draws per key leave none unset (e^-30), so its GETs all hit, as the native engine's
    prefilled ones do. At 3 draws per key 5% missed, and a miss costs the server less (a
    5-byte reply for 107 bytes): the two tools did not ask the same work of it."""
    subprocess.run(
        ["redis-benchmark", *server_args, "-t", "set", "-n", str(KEYS * 30 * nodes), "-P", "16",
         "-r", str(KEYS), "-d", str(VALUE), "-q"],
        capture_output=True, check=True,
    )  # fmt: skip


def keyspace(servers: list[list[str]]) -> tuple[int, int]:
    """The servers' (keyspace_hits, keyspace_misses) so far, summed (redis-cli arguments
    of each server)."""
    hits = misses = 0
    for args in servers:
        out = subprocess.run(
            ["redis-cli", *args, "INFO", "stats"], capture_output=True, text=True, check=True
        ).stdout
        stats = dict(ln.strip().split(":", 1) for ln in out.splitlines() if ":" in ln)
        hits += int(stats["keyspace_hits"])
        misses += int(stats["keyspace_misses"])
    return hits, misses


def hit_share(servers: list[list[str]], run: Any) -> tuple[Any, float]:
    """`run()`'s result and the share of its GETs the servers found (the like-for-like
    check: both tools must ask for keys that exist)."""
    h0, m0 = keyspace(servers)
    result = run()
    h1, m1 = keyspace(servers)
    gets = (h1 - h0) + (m1 - m0)
    return result, (h1 - h0) / gets if gets else float("nan")


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def pipelined_shapes(binary: Path, redis: ServerProcess, seconds: float, pairs: int) -> None:
    """Native pipeline 16 against redis-benchmark -P 16 at c=4 and c=16: A B A B with ops
    per client CPU-second, each tool's GET hit share (both must be 100%: the same work for
    the server), then instructions per op of both (valgrind, 50k vs 250k ops)."""
    url = redis.target_options["url"]
    args = [["-h", redis.host, "-p", str(redis.port)]]
    print("\nPipelined Redis GETs (pipeline 16) vs redis-benchmark -P 16, one worker")
    for c in (4, 16):
        rate = 300_000.0
        for _ in range(pairs):
            before = loadavg()
            n = max(int(seconds * rate), 10_000)
            (ref, sref), ref_hits = hit_share(
                args,
                lambda c=c, n=n: measured([redis.pid], lambda: redis_benchmark(redis, c, 16, n)),
            )
            rate = ref[0] or rate
            idle = [0.0]
            spec = _spec("redis", {"url": url}, c, 16, seconds, False)
            (wb, swb), wb_hits = hit_share(
                args,
                lambda spec=spec, idle=idle: measured(
                    [redis.pid], lambda: native(binary, spec, polled=idle)
                ),
            )
            busy = wb[1] - idle[0]  # the client's CPU less its idle polling for replies
            per_cpu = (
                f"ops per client CPU-second ref {ref[0] / ref[1]:,.0f} native {wb[0] / wb[1]:,.0f}"
                f" ({wb[0] / busy:,.0f} without its idle polling, {idle[0] * 100:.0f}% of a core)"
                if ref[1] and wb[1] and busy > 0
                else ""
            )
            print(pair_line(f"c={c} P=16 vs redis-benchmark -c {c} -P 16", ref, wb, (sref, swb)))
            print(
                f"    hits ref {ref_hits:.1%} native {wb_hits:.1%}; {per_cpu};"
                f" load average {before} -> {loadavg()}"
            )
    if not shutil.which("valgrind"):
        return
    for c in (4, 16):
        small, large = instructions(binary, url, 50_000, c), instructions(binary, url, 250_000, c)
        ours = (large - small) / 200_000
        small, large = (reference_instructions(redis, n, c) for n in (50_000, 250_000))
        theirs = (large - small) / 200_000
        print(
            f"  c={c} instructions per op (valgrind, user space): redis-benchmark {theirs:,.0f},"
            f" native {ours:,.0f} ({ours / theirs:.2f}x)"
        )


def reference(argv: list[str]) -> tuple[str, float, float]:
    """Output, wall seconds and CPU seconds of a reference tool run."""
    _last_child_cpu()  # children reaped before this one are not its CPU
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=600)
    wall = time.monotonic() - start
    return out, wall, _last_child_cpu()


_seen_children_cpu = 0.0


def _last_child_cpu() -> float:
    global _seen_children_cpu
    r = os.times()
    total = r.children_user + r.children_system
    used, _seen_children_cpu = total - _seen_children_cpu, total
    return used


def redis_benchmark(
    server: ServerProcess, clients: int, pipeline: int, requests: int
) -> tuple[float, float]:
    out, _wall, cpu = reference(
        ["redis-benchmark", "-h", server.host, "-p", str(server.port), "-t", "get",
         "-n", str(requests), "-c", str(clients), "-P", str(pipeline), "-r", str(KEYS),
         "-d", str(VALUE), "--csv"]
    )  # fmt: skip
    rows = {r["test"]: float(r["rps"]) for r in csv.DictReader(io.StringIO(out))}
    rate = rows["GET"]
    return rate, cpu / (requests / rate)


def prefill_memtier(address: str) -> None:
    """Set every key memtier_benchmark's GETs draw (memtier-0 .. memtier-KEYS, in order), so
    that they hit as the native engine's prefilled ones do. Unset, every GET of memtier
    missed (a 5-byte END for a 100-byte value): 165k/s of misses against 122k/s of hits on
    one server, so it did not ask the server the same work."""
    host, _, port = address.rpartition(":")
    subprocess.run(
        ["memtier_benchmark", "-P", "memcache_text", "-s", host, "-p", port, "-t", "1",
         "-c", "1", "--ratio", "1:0", "--key-pattern", "P:P", "--key-minimum", "1",
         "--key-maximum", str(KEYS), f"--requests={KEYS}", "-d", str(VALUE),
         "--hide-histogram"],
        capture_output=True, check=True,
    )  # fmt: skip
    # Its GETs draw from 0 too, which its own key range for sets may not start at.
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"set memtier-0 0 0 %d\r\n%s\r\n" % (VALUE, b"x" * VALUE))
        assert sock.recv(64).startswith(b"STORED")


def memc_hits(address: str) -> tuple[int, int]:
    """memcached's (get_hits, get_misses) so far."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"stats\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    stats = dict(ln.split()[1:3] for ln in data.decode().splitlines() if ln.startswith("STAT "))
    return int(stats["get_hits"]), int(stats["get_misses"])


def memc_hit_share(address: str, run: Any) -> tuple[Any, float]:
    """`run()`'s result and the share of its GETs memcached found."""
    result, share, _gets = memc_counted(address, run)
    return result, share


def memc_counted(address: str, run: Any) -> tuple[Any, float, int]:
    """`run()`'s result, the share of its GETs memcached found, and how many it counted."""
    h0, m0 = memc_hits(address)
    result = run()
    h1, m1 = memc_hits(address)
    gets = (h1 - h0) + (m1 - m0)
    return result, (h1 - h0) / gets if gets else float("nan"), gets


# memtier's keys are memtier-0 .. memtier-KEYS: 12 bytes for 9 in 10 of them. The native
# keys are as long in the shapes against it: memcached parses, hashes, compares and sends
# back the key, and 16-byte keys cost it 3% more per GET than memtier's (4.09 against
# 3.97 µs of memcached's CPU per GET, medians of 6 pairs at 64 in flight).
MEMTIER_KEY_LENGTH = 12


def memc_served(server: ServerProcess, run: Any) -> tuple[Any, float, float]:
    """`run()`'s result, the share of its GETs memcached found, and memcached's CPU per GET
    (µs): what a client's traffic costs the server, steadier than the rates on a shared
    machine, and the figure that decides the rate when the server is the bottleneck."""
    cpu0 = proc_cpu(server.pid)
    result, share, gets = memc_counted(server.target_options["servers"][0], run)
    cpu = proc_cpu(server.pid) - cpu0
    return result, share, cpu / gets * 1e6 if gets else float("nan")


def memcached_writes(server: ServerProcess, run: Any) -> str:
    """memcached's reads and sendmsg calls per GET while `run()` runs (perf's syscall
    tracepoints; "" when perf cannot count them). memcached 1.6's text `get` flushes its
    reply at once (proto_text.c: conn_mwrite after every get), so the server makes one
    sendmsg per GET for any client: that, not the client, bounds the pipelined text shape."""
    if not shutil.which("perf"):
        return ""
    events = "syscalls:sys_enter_read,syscalls:sys_enter_sendmsg"
    perf = subprocess.Popen(
        ["perf", "stat", "-x,", "-e", events, "-p", str(server.pid)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(0.3)  # attached before the run begins
    _result, _share, gets = memc_counted(server.target_options["servers"][0], run)
    perf.send_signal(signal.SIGINT)
    _out, err = perf.communicate(timeout=30)
    counts = {}
    for line in err.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[0].isdigit():
            counts[fields[2].rsplit("_", 1)[-1]] = int(fields[0])
    if not gets or set(counts) != {"read", "sendmsg"}:
        return ""
    return f"reads {counts['read'] / gets:.3f}, sendmsg {counts['sendmsg'] / gets:.3f} per GET"


def memcached_shapes(binary: Path, memc: ServerProcess, seconds: float, pairs: int) -> None:
    """The memcached shapes against memtier_benchmark (else memcslap), A B A B: rates, client
    CPU, both tools' hit share and memcached's CPU per GET; native keys as long as memtier's.
    Then memcached's syscalls per GET at 64 in flight under each tool and the native meta
    protocol (where the pipelined text shape's bound is)."""
    mopts = {"servers": memc.target_options["servers"]}
    peer = "memtier_benchmark" if shutil.which("memtier_benchmark") else "memcslap"
    key_length = MEMTIER_KEY_LENGTH if peer == "memtier_benchmark" else 16
    native(binary, _spec("memcached", mopts, 16, 1, 0.5, True, key_length=key_length))
    print(f"\nmemcached {memc.version}, -t 1; peer {peer}; native keys of {key_length} B")
    memc_shapes = (
        (f"P=1 c=16 vs {peer} 16", 16, 1),
        (f"P=1 c=64 vs {peer} 64", 64, 1),
        (f"64 in flight vs {peer} {'c4 P16' if peer != 'memcslap' else '64 threads'}", 4, 16),
    )
    if peer == "memtier_benchmark":
        prefill_memtier(memc.target_options["servers"][0])

    def ours(c: int, p: int, protocol: str = "", idle: list[float] | None = None) -> Any:
        spec = _spec("memcached", mopts, c, p, seconds, False, protocol, key_length)
        return lambda: native(binary, spec, polled=idle)

    for label, c, p in memc_shapes:
        for _ in range(pairs):
            before = loadavg()
            (ref, sref), href, uref = memc_served(
                memc,
                lambda c=c, p=p: measured([memc.pid], lambda: memc_reference(memc, c, p, seconds)),
            )
            idle = [0.0]
            (wb, swb), hwb, uwb = memc_served(
                memc, lambda c=c, p=p, idle=idle: measured([memc.pid], ours(c, p, idle=idle))
            )
            busy = wb[1] - idle[0]  # the client's CPU less its idle polling for replies
            print(pair_line(label, ref, wb, (sref, swb)))
            print(
                f"    hits ref {href:.1%} native {hwb:.1%}; memcached CPU per GET ref"
                f" {uref:.2f} µs native {uwb:.2f} µs; ops per client CPU-second ref"
                f" {ref[0] / ref[1] if ref[1] else 0:,.0f} native"
                f" {wb[0] / busy if busy > 0 else 0:,.0f} without its idle polling"
                f" ({idle[0] * 100:.0f}% of a core); load average {before} -> {loadavg()}"
            )
    if peer != "memtier_benchmark":
        return
    print("  memcached's syscalls at 64 in flight (text: one sendmsg per GET whoever asks):")
    for name, run in (
        ("memtier c4 P16", lambda: memc_reference(memc, 4, 16, seconds)),
        ("native text c4 P16", ours(4, 16)),
        ("native meta c4 P16", ours(4, 16, "meta")),
    ):
        print(f"    {name:<20} {memcached_writes(memc, run) or '(perf cannot count them)'}")


def memc_reference(
    server: ServerProcess, clients: int, pipeline: int, seconds: float
) -> tuple[float, float]:
    address = server.target_options["servers"][0]
    if shutil.which("memtier_benchmark"):
        host, _, port = address.rpartition(":")
        flags = ["-P", "memcache_text", "-t", "1", "-c", str(clients),
                 "--pipeline", str(pipeline), "--ratio", "0:1", "-d", str(VALUE)]  # fmt: skip
        return memtier(host, int(port), flags, seconds)
    threads = clients * pipeline
    n = max(int(seconds * _memcslap_rate.get(threads, 2000.0)), 500)
    out, _wall, cpu = reference(
        ["memcslap", "-s", address, "-t", "get", "-c", str(threads), "-e", str(n), "-N"]
    )
    m = re.search(r"Time to get\s+(\d+) keys by\s+(\d+) threads:\s+([\d.]+) seconds", out)
    if not m or int(m.group(1)) == 0:
        print(f"    memcslap said: {out.strip().splitlines()[-3:]}")
        return 0.0, 0.0
    gets, took = int(m.group(1)), float(m.group(3))
    rate = gets / took
    _memcslap_rate[threads] = n / took  # its -e per run, scaled to the next run's length
    return rate, cpu / took


_memcslap_rate: dict[int, float] = {}


def wrk(url: str, clients: int, seconds: float) -> tuple[float, float]:
    out, wall, cpu = reference(["wrk", "-t1", f"-c{clients}", f"-d{seconds:g}s", url])
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return (float(m.group(1)) if m else 0.0), cpu / wall


class Nginx:
    """nginx, one worker, answering every GET with 100 bytes."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="bench-nginx-")
        self.port = free_port()
        body = "x" * VALUE
        conf = Path(self.dir) / "nginx.conf"
        conf.write_text(
            f"worker_processes 1; daemon off; pid {self.dir}/nginx.pid;\n"
            f"error_log {self.dir}/error.log;\nevents {{ worker_connections 4096; }}\n"
            f"http {{ access_log off; keepalive_requests 1000000;\n"
            f"  server {{ listen {LOOPBACK}:{self.port};\n"
            f'    location / {{ return 200 "{body}"; }} }} }}\n'
        )
        self.proc = subprocess.Popen(
            ["nginx", "-c", str(conf), "-p", self.dir, "-e", f"{self.dir}/error.log"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(200):
            try:
                import socket

                socket.create_connection((LOOPBACK, self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)

    def worker_pids(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()] + [self.proc.pid]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def build_norecord() -> Path:
    target = ROOT / "native" / "target" / "norecord"
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "--features", "norecord",
         "--manifest-path", str(ROOT / "native" / "Cargo.toml"), "--target-dir", str(target)],
        check=True,
    )  # fmt: skip
    return target / "release" / "workbench-native"


def pair_line(
    label: str, ref: tuple[float, float], wb: tuple[float, float], server: tuple[float, float]
) -> str:
    """Both rates with client and server CPU (% of one core), the ratio, and the ratio of
    ops per client CPU-second (steadier than the rate on a busy shared machine)."""
    ratio = wb[0] / ref[0] if ref[0] else float("nan")
    eff = (wb[0] / wb[1]) / (ref[0] / ref[1]) if ref[0] and ref[1] and wb[1] else float("nan")
    return (
        f"  {label:<34} ref {ref[0]:>9,.0f}/s cpu {ref[1] * 100:>3.0f}%"
        f" srv {server[0] * 100:>3.0f}%"
        f" | native {wb[0]:>9,.0f}/s cpu {wb[1] * 100:>3.0f}% srv {server[1] * 100:>3.0f}%"
        f" | {ratio:.2f}x, per client CPU {eff:.2f}x"
    )


def measured(server_pids: list[int], run: Any) -> tuple[tuple[float, float], float]:
    """(rate, client cpu share) of `run`, and the server's CPU share over the same wall time."""
    c0, t0 = children_cpu(server_pids), time.monotonic()
    result = run()
    c1, t1 = children_cpu(server_pids), time.monotonic()
    return result, (c1 - c0) / (t1 - t0)


def _exit_on_term(signum: int, frame: Any) -> None:
    raise SystemExit(143)  # unwinds the `with` blocks: the throw-away servers are stopped


def main() -> None:
    signal.signal(signal.SIGTERM, _exit_on_term)
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    sections = set(
        (
            sys.argv[3]
            if len(sys.argv) > 3
            else "redis,pipelined,memcached,http,recording,memtier,pubsub,meta"
        ).split(",")
    )
    binary = binary_path()
    if binary is None:
        sys.exit("the native engine is not built: run ./dev setup")
    with open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    print(
        f"{os.cpu_count()} CPUs ({model}), load average {os.getloadavg()[0]:.1f}; a shared machine"
    )
    print(f"GET of {VALUE} B values, {KEYS} keys, {seconds:g} s per measurement, A B A B\n")
    with start_redis() as redis, start_memcached(threads=1, memory_mb=256) as memc:
        url = redis.target_options["url"]
        # Values for both peers: redis-benchmark's key:__rand_int__ keys and the native keys.
        prefill_reference(["-h", redis.host, "-p", str(redis.port)], 1)
        native(binary, _spec("redis", {"url": url}, 16, 1, 0.5, prefill=True))
        print(f"Redis {redis.version}, one server process")
        redis_shapes = (
            ("P=1 c=16 vs redis-benchmark -c 16", 16, 1, 1.0),
            ("P=1 c=64 vs redis-benchmark -c 64", 64, 1, 1.0),
            ("64 in flight vs redis-benchmark -c 4 -P 16", 4, 16, 0.9),
        )
        for label, c, p, target in redis_shapes if "redis" in sections else ():
            rate = 40_000.0 if p == 1 else 300_000.0  # a first guess; then what it measured
            for _ in range(pairs):
                n = max(int(seconds * rate), 10_000)
                ref, sref = measured(
                    [redis.pid], lambda c=c, p=p, n=n: redis_benchmark(redis, c, p, n)
                )
                rate = ref[0] or rate
                wb, swb = measured(
                    [redis.pid],
                    lambda c=c, p=p: native(
                        binary, _spec("redis", {"url": url}, c, p, seconds, False)
                    ),
                )
                print(pair_line(label, ref, wb, (sref, swb)) + f" (target >= {target}x)")
        if "pipelined" in sections:
            pipelined_shapes(binary, redis, seconds, pairs)
        if "memcached" in sections:
            memcached_shapes(binary, memc, seconds, pairs)
    nginx = Nginx()
    try:
        base = f"http://{LOOPBACK}:{nginx.port}"
        hopts = {"base_url": base, "get": "GET /?key={key}"}
        print("\nnginx, 1 worker, return 200 of 100 B")
        for c in (16, 64) if "http" in sections else ():
            for _ in range(pairs):
                pids = nginx.worker_pids()
                ref, sref = measured(pids, lambda c=c: wrk(base + "/", c, seconds))
                wb, swb = measured(
                    pids, lambda c=c: native(binary, _spec("http", hopts, c, 1, seconds, False))
                )
                print(
                    pair_line(f"c={c} vs wrk -t1 -c{c}", ref, wb, (sref, swb)) + " (target >= 1.0x)"
                )
    finally:
        nginx.stop()
    if "pubsub" in sections:
        print(
            f"\nRedis pub/sub: {PUBSUB_BYTES} B messages, one channel, {PUBSUB_SUBS} subscribers;"
            " rates are publishes/s (deliveries are twice that)"
        )
        with start_redis() as redis:
            url = redis.target_options["url"]
            shapes = (
                ("c=16 vs redis-benchmark -c 16 PUBLISH", 16, 1),
                ("c=4 P=16 vs redis-benchmark -c 4 -P 16 PUBLISH", 4, 16),
            )
            for label, c, p in shapes:
                rate = 30_000.0 if p == 1 else 200_000.0
                for _ in range(pairs):
                    n = max(int(seconds * rate), 10_000)
                    ref, sref = measured(
                        [redis.pid],
                        lambda c=c, p=p, n=n: redis_benchmark_publish(redis, c, p, n),
                    )
                    rate = ref[0] or rate
                    got = [0, 0]
                    wb, swb = measured(
                        [redis.pid],
                        lambda c=c, p=p, got=got: native(
                            binary, _pubsub_spec(url, c, p, seconds), delivered=got
                        ),
                    )
                    print(
                        pair_line(label, ref, wb, (sref, swb))
                        + f" (native delivered {got[0]:,} of {got[1]:,})"
                    )
    if "meta" in sections:
        print("\nmemcached meta protocol vs text protocol, both native, one server (-t 1)")
        with start_memcached(threads=1, memory_mb=256) as memc:
            mopts = {"servers": memc.target_options["servers"]}
            native(binary, _spec("memcached", mopts, 16, 1, 0.5, prefill=True))
            for label, c, p in (("c=16 P=1", 16, 1), ("c=4 P=16", 4, 16)):
                for _ in range(pairs):
                    text, stext = measured(
                        [memc.pid],
                        lambda c=c, p=p: native(
                            binary, _spec("memcached", mopts, c, p, seconds, False)
                        ),
                    )
                    meta, smeta = measured(
                        [memc.pid],
                        lambda c=c, p=p: native(
                            binary, _spec("memcached", mopts, c, p, seconds, False, "meta")
                        ),
                    )
                    print(pair_line(f"{label} text (ref) vs meta", text, meta, (stext, smeta)))
    if "memtier" in sections:
        memtier_shapes(seconds, pairs)
    if "recording" not in sections:
        return
    print("\nRecording cost: native vs a build that records nothing (Redis, 64 in flight)")
    plain = build_norecord()
    with start_redis() as redis:
        url = redis.target_options["url"]
        native(binary, _spec("redis", {"url": url}, 4, 16, 0.5, prefill=True))
        for _ in range(pairs):
            norec, _s1 = measured(
                [redis.pid],
                lambda: native(plain, _spec("redis", {"url": url}, 4, 16, seconds, False)),
            )
            rec, _s2 = measured(
                [redis.pid],
                lambda: native(binary, _spec("redis", {"url": url}, 4, 16, seconds, False)),
            )
            cost = 1 - rec[0] / norec[0]
            # Client CPU per op: steadier than the rate when the machine is shared.
            cpu_cost = (rec[1] / rec[0]) / (norec[1] / norec[0]) - 1
            print(
                f"  norecord {norec[0]:>10,.0f}/s cpu {norec[1] * 100:.1f}%"
                f" | recording {rec[0]:>10,.0f}/s cpu {rec[1] * 100:.1f}%"
                f" | cost: rate {cost * 100:+.1f}%, client CPU per op {cpu_cost * 100:+.1f}%"
                " (target <= 3%)"
            )

    if shutil.which("valgrind"):
        # Instructions are not disturbed by other load: the steadiest figure of the cost.
        with start_redis() as redis:
            url = redis.target_options["url"]
            per_op = {}
            # Long enough that what varies per interval (the histograms' encoding, whose
            # size follows the latencies seen) is small beside 200,000 ops.
            for name, path in (("norecord", plain), ("recording", binary)):
                small, large = instructions(path, url, 50_000), instructions(path, url, 250_000)
                per_op[name] = (large - small) / 200_000
            extra = per_op["recording"] / per_op["norecord"] - 1
            print(
                f"  instructions per op (valgrind): norecord {per_op['norecord']:,.0f},"
                f" recording {per_op['recording']:,.0f}: cost {extra * 100:+.1f}% (target <= 3%)"
            )


# memtier command lines (per thread: -c clients, -t threads) and their docs/cli.md translation
MEMTIER_SHAPES = (
    (["-c", "50", "-t", "2", "--ratio", "1:10", "-d", "100"],
     ["-c", "100", "-w", "2", "--ratio", "1:10", "-d", "100"]),
    (["-c", "4", "-t", "1", "--pipeline", "16", "--ratio", "1:10", "-d", "100"],
     ["-c", "4", "-w", "1", "--pipeline", "16", "--ratio", "1:10", "-d", "100"]),
)  # fmt: skip


def memtier(
    host: str, port: int, flags: list[str], seconds: float, keys: int = KEYS
) -> tuple[float, float]:
    """(ops/s, CPU seconds per second) of one memtier_benchmark run, its CPU over its test
    time as its rate is (its wall time is about a second longer: connecting, the last
    report; a share of that wall understated its CPU per op). Its keys are memtier-0 ..
    memtier-`keys`. The rate is the average on its last progress line (its ops over its
    time), not its Totals line: Totals divides by a span merged from its clients' start and
    end times, and now and then that span comes out short: 743,442/s where its progress line and
    the server's GET count both said 372,000/s (1 run in 6, --tls -c 16 -P 16); at
    --test-time=1 it said 71M/s. So it runs at least 2 s, and Totals is only the fallback."""
    test_time = max(2, int(seconds))
    out, _wall, cpu = reference(
        ["memtier_benchmark", "-s", host, "-p", str(port), *flags, "--key-maximum", str(keys),
         f"--test-time={test_time}", "--hide-histogram"]
    )  # fmt: skip
    progress = re.findall(r"\d+ ops,\s+\d+ \(avg:\s+(\d+)\) ops/sec", out)
    totals = re.search(r"Totals\s+([\d.]+)", out)
    if progress:
        rate = float(progress[-1])
    elif totals:
        rate = float(totals.group(1))
    else:
        print(f"    memtier said: {out.strip().splitlines()[-3:]}")
        rate = 0.0
    return rate, cpu / test_time


def memtier_run(host: str, port: int, flags: list[str], seconds: float) -> float:
    """ops/s memtier_benchmark reports (its Totals line)."""
    return memtier(host, port, flags, seconds)[0]


def workbench_run(url: str, flags: list[str], seconds: float, store: Path) -> tuple[float, str]:
    """ops/s of `workbench run` with the translated flags, and the strategy it ran."""
    res = subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "run", "-q", "--print-id", "-s", url,
         *flags, "--key-maximum", str(KEYS), "--test-time", f"{seconds:g}",
         "--set", "load.warmup=0", "--store", str(store)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if res.returncode != 0:
        print(f"    workbench run said: {res.stderr.strip().splitlines()[-1:]}")
        return 0.0, "?"
    from workbench.results.store import Store

    st = Store(store)
    try:
        run = st.load(res.stdout.strip())
        stats = run.steps[0].stats
        return stats.ops / stats.duration if stats.duration else 0.0, run.steps[0].strategy
    finally:
        st.close()


def memtier_shapes(seconds: float, pairs: int) -> None:
    have = shutil.which("memtier_benchmark") is not None
    print("\nmemtier command lines through `workbench run` (docs/cli.md), Redis, 1:10 set:get")
    if not have:
        print("  (memtier_benchmark is not on PATH: the workbench's rate alone)")
    with start_redis() as redis, tempfile.TemporaryDirectory() as tmp:
        url = f"redis://{redis.host}:{redis.port}"
        for memtier_flags, flags in MEMTIER_SHAPES:
            for _ in range(pairs):
                ref = memtier_run(redis.host, redis.port, memtier_flags, seconds) if have else 0.0
                rate, strategy = workbench_run(url, flags, seconds, Path(tmp) / "runs.sqlite3")
                ratio = f" | {rate / ref:.2f}x" if ref else ""
                memtier = f"memtier {ref:>9,.0f}/s | " if have else ""
                print(
                    f"  memtier {' '.join(memtier_flags):<44} {memtier}"
                    f"workbench ({strategy}) {rate:>9,.0f}/s{ratio}"
                )


if __name__ == "__main__":
    main()
