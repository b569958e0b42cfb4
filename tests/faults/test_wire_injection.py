"""Issue 25 item 2: keys, headers and templates are checked at spec check, per protocol.

A key prefix with CR LF made memcached store a key of the prefix's choosing, and the run
reported no error; a space or 300 characters made most operations fail, yet "completed".
Both engines send what the spec check allowed, so each case is refused for both.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from faults_support import cli

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

INJECTION = "x\r\nset pwned 0 0 2\r\nhi\r\n"
ENGINES = ["multiplexed", "native"]


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def _memcached_get(server: ServerProcess, key: bytes) -> bytes:
    with socket.create_connection((server.host, server.port), timeout=5) as s:
        s.sendall(b"get " + key + b"\r\n")
        reply = b""
        while not reply.endswith(b"END\r\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
    return reply


def _short(*more: str) -> list[str]:
    return ["run", "--test-time", "0.3", "--set", "load.warmup=0", "--set", "load.interval=0.1",
            "-c", "2", "--set", "load.workers=1", *more]  # fmt: skip


@pytest.mark.parametrize("strategy", ENGINES)
@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (INJECTION, "without spaces or control characters"),
        ("a b", "without spaces or control characters"),
        ("x" * 300, "at most 250 bytes"),
    ],
    ids=["crlf", "space", "300-chars"],
)
def test_a_memcached_key_prefix_the_text_protocol_cannot_carry_is_refused(
    memcached_server: ServerProcess, tmp_path: Path, strategy: str, prefix: str, expected: str
) -> None:
    quoted = prefix.replace("\r", "\\r").replace("\n", "\\n")
    res = cli(
        _short("-s", f"memcached://{memcached_server.address}",
               "--set", f"strategy.name={strategy}", "--set", f'workload.key_prefix="{quoted}"'),
        tmp_path / "runs.sqlite",
    )  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    line = _one_line(res.stderr)
    assert "workload.key_prefix" in line and expected in line
    assert not (tmp_path / "runs.sqlite").exists(), "nothing started, nothing stored"
    assert b"VALUE pwned" not in _memcached_get(memcached_server, b"pwned")


@pytest.mark.parametrize(
    "target",
    [["-s", "REDIS"], ["--set", "target.system=http", "--set", "target.managed=true"]],
    ids=["redis", "http"],
)
@pytest.mark.parametrize("strategy", ENGINES)
def test_resp_and_http_carry_any_key_so_the_same_prefix_runs_and_hits(
    redis_server: ServerProcess, tmp_path: Path, strategy: str, target: list[str]
) -> None:
    """RESP is binary-safe and HTTP keys are percent-encoded: four prefilled keys with the
    injection prefix are set and read back, every get a hit."""
    target = [redis_server.target_options["url"] if t == "REDIS" else t for t in target]
    if "target.system=http" in target and strategy == "multiplexed":
        strategy = "keep-alive"
    quoted = INJECTION.replace("\r", "\\r").replace("\n", "\\n")
    res = cli(
        _short(*target, "--set", f"strategy.name={strategy}",
               "--set", f'workload.key_prefix="{quoted}"', "--set", "workload.keys=4",
               "--set", "workload.prefill=true"),
        tmp_path / "runs.sqlite",
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    summary = next(ln for ln in res.stdout.splitlines() if ln.startswith("hits "))
    assert "misses 0 " in summary and "hit rate 100.00%" in summary, summary
    # On a loaded machine an op in flight at the end can outlast the wait after it and is
    # counted abandoned (one, in a loaded CI run); nothing else may fail.
    (step,) = Store(tmp_path / "runs.sqlite").load("last").steps
    assert set(step.stats.errors) <= {"abandoned"}, step.stats.first_errors


@pytest.mark.parametrize("strategy", ["keep-alive", "native"])
@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ('target.options.headers=["X-A: b\\r\\nX-Evil: 1"]', "target.options.headers"),
        ('target.options.headers=["X A: b"]', "target.options.headers"),
        ('target.options.get="GET /k?key={key} HTTP/1.1\\r\\nX: y"', "target.options.get"),
        ('target.options.delete="DELETE /\\r\\n?key={key}"', "target.options.delete"),
        ('target.options.stats_path="/stats\\r\\nX: y"', "target.options.stats_path"),
    ],
    ids=["header-crlf", "header-name", "get-template", "delete-template", "stats-path"],
)
def test_http_headers_and_templates_that_would_break_a_request_are_refused(
    tmp_path: Path, strategy: str, setting: str, field: str
) -> None:
    res = cli(
        _short("-s", "http://127.0.0.1:8000", "--set", f"strategy.name={strategy}",
               "--set", setting),
        tmp_path / "runs.sqlite",
    )  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    line = _one_line(res.stderr)
    assert field in line and "expected" in line
    assert not (tmp_path / "runs.sqlite").exists()
