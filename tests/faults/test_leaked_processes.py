"""Issue 13 item 3: no server outlives the workbench that started it.

SIGHUP (a closed terminal) or SIGKILL of `workbench run` with `target.managed = true` left
redis-server running and the run "running" forever; `workbench serve kv-store` left its
child serving the port. Every process here is checked, and cleaned up, by its pid.
"""

from __future__ import annotations

import re
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
from faults_support import cli, kill_if_alive, start_cli, wait_for_line, wait_gone
from workbench_redis.server import start_redis

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

RUN = [
    "run",
    "--set", "target.system=redis",
    "--set", "target.managed=true",
    "--set", "load.duration=60",
    "--set", "load.warmup=0",
    "--set", "load.concurrency=2",
    "--set", "load.workers=1",
]  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite3"


def _server_pid(line: str) -> int:
    m = re.search(r"pid (\d+)", line)
    assert m, line
    return int(m.group(1))


def _redis_on(port: int) -> int:
    """The pid of the redis-server on `port` (it names its address in its process title)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            program, _, address = title.partition(" ")
            if program.endswith("redis-server") and address.strip() == f"127.0.0.1:{port}":
                return int(entry.name)
    raise AssertionError(f"no redis-server on port {port}")


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_sigkill_of_a_managed_run_takes_its_server_along_and_marks_it_abandoned(
    store: Path,
) -> None:
    proc = start_cli(RUN, store)
    server = _server_pid(wait_for_line(proc, "server"))
    try:
        wait_for_line(proc, "ops/s")  # measuring
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_gone(server), f"redis-server {server} outlived a SIGKILLed workbench"
    finally:
        kill_if_alive(server)
        proc.kill()
        proc.communicate(timeout=10)
    listing = cli(["runs", "list"], store)
    assert listing.returncode == 0
    assert "abandoned" in listing.stdout and "running" not in listing.stdout
    shown = cli(["runs", "show", "last"], store)
    assert "abandoned" in shown.stdout and "ended without finishing" in shown.stdout
    st = Store(store)
    try:
        (run,) = st.list_runs()
        assert run.status == "abandoned"
        assert st.load(run.id).view().status == "abandoned"
    finally:
        st.close()


def test_sighup_of_a_managed_run_stops_saves_and_stops_its_server(store: Path) -> None:
    proc = start_cli(RUN, store)
    server = _server_pid(wait_for_line(proc, "server"))
    try:
        wait_for_line(proc, "ops/s")
        proc.send_signal(signal.SIGHUP)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "interrupted" in out
        assert wait_gone(server), f"redis-server {server} outlived a SIGHUPed workbench"
    finally:
        kill_if_alive(server)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    st = Store(store)
    try:
        (row,) = st.list_runs()
        assert row.status == "interrupted" and row.steps == 1
        assert st.load(row.id).steps[0].intervals, "what was measured is kept"
    finally:
        st.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP])
@pytest.mark.parametrize("command", ["kv-store", "caching-proxy"])
def test_serve_leaves_no_child_serving(store: Path, command: str, sig: int) -> None:
    proc = start_cli(["serve", command], store)
    children: list[int] = []
    try:
        line = wait_for_line(proc, "listening on")
        ports = [int(re.search(r":(\d+) \(pid", line).group(1))]  # type: ignore[union-attr]
        children.append(_server_pid(line))
        if command == "caching-proxy":  # and the throw-away redis-server behind it
            url = wait_for_line(proc, "backed by")
            ports.append(int(re.search(r":(\d+)/", url).group(1)))  # type: ignore[union-attr]
            children.append(_redis_on(ports[-1]))
        assert all(_listening(p) for p in ports)
        proc.send_signal(sig)
        proc.communicate(timeout=30)
        for pid in children:
            assert wait_gone(pid), f"{pid} outlived `workbench serve {command}`"
        assert not any(_listening(p) for p in ports)
    finally:
        for pid in children:
            kill_if_alive(pid)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


def test_a_server_started_from_a_thread_outlives_the_thread_not_the_process() -> None:
    """The kernel's death signal follows the thread that forked: a server started from a
    pool or TUI worker thread that then ends must keep serving."""
    started: list[ServerProcess] = []
    thread = threading.Thread(target=lambda: started.append(start_redis()))
    thread.start()
    thread.join(timeout=30)
    (server,) = started
    try:
        time.sleep(0.2)  # a death signal, had one been sent, lands by now
        assert server.alive() and _listening(server.port)
    finally:
        server.stop()
    assert wait_gone(server.pid)
