"""Issue 39 item 12: a run whose process was killed shows what it measured once the store
is next opened for writing (as the next run opens it): `runs list` printed "-" and
`runs show` said "(running)" for its step."""

from __future__ import annotations

import signal
from pathlib import Path

from faults_support import cli, wait_gone

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess


def test_a_killed_runs_intervals_show_in_list_and_show(
    redis: ServerProcess, cli_run, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    run = cli_run(
        "-s", redis.target_options["url"], "-c", "2", "-w", "1", "--test-time", "60",
        "--set", "load.warmup=0", "--set", "load.interval=0.25",
    )  # fmt: skip
    run.wait_for_line("[  0.5s]")
    run.signal(signal.SIGKILL)
    run.proc.wait(timeout=30)
    assert wait_gone(run.proc.pid)
    Store(store).close()  # the next run's open
    listed = cli(["runs", "list"], store)
    row = listed.stdout.splitlines()[1]
    assert "abandoned" in row and " - " not in row, listed.stdout
    shown = cli(["runs", "show", "last"], store)
    assert "(running)" not in shown.stdout and "(interrupted)" in shown.stdout, shown.stdout
