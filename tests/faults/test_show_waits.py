"""`kill -USR1` on a running `workbench run` prints what it waits on, and the run goes on."""

from __future__ import annotations

import signal

from workbench.results.store import Store


def test_sigusr1_prints_the_runs_tasks_and_threads_and_the_run_completes(cli_run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cli = cli_run(
        "--set", "target.system=embedded", "--set", "load.duration=2",
        "--set", "load.interval=0.5", "--set", "load.warmup=0", "--set", "load.workers=1",
    )  # fmt: skip
    cli.wait_for_line("[  0.5s]")
    cli.signal(signal.SIGUSR1)
    code, out = cli.finish(timeout=60)
    assert code == 0, out
    assert "== what this run waits on (SIGUSR1):" in out, out
    assert "task Task-" in out and "async generator inbox_frames" in out, out
    assert "== threads ==" in out and "Current thread" in out, out
    assert Store(tmp_path / "runs.sqlite").load("last").status == "completed"
