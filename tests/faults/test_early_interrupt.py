"""Issue 25 items 1 and 10: a Ctrl-C early in a run stops it; one during the imports is quiet."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

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


# The command's modules load with a finder first in line that, when the run command's own
# module is asked for (inside main.py's guarded imports), sends this process SIGINT: a
# A `workbench run` whose process sends itself SIGINT at a known point (`snippet` sets it up,
# then `RUN_CLI` runs the command), however busy the machine is. Python leaves SIGINT
# ignored when it starts so (a background job of a shell, nohup, CI), so Python's own Ctrl-C
# handler is put back first, as a terminal's foreground job has it.
FOREGROUND = "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
RUN_CLI = """
import runpy
runpy.run_module("workbench.cli.main", run_name="__main__", alter_sys=True)
"""

# When the run command's own module is asked for, inside main.py's guarded imports.
DURING_IMPORTS = """
import os, signal, sys
class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "workbench.cli.run":
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, CtrlC())
"""
# While typer builds the click commands from the app (after the imports, before any
# command's own handling).
DURING_SETUP = """
import os, signal
import typer.main
build = typer.main.get_command
def interrupted_build(app):
    os.kill(os.getpid(), signal.SIGINT)
    return build(app)
typer.main.get_command = interrupted_build
"""


def _interrupted(snippet: str, tmp_path: Path) -> None:
    """The command says `interrupted` in one line, exits 130 and stored nothing."""
    done = subprocess.run(
        [sys.executable, "-c", FOREGROUND + snippet + RUN_CLI, "run",
         "--store", str(tmp_path / "runs.sqlite"), "--test-time", "30s"],
        capture_output=True,
        text=True,
        timeout=ENDS_WITHIN,
    )  # fmt: skip
    assert done.returncode == 130, done.stderr[-2000:]
    assert done.stderr.splitlines() == ["interrupted"], done.stderr[-2000:]
    assert not (tmp_path / "runs.sqlite").exists()


def test_a_ctrl_c_while_the_imports_load_exits_130_without_a_traceback(tmp_path: Path) -> None:
    _interrupted(DURING_IMPORTS, tmp_path)


def test_a_ctrl_c_while_the_commands_are_built_is_one_line_too(tmp_path: Path) -> None:
    _interrupted(DURING_SETUP, tmp_path)
