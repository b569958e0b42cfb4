"""Issue 39 item 12: a plain client pointed at a TLS redis port is told it may be one.
Redis resets a plain client whose request its TLS layer left unread, and the native engine
and the redis-py strategies said only "Connection reset by peer" (the engine hinted at a
close, and the multiplexed strategy at a drop, already; a reset was not)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import collect, finished
from workbench_redis.server import start_redis

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess


@pytest.fixture(scope="module")
def tls_redis() -> Iterator[ServerProcess]:
    with start_redis(tls=True) as server:
        yield server


@pytest.mark.parametrize("strategy", ["native", "sync-per-client", "async-pool"])
async def test_a_plain_client_on_a_tls_redis_port_gets_the_hint(
    tls_redis: ServerProcess, tmp_path: Path, strategy: str
) -> None:
    plain = tls_redis.target_options["url"].replace("rediss://", "redis://")
    overrides = [
        "target.system=redis",
        f"target.options.url={plain}",
        f"strategy.name={strategy}",
        "load.duration=0.3",
        "load.concurrency=1",
        "load.workers=1",
    ]
    (step,) = finished(await collect(overrides, Store(tmp_path / "runs.sqlite")))
    assert step.status == "failed"
    said = step.reason + " ".join(step.stats.first_errors.values())
    assert "is it a TLS port?" in said and "rediss://" in said, said
