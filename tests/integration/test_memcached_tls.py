"""TLS to a real memcached (-Z, throw-away CA): every Python strategy, a wrong CA, mutual
TLS with and without a client certificate, plain/TLS mix-ups, and a whole run against a
managed TLS memcached."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import collect, finished
from tls_support import set_get as tls_set_get
from workbench_memcached.server import start_memcached

from workbench.results.events import StepStarted
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess
from workbench.sdk.tls_certs import make_tls_files

STRATEGIES = ["multiplexed", "client-per-client", "pooled"]


@pytest.fixture(scope="module")
def tls_memcached() -> Iterator[ServerProcess]:
    with start_memcached(tls=True) as server:
        yield server


@pytest.fixture(scope="module")
def mtls_memcached() -> Iterator[ServerProcess]:
    with start_memcached(tls=True, tls_auth_clients=True) as server:
        yield server


async def set_get(strategy_name: str, options: dict[str, Any]) -> tuple[str, str]:
    return await tls_set_get("memcached", strategy_name, options)


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_every_strategy_speaks_tls_to_a_managed_server(
    strategy: str, tls_memcached: ServerProcess
) -> None:
    assert tls_memcached.target_options["tls"] is True
    assert await set_get(strategy, tls_memcached.target_options) == ("ok", "v")


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_a_wrong_ca_is_one_line_under_the_tls_kind(
    strategy: str, tls_memcached: ServerProcess, tmp_path: Path
) -> None:
    other = make_tls_files(tmp_path)
    options = {**tls_memcached.target_options, "tls_ca": str(other.ca)}
    kind, message = await set_get(strategy, options)
    assert kind == "tls"
    assert "does not verify" in message and "\n" not in message


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_mutual_tls_with_and_without_a_client_certificate(
    strategy: str, mtls_memcached: ServerProcess
) -> None:
    options = mtls_memcached.target_options
    assert await set_get(strategy, options) == ("ok", "v")
    no_cert = {k: v for k, v in options.items() if k in ("servers", "tls", "tls_ca")}
    # TLS 1.3: the refusal comes after the client's handshake, as an alert that a reset can
    # overtake, and can land before the first request is queued: named the same every time.
    for _ in range(3):
        kind, message = await set_get(strategy, no_cert)
        assert kind == "tls" and "CERTIFICATE_REQUIRED" in message, message
        assert "\n" not in message


async def test_a_plain_client_on_the_tls_port_is_told_so(tls_memcached: ServerProcess) -> None:
    options = {"servers": tls_memcached.target_options["servers"], "timeout": 2}
    kind, message = await set_get("multiplexed", options)
    assert kind == "connection"
    assert "is it a TLS port?" in message


async def test_a_tls_client_on_a_plain_port_is_told_so(
    memcached_server: ServerProcess, tls_memcached: ServerProcess
) -> None:
    options = {
        **tls_memcached.target_options,
        "servers": memcached_server.target_options["servers"],
        "connect_timeout": 1,
    }
    kind, message = await set_get("multiplexed", options)
    assert kind == "tls"
    assert "does not speak TLS" in message or "plain (non-TLS) port" in message


async def test_a_run_against_a_managed_tls_memcached(tmp_path: Path) -> None:
    events = await collect(
        [
            "target.system=memcached",
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
    scratch = Path(started.system_options["tls_ca"]).parent
    assert not scratch.exists()  # the CA and certificates went with the server
