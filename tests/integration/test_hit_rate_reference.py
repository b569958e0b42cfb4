"""Hit rates with a reference: captured traces, libCacheSim beside the measured figures,
miss-ratio curves, and N embedded workers acting as one cache (checked against Che's
approximation). libCacheSim runs only in its subprocess; these tests never import it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import collect, finished

from workbench.report import render
from workbench.report.mrc import is_monotone
from workbench.results.events import StepSimulated
from workbench.results.store import Store
from workbench.run.mrc import simulated_curves
from workbench.simulate import runner
from workbench.simulate.policies import INSTALL
from workbench.spec.steps import load_spec
from workbench.workload.oracle_trace import read_trace, warmup_path

needs_sim = pytest.mark.skipif(
    not runner.available(), reason=f"libcachesim is not installed: {INSTALL}"
)
INT64_MAX = (1 << 63) - 1


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite")


def _embedded(keys: int, dist: str, entries: int, ops: int, workers: int) -> list[str]:
    return [
        "target.system=embedded",
        f"target.options.max_entries={entries}",
        "workload.mix={cache_aside=1}",
        f"workload.keys={keys}",
        f'workload.key_distribution="{dist}"',
        'workload.value_size="fixed(100)"',
        f"load.ops={ops}",
        f"load.warmup_ops={ops // 2}",
        "load.concurrency=4",
        f"load.workers={workers}",
    ]


@needs_sim
async def test_exact_lru_and_libcachesim_lru_agree_on_the_captured_trace(
    store: Store, tmp_path: Path
) -> None:
    trace = tmp_path / "t.oracleGeneral"
    overrides = _embedded(5000, "zipf(0.9)", 1000, 30_000, 1)
    events = await collect(
        [*overrides, f'workload.trace_out="{trace}"', 'simulate.policies=["lru", "belady"]'],
        store,
    )
    (step,) = finished(events)
    assert step.status == "completed"
    (sim,) = [e for e in events if isinstance(e, StepSimulated)]
    assert sim.results["unit"] == "objects" and sim.results["limit"] == 1000
    assert sim.results["requests"] == 30_000 and sim.results["warmed"]
    lru = sim.results["policies"]["lru"]
    s = step.stats
    measured = s.hits / (s.hits + s.misses)
    assert abs(lru["hit_rate"] - measured) < 0.001, (lru, measured)
    assert abs(lru["hot"] - s.hot_hits / s.hot_gets) < 0.001
    assert sim.results["policies"]["belady"]["hit_rate"] >= lru["hit_rate"]  # an upper bound
    # The report says which figure is which.
    report = render(store.load(events[0].run_id), "hitrate")
    assert "| measured | simulated: lru | simulated: belady |" in report
    assert "Simulated: libCacheSim replaying" in report


@needs_sim
async def test_the_trace_reads_back_through_libcachesims_own_reader(
    store: Store, tmp_path: Path
) -> None:
    trace = tmp_path / "t.oracleGeneral"
    overrides = _embedded(300, "zipf(0.99)", 100, 2_000, 2)
    await collect([*overrides, f'workload.trace_out="{trace}"'], store)
    ours = list(read_trace(str(trace)))
    assert len(ours) == 2_000
    # The warm-up beside it: its budget, and what clients sent until the measured phase began.
    assert Path(warmup_path(str(trace))).stat().st_size >= 1_000 * 24
    theirs = runner.read_back(str(trace))
    assert len(theirs) == len(ours)
    for (t, oid, size, nxt), (t2, oid2, size2, nxt2) in zip(ours, theirs, strict=True):
        assert (t, oid, size) == (t2, oid2, size2)
        assert nxt2 == (INT64_MAX if nxt == -1 else nxt)
    # Each next access is where the object really comes next.
    ids = [r[1] for r in ours]
    for i, r in enumerate(ours):
        later = [j for j in range(i + 1, len(ids)) if ids[j] == ids[i]]
        assert r[3] == (later[0] if later else -1)
        if i > 200:
            break


@needs_sim
def test_the_lru_miss_ratio_curve_is_monotone() -> None:
    spec = load_spec(None, _embedded(5000, "zipf(0.8)", 1000, 20_000, 1))
    sizes = [50, 100, 200, 400, 800, 1600, 3200]
    curves = simulated_curves(spec, "test", sizes, ["lru", "fifo"], "objects")
    lru = curves.simulated["lru"]
    assert all(r is not None for r in lru)
    assert is_monotone(lru)
    assert lru[0] < lru[-1] - 0.2  # and it does climb


def che_hit_rate(p: list[float], cache: int) -> float:
    """Che's approximation for LRU: the characteristic time T with sum(1 - e^(-p T)) = C."""
    lo, hi = 0.0, 1.0
    while sum(1 - math.exp(-q * hi) for q in p) < cache:  # bounded: the sum tends to len(p)
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if sum(1 - math.exp(-q * mid) for q in p) < cache:
            lo = mid
        else:
            hi = mid
    return sum(q * (1 - math.exp(-q * lo)) for q in p)


def _pmf(dist: str, n: int) -> list[float]:
    if dist.startswith("zipf"):
        w = [1 / (i + 1) ** 0.99 for i in range(n)]
    else:  # gaussian(0.5,0.1): int() of a normal draw, redrawn outside [0, n)
        mu, sd = 0.5 * n, 0.1 * n
        cdf = [0.5 * (1 + math.erf((x - mu) / (sd * math.sqrt(2)))) for x in range(n + 1)]
        w = [cdf[i + 1] - cdf[i] for i in range(n)]
    total = sum(w)
    return [x / total for x in w]


@pytest.mark.parametrize("dist", ["zipf(0.99)", "gaussian(0.5,0.1)"])
async def test_one_or_two_embedded_workers_are_one_cache(store: Store, dist: str) -> None:
    keys, entries = 10_000, 2_000
    rates = []
    for workers in (1, 2):
        events = await collect(_embedded(keys, dist, entries, 100_000, workers), store)
        (step,) = finished(events)
        assert step.status == "completed"
        rates.append(step.stats.hits / (step.stats.hits + step.stats.misses))
    che = che_hit_rate(_pmf(dist, keys), entries)
    assert abs(rates[0] - rates[1]) < 0.005, (rates, che)
    for rate in rates:
        assert abs(rate - che) < 0.01, (rates, che)


def test_without_libcachesim_one_line_says_how_to_install_it(tmp_path: Path) -> None:
    hide = (
        "import importlib.util, sys\n"
        "find = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'libcachesim' "
        "else find(name, *a)\n"
        "from workbench.cli.main import main\n"
        "sys.argv = ['workbench', *sys.argv[1:]]\n"
        "main()\n"
    )
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3")}
    done = subprocess.run(
        [sys.executable, "-c", hide, "run", "--simulate", "lru", "-n", "100"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and INSTALL in lines[0], done.stderr


def _cli(args: list[str], store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@needs_sim
def test_simulate_and_mrc_from_the_command_line(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite3"
    trace = tmp_path / "t.oracleGeneral"
    sets = ["--set", "target.options.max_entries=200", "--set", "workload.keys=2000"]
    sets += ["--set", 'workload.key_distribution="zipf(0.9)"', "-n", "4000", "-w", "1"]
    ran = _cli(["run", *sets, "--trace-out", str(trace), "-q", "--print-id"], store)
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.strip()
    done = _cli(["simulate", run_id, "-p", "lru,sieve"], store)
    assert done.returncode == 0, done.stderr
    assert "| measured | simulated: lru | simulated: sieve |" in done.stdout
    assert "200 objects" in done.stdout
    stored = Store(store).load(run_id).steps[0].simulated
    assert set(stored["policies"]) == {"lru", "sieve"}
    # A run that kept no trace: one line saying how to get one, exit 2.
    plain = _cli(["run", *sets, "-q", "--print-id"], store)
    refused = _cli(["simulate", plain.stdout.strip()], store)
    assert refused.returncode == 2 and "--trace-out" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    # The miss-ratio curve of a profile: a table and a chart.
    profile = tmp_path / "p.toml"
    profile.write_text(
        '# a test profile\nname = "p"\ndescription = "zipf"\n[workload]\nkeys = 2000\n'
        'key_distribution = "zipf(0.9)"\nmix = { cache_aside = 1 }\n[load]\nops = 4000\n'
    )
    chart = tmp_path / "mrc.svg"
    curve = _cli(
        ["mrc", str(profile), "--sizes", "100,400,1600", "--unit", "objects", "-o", str(chart)],
        store,
    )
    assert curve.returncode == 0, curve.stderr
    assert "| size | simulated: lru |" in curve.stdout and "| 1,600 |" in curve.stdout
    assert chart.read_text().startswith("<svg") and "simulated: belady" in chart.read_text()


@needs_sim
def test_mrc_measure_puts_the_real_cache_beside_the_simulated_lru(tmp_path: Path) -> None:
    # The embedded cache evicts in LRU order, so at every size it ran at, its measured hit
    # rate must sit on libCacheSim's LRU curve of the same requests (not exactly: the run
    # draws its own keys, and its bytes per entry are counted as the cache counts them).
    store = tmp_path / "runs.sqlite3"
    profile = tmp_path / "p.toml"
    profile.write_text(
        '# a test profile\nname = "p"\ndescription = "zipf"\n[workload]\nkeys = 2000\n'
        'key_distribution = "zipf(0.9)"\nmix = { cache_aside = 1 }\n[load]\nops = 20000\n'
    )
    sizes = ["20KiB", "80KiB", "320KiB"]
    curve = _cli(["mrc", str(profile), "--sizes", ",".join(sizes), "-p", "lru", "--measure"], store)
    assert curve.returncode == 0, curve.stderr
    assert "| size | simulated: lru | measured: embedded |" in curve.stdout
    rows = {
        cells[0]: [float(c.rstrip("%")) for c in cells[1:]]
        for line in curve.stdout.splitlines()
        if line.startswith("| ")
        and (cells := [c.strip() for c in line.strip("|").split("|")])
        and cells[0] in sizes
    }
    assert list(rows) == sizes
    for size, (simulated, measured) in rows.items():
        assert abs(simulated - measured) < 5, (size, simulated, measured)
    assert rows["20KiB"][1] < rows["80KiB"][1] < rows["320KiB"][1]
    # Every measured point is a stored run of its own.
    assert len(Store(store).list_runs()) == len(sizes)
