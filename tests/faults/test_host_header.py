"""Issue 39 item 12: a `Host` among `target.options.headers` stands for the URL's in every
HTTP strategy. The `lean` and `native` strategies sent both, and the server answered every
request with 400 ("Duplicate 'Host' header"); `keep-alive` (aiohttp) already replaced it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_support import kv_store
from support import collect, finished

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess


@pytest.fixture(scope="module")
def store_server() -> Iterator[ServerProcess]:
    server = kv_store()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("strategy", ["lean", "native"])
async def test_a_host_header_given_replaces_the_urls(
    store_server: ServerProcess, tmp_path: Path, strategy: str
) -> None:
    headers = json.dumps(["host: cache.example", "X-Trace: 1"])
    overrides = [
        "target.system=http",
        f"target.options.base_url={store_server.target_options['base_url']}",
        "target.options.get=GET /?key={key}",
        f"target.options.headers={headers}",
        f"strategy.name={strategy}",
        "load.duration=0.3",
        "load.concurrency=2",
        "load.workers=1",
        "workload.keys=50",
    ]
    (step,) = finished(await collect(overrides, Store(tmp_path / "runs.sqlite")))
    assert step.status == "completed", step.reason
    assert step.stats.errors == {}, step.stats.first_errors
    assert step.stats.ops > 0
