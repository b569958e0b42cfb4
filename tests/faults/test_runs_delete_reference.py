"""Issue 13 item 2: a run reference names exactly one run, and deleting asks first.

`runs delete ""`, `%` and `_` once deleted the newest run (an SQL LIKE prefix), and an
ambiguous prefix quietly picked the newest.
"""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest
from faults_support import WORKBENCH, cli

from workbench.results.events import RunFinished, RunStarted
from workbench.results.store import Store
from workbench.spec.model import Spec, spec_to_dict

IDS = ("20260101-000000-aaaa", "20260101-000000-aabb", "20260102-000000-cccc")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.sqlite3"
    st = Store(path)
    for i, run_id in enumerate(IDS):
        name = "twin" if i < 2 else "single"
        st.record(RunStarted(run_id, name, spec_to_dict(Spec()), [], {}, 1000.0 + i))
        st.record(RunFinished(run_id, "completed"))
    st.close()
    return path


def stored_ids(path: Path) -> list[str]:
    st = Store(path)
    try:
        return sorted(r.id for r in st.list_runs())
    finally:
        st.close()


@pytest.mark.parametrize("ref", ["", " ", "%", "_", "2026010%", "20260101-000000-a_a"])
def test_empty_and_wildcard_references_delete_nothing(store: Path, ref: str) -> None:
    res = cli(["runs", "delete", ref, "--yes"], store)
    assert res.returncode in (1, 2), res.stdout
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert stored_ids(store) == sorted(IDS)


def test_an_ambiguous_prefix_names_every_run_it_matches(store: Path) -> None:
    res = cli(["runs", "delete", "20260101", "--yes"], store)
    assert res.returncode == 2
    assert IDS[0] in res.stderr and IDS[1] in res.stderr and IDS[2] not in res.stderr
    assert stored_ids(store) == sorted(IDS)
    # A name two runs share is ambiguous too.
    twin = cli(["runs", "delete", "twin", "--yes"], store)
    assert twin.returncode == 2 and IDS[0] in twin.stderr and IDS[1] in twin.stderr
    assert stored_ids(store) == sorted(IDS)


def test_a_unique_prefix_an_exact_id_a_name_and_last_each_name_one_run(store: Path) -> None:
    assert cli(["runs", "delete", "20260101-000000-aab", "--yes"], store).returncode == 0
    assert stored_ids(store) == [IDS[0], IDS[2]]
    assert cli(["runs", "delete", "single", "--yes"], store).returncode == 0
    assert stored_ids(store) == [IDS[0]]
    assert cli(["runs", "delete", IDS[0], "--yes"], store).returncode == 0
    assert stored_ids(store) == []
    assert cli(["runs", "delete", "last", "--yes"], store).returncode == 1


def test_without_a_terminal_and_without_yes_it_refuses(store: Path) -> None:
    res = cli(["runs", "delete", "single"], store)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"error: not deleting {IDS[2]} without confirmation: add --yes"
    ]
    assert stored_ids(store) == sorted(IDS)


def _on_a_terminal(args: list[str], store: Path, answer: bytes) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin and stdout, typing `answer`."""
    primary, secondary = pty.openpty()
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    proc = subprocess.Popen(
        [*WORKBENCH, *args], stdin=secondary, stdout=secondary, stderr=secondary, env=env
    )
    os.close(secondary)
    seen = b""
    try:
        while b"?" not in seen:  # the question
            chunk = os.read(primary, 1024)
            if not chunk:
                break
            seen += chunk
        os.write(primary, answer)
        code = proc.wait(timeout=60)
        while True:
            try:
                chunk = os.read(primary, 1024)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)
    return code, seen.decode(errors="replace")


def test_on_a_terminal_it_asks_and_only_yes_deletes(store: Path) -> None:
    code, text = _on_a_terminal(["runs", "delete", "single"], store, b"n\n")
    assert code == 0 and f"delete run {IDS[2]} ('single')?" in text and "nothing deleted" in text
    assert stored_ids(store) == sorted(IDS)
    code, text = _on_a_terminal(["runs", "delete", "single"], store, b"y\n")
    assert code == 0 and f"deleted {IDS[2]}" in text
    assert stored_ids(store) == [IDS[0], IDS[1]]
