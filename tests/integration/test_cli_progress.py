"""The progress bar on a terminal (a real pseudo-terminal), plain lines elsewhere."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

from workbench.cli.progress import RunProgress
from workbench.results.events import Interval, StepStarted
from workbench.results.live import RunView
from workbench.results.store import Store

WORKBENCH = [sys.executable, "-m", "workbench.cli.main"]
SWEEP = ["run", "-c", "[1,2]", "-w", "1", "--test-time", "1.5", "--set", "load.warmup=0",
         "--set", "load.interval=0.25"]  # fmt: skip


def run_on_a_terminal(args: list[str], store: Path) -> tuple[int, str]:
    """Run the command with its stdout and stderr on a pseudo-terminal; all it wrote."""
    leader, follower = pty.openpty()
    env = {**os.environ, "WORKBENCH_STORE": str(store), "COLUMNS": "160", "TERM": "xterm"}
    proc = subprocess.Popen(
        [*WORKBENCH, *args], stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, env=env
    )
    os.close(follower)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process ended
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
        proc.wait(timeout=60)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_gets_a_bar_with_step_eta_and_live_ops(tmp_path: Path) -> None:
    code, text = run_on_a_terminal(SWEEP, tmp_path / "runs.sqlite3")
    assert code == 0, text
    assert "step 1/2" in text and "step 2/2" in text
    assert "ETA" in text and "elapsed" in text
    assert "ops/s  p50" in text  # the live figures beside the bar
    assert "━" in text
    # every interval's line stays above the bar (the bar itself goes), as do the summaries
    assert re.search(r"\[  0\.[25]s\] +[\d,]+ ops/s", text), text
    assert text.count("Response times percentiles:") == 2


def test_not_a_terminal_keeps_the_plain_lines(tmp_path: Path) -> None:
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3")}
    res = subprocess.run(
        [*WORKBENCH, *SWEEP], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    assert "━" not in res.stdout and "ETA" not in res.stdout
    assert sum(1 for ln in res.stdout.splitlines() if ln.startswith("[") and "ops/s" in ln) >= 4


def test_eta_spans_the_whole_sweep(tmp_path: Path) -> None:
    """Replayed events of a stored two-step run: halfway through step 1 is a quarter done."""
    store = tmp_path / "runs.sqlite3"
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    subprocess.run([*WORKBENCH, *SWEEP, "-q"], capture_output=True, env=env, timeout=120,
                   check=True)  # fmt: skip
    stored = Store(store).load("last")
    bar = RunProgress(io.StringIO())
    view = RunView()
    shares = []
    for event in stored.events():
        view = view.apply(event)
        bar.on_event(event, view)
        if isinstance(event, StepStarted | Interval):
            shares.append((event.step, round(bar._share(), 3)))
    bar.close()
    assert (0, 0.0) in shares  # the first step starting
    step0 = [s for i, s in shares if i == 0]
    step1 = [s for i, s in shares if i == 1]
    assert max(step0) <= 0.5 < min(step1[1:])  # interval shares after the first step
    assert max(step1) == 1.0
    assert bar._fields()["eta"] == "0:00"
