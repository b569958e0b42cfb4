"""The `lean` HTTP client's parsing against a real loopback server that writes raw bytes.

The server answers each request with scripted bytes chosen by the request's key, written
in as many pieces as the test asks (each one drained, so they leave as separate writes):
chunked bodies cut anywhere, an interim 100 Continue, a Content-Length beside a
Transfer-Encoding, a body that runs to the end of the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from workbench_http import plugin

from workbench.sdk.adapter import AdapterError
from workbench.sdk.servers import free_port

Script = Callable[[], list[bytes]]


def chunked(body: bytes, chunk: int) -> bytes:
    out = [b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"]
    out.append(b"Transfer-Encoding: chunked\r\n\r\n")
    for i in range(0, len(body), chunk):
        piece = body[i : i + chunk]
        out.append(b"%x\r\n" % len(piece) + piece + b"\r\n")
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


BODY = bytes(range(256)) * 40  # 10 KiB, every byte value, CR and LF among them

SCRIPTS: dict[str, Script] = {
    # 10 KiB in 7-byte chunks, written 5 bytes at a time: sizes and CRLFs cut anywhere.
    "chunked": lambda: pieces(chunked(BODY, 7), 5),
    "continue": lambda: [
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal",
    ],
    "conflict": lambda: [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n"
    ],
    "two-lengths": lambda: [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"
    ],
    "to-the-end": lambda: [b"HTTP/1.0 200 OK\r\n\r\n", b"until ", b"closed"],
    "length": lambda: [b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", b"ke", b"pt"],
}


@dataclass
class RawServer:
    url: str
    connections: list[int] = field(default_factory=list)


async def answer(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: RawServer
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            port = writer.get_extra_info("peername")[1]
            if port not in server.connections:  # one that carried a request, not the probe
                server.connections.append(port)
            target = head.split(b" ", 2)[1].decode()
            name = target.rpartition("=")[2]
            for piece in SCRIPTS[name]():
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0)
            if name == "to-the-end":
                break
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


@pytest.fixture
async def raw_server() -> AsyncIterator[RawServer]:
    port = free_port()
    server = RawServer(f"http://127.0.0.1:{port}")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await answer(reader, writer, server)

    listener = await asyncio.start_server(handle, "127.0.0.1", port)
    try:
        yield server
    finally:
        listener.close()
        await listener.wait_closed()


async def lean_client(url: str) -> tuple[object, object]:
    strategy = plugin.strategy("lean")
    system = plugin.options.resolve(
        {"base_url": url, "get": "GET /?key={key}", "value_field": ""}, "target.options"
    )
    conn = await strategy.connect(system, strategy.options.resolve({}, "strategy.options"))
    return conn, await conn.client()


async def test_a_chunked_body_in_many_small_pieces_reads_back_whole(raw_server: RawServer) -> None:
    conn, client = await lean_client(raw_server.url)
    try:
        for _ in range(3):
            assert await client.get(b"chunked") == BODY
        assert await client.get(b"length") == b"kept"
    finally:
        await conn.close()
    assert len(raw_server.connections) == 1  # one keep-alive connection for every answer


async def test_a_100_continue_is_not_the_final_answer(raw_server: RawServer) -> None:
    conn, client = await lean_client(raw_server.url)
    try:
        assert await client.get(b"continue") == b"final"
        assert await client.get(b"length") == b"kept"
    finally:
        await conn.close()
    assert len(raw_server.connections) == 1


@pytest.mark.parametrize("script", ["conflict", "two-lengths"])
async def test_conflicting_lengths_are_a_protocol_error(raw_server: RawServer, script: str) -> None:
    conn, client = await lean_client(raw_server.url)
    try:
        with pytest.raises(AdapterError) as err:
            await client.get(script.encode())
        assert err.value.kind == "protocol"
        # The connection it came on is dropped; the client goes on with a fresh one.
        assert await client.get(b"length") == b"kept"
    finally:
        await conn.close()
    assert len(raw_server.connections) == 2


async def test_a_body_without_length_runs_to_the_end_of_the_connection(
    raw_server: RawServer,
) -> None:
    conn, client = await lean_client(raw_server.url)
    try:
        assert await client.get(b"to-the-end") == b"until closed"
        assert await client.get(b"length") == b"kept"
    finally:
        await conn.close()
    assert len(raw_server.connections) == 2
