"""Issue 25 items 3, 4 and 8: values that failed in the workers, or loaded another server
than the one named, are refused at spec check: one line naming the field, exit 2, nothing
started (no store, no run). Port 0 was read as "the default" (6379, 80)."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

CASES = [
    (["-s", "redis://127.0.0.1:0"], "target.options.url", "port from 1 to 65535"),
    (["-s", "http://127.0.0.1:0/"], "target.options.base_url", "port from 1 to 65535"),
    (["-s", "redis://127.0.0.1:99999"], "target.options.url", "port from 1 to 65535"),
    (["-s", "redis://127.0.0.1:6379/abc"], "target.options.url", "database as a plain number"),
    (["-s", "redis://127.0.0.1:6379/-1"], "target.options.url", "database as a plain number"),
    (["-s", "memcached://127.0.0.1:99999"], "target.options.servers", "expected host:port"),
    (["-s", "memcached://127.0.0.1:0"], "target.options.servers", "expected host:port"),
    (["-s", "memcached://127.0.0.1:abc"], "target.options.servers", "expected host:port"),
    (["-s", "http://127.0.0.1:99999/"], "target.options.base_url", "port from 1 to 65535"),
    (["--key-pattern", "zipf(1e308)"], "workload.key_distribution", "0 < s <= 20"),
    (["--set", "load.duration=0.0000001"], "load.duration", "at least 0.05 s"),
    (["--set", "load.duration=0.049"], "load.duration", "at least 0.05 s"),
]


@pytest.mark.parametrize(("args", "field", "expected"), CASES, ids=[" ".join(c[0]) for c in CASES])
@pytest.mark.parametrize("strategy", ["", "native"])
def test_a_bad_value_is_refused_before_anything_starts(
    tmp_path: Path, args: list[str], field: str, expected: str, strategy: str
) -> None:
    extra = ["--set", f"strategy.name={strategy}"] if strategy else []
    if strategy and not any(a.startswith(("redis:", "memcached:", "http:")) for a in args):
        extra = ["-s", "redis://127.0.0.1:6379", *extra]  # native needs a network target
    res = cli(["run", *args, *extra], tmp_path / "runs.sqlite", timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert field in lines[0] and expected in lines[0] and "loopback" not in lines[0]
    assert not (tmp_path / "runs.sqlite").exists(), "nothing started, nothing stored"
