"""The native engine over TLS (rustls) against real servers: managed TLS redis and
memcached, pipelined, mutual TLS with and without a client certificate, a wrong CA, and a
TLS client on a plain port (a clear `tls` failure, no hang)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import collect, finished
from workbench_memcached.server import start_memcached
from workbench_redis.server import start_redis

from workbench.results.events import StepFinished
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess
from workbench.sdk.tls_certs import make_tls_files

LOAD = ["load.ops=2000", "load.workers=1", "load.concurrency=4", "strategy.name=native"]


@pytest.fixture(scope="module")
def tls_redis() -> Iterator[ServerProcess]:
    with start_redis(tls=True) as server:
        yield server


async def one_step(tmp_path: Path, overrides: list[str]) -> StepFinished:
    events = await collect([*LOAD, *overrides], Store(tmp_path / "runs.sqlite"))
    (step,) = finished(events)
    return step


@pytest.mark.parametrize("system", ["redis", "memcached"])
@pytest.mark.parametrize("pipeline", [1, 16])
async def test_a_managed_tls_server_is_loaded_without_errors(
    system: str, pipeline: int, tmp_path: Path
) -> None:
    step = await one_step(
        tmp_path,
        [
            f"target.system={system}",
            "target.managed=true",
            "target.server.tls=true",
            f"strategy.options.pipeline={pipeline}",
        ],
    )
    assert step.status == "completed", step.reason
    assert step.stats.errors == {}


@pytest.mark.parametrize("system", ["redis", "memcached"])
async def test_mutual_tls_with_a_client_certificate(system: str, tmp_path: Path) -> None:
    step = await one_step(
        tmp_path,
        [
            f"target.system={system}",
            "target.managed=true",
            "target.server.tls=true",
            "target.server.tls_auth_clients=true",
        ],
    )
    assert step.status == "completed", step.reason
    assert step.stats.errors == {}


@pytest.mark.parametrize("system", ["redis", "memcached"])
async def test_mutual_tls_without_a_client_certificate_is_a_tls_failure(
    system: str, tmp_path: Path
) -> None:
    start = start_redis if system == "redis" else start_memcached
    with start(tls=True, tls_auth_clients=True) as server:
        options = server.target_options
        where = (
            [f"target.options.url={options['url']}"]
            if system == "redis"
            else [f"target.options.servers={options['servers'][0]}", "target.options.tls=true"]
        )
        step = await one_step(
            tmp_path,
            [f"target.system={system}", *where, f"target.options.tls_ca={options['tls_ca']}"],
        )
    # TLS 1.3: the client's handshake ends before the server checks for a certificate, so
    # the refusal (an alert, then often a reset) comes at connect or with the first write or
    # reply. Whichever comes first, it is counted under `tls` and names the alert.
    assert step.status == "failed"
    said = step.reason + step.stats.first_errors.get("tls", "")
    assert "CertificateRequired" in said
    assert "connection" not in step.stats.errors, step.stats.first_errors


async def test_a_wrong_ca_is_one_line_naming_the_reason(
    tls_redis: ServerProcess, tmp_path: Path
) -> None:
    other = make_tls_files(tmp_path)
    step = await one_step(
        tmp_path,
        [
            "target.system=redis",
            f"target.options.url={tls_redis.target_options['url']}",
            f"target.options.tls_ca={other.ca}",
        ],
    )
    assert step.status == "failed"
    assert "does not verify" in step.reason  # same CA name, other key: BadSignature
    assert "\n" not in step.reason


async def test_tls_insecure_skips_verification(tls_redis: ServerProcess, tmp_path: Path) -> None:
    other = make_tls_files(tmp_path)
    step = await one_step(
        tmp_path,
        [
            "target.system=redis",
            f"target.options.url={tls_redis.target_options['url']}",
            f"target.options.tls_ca={other.ca}",
            "target.options.tls_insecure=true",
        ],
    )
    assert step.status == "completed", step.reason


async def test_a_tls_client_on_a_plain_port_fails_clearly(
    redis_server: ServerProcess, tls_redis: ServerProcess, tmp_path: Path
) -> None:
    url = redis_server.target_options["url"].replace("redis://", "rediss://")
    step = await one_step(
        tmp_path,
        [
            "target.system=redis",
            f"target.options.url={url}",
            f"target.options.tls_ca={tls_redis.target_options['tls_ca']}",
            "target.options.connect_timeout=1",
        ],
    )
    assert step.status == "failed"
    assert "TLS" in step.reason and "plain" in step.reason
