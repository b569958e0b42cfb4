"""Issue 12: the HTTP strategies never follow a redirect, which could lead to another host
past the remote-target guard (`keep-alive` and `new-connection` followed them).

A real aiohttp server on a loopback port answers every request with a redirect to a
second real server, named by another host name and port; the second must see nothing,
and the run must count the redirects as errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from support import collect, finished

from workbench.results.store import Store

# A server's cleanup waits this long at most for the connections a run left open (aiohttp's
# default is 60 s a runner): a teardown that hangs shows as a slow test, not a worker killed.
SHUTDOWN_TIMEOUT = 5.0


@pytest.fixture
async def servers() -> AsyncIterator[tuple[str, list[str]]]:
    """(URL of the redirecting server, the requests the redirect target received)."""
    reached: list[str] = []

    async def elsewhere(request: web.Request) -> web.Response:
        reached.append(request.path_qs)
        return web.json_response({"value": "x"})

    other = web.Application()
    other.router.add_route("*", "/{tail:.*}", elsewhere)
    other_runner = web.AppRunner(other, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await other_runner.setup()
    other_site = web.TCPSite(other_runner, "127.0.0.1", 0)
    await other_site.start()
    other_port = other_runner.addresses[0][1]

    async def redirect(request: web.Request) -> web.Response:
        # Another host name and port: what a redirect to someone else's server looks like.
        raise web.HTTPFound(f"http://localhost:{other_port}{request.path_qs}")

    front = web.Application()
    front.router.add_route("*", "/{tail:.*}", redirect)
    front_runner = web.AppRunner(front, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await front_runner.setup()
    front_site = web.TCPSite(front_runner, "127.0.0.1", 0)
    await front_site.start()
    front_port = front_runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{front_port}", reached
    finally:
        await front_runner.cleanup()
        await other_runner.cleanup()


@pytest.mark.parametrize("strategy", ["keep-alive", "new-connection", "lean"])
@pytest.mark.parametrize("mix", ["{get=1}", "{set=1}"])
async def test_a_redirect_is_an_error_and_never_followed(
    tmp_path: Path, servers: tuple[str, list[str]], strategy: str, mix: str
) -> None:
    url, reached = servers
    events = await collect(
        [
            "target.system=http",
            f"target.options.base_url={url}",
            f"strategy.name={strategy}",
            f"workload.mix={mix}",
            "load.ops=200",
            "load.concurrency=2",
            "load.workers=1",
        ],
        Store(tmp_path / "runs.sqlite3"),
    )
    (step,) = finished(events)
    assert reached == []
    assert step.stats.errors.get("http-302", 0) == 200, step.stats.errors
