"""TLS to a real redis-server (`--tls-port`, throw-away CA): every Python strategy, a wrong
CA, mutual TLS with and without a client certificate, plain/TLS mix-ups, SNI, and a whole
run against a managed TLS server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import collect, finished
from tls_support import set_get as tls_set_get
from workbench_redis.server import start_redis

from workbench.results.events import StepStarted
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess
from workbench.sdk.tls_certs import make_tls_files

STRATEGIES = [
    "multiplexed",
    "multiplexed-k",
    "async-pool",
    "pipeline",
    "sync-per-client",
    "sync-pool",
]


@pytest.fixture(scope="module")
def tls_redis() -> Iterator[ServerProcess]:
    with start_redis(tls=True) as server:
        yield server


@pytest.fixture(scope="module")
def mtls_redis() -> Iterator[ServerProcess]:
    with start_redis(tls=True, tls_auth_clients=True) as server:
        yield server


async def set_get(strategy_name: str, options: dict[str, Any]) -> tuple[str, str]:
    return await tls_set_get("redis", strategy_name, options)


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_every_strategy_speaks_tls_to_a_managed_server(
    strategy: str, tls_redis: ServerProcess
) -> None:
    assert tls_redis.target_options["url"].startswith("rediss://")
    assert await set_get(strategy, tls_redis.target_options) == ("ok", "v")


@pytest.mark.parametrize("strategy", ["multiplexed", "async-pool", "sync-pool"])
async def test_a_wrong_ca_is_one_line_under_the_tls_kind(
    strategy: str, tls_redis: ServerProcess, tmp_path: Path
) -> None:
    other = make_tls_files(tmp_path)
    kind, message = await set_get(strategy, {**tls_redis.target_options, "tls_ca": str(other.ca)})
    assert kind == "tls"
    assert "does not verify" in message and "self-signed" in message
    assert "\n" not in message


async def test_tls_insecure_skips_verification(tls_redis: ServerProcess, tmp_path: Path) -> None:
    other = make_tls_files(tmp_path)
    options = {**tls_redis.target_options, "tls_ca": str(other.ca), "tls_insecure": True}
    assert await set_get("multiplexed", options) == ("ok", "v")


async def test_sni_names_the_certificate(tls_redis: ServerProcess) -> None:
    good = {**tls_redis.target_options, "tls_sni": "localhost"}
    assert await set_get("multiplexed", good) == ("ok", "v")
    kind, message = await set_get(
        "multiplexed", {**tls_redis.target_options, "tls_sni": "elsewhere.invalid"}
    )
    assert kind == "tls" and "elsewhere.invalid" in message


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_mutual_tls_with_and_without_a_client_certificate(
    strategy: str, mtls_redis: ServerProcess
) -> None:
    options = mtls_redis.target_options
    assert options["tls_cert"] and options["tls_key"]
    assert await set_get(strategy, options) == ("ok", "v")
    no_cert = {k: v for k, v in options.items() if k in ("url", "tls_ca")}
    # TLS 1.3: the refusal comes after the client's handshake, as an alert that a reset can
    # overtake; every strategy checks with one PING at connect and names it either way.
    for _ in range(3):
        kind, message = await set_get(strategy, no_cert)
        assert kind == "tls" and "CERTIFICATE_REQUIRED" in message, message
        assert "\n" not in message


async def test_a_plain_client_on_the_tls_port_is_told_so(tls_redis: ServerProcess) -> None:
    url = tls_redis.target_options["url"].replace("rediss://", "redis://")
    kind, message = await set_get("multiplexed", {"url": url, "connect_timeout": 2})
    assert kind == "connection"
    assert "TLS port" in message


async def test_a_tls_client_on_a_plain_port_is_told_so(
    redis_server: ServerProcess, tls_redis: ServerProcess
) -> None:
    url = redis_server.target_options["url"].replace("redis://", "rediss://")
    options = {"url": url, "tls_ca": tls_redis.target_options["tls_ca"], "connect_timeout": 1}
    kind, message = await set_get("multiplexed", options)
    assert kind == "tls"
    assert "plain (non-TLS) port" in message


async def test_a_run_against_a_managed_tls_server(tmp_path: Path) -> None:
    events = await collect(
        [
            "target.system=redis",
            "target.managed=true",
            "target.server.tls=true",
            "load.ops=2000",
            "load.workers=1",
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    started = next(e for e in events if isinstance(e, StepStarted))
    (step,) = finished(events)
    assert step.status == "completed"
    assert step.stats.errors == {}
    assert step.stats.server["rss_bytes"] > 0  # INFO read over TLS too
    scratch = Path(started.system_options["tls_ca"]).parent
    assert not scratch.exists()  # the CA and certificates went with the server
