"""The processes behind a step's loopback target that the workbench did not start.

The hiccup meter counts a machine stall against a step only on the CPUs its server and
workers ran on, and it knows a managed server's pid. A server the person started on this
machine has none: its CPU was unknown, so stalls on it never counted, and the waits they
caused read as the server's own ("server stalled"). Here its pid is found the way `ss -p`
finds it: the inode of the socket listening on the target's port (/proc/net/tcp, tcp6),
then the process holding that inode among its open files. A process of another user
cannot be read, and of several processes holding one socket none is known to serve;
`unknown_server` then says every CPU must count.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workbench.sdk.remote import addresses, is_loopback

LISTEN = "0A"  # the TCP state of a listening socket in /proc/net/tcp
PROC = Path("/proc")


def loopback_ports(options: Mapping[str, Any]) -> set[int]:
    """The ports of every loopback address among a system's options."""
    ports: set[int] = set()
    for _, value, host in addresses(options):
        if not is_loopback(host):
            continue
        text = value.strip()
        try:
            port = urlsplit(text if "://" in text else f"//{text}").port
        except ValueError:
            continue
        if port:
            ports.add(port)
    return ports


def _listening_inodes(ports: set[int], proc: Path) -> dict[str, int]:
    """socket inode -> port, for the sockets listening on `ports`."""
    found: dict[str, int] = {}
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != LISTEN:
                continue
            port = int(fields[1].rsplit(":", 1)[1], 16)
            if port in ports:
                found[fields[9]] = port
    return found


def _holders(inodes: dict[str, int], proc: Path) -> dict[int, set[int]]:
    """port -> the pids that hold its listening socket (processes this user may read)."""
    wanted = {f"socket:[{inode}]": port for inode, port in inodes.items()}
    out: dict[int, set[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds: Iterable[str] = os.listdir(entry / "fd")
        except OSError:
            continue  # gone, or another user's
        for fd in fds:
            try:
                port = wanted.get(os.readlink(entry / "fd" / fd))
            except OSError:
                continue
            if port is not None:
                out.setdefault(port, set()).add(int(entry.name))
    return out


def server_pids(options: Mapping[str, Any], proc: Path = PROC) -> dict[int, int]:
    """port -> pid of the local processes listening on the loopback ports of `options`."""
    ports = loopback_ports(options)
    if not ports:
        return {}
    inodes = _listening_inodes(ports, proc)
    holders = _holders(inodes, proc) if inodes else {}
    # Several processes on one socket (nginx's master and its workers, a forked server):
    # which of them serves is not known, so none is named and every CPU counts.
    return {port: next(iter(pids)) for port, pids in holders.items() if len(pids) == 1}


def unknown_server(options: Mapping[str, Any], found: Mapping[int, int]) -> bool:
    """A loopback target some of whose ports have no process found: its CPUs unknown."""
    return bool(loopback_ports(options) - set(found))
