"""Issue 39 items 6 and 7: numbers beyond what the store, the engines, a worker or the
planner hold are refused at spec check: one line naming the field and the limit, exit 2,
nothing started. They used to start and then fail (SQLite's OverflowError, a cut message
from the native engine, a MemoryError) or go silent for minutes."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

SWEEP_1001 = "load.concurrency=[" + ",".join(str(c) for c in range(1, 1002)) + "]"
CASES = [
    (["-c", "99999999999999999999"], "load.concurrency", "at most 2^63 - 1"),
    (["--set", "workload.keys=18446744073709551616"], "workload.keys", "at most 2^63 - 1"),
    (["--set", "seed=18446744073709551616"], "seed", "2^63 - 1"),
    (["--set", "seed=-1"], "seed", "a seed from 0 to 2^63 - 1"),
    (["--set", "load.concurrency=100001"], "load.concurrency", "at most 100,000 virtual"),
    (["--repeat", "1000000000"], "load.repeat", "at most 1,000 steps"),
    (["--set", SWEEP_1001], "sweep", "at most 1,000 steps"),
    (["--test-time", "1e12"], "load.duration", "64-bit count of nanoseconds"),
    (["--set", "load.warmup=1e12"], "load.warmup", "64-bit count of nanoseconds"),
]


@pytest.mark.parametrize(
    ("args", "field", "expected"), CASES, ids=[" ".join(c[0])[:40] for c in CASES]
)
def test_a_number_out_of_range_is_refused_at_spec_check(
    tmp_path: Path, args: list[str], field: str, expected: str
) -> None:
    res = cli(["run", "--test-time", "0.2s", *args], tmp_path / "runs.sqlite", timeout=60)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert field in lines[0] and expected in lines[0], lines[0]
    assert not (tmp_path / "runs.sqlite").exists(), "nothing started, nothing stored"


def test_a_search_probe_shorter_than_an_interval_is_refused(tmp_path: Path) -> None:
    # It used to run and end "no rate met the target after 0 probes", exit 3.
    args = ["search", "--probe", "0.001", "--target", "p99<10ms"]
    res = cli(args, tmp_path / "runs.sqlite", timeout=60)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert "search.probe" in res.stderr and "at least 0.05 s" in res.stderr, res.stderr
    assert not (tmp_path / "runs.sqlite").exists()
