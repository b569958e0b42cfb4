"""HTTPS to the workbench's own reference server (kv-store, a throw-away CA made by
openssl): every Python strategy, a wrong CA, tls_insecure, SNI, mutual TLS with and
without a client certificate, plain/TLS mix-ups, and a whole managed HTTPS run whose CA
directory is removed when the server stops."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_support import kv_store
from support import collect, finished
from tls_support import set_get as tls_set_get

from workbench.results.events import StepStarted
from workbench.results.store import Store
from workbench.sdk.discovery import load_plugin
from workbench.sdk.servers import ServerProcess
from workbench.sdk.tls_certs import make_tls_files
from workbench.spec.native_binary import binary_path

STRATEGIES = ["keep-alive", "new-connection", "lean"]


@pytest.fixture(scope="module")
def http_store() -> Iterator[ServerProcess]:
    server = kv_store()
    try:
        yield server
    finally:
        server.stop()


async def set_get(strategy_name: str, options: dict[str, Any]) -> tuple[str, str]:
    return await tls_set_get("http", strategy_name, options)


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_every_strategy_speaks_https_to_a_managed_server(
    strategy: str, https_store: ServerProcess
) -> None:
    assert https_store.target_options["base_url"].startswith("https://")
    assert await set_get(strategy, https_store.target_options) == ("ok", "v")


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_wrong_ca_is_one_line_under_the_tls_kind(
    strategy: str, https_store: ServerProcess, tmp_path: Path
) -> None:
    other = make_tls_files(tmp_path)
    options = {**https_store.target_options, "tls_ca": str(other.ca)}
    kind, message = await set_get(strategy, options)
    assert kind == "tls", message
    assert "does not verify" in message and "\n" not in message


async def test_tls_insecure_skips_verification(https_store: ServerProcess, tmp_path: Path) -> None:
    other = make_tls_files(tmp_path)
    options = {**https_store.target_options, "tls_ca": str(other.ca), "tls_insecure": True}
    assert await set_get("keep-alive", options) == ("ok", "v")


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_sni_names_the_certificate(strategy: str, https_store: ServerProcess) -> None:
    right = {**https_store.target_options, "tls_sni": "localhost"}
    assert await set_get(strategy, right) == ("ok", "v")
    kind, message = await set_get(strategy, {**right, "tls_sni": "other.invalid"})
    assert kind == "tls" and "does not verify" in message, message


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_mutual_tls_with_and_without_a_client_certificate(strategy: str) -> None:
    server = kv_store(tls=True, tls_auth_clients=True)
    try:
        options = server.target_options
        assert options["tls_cert"] and options["tls_key"]
        assert await set_get(strategy, options) == ("ok", "v")
        no_cert = {k: v for k, v in options.items() if k not in ("tls_cert", "tls_key")}
        kind, message = await set_get(strategy, no_cert)
    finally:
        server.stop()
    assert kind == "tls" and "CERTIFICATE_REQUIRED" in message, message


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_plain_client_on_the_tls_port_is_told_so(
    strategy: str, https_store: ServerProcess
) -> None:
    options = dict(https_store.target_options)
    options["base_url"] = options["base_url"].replace("https://", "http://")
    options["timeout"] = 5
    kind, message = await set_get(strategy, options)
    assert kind == "connection", message
    assert "is it a TLS port? use https://" in message


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_tls_client_on_a_plain_port_is_told_so(
    strategy: str, http_store: ServerProcess, https_store: ServerProcess
) -> None:
    options = {
        **http_store.target_options,
        "base_url": http_store.target_options["base_url"].replace("http://", "https://"),
        "tls_ca": https_store.target_options["tls_ca"],
        "connect_timeout": 1,
    }
    kind, message = await set_get(strategy, options)
    assert kind == "tls", message
    assert "does not speak TLS" in message or "plain (non-TLS) port" in message


async def test_lean_handshakes_before_the_load() -> None:
    """The lean client connects (and handshakes) when it is made, not in its first op."""
    server = kv_store(tls=True)
    try:
        system = load_plugin("http")
        strategy = system.strategy("lean")
        conn = await strategy.connect(
            system.options.resolve(server.target_options, "target.options"),
            strategy.options.resolve({}, "strategy.options"),
        )
        try:
            client = await conn.client()
            assert client.proto is not None and not client.proto.closed  # type: ignore[attr-defined]
        finally:
            await conn.close()
    finally:
        server.stop()


@pytest.mark.parametrize("strategy", ["keep-alive", "lean"])
async def test_a_run_against_a_managed_https_store(strategy: str, tmp_path: Path) -> None:
    events = await collect(
        [
            "target.system=http",
            "target.managed=true",
            "target.server.kind=kv-store",
            "target.server.tls=true",
            f"strategy.name={strategy}",
            "load.ops=600",
            "load.workers=1",
            "load.concurrency=4",
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    (step,) = finished(events)
    assert step.status == "completed", step.reason
    assert step.stats.errors == {}
    started = next(e for e in events if isinstance(e, StepStarted))
    assert started.system_options["base_url"].startswith("https://")
    scratch = Path(started.system_options["tls_ca"]).parent
    assert not scratch.exists()  # the CA and certificates went with the server


@pytest.mark.parametrize("strategy", ["keep-alive", "native"])
def test_memtier_tls_flags_run_https(
    strategy: str, https_store: ServerProcess, tmp_path: Path
) -> None:
    """`-s http://… --tls --cacert CA --sni localhost` as a memtier user types it, both
    engines; with --tls-skip-verify and a CA that did not sign it, the warning is printed."""
    if strategy == "native" and binary_path() is None:
        pytest.skip("the native engine is not built")
    plain = https_store.target_options["base_url"].replace("https://", "http://")
    ca = https_store.target_options["tls_ca"]
    common = [
        "run", "-s", plain, "--tls", "-n", "300", "-c", "2", "-w", "1",
        "--set", f"strategy.name={strategy}",
        "--set", "target.options.get=GET /?key={key}",
        "--set", "load.warmup=0",
    ]  # fmt: skip
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3")}

    def cli(*more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "workbench.cli.main", *common, *more],
            capture_output=True, text=True, env=env, timeout=180, check=False,
        )  # fmt: skip

    done = cli("--cacert", ca, "--sni", "localhost")
    assert done.returncode == 0, done.stdout + done.stderr
    other = make_tls_files(tmp_path)
    insecure = cli("--cacert", str(other.ca), "--tls-skip-verify")
    assert insecure.returncode == 0, insecure.stdout + insecure.stderr
    assert "warning:" in insecure.stdout + insecure.stderr
    refused = cli("--cacert", str(other.ca))
    assert refused.returncode != 0
    assert "does not verify" in refused.stdout + refused.stderr


def _established(port: int) -> int:
    """TCP connections to `port` this machine has established (the clients' ends)."""
    out = subprocess.run(
        ["ss", "-Htn", "state", "established", f"dport = :{port}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return len(out.splitlines())


async def _keep_alive(server: ServerProcess, **strategy: Any) -> tuple[Any, int, int]:
    """A keep-alive connection to `server`; its port, and the connections to it before."""
    system = load_plugin("http")
    keep_alive = system.strategy("keep-alive")
    port = int(server.target_options["base_url"].rsplit(":", 1)[1].split("/")[0])
    before = _established(port)
    conn = await keep_alive.connect(
        system.options.resolve(server.target_options, "target.options"),
        keep_alive.options.resolve(strategy, "strategy.options"),
    )
    return conn, port, before


@pytest.mark.parametrize("clients", [1, 6])
async def test_keep_alive_opens_its_pool_before_the_load_not_inside_an_op(
    https_store: ServerProcess, clients: int
) -> None:
    conn, port, before = await _keep_alive(https_store)
    try:
        made = [await conn.client() for _ in range(clients)]
        await conn.open_pool(clients)  # as the engine does once its clients are made
        assert _established(port) - before == clients  # every handshake done already
        for _ in range(3):  # the clients at once, as under load: no connection is added
            await asyncio.gather(*(c.set(b"pool:k", b"v", None) for c in made))
            await asyncio.gather(*(c.get(b"pool:k") for c in made))
        assert _established(port) - before == clients
    finally:
        await conn.close()


async def test_a_pool_size_caps_the_connections_opened_before_the_load(
    https_store: ServerProcess,
) -> None:
    conn, port, before = await _keep_alive(https_store, pool_size=2)
    try:
        await conn.open_pool(5)
        assert _established(port) - before == 2
    finally:
        await conn.close()
