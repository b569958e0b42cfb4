"""Issue 39 item 11: `serve` refuses, in one line with exit 2 and before starting anything,
a port the kernel would replace with one of its own choice, and a caching proxy's backing
Redis off this machine (its traffic would have gone there unchecked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

CASES = [
    (["redis", "--port", "65536"], "--port", "from 0 (a free one) to 65535"),
    (["redis", "--port", "-1"], "--port", "from 0 (a free one) to 65535"),
    (
        ["caching-proxy", "--set", "redis_url=redis://10.1.2.3:6379"],
        "target.server.redis_url",
        "on this machine",
    ),
]


@pytest.mark.parametrize(("args", "field", "expected"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_serve_refuses_before_starting(
    tmp_path: Path, args: list[str], field: str, expected: str
) -> None:
    res = cli(["serve", *args], tmp_path / "runs.sqlite", timeout=60)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and expected in lines[0], res.stderr[-2000:]
    assert "listening" not in res.stdout
