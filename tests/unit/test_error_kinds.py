"""What an error is counted as: a lost connection is `connection` however the loop says it."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from workbench.sdk.adapter import AdapterError, error_kind


async def _write_after_the_connection_was_dropped() -> BaseException:
    """A client that dropped a broken connection (aborting its transport) while another
    request still held the writer: uvloop refuses that write with a RuntimeError."""

    async def hold(reader: asyncio.StreamReader, _: asyncio.StreamWriter) -> None:
        await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.transport.abort()
        await asyncio.sleep(0)
        try:
            writer.write(b"GET")
        except Exception as exc:
            return exc
        raise AssertionError("a write on an aborted transport did not fail")
    finally:
        server.close()


def test_a_write_on_a_transport_uvloop_closed_is_a_connection_error() -> None:
    exc = uvloop.run(_write_after_the_connection_was_dropped())
    assert isinstance(exc, RuntimeError)  # not an OSError: nothing else says "connection"
    assert error_kind(exc) == "connection", f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (ConnectionResetError("reset"), "connection"),
        (TimeoutError(), "timeout"),
        (AdapterError("http-503", "busy"), "http-503"),
        (RuntimeError("something else"), "RuntimeError"),
    ],
)
def test_kinds(exc: BaseException, kind: str) -> None:
    assert error_kind(exc) == kind
