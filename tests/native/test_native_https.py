"""The native engine over HTTPS (rustls) against the workbench's own kv-store served with a
throw-away CA: managed, given a CA, a wrong CA, mutual TLS with and without a client
certificate, and both plain/TLS mix-ups (a clear line, never a hang)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from http_support import kv_store
from support import collect, finished

from workbench.results.events import StepFinished
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess
from workbench.sdk.tls_certs import make_tls_files

LOAD = [
    "target.system=http",
    "load.ops=1000",
    "load.workers=1",
    "load.concurrency=4",
    "strategy.name=native",
]


def given(server: ServerProcess, **changed: Any) -> list[str]:
    """Overrides pointing a step at `server` (its options, some changed or removed)."""
    options = {**server.target_options, **changed}
    return [f"target.options.{k}={v}" for k, v in options.items() if v is not None]


async def one_step(tmp_path: Path, overrides: list[str]) -> StepFinished:
    events = await collect([*LOAD, *overrides], Store(tmp_path / "runs.sqlite"))
    (step,) = finished(events)
    return step


async def test_a_managed_https_store_is_loaded_without_errors(tmp_path: Path) -> None:
    step = await one_step(
        tmp_path, ["target.managed=true", "target.server.kind=kv-store", "target.server.tls=true"]
    )
    assert step.status == "completed", step.reason
    assert step.stats.errors == {}


async def test_https_given_a_ca_and_sni(https_store: ServerProcess, tmp_path: Path) -> None:
    step = await one_step(tmp_path, given(https_store, tls_sni="localhost"))
    assert step.status == "completed", step.reason
    assert step.stats.errors == {}


async def test_a_wrong_ca_is_one_tls_line(https_store: ServerProcess, tmp_path: Path) -> None:
    other = make_tls_files(tmp_path)
    step = await one_step(tmp_path, given(https_store, tls_ca=str(other.ca)))
    assert step.status == "failed"
    assert "does not verify" in step.reason and "\n" not in step.reason


async def test_mutual_tls_with_and_without_a_client_certificate(tmp_path: Path) -> None:
    server = kv_store(tls=True, tls_auth_clients=True)
    try:
        with_cert = await one_step(tmp_path, given(server))
        without = await one_step(tmp_path, given(server, tls_cert=None, tls_key=None))
    finally:
        server.stop()
    assert with_cert.status == "completed", with_cert.reason
    assert with_cert.stats.errors == {}
    assert without.status == "failed"
    said = without.reason + without.stats.first_errors.get("tls", "")
    assert "CertificateRequired" in said
    assert "connection" not in without.stats.errors, without.stats.first_errors


async def test_a_plain_client_on_the_tls_port_is_told_so(
    https_store: ServerProcess, tmp_path: Path
) -> None:
    plain = https_store.target_options["base_url"].replace("https://", "http://")
    step = await one_step(tmp_path, given(https_store, base_url=plain, tls_ca=None))
    assert step.status == "failed"
    said = step.reason + step.stats.first_errors.get("connection", "")
    assert "is it a TLS port? use https://" in said


async def test_a_tls_client_on_a_plain_port_is_told_so(
    https_store: ServerProcess, tmp_path: Path
) -> None:
    server = kv_store()
    try:
        url = server.target_options["base_url"].replace("http://", "https://")
        step = await one_step(
            tmp_path, given(server, base_url=url, tls_ca=https_store.target_options["tls_ca"])
        )
    finally:
        server.stop()
    assert step.status == "failed"
    assert "does not speak TLS" in step.reason and "\n" not in step.reason
