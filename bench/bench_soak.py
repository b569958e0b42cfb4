"""A soak run: a steady load for a chosen time, watching the workbench's own memory (not a test).

Runs `workbench run -q` against a managed redis-server (started by the run, on a free
loopback port) with the native engine (strategy native) or the Python engine (strategy
multiplexed), closed loop or open loop at a rate, and every `--every` seconds (a minute
by default) prints:

- the RSS of the coordinator (the `workbench run` process) and of each worker;
- the store's size on disk (the SQLite file and its write-ahead log) and its growth;
- throughput and p99 over that minute, from the intervals stored in it (histograms merged,
  never percentiles averaged).

At the end: each process's RSS slope in MB per hour, fitted by least squares over the
readings after the first minute (start-up and the first allocations left out; one reading
every `--sample` seconds, 5 by default), against the target of under 1 MB per hour; and
the store's growth per hour of run.

Usage:
  python bench/bench_soak.py --engine native --minutes 30
  python bench/bench_soak.py --engine python --rate 5000 --minutes 10 --every 30
  python bench/bench_soak.py --engine both --minutes 3          (one after the other)

The machine is shared and noisy: throughput and p99 move with everyone's load; the memory
slopes do not depend on them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from workbench.results.metrics import Stats, format_us, merged, summarise

ROOT = Path(__file__).resolve().parent.parent
WORKBENCH = Path(sys.executable).with_name("workbench")
STRATEGY = {"native": "native", "python": "multiplexed"}
TARGET_MB_PER_HOUR = 1.0
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Track:
    """RSS samples (seconds since start, MB) of one process."""

    name: str
    samples: list[tuple[float, float]] = field(default_factory=list)

    def slope(self, after: float) -> float | None:
        """MB per hour by least squares over the samples taken after `after` seconds."""
        pts = [(t, mb) for t, mb in self.samples if t >= after]
        if len(pts) < 2:
            return None
        n = len(pts)
        mt = sum(t for t, _ in pts) / n
        mm = sum(mb for _, mb in pts) / n
        var = sum((t - mt) ** 2 for t, _ in pts)
        if var == 0:
            return None
        return sum((t - mt) * (mb - mm) for t, mb in pts) / var * 3600


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE / 1e6
    except (OSError, IndexError, ValueError):
        return None


def children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def role(pid: int) -> str:
    """What a child of the coordinator is: a worker, the managed server, or something else."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return ""
    text = b" ".join(argv).decode(errors="replace")
    if "workbench-native" in text or "workbench.engine.worker" in text:
        return "worker"
    if "redis-server" in text:
        return "server"
    return ""


def loadavg() -> str:
    """The machine's one-minute load average (the machine is shared: say how busy it was)."""
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def store_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


def minute_figures(path: Path, after: int) -> tuple[float, float, int, int]:
    """(ops/s, p99 µs, intervals, last rowid) of the intervals stored since rowid `after`
    (what arrived since the last line: an interval's `elapsed` counts from its step's
    start, not the soak's)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        rows = db.execute(
            "SELECT rowid, stats FROM intervals WHERE rowid > ? ORDER BY rowid", (after,)
        ).fetchall()
        db.close()
    except sqlite3.Error:
        return 0.0, 0.0, 0, after
    total = merged((Stats.from_dict(json.loads(r[1])) for r in rows), concurrent=False)
    s = summarise(total)
    return s.ops_per_s, s.p(99.0), len(rows), rows[-1][0] if rows else after


def sample(
    pid: int, t: float, tracks: dict[str, Track]
) -> tuple[float, list[float], float | None] | None:
    """One RSS reading of the coordinator and its workers (kept in `tracks`), and of the
    managed server: (coordinator MB, workers MB, server MB), or None once it has gone."""
    coordinator = rss_mb(pid)
    if coordinator is None:
        return None
    tracks["coordinator"].samples.append((t, coordinator))
    workers: list[float] = []
    server = None
    for child in sorted(children(pid)):
        kind, mb = role(child), rss_mb(child)
        if mb is None:
            continue
        if kind == "worker":
            name = f"worker {len(workers)}"
            tracks.setdefault(name, Track(name)).samples.append((t, mb))
            workers.append(mb)
        elif kind == "server":
            server = mb
    return coordinator, workers, server


def command(args: argparse.Namespace, engine: str, store: Path, seconds: float) -> list[str]:
    sets = [
        "target.system=redis",
        "target.managed=true",
        f"strategy.name={STRATEGY[engine]}",
        f"load.duration={seconds}",
        "load.warmup=0",
        f"load.interval={args.interval}",
        f"load.concurrency={args.clients}",
        f"load.workers={args.workers}",
        f"workload.keys={args.keys}",
        "workload.value_size=fixed(100)",
        "workload.mix={get=0.9,set=0.1}",
    ]
    if args.rate:
        sets.append(f"load.rate={args.rate}")
    argv = [str(WORKBENCH), "run", "-q", "--store", str(store), "--name", f"soak-{engine}"]
    for s in sets:
        argv += ["--set", s]
    return argv


def soak(args: argparse.Namespace, engine: str) -> bool:
    seconds = args.minutes * 60
    loop = f"open loop at {args.rate} ops/s" if args.rate else "closed loop"
    print(
        f"\n== {engine} engine (strategy {STRATEGY[engine]}), {loop}, {args.clients} clients, "
        f"{args.workers} worker(s), {args.interval} s intervals, {args.minutes:g} min",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        store = args.store or Path(tmp) / "runs.sqlite3"  # kept only when named
        log = open(Path(tmp) / "run.log", "w+")  # noqa: SIM115 (read back at the end)
        proc = subprocess.Popen(
            command(args, engine, store, seconds), stdout=log, stderr=subprocess.STDOUT
        )
        tracks: dict[str, Track] = {"coordinator": Track("coordinator")}
        start = time.monotonic()
        last_store, last_row = 0, 0
        print(
            f"{'min':>5} {'coordinator':>12} {'workers MB':>22} {'server':>8} "
            f"{'store MB':>9} {'+MB':>6} {'ops/s':>10} {'p99':>9} {'loadavg':>7}",
            flush=True,
        )
        try:
            next_sample, next_print = start + args.sample, start + args.every
            while proc.poll() is None:
                time.sleep(max(0.0, min(1.0, next_sample - time.monotonic())))
                if time.monotonic() < next_sample or proc.poll() is not None:
                    continue
                next_sample += args.sample
                t = time.monotonic() - start
                sampled = sample(proc.pid, t, tracks)
                if sampled is None:
                    break
                if time.monotonic() < next_print:
                    continue
                next_print += args.every
                coordinator, workers, server = sampled
                size = store_bytes(store)
                ops, p99, n, last_row = minute_figures(store, last_row)
                each = " ".join(f"{w:.1f}" for w in workers)
                print(
                    f"{t / 60:5.1f} {coordinator:10.1f}MB {each:>22} "
                    f"{server or 0:7.1f}M {size / 1e6:9.2f} {(size - last_store) / 1e6:+6.2f} "
                    f"{ops:10,.0f} {format_us(p99) if n else '-':>9} {loadavg():>7}",
                    flush=True,
                )
                last_store = size
            rc = proc.wait(timeout=seconds + 120)
        except BaseException:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
            raise
        elapsed = time.monotonic() - start
        size = store_bytes(store)
        log.seek(0)
        tail = log.read().strip().splitlines()[-3:]
        log.close()
        print(f"run exited {rc}: " + " | ".join(tail))
        ok = rc == 0
        print(f"slope after the first minute (target < {TARGET_MB_PER_HOUR} MB/hour):")
        for track in tracks.values():
            slope = track.slope(after=60.0)
            if slope is None:
                print(f"  {track.name:>12}: too few samples after the first minute")
                continue
            first, last = track.samples[0][1], track.samples[-1][1]
            met = "met" if slope < TARGET_MB_PER_HOUR else "NOT met"
            late = track.slope(after=elapsed / 2)  # once bounded caches have filled
            print(
                f"  {track.name:>12}: {slope:+8.2f} MB/hour  ({first:.1f} -> {last:.1f} MB)  {met}"
                + (f"; second half {late:+.2f} MB/hour" if late is not None else "")
            )
            ok = ok and slope < TARGET_MB_PER_HOUR
        hours = max(elapsed, 1e-9) / 3600
        print(
            f"store: {size / 1e6:.2f} MB after {elapsed / 60:.1f} min, "
            f"{size / 1e6 / hours:.1f} MB per hour of run"
        )
        return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--engine", choices=("native", "python", "both"), default="both")
    ap.add_argument("--minutes", type=float, default=10.0, help="length of each soak run")
    ap.add_argument("--rate", type=int, default=0, help="open loop at this many ops/s (0: closed)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds per interval")
    ap.add_argument("--every", type=float, default=60.0, help="seconds between printed lines")
    ap.add_argument(
        "--sample",
        type=float,
        default=5.0,
        help="seconds between RSS readings for the slopes (a reading catches however many "
        "histograms are in flight at that moment: more readings, less noise)",
    )
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument(
        "--store", type=Path, help="keep the run in this store (default: a temporary one)"
    )
    args = ap.parse_args()
    # A SIGTERM becomes SystemExit, so the run in progress is stopped (SIGINT) and waited for.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    engines = ("native", "python") if args.engine == "both" else (args.engine,)
    ok = all([soak(args, e) for e in engines])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
