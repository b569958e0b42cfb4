"""`workbench compare` and `workbench run --baseline` as a CI job uses them: real
subprocesses, exit codes, a baseline kept as an exported JSON file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden.golden_runs import build

from workbench.results.store import Store

WORKBENCH = [sys.executable, "-m", "workbench.cli.main"]
AB = ["workload.key_distribution=hotcold(0.8,0.2)", "load.concurrency=4"]
SHORT = ["--set", "load.warmup=0", "--set", "load.interval=0.05", "--set", "load.workers=1"]


def cli(args: list[str], store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    return subprocess.run(
        [*WORKBENCH, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a base run and one 1.5 times slower, 12 intervals each."""
    path = tmp_path_factory.mktemp("known") / "runs.sqlite3"
    store = Store(path)
    build(store, "c-0001", overrides=[*AB, "name=base"], seed=1, intervals=12)
    build(store, "c-0002", overrides=[*AB, "name=slower"], seed=2, intervals=12, slow=1.5)
    sweep = [*AB, "name=ab", 'strategy.name=["direct", "threads"]', "load.repeat=3"]
    build(store, "c-0003", overrides=sweep, seed=3, intervals=4)
    return path


def test_a_significant_regression_beyond_the_threshold_exits_3(known: Path) -> None:
    res = cli(["compare", "base", "slower", "--fail-on-regression", "p99:+5%"], known)
    assert res.returncode == 3, res.stderr
    assert "Performance has regressed." in res.stdout
    assert "FAILED 'slower' against 'base'" in res.stdout and "p99 regressed beyond" in res.stdout
    calm = cli(["compare", "base", "slower", "--fail-on-regression", "p99:+500%"], known)
    assert calm.returncode == 0 and "regression checks: passed" in calm.stdout
    doc = json.loads(cli(["compare", "base", "slower", "-f", "json"], known).stdout)
    (step,) = doc["comparisons"][0]["steps"]
    assert step["metrics"]["p99"]["verdict"] == "regressed"
    assert step["estimate"]["method"] == "intervals"


def test_bad_input_is_one_line_and_exit_2(known: Path) -> None:
    for args, says in (
        (["compare", "base", "slower", "--fail-on-regression", "p99<5ms"], "METRIC:[+|-]N%"),
        (["compare", "base", "slower", "--noise", "lots"], "--noise"),
        (["compare", "base"], "sweeps nothing"),
        (["run", "--fail-on-regression", "p99:+5%"], "goes with --baseline"),
    ):
        res = cli(args, known)
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert says in res.stderr and "Traceback" not in res.stderr


def test_run_with_a_baseline_file_runs_and_compares_in_one_step(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite3"
    base = cli(["run", "-q", "--json-out", str(tmp_path / "base.json"), *SHORT,
                "--set", "load.duration=0.8"], store)  # fmt: skip
    assert base.returncode == 0, base.stderr
    res = cli(["run", "-q", "--baseline", str(tmp_path / "base.json"), *SHORT,
               "--set", "load.duration=0.8", "--fail-on-regression", "p50:+100000%"],
              store)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "block bootstrap over intervals: base " in res.stdout
    assert "regression checks: passed" in res.stdout
    short = cli(["run", "-q", "--baseline", str(tmp_path / "base.json"), *SHORT,
                 "--set", "load.duration=0.2", "--fail-on-regression", "p50:+100000%"],
                store)  # fmt: skip
    assert short.returncode == 3, short.stdout + short.stderr
    assert "p50:+100000% not judged: too few samples" in short.stdout


def test_one_run_that_swept_is_its_own_ab_and_lists_by_swept_value(known: Path) -> None:
    """Issue 36 item 4: an A/B's both sides are in `runs list` (a row per swept value, the
    median of its repeats) and `workbench compare RUN` judges one against the other."""
    res = cli(["compare", "ab"], known)
    assert res.returncode == 0, res.stderr
    assert "A/B: each strategy.name against the first" in res.stdout
    assert "change: against name=direct; bootstrap over repeats: base 3 repeats" in res.stdout
    assert "thrpt:" in res.stdout and "Performance has regressed." in res.stdout
    listing = cli(["runs", "list"], known).stdout.splitlines()
    stored = Store(known).load("ab")
    for name in ("direct", "threads"):
        (row,) = [ln for ln in listing if ln.strip().startswith(f"name={name} (3 repeats)")]
        rates = sorted(s.stats.ops / s.stats.duration for s in stored.steps
                       if s.label["strategy.name"] == name)  # fmt: skip
        assert f" {rates[1]:,.0f} " in row  # the median repeat
    rows = json.loads(cli(["runs", "list", "--json"], known).stdout)
    (ab,) = [r for r in rows if r["name"] == "ab"]
    assert [(g["title"], g["repeats"]) for g in ab["groups"]] == [
        ("name=direct", 3),
        ("name=threads", 3),
    ]
