"""Issue 25 items 1 and 10: a Ctrl-C early in a run stops it; one during the imports is quiet."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.servers import ServerProcess
from workbench.store import Store

WORKBENCH = [sys.executable, "-m", "workbench.cli.main"]
ENDS_WITHIN = 15.0  # seconds; the run asks for 30 s of load, so a lost stop cannot pass


@pytest.mark.parametrize("strategy", ["multiplexed", "native"])
def test_a_ctrl_c_as_the_run_starts_stops_it(
    redis: ServerProcess, cli_run, tmp_path: Path, strategy: str
) -> None:
    cli = cli_run(
        "-s", redis.target_options["url"], "-c", "4", "--test-time", "30s",
        "--set", f"strategy.name={strategy}", "--set", "load.warmup=0",
    )  # fmt: skip
    cli.wait_for_line("step(s)")  # the run is stored; workers not yet started
    cli.signal(signal.SIGINT)
    code, out = cli.finish(timeout=ENDS_WITHIN)
    assert code == 130, out
    assert "stopping" in out
    run = Store(tmp_path / "runs.sqlite").load("last")
    assert run.status == "interrupted"
    assert all(len(step.intervals) < 30 for step in run.steps)


def test_a_ctrl_c_during_the_prefill_ends_it(redis: ServerProcess, cli_run, tmp_path: Path) -> None:
    # A million keys take the Python worker far longer than ENDS_WITHIN to prefill.
    cli = cli_run(
        "-s", redis.target_options["url"], "-c", "4", "-w", "1", "--test-time", "30s",
        "--set", "workload.prefill=true", "--set", "workload.keys=1000000",
        "--set", "workload.value_size=16", "--set", "load.warmup=0",
    )  # fmt: skip
    cli.wait_for_line("step 1/1")
    time.sleep(1.0)  # the worker is up and filling
    cli.signal(signal.SIGINT)
    code, out = cli.finish(timeout=ENDS_WITHIN)
    assert code == 130, out
    assert Store(tmp_path / "runs.sqlite").load("last").status == "interrupted"


def test_a_ctrl_c_while_the_imports_load_exits_130_without_a_traceback(tmp_path: Path) -> None:
    # -X importtime reports each import as it completes: once typer is in, the command's
    # own imports are under way (they take some tenths of a second more).
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", *WORKBENCH[1:], "run",
         "--store", str(tmp_path / "runs.sqlite"), "--test-time", "30s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:  # bounded: the imports end, and with them these lines
        if line.rstrip().endswith("| typer"):
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=ENDS_WITHIN)
    err = [ln for ln in rest.splitlines() if not ln.startswith("import time:")]
    assert proc.returncode == 130, rest[-2000:]
    assert err == ["interrupted"], err
    assert not (tmp_path / "runs.sqlite").exists()
