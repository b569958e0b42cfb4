"""Issue 39 items 11 and 9: `serve` on a port another server holds is refused before it
starts (it printed "listening", the other server having answered, then exited 1), and a
served server that dies leaves no log behind once its end is printed."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from faults_support import cli, kill_if_alive, start_cli, wait_for_line, wait_gone

from workbench.sdk.servers import ServerProcess


def test_serve_on_a_port_in_use_is_refused(redis: ServerProcess, tmp_path: Path) -> None:
    res = cli(["serve", "redis", "--port", str(redis.port)], tmp_path / "runs.sqlite", timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "listening" not in res.stdout
    assert res.stderr.strip().splitlines() == [
        f"error: --port: port {redis.port} on 127.0.0.1 is taken (Address already in use); "
        "choose another, or 0 for a free one"
    ]


def test_a_served_server_that_dies_leaves_no_log(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    serve = start_cli(["serve", "redis"], tmp_path / "runs.sqlite")
    try:
        line = wait_for_line(serve, "listening")
        server_pid = int(re.search(r"\(pid (\d+)", line).group(1))  # type: ignore[union-attr]
        os.kill(server_pid, signal.SIGKILL)
        _, err = serve.communicate(timeout=60)
        assert serve.returncode == 1, err
        assert f"the server (pid {server_pid}) exited" in err
        assert wait_gone(server_pid)
    finally:
        kill_if_alive(serve.pid)
    assert list((tmp_path / "workbench-servers").iterdir()) == []
