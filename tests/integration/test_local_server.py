"""Issue 35: a server on this machine that the workbench did not start is watched by the
hiccup meter too. Its pid is found by the socket listening on the target's port, so a
stall on its CPU counts against the step; before, only the workers' CPUs counted, and
the waits such a stall left read as the server's own ("server stalled")."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from support import collect

from workbench.engine.local_server import loopback_ports, server_pids, unknown_server
from workbench.results.events import Interval
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

pytestmark = pytest.mark.redis


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_process_listening_on_a_loopback_targets_port_is_found(
    redis_server: ServerProcess,
) -> None:
    url = redis_server.target_options["url"]
    port = next(iter(loopback_ports({"url": url})))
    assert server_pids({"url": url}) == {port: redis_server.pid}
    assert not unknown_server({"url": url}, server_pids({"url": url}))
    nobody = f"redis://127.0.0.1:{_unused_port()}/0"
    assert server_pids({"url": nobody}) == {} and unknown_server({"url": nobody}, {})
    # Remote hosts and strings that are no address are not looked for.
    assert loopback_ports({"url": "redis://10.0.0.1:6379/0", "note": "a:b:c"}) == set()


async def test_a_run_against_a_server_it_did_not_start_watches_that_server(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    url = redis_server.target_options["url"]
    events = await collect(
        ["target.system=redis", f"target.options.url={url}", "load.duration=1", "load.workers=1"],
        Store(tmp_path / "runs.sqlite3"),
    )
    seen = [e.stats.hiccups.seen for e in events if isinstance(e, Interval) and e.stats.hiccups]
    assert seen, "the meter reported no interval"
    assert any("server" in s for s in seen), seen  # the server's CPUs, as a managed one's


def test_a_socket_several_processes_hold_names_none_of_them(tmp_path: Path) -> None:
    """nginx's master and its workers hold one listening socket: which serves is unknown,
    so no pid is named and every CPU counts (a /proc of the test's own making)."""
    (tmp_path / "net").mkdir()
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when ... inode\n"
    # 127.0.0.1:8080, listening (0A), inode 4242 in the tenth field, as the kernel writes it
    row = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 0 0 0 4242\n"
    (tmp_path / "net" / "tcp").write_text(header + row)
    (tmp_path / "net" / "tcp6").write_text(header)
    for pid in (100, 101):
        (tmp_path / str(pid) / "fd").mkdir(parents=True)
        (tmp_path / str(pid) / "fd" / "3").symlink_to("socket:[4242]")
    options = {"base_url": "http://127.0.0.1:8080"}
    assert server_pids(options, proc=tmp_path) == {}
    assert unknown_server(options, {})
    (tmp_path / "101" / "fd" / "3").unlink()  # one holder: it is the server
    assert server_pids(options, proc=tmp_path) == {8080: 100}
