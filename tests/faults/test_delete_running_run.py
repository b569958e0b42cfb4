"""Issue 25 item 7: a run that is still running cannot be deleted; once its process is
gone it can. Deleting it mid-run made the run end in "IntegrityError: FOREIGN KEY
constraint failed", exit 1, with nothing stored."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from faults_support import cli, kill_if_alive, start_cli, wait_for_line, wait_gone

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess


def _long_run(redis: ServerProcess, store: Path):  # type: ignore[no-untyped-def]
    return start_cli(
        ["run", "-s", redis.target_options["url"], "-c", "2", "--test-time", "60s",
         "--set", "load.warmup=0", "--set", "load.interval=0.2", "--set", "load.workers=1"],
        store,
    )  # fmt: skip


def test_a_running_run_is_not_deleted_and_ends_stored(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    proc = _long_run(redis_server, store)
    try:
        wait_for_line(proc, "[  0.4s]")
        res = cli(["runs", "delete", "last", "--yes"], store)
        assert res.returncode == 2, res.stdout + res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "is still running" in lines[0], res.stderr
        assert f"pid {proc.pid}" in lines[0]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        kill_if_alive(proc.pid)
    assert proc.returncode == 130, out + err
    assert "IntegrityError" not in out + err
    run = Store(store).load("last")
    assert run.status == "interrupted" and run.steps[0].intervals


def test_a_run_whose_process_is_gone_can_be_deleted(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    proc = _long_run(redis_server, store)
    try:
        wait_for_line(proc, "[  0.4s]")
        run_id = Store(store).resolve("last")
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        assert wait_gone(proc.pid)
    finally:
        kill_if_alive(proc.pid)
    res = cli(["runs", "delete", run_id, "--yes"], store)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"deleted {run_id}" in res.stdout
    assert [r.id for r in Store(store).list_runs()] == []
