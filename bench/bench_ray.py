"""The Ray launcher's own cost: the same spec with local worker processes and with Ray actors.

Runs A (local) and B (Ray) interleaved, A B A B ..., on this machine, with equal worker
counts, and prints each run's throughput and client CPU, then the median ratio B/A
(target >= 0.9x). One private local Ray is started once for the whole benchmark (the
launcher reuses a connection it finds), so its start-up is not in the figures; its idle
processes run during both A and B.

On one machine this measures only Ray's own overhead (actor runtime, frames through Ray,
its background processes on the same cores), never what spreading load over several
machines gains.

Usage: python bench/bench_ray.py [rounds] [--set path=value ...]
Default spec: the embedded cache, 2 workers, 16 clients, 5 s measured after 1 s warm-up.

Across hosts: python bench/bench_ray.py --hosts [rounds] (root, `ip netns`). The test bed
of tests/ray (netbed.py) makes three machines of network namespaces: redis-server on
srv (10.77.0.1), the Ray head on a (10.77.0.2, where `workbench run` runs), a Ray node on
b (10.77.0.3). The same load against the Redis on srv runs from 2 local worker processes
on a, then from 2 Ray workers spread over a and b, interleaved. The "hosts" share this
machine's cores, so on a machine of 2 cores this shows only what Ray and the veth hops
cost, never what a second load machine gains.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from workbench.engine.launchers import RAY_LOOPBACK_ONLY

os.environ.setdefault(RAY_LOOPBACK_ONLY, "0")  # read when ray is imported: loopback only
import ray

from workbench.results.events import StepFinished
from workbench.results.metrics import Stats, summarise
from workbench.results.store import Store
from workbench.run import session
from workbench.spec.steps import load_spec

BASE = [
    "load.workers=2",
    "load.concurrency=16",
    "load.duration=5",
    "load.warmup=1",
    "load.interval=1",
]


async def one_run(overrides: list[str], store: Store) -> Stats:
    spec = load_spec(None, overrides)
    totals: Stats | None = None
    async for event in session.run(spec, store):
        if isinstance(event, StepFinished):
            if event.status != "completed":
                raise SystemExit(f"run {event.status}: {event.reason}")
            totals = event.stats
    assert totals is not None
    return totals


def describe(name: str, stats: Stats) -> tuple[float, float]:
    s = summarise(stats)
    cpu = sum(stats.cpu.values())
    per_s = cpu / stats.duration if stats.duration else 0.0
    print(
        f"  {name:<5} {s.ops_per_s:>12,.0f} ops/s   p50 {s.p(50.0) or 0:>7.1f} us   "
        f"client CPU {per_s:4.2f} cores, {1e6 * cpu / max(1, s.ops):6.2f} us/op",
        flush=True,
    )
    return s.ops_per_s, per_s


HOSTS_BASE = [
    "target.system=redis",
    "target.options.url=redis://10.77.0.1:6379/0",
    "load.workers=2",
    "load.concurrency=16",
    "load.duration=5",
    "load.warmup=1",
    "load.interval=1",
]


def hosts_run(host: Any, sets: list[str], store: Path, env: dict[str, str]) -> tuple[float, float]:
    """One `workbench run` on the bed's head; its throughput and client CPU from the store."""
    args = ["workbench", "run", "--quiet", "--allow-remote", "--store", str(store)]
    host.run([*args, *(a for s in sets for a in ("--set", s))], timeout=600, **env)
    stored = Store(store)
    try:
        run = stored.load("last")
    finally:
        stored.close()
    (step,) = run.steps
    if step.status != "completed":
        raise SystemExit(f"run {step.status}")
    return describe("ray" if "load.launcher=ray" in sets else "local", step.stats)


def hosts_main(rounds: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "ray"))
    import netbed  # the test bed: only this benchmark and tests/ray use it

    reason = netbed.why_not()
    if reason:
        raise SystemExit(reason)
    bed = netbed.Bed.make(["srv", "a", "b"])
    try:
        netbed.redis_on(bed["srv"], 6379, "--protected-mode", "no")
        netbed.copy_token(netbed.ray_token(bed["a"]), bed["b"])
        netbed.ray_head(bed["a"])
        netbed.ray_join(bed["b"], bed["a"])
        store = bed["a"].home / "runs.sqlite3"
        print(
            f"local processes on a vs Ray workers on a and b, {rounds} rounds, "
            f"{os.cpu_count()} CPUs shared by all hosts: {' '.join(HOSTS_BASE)}",
            flush=True,
        )
        local, remote = [], []
        for i in range(rounds):
            print(f"round {i + 1}", flush=True)
            local.append(hosts_run(bed["a"], HOSTS_BASE, store, netbed.TOKEN))
            ray_sets = [*HOSTS_BASE, "load.launcher=ray", "load.ray_address=auto"]
            remote.append(hosts_run(bed["a"], ray_sets, store, netbed.TOKEN))
    finally:
        left = bed.remove()
        if left:
            print(f"warning: test bed processes still alive: {left}")
    report(local, remote, "ray on 2 hosts/local on 1", target=False)
    print(
        "the hosts share this machine's cores: the ratio is Ray's and the network hops' "
        "cost, not what a second load machine gains"
    )


def report(
    local: list[tuple[float, float]],
    remote: list[tuple[float, float]],
    what: str,
    target: bool = True,
) -> None:
    """The median throughput ratio; `target`: say whether it meets 0.9x (on one machine)."""
    ratios = [b[0] / a[0] for a, b in zip(local, remote, strict=True) if a[0]]
    ratio = statistics.median(ratios)
    verdict = f"; target >= 0.9x: {'met' if ratio >= 0.9 else 'NOT met'}" if target else ""
    print(
        f"{what} throughput: median {ratio:.2f}x (rounds: "
        f"{', '.join(f'{r:.2f}' for r in ratios)}){verdict}"
    )
    cpu_a = statistics.median(a[1] for a in local)
    cpu_b = statistics.median(b[1] for b in remote)
    print(f"client CPU (median): local {cpu_a:.2f} cores, ray {cpu_b:.2f} cores")


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--hosts":
        hosts_main(int(args[1]) if len(args) > 1 else 3)
        return
    rounds = int(args.pop(0)) if args and args[0].isdigit() else 3
    extra = [a for a in args if a != "--set"]
    base = [*BASE, *extra]
    logging.getLogger("ray").setLevel(logging.ERROR)
    temp = tempfile.mkdtemp(prefix="wbbench")
    ray.init(
        address="local",
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=100 * 1024 * 1024,
        _temp_dir=temp,
        configure_logging=False,
    )
    print(
        f"local vs Ray launcher, {rounds} rounds, {os.cpu_count()} CPUs: {' '.join(base)}",
        flush=True,
    )
    store = Store(Path(temp) / "runs.sqlite3")
    local: list[tuple[float, float]] = []
    remote: list[tuple[float, float]] = []
    try:
        for i in range(rounds):
            print(f"round {i + 1}", flush=True)
            local.append(describe("local", asyncio.run(one_run(base, store))))
            remote.append(
                describe("ray", asyncio.run(one_run([*base, "load.launcher=ray"], store)))
            )
    finally:
        ray.shutdown()
    report(local, remote, "ray/local")


if __name__ == "__main__":
    main()
