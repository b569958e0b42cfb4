"""Machines made of namespaces: a test bed for the workbench across hosts, on this machine.

Each host is a network namespace with one address of its own (10.77.0.x/24) on a veth
pair into a switch (a bridge in a namespace of its own), and a PID namespace with its own
/proc: `ray stop` or `pkill` run on a host see that host's processes only, as on a real
machine, and killing the host's first process ends every process it holds. There is no
default route and no other route: a host reaches the other hosts' addresses and its own
loopback, nothing else.

Each host also has its own HOME (Ray keeps its token in ~/.ray/auth_token) and its own
temporary directory. Names are unique per test run (`wb<pid><random>-<host>`), and
`Bed.remove` removes exactly what the bed made: the processes by pid, the namespaces by
name, the directories by path.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SUBNET = "10.77.0"
PREFIX = 24
VENV_BIN = Path(sys.executable).parent  # ray, workbench and the native engine live here
START_TIMEOUT = 30.0  # seconds for a host's first process to appear


def why_not() -> str:
    """Why this machine cannot build the bed ("" when it can)."""
    if os.geteuid() != 0:
        return "the multi-host test bed needs root (network and PID namespaces)"
    for tool in ("ip", "nsenter", "unshare"):
        if shutil.which(tool) is None:
            return f"the multi-host test bed needs `{tool}` (iproute2, util-linux)"
    probe = f"wbprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return ""


def _sh(*args: str) -> None:
    done = subprocess.run(list(args), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")


def _pid_namespace(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/pid")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class Host:
    """One machine of the bed: its address, HOME and temporary directory, and its processes."""

    name: str
    netns: str
    address: str
    root: Path  # this host's own files: home/, tmp/
    holder: subprocess.Popen[bytes] | None = None  # `unshare` holding the PID namespace
    init: int = 0  # the first process in the host's PID namespace (its pid here)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a login on this host: its own HOME and temporary directory."""
        env = {
            "PATH": f"{VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "RAY_TMPDIR": str(self.tmp),  # where Ray notes the cluster it started or joined
            "RAY_USAGE_STATS_ENABLED": "0",
            "LANG": "C.UTF-8",
        }
        return env | extra

    def command(self, argv: list[str]) -> list[str]:
        """`argv` as run on this host: in its network, PID and mount namespaces, in its HOME
        (entering a mount namespace would otherwise leave it in /)."""
        return ["nsenter", "-t", str(self.init), "-n", "-p", "-m", f"--wd={self.home}", "--", *argv]

    def run(
        self,
        argv: list[str],
        timeout: float = 120,
        check: bool = True,
        stdin: str | None = None,
        **env: str,
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.command(argv),
            env=self.env(**env),
            input=stdin or "",
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.home,
        )
        if check and done.returncode:
            raise AssertionError(
                f"on {self.name}: {' '.join(argv)} exited {done.returncode}\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def shell(
        self, script: str, timeout: float = 120, check: bool = True, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """A sh script run on this host (a documented command, as a person types it)."""
        return self.run(["sh", "-ec", script], timeout=timeout, check=check, **env)

    def pids(self, needle: str = "") -> list[int]:
        """Pids (as this machine numbers them) of the host's processes whose command line
        holds `needle`."""
        if not self.init or not alive(self.init):
            return []
        mine = _pid_namespace(self.init)
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError):
                if _pid_namespace(int(entry)) != mine:
                    continue
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if needle.encode() in f.read():
                        found.append(int(entry))
        return sorted(found)

    def start(self) -> None:
        self.home.mkdir(parents=True)
        self.tmp.mkdir(parents=True)
        # `ip netns exec` enters the network namespace; unshare gives the host its own PID
        # namespace with /proc mounted for it; sleep is its first process (pid 1 there).
        self.holder = subprocess.Popen(
            [
                "ip", "netns", "exec", self.netns,
                "unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
                "sleep", "infinity",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                path = f"/proc/{self.holder.pid}/task/{self.holder.pid}/children"
                with open(path) as f:
                    children = f.read().split()
                if children:
                    self.init = int(children[0])
                    return
            time.sleep(0.02)
        raise RuntimeError(f"host {self.name}: its first process did not start")

    def stop(self) -> list[int]:
        """End every process of the host (by the pid of its first one); the pids that were
        alive, to check afterwards."""
        left = self.pids()
        if self.init and alive(self.init):
            os.kill(self.init, signal.SIGKILL)  # the kernel then kills the whole namespace
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.holder is not None:
            with contextlib.suppress(ProcessLookupError):
                self.holder.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.holder.wait(timeout=10)
        return left


@dataclass
class Bed:
    """Hosts on one switch; `remove` undoes everything `make` did."""

    tag: str
    root: Path
    hosts: dict[str, Host] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, names: list[str]) -> Bed:
        tag = f"wb{os.getpid()}{secrets.token_hex(2)}"
        root = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir="/tmp"))  # short: socket paths
        bed = cls(tag, root)
        try:
            switch = bed._namespace("sw")
            _sh("ip", "-n", switch, "link", "add", "br0", "type", "bridge")
            _sh("ip", "-n", switch, "link", "set", "br0", "up")
            for i, name in enumerate(names, start=1):
                bed.add(name, i)
        except BaseException:
            bed.remove()
            raise
        return bed

    def _namespace(self, name: str) -> str:
        netns = f"{self.tag}-{name}"
        _sh("ip", "netns", "add", netns)
        self.namespaces.append(netns)
        _sh("ip", "-n", netns, "link", "set", "lo", "up")
        return netns

    def add(self, name: str, number: int) -> Host:
        """A host with address SUBNET.number, plugged into the switch and started."""
        netns = self._namespace(name)
        switch = f"{self.tag}-sw"
        port = f"p{number}"
        _sh("ip", "link", "add", "eth0", "netns", netns, "type", "veth",
            "peer", "name", port, "netns", switch)  # fmt: skip
        _sh("ip", "-n", switch, "link", "set", port, "master", "br0", "up")
        address = f"{SUBNET}.{number}"
        _sh("ip", "-n", netns, "addr", "add", f"{address}/{PREFIX}", "dev", "eth0")
        _sh("ip", "-n", netns, "link", "set", "eth0", "up")
        host = Host(name, netns, address, self.root / name)
        self.hosts[name] = host
        host.start()
        return host

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def routes(self, name: str) -> list[str]:
        """The host's routing table (IPv4 and IPv6), one route a line."""
        netns = self.hosts[name].netns
        out = []
        for family in ("-4", "-6"):
            done = subprocess.run(
                ["ip", family, "-n", netns, "route", "show", "table", "all"],
                capture_output=True,
                text=True,
            )
            out += [line for line in done.stdout.splitlines() if line.strip()]
        return out

    def remove(self) -> list[int]:
        """Every process by pid, every namespace by name, the files; pids still alive after."""
        pids: list[int] = []
        for host in self.hosts.values():
            pids += host.stop()
        deadline = time.monotonic() + 15
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        for netns in self.namespaces:
            subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        self.namespaces.clear()
        shutil.rmtree(self.root, ignore_errors=True)
        return [p for p in pids if alive(p)]


# --- Ray on the bed: the commands docs/distributed.md gives, as a person runs them ---------

RAY_PORT = 6379
NODE_OPTIONS = ["--num-cpus=1", "--object-store-memory=80000000"]  # small: one shared /dev/shm
TOKEN = {"RAY_AUTH_MODE": "token"}  # in the environment of every Ray command and driver


def ray_token(head: Host) -> str:
    """Generate the cluster's token on the head (~/.ray/auth_token there)."""
    head.run(["ray", "get-auth-token", "--generate"], **TOKEN)
    return (head.home / ".ray" / "auth_token").read_text()


def copy_token(token: str, host: Host) -> None:
    """The token, saved where Ray looks for it on another machine."""
    host.shell(
        'mkdir -p ~/.ray && (umask 077 && printf %s "$TOKEN" > ~/.ray/auth_token)', TOKEN=token
    )


def ray_head(head: Host) -> None:
    head.run(
        ["ray", "start", "--head", f"--port={RAY_PORT}", f"--node-ip-address={head.address}",
         "--include-dashboard=false", *NODE_OPTIONS],
        timeout=300,
        **TOKEN,
    )  # fmt: skip


def ray_join(host: Host, head: Host, *, nice: bool = False) -> None:
    """`nice`: at a low priority, for a node that joins during a run: its start-up would
    otherwise take the cores of this one machine from the run's workers, which on machines
    of their own it never does. Ray gives a raylet a fixed 30 s to register; on a machine
    that other work keeps busy, a niced one may not get the CPU to, and then joins again at
    normal priority (a late node that never joins would test nothing)."""
    argv = ["ray", "start", f"--address={head.address}:{RAY_PORT}",
            f"--node-ip-address={host.address}", *NODE_OPTIONS]  # fmt: skip
    if nice:
        done = host.run(["nice", "-n", "10", *argv], timeout=300, check=False, **TOKEN)
        if not done.returncode:
            return
        host.run(["ray", "stop", "--force"], check=False, **TOKEN)
    host.run(argv, timeout=300, **TOKEN)


def redis_on(host: Host, port: int = 6379, *extra: str) -> None:
    """A redis-server on the host's address (and its loopback, for the test's own looks)."""
    host.run(
        ["redis-server", "--port", str(port), "--bind", host.address, "127.0.0.1",
         "--save", "", "--appendonly", "no", "--daemonize", "yes", *extra],
    )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        done = host.run(["redis-cli", "-p", str(port), "ping"], check=False)
        if done.stdout.strip() == "PONG":
            return
        time.sleep(0.1)
    raise RuntimeError(f"redis-server on {host.name}:{port} did not answer")


def redis_info(host: Host, field_name: str, port: int = 6379) -> str:
    """One field of INFO, asked on the host itself."""
    out = host.run(["redis-cli", "-h", host.address, "-p", str(port), "info"]).stdout
    for line in out.splitlines():
        if line.startswith(f"{field_name}:"):
            return line.split(":", 1)[1].strip()
    raise KeyError(field_name)
