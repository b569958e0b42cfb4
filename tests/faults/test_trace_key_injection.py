"""Issue 39 item 4: a trace's keys are held to the protocol's key rule, in both engines.

A CSV trace's key `victim noreply` went to memcached as ``delete wb:victim noreply``: the
server deleted `wb:victim`, a key the trace never named, and sent no reply. A Twitter row
with a key size of 100000 sent a 100 KB key. Such requests are not sent now: each is
counted among the step's skipped requests under a name saying why, the same in the Python
engine and the native one.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from faults_support import cli

from workbench.sdk.servers import ServerProcess

ENGINES = ["multiplexed", "native"]


def _memcached(server: ServerProcess, command: bytes, end: bytes) -> bytes:
    with socket.create_connection((server.host, server.port), timeout=5) as s:
        s.sendall(command)
        reply = b""
        while not reply.endswith(end):
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
    return reply


def _replay(trace: Path, target: str, strategy: str) -> list[str]:
    overrides = [
        target,
        f'strategy.name="{strategy}"',
        f'workload.trace.path="{trace}"',
        'workload.trace.ops="as-recorded"',
        "load.duration=30",  # the trace ends the step long before
        "load.warmup=0",
        "load.interval=0.1",
        "load.workers=1",
        "load.concurrency=2",
    ]
    return ["run", *(a for o in overrides for a in ("--set", o))]


@pytest.mark.parametrize("strategy", ENGINES)
def test_a_memcached_trace_key_with_a_space_is_not_sent(
    memcached_server: ServerProcess, tmp_path: Path, strategy: str
) -> None:
    victim = f"victim{os.getpid()}{strategy}"
    stored = _memcached(memcached_server, f"set wb:{victim} 0 0 2\r\nhi\r\n".encode(), b"\r\n")
    assert stored == b"STORED\r\n"
    trace = tmp_path / "keys.csv"
    rows = [f"0,{victim} noreply,10,delete", "0,k1 flush_all,10,set", "0,fine,10,set"]
    rows.append(f"0,{'x' * 300},10,set")  # longer than memcached's 250 bytes
    trace.write_text("time,key,size,op\n" + "\n".join(rows) + "\n")
    target = f'target.options.servers=["{memcached_server.address}"]'
    res = cli(
        [*_replay(trace, "target.system=memcached", strategy), "--set", target],
        tmp_path / "runs.sqlite",
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert (
        f"VALUE wb:{victim} "
        in _memcached(memcached_server, f"get wb:{victim}\r\n".encode(), b"END\r\n").decode()
    ), "a key the trace never named was deleted"
    assert (
        "skipped 3 trace request(s) this target does not do: "
        "key over 250 bytes 1, key with a space or control character 2"
    ) in res.stdout, res.stdout
    assert "errors 0" in res.stdout


@pytest.mark.parametrize("strategy", ENGINES)
def test_a_recorded_key_size_past_the_limit_is_not_sent(
    redis_server: ServerProcess, tmp_path: Path, strategy: str
) -> None:
    trace = tmp_path / "big.twitter.csv"
    tag = f"big{os.getpid()}{strategy}"
    trace.write_text(f"0,{tag},100000,10,1,set,0\n0,{tag}ok,3,10,1,set,0\n")
    res = cli(
        [
            *_replay(trace, "target.system=redis", strategy),
            "--set",
            f'target.options.url="redis://{redis_server.address}"',
        ],
        tmp_path / "runs.sqlite",
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "skipped 1 trace request(s) this target does not do: key over 65536 bytes 1" in (
        res.stdout
    ), res.stdout
    with socket.create_connection((redis_server.host, redis_server.port), timeout=5) as s:
        s.sendall(f"KEYS wb:{tag}*\r\n".encode())
        reply = s.recv(65536)
    assert reply.startswith(b"*1\r\n") and f"wb:{tag}ok".encode() in reply, reply
