"""`workbench compare` on real runs, as bench/bench_compare.py measures it at full size
(20 pairs of runs, embedded and Redis): the same profile says "no change" for every figure,
and a real change is found. Here the short version, on the embedded cache with 3 repeats
of half a second. The suite shares its machine with whatever else runs, so each side's
repeats are interleaved with the other's (A B A B A B, one run sweeping what differs):
the statistics are on trial here, not the machine's steadiness between two runs."""

from __future__ import annotations

import asyncio

import pytest
from support import collect

from workbench.report.changes import compare_groups, within_run
from workbench.report.model import RunData, read_run
from workbench.report.repeats import groups
from workbench.results.store import Store
from workbench.stats.change import NO_CHANGE, REGRESSED

# Verdicts on latency: another test's load on the same cores is noise between the sides
# that the statistics would rightly call a change (docs/testing.md).
pytestmark = pytest.mark.serial

PROFILE = [
    "load.repeat=3",
    "load.duration=0.5",
    "load.interval=0.1",
    "load.workers=1",
    "load.concurrency=8",
    "workload.keys=2000",
    "workload.key_distribution=zipf(0.99)",
    "workload.prefill=true",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("honesty") / "runs.sqlite3")


def run(store: Store, *overrides: str) -> RunData:
    events = asyncio.run(collect([*PROFILE, *overrides], store))
    return read_run(store.load(events[0].run_id))  # type: ignore[attr-defined]


def test_the_same_profile_is_no_change(store: Store) -> None:
    """One profile three times over (a sweep of three labels for the same value): every
    figure says no change in at least 2 of the 3 pairs (the bench: 19 of 20)."""
    same = run(
        store,
        'sweep=[{path="workload.value_size", values=["fixed(100)", "fixed(100)", '
        '"fixed(100)"], labels=["A1", "A2", "A3"]}]',
    )
    a, b, c = groups(same)
    found = {}
    for base, new in ((a, b), (b, c), (a, c)):
        step = compare_groups(f"{new.title} against {base.title}", base, new)
        assert step.estimate.method == "repeats", step.estimate.describe()
        found[step.title] = {f.metric.key: f.verdict for f in step.figures}
    quiet = [title for title, v in found.items() if set(v.values()) == {NO_CHANGE}]
    assert len(quiet) >= 2, found


def test_a_real_change_is_found(store: Store) -> None:
    """64 KiB values against 100 B: every set (a tenth of the ops, the slowest tenth) copies
    650 times more bytes, and p99 reads that tenth."""
    ab = run(store, 'workload.value_size=["fixed(100)", "fixed(65536)"]')
    comparison = within_run(ab)
    assert comparison is not None
    (step,) = comparison.steps
    assert step.figure("p99").verdict == REGRESSED, step.figure("p99").change
