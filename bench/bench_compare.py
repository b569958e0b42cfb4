"""How honest `workbench compare` is, measured: A/A and A/B pairs of real runs.

A/A: the same profile run twice, each with 3 repeats, compared: a pair passes when every
figure (ops/s, p50, p99, p99.9, error share, hit rate) says "no change" (the issue asks for
at least 19 of 20). A/B: a real change, compared the same way: a pair passes when the
figure that must move is found to move the way it must (the issue asks for 20 of 20):

- embedded: 64 KiB values against 100 B, p99 regressed. Gets hand back the stored object,
  so only the sets (a tenth of the ops, the slowest tenth) copy the bigger value: the
  change is in the top decile, where p99 reads, and not at the median. 4 KiB against
  100 B moved p99 by about a fifth, within what three repeats of 2 s vary on this machine
  (4 of 20 pairs found it on a quiet machine): a copy of 4 KiB is well under a microsecond.
- redis (one throw-away redis-server, the native engine): 16 clients against 8, p50
  regressed: twice the requests wait in the server's one queue.

The A/A and the A/B pair of each round run one after the other (A/A i, A/B i, A/A i+1...),
so a drift of the machine lands on both. The machine is shared with other work: each
pair waits (5 minutes at most) for the machine to be 70% idle, and says how idle it found
it; the figures printed are those of those moments.

Usage: python bench/bench_compare.py [pairs=20] [seconds per step=2] [systems=embedded,redis]
                                     [designs=two,interleaved]
       python bench/bench_compare.py --tally STORE   (the figures again, from a kept store)
BENCH_STORE=path keeps the runs (else they go with a temporary directory); BENCH_REPEATS=N
repeats each side N times (3); BENCH_PAIRS=ab runs only the A/B pairs (aa: only the A/A).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from workbench_redis.server import start_redis

from workbench.report.changes import Comparison, compare_runs, within_run
from workbench.report.model import read_run
from workbench.results.store import Store
from workbench.run import session
from workbench.spec.steps import load_spec
from workbench.stats.change import NO_CHANGE, REGRESSED

REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))  # repeats of each side
# "aa,ab" (default) or one of them: BENCH_PAIRS=ab measures only the power to find a change
PAIRS = os.environ.get("BENCH_PAIRS", "aa,ab").split(",")
INTERVAL = 0.2
QUIET = 0.5  # idle share of the machine a round waits for before it starts
WAIT_S = 60.0  # and for at most this long
# system -> (its overrides, A's, B's, what B changes, the figure that must regress)
DESIGNS = {
    "embedded": (
        ["target.system=embedded", "load.concurrency=8", "load.workers=1"],
        ["workload.value_size=fixed(100)"],
        ["workload.value_size=fixed(65536)"],
        "64 KiB values against 100 B",
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


def interleaved(shared: list[str], a: list[str], b: list[str] | None) -> list[str]:
    """One run whose sweep holds both sides, so their repeats interleave (A B A B A B): B's
    settings, or for an A/A the same settings under a second label."""
    path, first = a[0].split("=", 1)
    second = b[0].split("=", 1)[1] if b else first
    values = ", ".join(json.dumps(_value(v)) for v in (first, second))
    return [*shared, f'sweep=[{{path="{path}", values=[{values}], labels=["A", "B"]}}]']


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


DESIGN_NAMES = {"two": ("two runs", "aa", "ab"), "interleaved": ("interleaved", "iaa", "iab")}


def measure(
    system: str, url: str, pairs: int, seconds: float, store: Store, designs: list[str]
) -> None:
    shared, a, b, what, _ = DESIGNS[system]
    base = [*common(seconds), *shared] + ([f"target.options.url={url}"] if url else [])
    print(f"{system}: A/A same profile twice; A/B {what}; {REPEATS} repeats of {seconds} s")
    for n in range(1, pairs + 1):
        idle = wait_quiet()
        if "two" in designs:
            for kind, second in (("aa", a), ("ab", b)):
                if kind not in PAIRS:
                    continue
                asyncio.run(one_run(store, [*base, *a], f"{system}-{kind}{n}-a"))
                asyncio.run(one_run(store, [*base, *second], f"{system}-{kind}{n}-b"))
        if "interleaved" in designs:
            asyncio.run(one_run(store, interleaved(base, a, None), f"{system}-iaa{n}"))
            asyncio.run(one_run(store, interleaved(base, a, b), f"{system}-iab{n}"))
        print(
            f"  {system} round {n} measured (machine {idle:.0%} idle before it, load "
            f"average {os.getloadavg()[0]:.1f} after)",
            flush=True,
        )


def pair_verdicts(
    store: Store, runs: dict[str, str], system: str, kind: str, n: int
) -> dict[str, str]:
    """The verdicts of one pair: two runs compared, or one interleaved run's B against A."""
    if kind.startswith("i"):
        found = within_run(read_run(store.load(runs[f"{system}-{kind}{n}"])))
        assert found is not None
        return verdicts(found)
    a, b = (read_run(store.load(runs[f"{system}-{kind}{n}-{x}"])) for x in "ab")
    return verdicts(compare_runs(a, b))


def tally(store: Store, system: str) -> list[str]:
    """Each stored pair compared again: the counts the issue asks for, for pairs of runs
    and for interleaved pairs."""
    *_, what, must = DESIGNS[system]
    runs = {r.name: r.id for r in store.list_runs(limit=100_000)}
    lines = []
    for design, aa, ab in DESIGN_NAMES.values():
        rounds = 0
        while any(f"{system}-{k}{rounds + 1}{end}" in runs for k in (aa, ab) for end in ("", "-b")):
            rounds += 1
        if not rounds:
            continue
        passed = {aa: 0, ab: 0}
        alarms: Counter[str] = Counter()
        kinds = [k for k in (aa, ab) if f"{system}-{k}1" in runs or f"{system}-{k}1-b" in runs]
        for n in range(1, rounds + 1):
            for kind in kinds:
                found = pair_verdicts(store, runs, system, kind, n)
                if kind == aa:
                    ok = all(v == NO_CHANGE for v in found.values())
                    alarms.update(k for k, v in found.items() if v != NO_CHANGE)
                else:
                    ok = found[must] == REGRESSED
                passed[kind] += ok
                show(f"{design} {'A/A' if kind == aa else 'A/B'}", n, found, ok)
        others = ", ".join(f"{k} {c}" for k, c in alarms.most_common()) or "none"
        said = []
        if aa in kinds:
            said.append(
                f"A/A said no change for every figure in {passed[aa]} of {rounds} pairs "
                f"(figures that did not: {others})"
            )
        if ab in kinds:
            said.append(f"A/B ({what}) found {must} regressed in {passed[ab]} of {rounds} pairs")
        lines.append(f"{system}, {design}: {'; '.join(said)}")
    return lines


def run_system(system: str, pairs: int, seconds: float, store: Store, designs: list[str]) -> str:
    start, load = time.monotonic(), os.getloadavg()[0]
    if system == "redis":
        with start_redis() as server:
            measure(system, str(server.target_options["url"]), pairs, seconds, store, designs)
    else:
        measure(system, "", pairs, seconds, store, designs)
    minutes, end = (time.monotonic() - start) / 60, os.getloadavg()[0]
    return (
        f"{system}: {minutes:.1f} min; load average {load:.1f} at the start, {end:.1f} at the end"
    )


def main() -> None:
    if sys.argv[1:2] == ["--tally"]:
        store = Store(sys.argv[2], read_only=True)
        print("\n".join(line for system in DESIGNS for line in tally(store, system)))
        return
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    systems = (sys.argv[3] if len(sys.argv) > 3 else "embedded,redis").split(",")
    designs = (sys.argv[4] if len(sys.argv) > 4 else "two,interleaved").split(",")
    if unknown := set(designs) - set(DESIGN_NAMES):
        sys.exit(f"designs: expected some of {', '.join(DESIGN_NAMES)}; got {', '.join(unknown)}")
    print(f"{os.cpu_count()} CPUs; {pairs} pairs per system", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(os.environ.get("BENCH_STORE") or Path(tmp) / "bench.sqlite")
        timing = [run_system(system, pairs, seconds, store, designs) for system in systems]
        print("\n".join([*timing, *(line for system in systems for line in tally(store, system))]))


if __name__ == "__main__":
    main()
