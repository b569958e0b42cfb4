"""How honest `workbench compare` is, measured: A/A and A/B pairs of real runs.

A/A: the same profile run twice, each with 3 repeats, compared: a pair passes when every
figure (ops/s, p50, p99, p99.9, error share, hit rate) says "no change" (the issue asks for
at least 19 of 20). A/B: a real change, compared the same way: a pair passes when the
figure that must move is found to move the way it must (the issue asks for 20 of 20):

- embedded: 4 KiB values against 100 B, p99 regressed. Gets hand back the stored object,
  so only the sets (a tenth of the ops, the slowest tenth) copy 40 times more bytes: the
  change is in the top decile, where p99 reads, and not at the median.
- redis (one throw-away redis-server, the native engine): 16 clients against 8, p50
  regressed: twice the requests wait in the server's one queue.

The A/A and the A/B pair of each round run one after the other (A/A i, A/B i, A/A i+1...),
so a drift of the machine lands on both. The machine is shared with other work: each
pair waits (5 minutes at most) for the machine to be 70% idle, and says how idle it found
it; the figures printed are those of those moments.

Usage: python bench/bench_compare.py [pairs=20] [seconds per step=2] [systems=embedded,redis]
       python bench/bench_compare.py --tally STORE   (the figures again, from a kept store)
BENCH_STORE=path keeps the runs (else they go with a temporary directory).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from workbench_redis.server import start_redis

from workbench import session
from workbench.report.changes import Comparison, compare_runs
from workbench.report.model import read_run
from workbench.spec.steps import load_spec
from workbench.stats.change import NO_CHANGE, REGRESSED
from workbench.store import Store

REPEATS = 3
INTERVAL = 0.2
QUIET = 0.7  # idle share of the machine a pair waits for before it starts
WAIT_S = 300.0  # and for at most this long
# system -> (its overrides, A's, B's, what B changes, the figure that must regress)
DESIGNS = {
    "embedded": (
        ["target.system=embedded", "load.concurrency=8", "load.workers=1"],
        ["workload.value_size=fixed(100)"],
        ["workload.value_size=fixed(4096)"],
        "4 KiB values against 100 B",
        "p99",
    ),
    "redis": (
        ["target.system=redis", "workload.value_size=fixed(100)"],
        ["load.concurrency=8"],
        ["load.concurrency=16"],
        "16 clients against 8",
        "p50",
    ),
}


def common(seconds: float) -> list[str]:
    return [
        f"load.repeat={REPEATS}",
        f"load.duration={seconds}",
        f"load.interval={INTERVAL}",
        "load.warmup=0.5",
        "workload.mix={get=0.9, set=0.1}",
        "workload.keys=10000",
        "workload.key_distribution=zipf(0.99)",
        "workload.prefill=true",
    ]


def cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of every CPU since boot."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields)


def wait_quiet(idle_share: float = QUIET, most: float = WAIT_S) -> float:
    """Wait (at most `most` seconds) until the machine was at least `idle_share` idle over
    two seconds: a pair measured while others load the machine measures them too. Returns
    how idle it was when the pair started."""
    deadline = time.monotonic() + most
    while True:
        idle0, total0 = cpu_times()
        time.sleep(2)
        idle1, total1 = cpu_times()
        idle = (idle1 - idle0) / max(total1 - total0, 1)
        if idle >= idle_share or time.monotonic() > deadline:
            return idle


async def one_run(store: Store, overrides: list[str], name: str) -> str:
    spec = load_spec(None, [*overrides, f"name={name}"])
    run_id = ""
    async for event in session.run(spec, store):
        run_id = run_id or getattr(event, "run_id", "")
    return run_id


def verdicts(comparison: Comparison) -> dict[str, str]:
    (step,) = comparison.steps
    return {f.metric.key: f.verdict or "refused" for f in step.figures}


def show(kind: str, n: int, found: dict[str, str], passed: bool) -> None:
    shown = " ".join(f"{k}={v}" for k, v in found.items())
    print(f"  {kind} pair {n:>2}: {'pass' if passed else 'FAIL'}  {shown}", flush=True)


def measure(system: str, url: str, pairs: int, seconds: float, store: Store) -> None:
    shared, a, b, what, _ = DESIGNS[system]
    base = [*common(seconds), *shared] + ([f"target.options.url={url}"] if url else [])
    print(f"{system}: A/A same profile twice; A/B {what}; {REPEATS} repeats of {seconds} s")
    for n in range(1, pairs + 1):
        for kind, second in (("aa", a), ("ab", b)):
            idle = wait_quiet()
            asyncio.run(one_run(store, [*base, *a], f"{system}-{kind}{n}-a"))
            asyncio.run(one_run(store, [*base, *second], f"{system}-{kind}{n}-b"))
            print(
                f"  {system} {kind} pair {n} measured (machine {idle:.0%} idle before it, "
                f"load average {os.getloadavg()[0]:.1f} after)",
                flush=True,
            )


def tally(store: Store, system: str) -> str:
    """Each stored pair compared again: the counts the issue asks for."""
    *_, what, must = DESIGNS[system]
    runs = {r.name: r.id for r in store.list_runs(limit=100_000)}
    passed = {"aa": 0, "ab": 0}
    alarms: Counter[str] = Counter()
    n = 0
    while f"{system}-ab{n + 1}-b" in runs:
        n += 1
        for kind in ("aa", "ab"):
            a, b = (read_run(store.load(runs[f"{system}-{kind}{n}-{x}"])) for x in "ab")
            found = verdicts(compare_runs(a, b))
            if kind == "aa":
                ok = all(v == NO_CHANGE for v in found.values())
                alarms.update(k for k, v in found.items() if v != NO_CHANGE)
            else:
                ok = found[must] == REGRESSED
            passed[kind] += ok
            show("A/A" if kind == "aa" else "A/B", n, found, ok)
    others = ", ".join(f"{k} {c}" for k, c in alarms.most_common()) or "none"
    return (
        f"{system}: A/A said no change for every figure in {passed['aa']} of {n} pairs "
        f"(figures that did not: {others}); A/B ({what}) found {must} regressed in "
        f"{passed['ab']} of {n} pairs"
    )


def run_system(system: str, pairs: int, seconds: float, store: Store) -> str:
    start, load = time.monotonic(), os.getloadavg()[0]
    if system == "redis":
        with start_redis() as server:
            measure(system, str(server.target_options["url"]), pairs, seconds, store)
    else:
        measure(system, "", pairs, seconds, store)
    minutes, end = (time.monotonic() - start) / 60, os.getloadavg()[0]
    return (
        f"{system}: {minutes:.1f} min; load average {load:.1f} at the start, {end:.1f} at the end"
    )


def main() -> None:
    if sys.argv[1:2] == ["--tally"]:
        store = Store(sys.argv[2], read_only=True)
        print("\n".join(tally(store, system) for system in DESIGNS))
        return
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    systems = (sys.argv[3] if len(sys.argv) > 3 else "embedded,redis").split(",")
    print(f"{os.cpu_count()} CPUs; {pairs} pairs per system", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(os.environ.get("BENCH_STORE") or Path(tmp) / "bench.sqlite")
        timing = [run_system(system, pairs, seconds, store) for system in systems]
        print("\n".join([*timing, *(tally(store, system) for system in systems)]))


if __name__ == "__main__":
    main()
