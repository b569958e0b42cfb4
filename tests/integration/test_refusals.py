"""Server-side refusals are a notice with the setting to change, whatever their share."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.results.refusals import refusals
from workbench.sdk import load_plugin


@pytest.mark.parametrize(
    ("system", "message", "advice"),
    [
        ("memcached", "memcached: SERVER_ERROR object too large for cache", "max_item_size"),
        ("redis", "OOM command not allowed when used memory > 'maxmemory'.", "maxmemory"),
        ("redis", "ERR max number of clients reached", "maxclients"),
        ("memcached", "SERVER_ERROR out of memory storing object", "memory"),
    ],
)
def test_each_refusal_names_what_to_change(system: str, message: str, advice: str) -> None:
    """The system's own advice (`CacheSystem.refusals`) first, else the general one."""
    declared = [(r.words, r.advice) for r in load_plugin(system).refusals]
    (line,) = refusals({"server": 3}, {"server": message}, declared)
    assert line.startswith("3 server error(s)") and advice in line


def test_a_refusal_no_system_explains_gets_the_general_advice() -> None:
    (line,) = refusals({"server": 1}, {"server": "ERR max number of clients reached"})
    assert "client limit" in line and "load.concurrency" in line


def test_other_errors_are_not_refusals() -> None:
    assert (
        refusals({"timeout": 5, "connection": 1}, {"timeout": "timed out", "connection": "x"}) == []
    )


def test_a_run_of_too_large_values_ends_with_the_notice(tmp_path: Path) -> None:
    # memcached's 1 MB item limit, 1 MiB values, sets a minority of the ops
    res = subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "run", "-q",
         "--set", "target.system=memcached", "--set", "target.managed=true",
         "--set", "target.server.max_item_size=1m", "-d", "1MiB", "--ratio", "1:3",
         "-n", "200", "-c", "2", "-w", "1", "--set", "load.warmup=0"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3")},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    (notice,) = [ln for ln in res.stdout.splitlines() if ln.startswith("notice:")]
    assert "object too large" in notice and "max_item_size" in notice
