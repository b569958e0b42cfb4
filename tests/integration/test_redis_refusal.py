"""A Redis that refuses a connection says so first, then closes it: the multiplexed client
names the refusal (not "IndexError('pop from an empty deque')").

On loopback a full server refuses (`maxclients`); across machines protected mode does
the same (tests/ray/test_multihost.py shows that one on the namespace test bed).
"""

from __future__ import annotations

import socket

import pytest
from workbench_redis.server import start_redis
from workbench_redis.target import SYSTEM

from workbench.sdk.adapter import AdapterError, error_kind
from workbench.sdk.resp import RespTarget, open_resp


@pytest.mark.redis
async def test_a_connection_the_server_refuses_is_named_as_refused() -> None:
    with start_redis(extra=["--maxclients", "2"]) as server:
        holders = []
        try:
            for _ in range(5):  # bounded: fill the server (it may hold a connection itself)
                holder = socket.create_connection(("127.0.0.1", server.port))
                holders.append(holder)
                holder.sendall(b"PING\r\n")
                if holder.recv(64) != b"+PONG\r\n":
                    break
            else:
                raise AssertionError("the server never refused a client")
            target = RespTarget(SYSTEM, "127.0.0.1", server.port, 0, None, None, None, 5.0, 5.0)
            # open_resp's PING (its one answered command before the load) meets the refusal.
            with pytest.raises(AdapterError) as refused:
                await open_resp(target)
        finally:
            for holder in holders:
                holder.close()
    assert error_kind(refused.value) == "refused"
    assert str(refused.value) == (
        "redis closed the connection after refusing it: ERR max number of clients reached"
    )
