"""Issue 39 item 1: Ctrl-C, SIGTERM and SIGHUP mean one thing at any moment of a run.

Each test runs `workbench run` as a process that signals itself at a known point (a
`snippet` run before the command), so the moment is exact however busy the machine is.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.results.store import Store

ENDS_WITHIN = 20.0  # seconds; the runs ask for 30 s of load, so an ignored signal fails
RUN_CLI = """
import runpy
runpy.run_module("workbench.cli.main", run_name="__main__", alter_sys=True)
"""

# The signal, sent when the run command's module is imported (inside main.py's imports).
DURING_IMPORTS = """
import os, sys
class Stop:
    def find_spec(self, name, path=None, target=None):
        if name == "workbench.cli.run":
            os.kill(os.getpid(), SIG)
        return None
sys.meta_path.insert(0, Stop())
"""
# SIGTERM as the run's files are about to be written (the run is stored by then).
DURING_FILES = """
import os, signal
from workbench.cli import outputs
write = outputs.write
def interrupted_write(wanted, run):
    os.kill(os.getpid(), signal.SIGTERM)
    return write(wanted, run)
outputs.write = interrupted_write
"""


def _workbench(snippet: str, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", snippet + RUN_CLI, "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=ENDS_WITHIN)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"workbench run did not end within {ENDS_WITHIN}s") from None
    return proc.returncode, out, err


@pytest.mark.parametrize(
    "sig, prelude",
    [
        (signal.SIGTERM, ""),
        (signal.SIGHUP, ""),
        # A shell starts a background job with SIGINT ignored; a SIGINT sent to it on
        # purpose (kill -INT) was ignored in the first second and honoured after.
        (signal.SIGINT, "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"),
    ],
    ids=["SIGTERM", "SIGHUP", "SIGINT-as-a-background-job"],
)
def test_a_stop_signal_while_the_command_loads_is_one_line_and_exit_130(
    tmp_path: Path, sig: signal.Signals, prelude: str
) -> None:
    snippet = f"import signal\n{prelude}SIG = {int(sig)}\n" + DURING_IMPORTS
    store = tmp_path / "runs.sqlite"
    code, _, err = _finish(_workbench(snippet, ["--store", str(store), "--test-time", "30s"]))
    assert code == 130, err[-2000:]
    assert err.splitlines() == ["interrupted"], err[-2000:]
    assert not store.exists()


def test_a_sigterm_while_the_files_are_written_keeps_the_stored_run(tmp_path: Path) -> None:
    store, json_out = tmp_path / "runs.sqlite", tmp_path / "run.json"
    args = ["--store", str(store), "--test-time", "1s", "--set", "load.warmup=0"]
    code, out, err = _finish(_workbench(DURING_FILES, [*args, "--json-out", str(json_out)]))
    assert code == 130, out[-1000:] + err[-2000:]
    assert "interrupted" in err
    run = Store(store).load("last")
    assert run.status == "completed"  # every interval was measured before the signal
    assert run.steps[0].intervals
    assert not json_out.exists()
    assert not list(tmp_path.glob(".run.json.*")), "no scratch file left"


def test_under_nohup_a_closed_terminal_does_not_stop_the_run(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    nohup = "import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    proc = _workbench(nohup, ["--store", str(store), "--test-time", "2s", "--set", "load.warmup=0"])
    assert proc.stdout is not None
    for line in proc.stdout:  # bounded: the run ends after 2 s of load
        if "step 1/1" in line:
            proc.send_signal(signal.SIGHUP)
            break
    code, out, err = _finish(proc)
    assert code == 0, out[-1000:] + err[-2000:]
    assert Store(store).load("last").status == "completed"
