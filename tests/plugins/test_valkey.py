"""The Valkey plugin: its target, its facts, its managed server (built from the vendored
source) with io-threads, a run's verdict counting those cores, and the conformance kit over
TLS servers and clusters. The kit over each strategy against a plain server, both engines,
is in test_builtin_conformance."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from plugin_helpers import CLI, show
from valkey_support import server_options, valkey_source
from workbench_valkey import plugin
from workbench_valkey.facts import FACTS
from workbench_valkey.server import find_program, start_valkey
from workbench_valkey.target import SYSTEM

from workbench.conformance import check_plugin, failures
from workbench.sdk import ManagedServer, TargetError
from workbench.sdk.servers import ServerProcess

MiB = 1 << 20


def _options(url: str) -> dict[str, object]:
    return plugin.options.resolve({"url": url}, "target.options")


def test_the_url_is_read_exactly_and_never_holds_a_password() -> None:
    target = SYSTEM.target(_options("valkeys://127.0.0.1:7000/3"))
    assert (target.host, target.port, target.db, target.tls is not None) == (
        "127.0.0.1",
        7000,
        3,
        True,
    )
    for bad, said in (
        ("redis://127.0.0.1:6379/0", "valkey://"),
        ("valkey://:secret@127.0.0.1:6379/0", "password in the URL"),
        ("valkey://127.0.0.1:6379/x", "database as a plain number"),
        ("valkey://127.0.0.1:0/0", "port from 1 to 65535"),
        ("valkey://10.1.2.3:6379/0", "10.1.2.3"),
    ):
        with pytest.raises(TargetError) as caught:
            SYSTEM.target(_options(bad))
        assert said in str(caught.value) and caught.value.where == "target.options.url"
    assert FACTS.with_tls({"url": "valkey://127.0.0.1:1/0"}) == {"url": "valkeys://127.0.0.1:1/0"}


def test_the_verdict_counts_the_io_threads_of_a_managed_server() -> None:
    threaded = plugin.facts({"io_threads": 4}, True)
    alone = plugin.facts({"io_threads": 1}, True)
    outside = plugin.facts({"io_threads": 4}, False)  # nothing says how it was started
    assert (threaded["server_cores"], threaded["single_threaded"]) == (4.0, False)
    assert (alone["server_cores"], alone["single_threaded"]) == (1.0, True)
    assert outside["server_cores"] == 1.0
    assert plugin.facts({}, True)["cache_size"]["option"] == "maxmemory"


def test_without_a_program_or_a_source_it_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert plugin.server is not None
    options = plugin.server.options.resolve({}, "target.server")
    with pytest.raises(TargetError) as caught:
        find_program(options)
    assert "target.server.source" in str(caught.value)
    with pytest.raises(TargetError) as missing:
        find_program({**options, "source": str(tmp_path / "valkey-0.tar.gz")})
    assert missing.value.where == "target.server.source"


def test_the_managed_server_runs_with_its_io_threads_and_memory_limit() -> None:
    options = server_options(io_threads=2, maxmemory=8 * MiB)
    server = start_valkey(
        find_program(options), maxmemory=8 * MiB, io_threads=options["io_threads"]
    )
    assert isinstance(server, ServerProcess)
    scratch = Path(server.process.args[server.process.args.index("--dir") + 1])
    try:
        r = redis.Redis.from_url(server.target_options["url"].replace("valkey", "redis", 1))
        config = r.config_get("io-threads") | r.config_get("maxmemory")
        assert config == {"io-threads": "2", "maxmemory": str(8 * MiB)}
        assert r.info("server")["valkey_version"] == server.version.split()[1]
        r.close()
    finally:
        server.stop()
    assert server.process.poll() is not None and not scratch.exists()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to show 2 cores")
def _facts_of_each_step(export: Path) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("facts"), dict):
                found.append(node["facts"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(export.read_text()))
    return found


@pytest.mark.serial  # the verdict reads the machine's CPU: a busy machine reads machine-bound
def test_a_run_with_io_threads_is_judged_against_that_many_cores(tmp_path: Path) -> None:
    export = tmp_path / "run.json"
    argv = [
        *CLI, "run", "--json-out", str(export),
        "--set", "target.system=valkey",
        "--set", "target.managed=true",
        "--set", f"target.server.source={valkey_source()}",
        "--set", "target.server.io_threads=2",
        "--set", "strategy.name=async-pool",
        "--set", "load.duration=1",
        "--set", "load.concurrency=4",
    ]  # fmt: skip
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3")}
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, show(done, argv)
    # The cores are the step's stored facts, whatever else the machine was doing; the verdict
    # line shows them unless other work made the machine itself the bound.
    assert [f["server_cores"] for f in _facts_of_each_step(export)] == [2.0], done.stdout
    verdict = next(line for line in done.stdout.splitlines() if line.startswith("verdict:"))
    assert " of 2 cores" in verdict or verdict.startswith("verdict: machine-bound"), done.stdout
    assert "valkey 8" in done.stdout and "errors 0" in done.stdout, done.stdout


# The kit over production-shaped targets: every strategy against a TLS server, the native
# engine against a cluster. (A TLS cluster passes too, but 32 clients' handshakes with
# every node overrun the kit's bounds on a loaded 2-core machine.)
VARIANTS = {"tls": {"tls": True}, "cluster": {"cluster": True}}
CASES = [
    *((s.name, "tls") for s in plugin.strategies if s.name != "cluster"),
    ("native", "cluster"),
]


@pytest.fixture(scope="module")
def variant_servers() -> Iterator[Callable[[str], ManagedServer]]:
    servers: dict[str, ManagedServer] = {}

    def get(variant: str) -> ManagedServer:
        assert plugin.server is not None
        if variant not in servers:
            servers[variant] = plugin.server.start(server_options(**VARIANTS[variant]))
        return servers[variant]

    yield get
    for server in servers.values():
        server.stop()


@pytest.mark.parametrize(("strategy", "variant"), CASES, ids=[f"{s}-{v}" for s, v in CASES])
def test_the_kit_passes_over_tls_and_cluster_targets(
    strategy: str, variant: str, variant_servers: Callable[[str], ManagedServer]
) -> None:
    server = variant_servers(variant)
    # 32 clients handshake at once in the kit: on a busy shared machine that can take
    # longer than the default 5 s to connect, which is not what this test is about.
    settings = {**server.target_options, "connect_timeout": 30.0, "timeout": 30.0}
    assert settings["url"].startswith("valkeys://" if variant == "tls" else "valkey://")
    results = check_plugin(plugin, strategy, settings)
    assert not failures(results), "\n" + "\n".join(r.line() for r in results)
