"""Where the CPU goes at a fixed open-loop rate: worker, server and coordinator, per op.

The search's knee (`bench/bench_open_loop.py`) depends on what else runs on the machine.
These figures depend on it much less: for one redis-server, GET of 100-byte values on
1,000 keys, 16 clients (`CLIENTS`) and one worker, each step at a fixed `load.rate` (or
`closed` for closed loop) prints

- p50 and p99, and the send lag's p50, p99 and p99.9;
- the worker's CPU as a share of a core, of it its idle polling (docs/frames.md), and
  its CPU per op;
- from the worker process's own counters (`RUSAGE_CHILDREN`, once it has exited): its
  sleeps per op (voluntary context switches: each is a wake-up paid later) and how often
  it was preempted (involuntary ones, per second);
- the server's CPU (`INFO cpu`), its time per command (`INFO commandstats`
  usec_per_call), its sleeps per op and how often it was preempted (`/proc/PID/status`);
- the coordinator's CPU (this process: session, verdicts, live view, store).

CPU per op and sleeps per op change little with the machine's load; latency and send lag
change a lot, so print `cat /proc/loadavg` beside them. Under `chrt -f` the workers do
not compete with other processes, but at rates where the worker and the server together
keep both CPUs of a 2-core machine over 95% busy, the kernel's real-time throttling stops
them for tens of ms a second (send lag p99 ~40 ms): there `chrt` is no upper bound.

On a virtual machine an idle vCPU halts, and waking it goes through the hypervisor:
that is most of a wake-up's cost here (~25 µs of the worker's CPU per sleep) and the
floor of an open loop's send lag when it sleeps to its sends. `CPU_DMA_LATENCY=0` in the
environment holds `/dev/cpu_dma_latency` at 0 µs for the run (root only; the kernel's PM
QoS request, as cyclictest does): idle CPUs then poll instead of halting, machine-wide,
until the file is closed. It is a way to measure what the wake-ups cost, not a setting
the workbench makes.

Usage: python bench/bench_fixed_rate.py SECONDS RATE... (e.g. `3 closed 10000 70000`);
CLIENTS=1 in the environment for one client. The redis-server is started on a free
loopback port and stopped at the end.
"""

from __future__ import annotations

import asyncio
import os
import resource
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis
from bench_open_loop import step as open_loop_step  # a sibling script, not a package
from workbench_redis.server import start_redis

from workbench.results.metrics import Recorded, Stats, summarise
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

CLIENTS = int(os.environ.get("CLIENTS", "16"))
CPU_DMA_LATENCY = "/dev/cpu_dma_latency"


def hold_cpu_dma_latency() -> int | None:
    """Open the PM QoS request of $CPU_DMA_LATENCY µs, when set; kept while the fd is open."""
    given = os.environ.get("CPU_DMA_LATENCY")
    if given is None:
        return None
    try:
        fd = os.open(CPU_DMA_LATENCY, os.O_WRONLY)
        os.write(fd, struct.pack("i", int(given)))
    except (OSError, ValueError) as e:
        print(f"{CPU_DMA_LATENCY}: cannot hold {given!r} µs: {e}", file=sys.stderr)
        raise SystemExit(2) from e
    return fd


@dataclass(frozen=True)
class Switches:
    """A process's context switches: sleeps (voluntary) and preemptions (involuntary)."""

    slept: int
    preempted: int

    @classmethod
    def of_pid(cls, pid: int) -> Switches:
        fields: dict[str, int] = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.endswith("ctxt_switches"):
                    fields[key] = int(value)
        return cls(fields["voluntary_ctxt_switches"], fields["nonvoluntary_ctxt_switches"])

    def __sub__(self, other: Switches) -> Switches:
        return Switches(self.slept - other.slept, self.preempted - other.preempted)


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def _server_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


async def step(server: ServerProcess, store: Store, seconds: float, rate: str) -> tuple[Stats, str]:
    """One step's totals and its verdict kind: bench_open_loop's native step, at CLIENTS
    clients, at `rate` ops/s or in closed loop."""
    paced = [] if rate == "closed" else [f"load.rate={rate}"]
    return await open_loop_step(
        server, store, "native", seconds, f"load.concurrency={CLIENTS}", *paced
    )


async def measure(server: ServerProcess, store: Store, seconds: float, rate: str) -> None:
    client = redis.Redis.from_url(server.target_options["url"])
    client.config_resetstat()
    switches, server_cpu = Switches.of_pid(server.pid), _server_cpu(client)
    me, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    began = time.monotonic()
    stats, verdict = await step(server, store, seconds, rate)
    wall = time.monotonic() - began
    server_switches = Switches.of_pid(server.pid) - switches
    server_share = (_server_cpu(client) - server_cpu) / wall
    per_call = client.info("commandstats").get("cmdstat_get", {}).get("usec_per_call", 0.0)
    client.close()
    me_after = resource.getrusage(resource.RUSAGE_SELF)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    coordinator = (_cpu(me_after) - _cpu(me)) / wall
    worker_cpu = _cpu(children_after) - _cpu(children)
    worker_slept = children_after.ru_nvcsw - children.ru_nvcsw
    worker_preempted = children_after.ru_nivcsw - children.ru_nivcsw

    s, d, ops = summarise(stats), stats.duration or 1.0, max(stats.ops, 1)
    cpu = sum(stats.cpu.values()) / d
    polled = sum(stats.server.get("idle_poll", {}).values()) / d
    lag = Recorded(stats.send_lag).values_at((50.0, 99.0, 99.9)) if stats.send_lag else {}
    lags = "/".join(f"{lag.get(p, 0) / 1000:.1f}" for p in (50.0, 99.0, 99.9))
    print(
        f"{rate:>7}: {stats.ops / d:8,.0f} ops/s, p50 {s.p(50.0):6.0f} us, p99 {s.p(99.0):7.0f}"
        f" us, send lag p50/p99/p99.9 {lags} us | worker {cpu:4.0%} of a core (idle polling"
        f" {polled:4.0%}), {worker_cpu / ops * 1e6:5.1f} us CPU/op, {worker_slept / ops:.2f}"
        f" sleeps/op, preempted {worker_preempted / wall:,.0f}/s | server {server_share:4.0%},"
        f" {per_call:.2f} us/call, {server_switches.slept / ops:.2f} sleeps/op, preempted"
        f" {server_switches.preempted / wall:,.0f}/s | coordinator {coordinator:4.0%} | {verdict}",
        flush=True,
    )


async def main() -> None:
    args = sys.argv[1:]
    if len(args) < 2:
        raise SystemExit(__doc__)
    seconds, rates = float(args[0]), args[1:]
    qos = hold_cpu_dma_latency()
    if qos is not None:
        print(f"{CPU_DMA_LATENCY} held at {os.environ['CPU_DMA_LATENCY']} µs", flush=True)
    server = start_redis()
    try:
        with tempfile.TemporaryDirectory(prefix="wbbench") as temp:
            store = Store(Path(temp) / "runs.sqlite")
            for rate in rates:
                await measure(server, store, seconds, rate)
    finally:
        server.stop()
        if qos is not None:
            os.close(qos)
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().strip()}")


if __name__ == "__main__":
    asyncio.run(main())
