"""Issue 13 item 9: a step that mostly failed, or measured nothing, is failed; exit non-zero."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from workbench_redis.server import start_redis

from workbench.cli.common import ExitStatus
from workbench.engine.step_tally import FAILED_ERROR_SHARE, step_failure
from workbench.results.metrics import Stats, new_histogram
from workbench.results.store import Store
from workbench.sdk.servers import free_port

RUN = [sys.executable, "-m", "workbench.cli.main", "run", "--quiet"]


def _run(tmp_path: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    args = [*RUN, "--store", str(tmp_path / "runs.sqlite")]
    for s in ("load.interval=0.5", "load.workers=1", *sets):
        args += ["--set", s]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def test_a_server_gone_for_most_of_the_step_fails_it(tmp_path: Path, cli_run) -> None:  # type: ignore[no-untyped-def]
    server = start_redis()
    cli = cli_run(
        "--set", "target.system=redis",
        "--set", f"target.options.url={server.target_options['url']}",
        "--set", "strategy.name=sync-per-client",
        "--set", "load.duration=6",
        "--set", "load.warmup=0",
        "--set", "load.interval=0.5",
        "--set", "load.workers=1",
        # At a rate, the share of ops that fail is the share of the time the server was
        # gone, however fast the machine (closed loop, a busy test that saw the first line
        # late let the ops before the stop outnumber the reconnects' errors).
        "--set", "load.rate=2000",
    )  # fmt: skip
    try:
        cli.wait_for_line("[  0.5s]")
    finally:
        server.stop()  # refused from now on: most of the step's ops fail
    code, out = cli.finish(timeout=30)
    assert code == ExitStatus.RUN_FAILED, out
    assert "step failed:" in out and "operations failed" in out
    run = Store(tmp_path / "runs.sqlite").load("last")
    assert run.status == "failed"
    assert run.steps[0].status == "failed"


def test_a_step_that_measured_nothing_fails(tmp_path: Path) -> None:
    # One op every 100 s, the first at the start, in the warm-up: none in the measured second.
    done = _run(
        tmp_path, "load.rate=0.01", "load.duration=1", "load.concurrency=1", "load.warmup=0.5"
    )
    assert done.returncode == ExitStatus.RUN_FAILED, done.stdout + done.stderr
    assert "nothing was measured" in done.stdout


def _stats(ops: int, errors: int) -> Stats:
    hist = new_histogram()
    if ops:
        hist.record_value(1000, ops)
    return Stats(duration=1.0, hist={"get": hist}, errors={"timeout": errors} if errors else {})


def test_the_share_of_errors_decides() -> None:
    assert FAILED_ERROR_SHARE == 0.5
    assert step_failure(_stats(100, 0)) == ""
    assert step_failure(_stats(100, 100)) == ""  # exactly half: not over the share
    assert "50% of 201 operations failed" in step_failure(_stats(100, 101))
    assert step_failure(_stats(0, 0)) == "nothing was measured"
    assert "timeout 5" in step_failure(_stats(0, 5))


@pytest.mark.parametrize(
    ("strategy", "says"),
    [
        # The Python client's connect error, word for word.
        (
            "multiplexed",
            "ConnectionRefusedError: cannot connect to redis at {}: Connection refused",
        ),
        ("native", "cannot reach {}"),
    ],
)
def test_a_server_that_is_not_running_is_named_once(
    tmp_path: Path, strategy: str, says: str
) -> None:
    # Every worker fails alike at connect: the first worker says it, the others do not
    # repeat it, and the step's reason says it once more, with the address.
    address = f"127.0.0.1:{free_port()}"
    done = _run(
        tmp_path,
        "target.system=redis",
        f"strategy.name={strategy}",
        f"target.options.url=redis://{address}/0",
        "load.duration=1",
        "load.workers=2",
    )
    assert done.returncode == ExitStatus.RUN_FAILED, done.stdout + done.stderr
    errors = [ln for ln in done.stdout.splitlines() if ln.startswith("error: ")]
    reason = says.format(address)
    assert len(errors) == 2, errors
    assert errors[0].startswith("error: worker ") and errors[0].endswith(f": {reason}")
    assert errors[1] == f"error: step failed: {reason}"
