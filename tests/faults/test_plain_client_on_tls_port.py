"""Issue 39 item 12: the native engine's plain client pointed at a TLS redis port is told
it may be one. Redis resets a plain client whose request it left unread, and the engine
said only "Connection reset by peer" (a close was already hinted; a reset was not)."""

from __future__ import annotations

from pathlib import Path

from support import collect, finished
from workbench_redis.server import start_redis

from workbench.results.store import Store


async def test_a_plain_native_client_on_a_tls_redis_port_gets_the_hint(tmp_path: Path) -> None:
    with start_redis(tls=True) as server:
        plain = server.target_options["url"].replace("rediss://", "redis://")
        overrides = [
            "target.system=redis",
            f"target.options.url={plain}",
            "strategy.name=native",
            "load.duration=0.3",
            "load.concurrency=1",
            "load.workers=1",
        ]
        (step,) = finished(await collect(overrides, Store(tmp_path / "runs.sqlite")))
    assert step.status == "failed"
    said = step.reason + " ".join(step.stats.first_errors.values())
    assert "is it a TLS port? use rediss://" in said, said
