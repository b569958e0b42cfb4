"""Native publish/subscribe against a real redis-server: every expected delivery arrives
with 4 channels x 2 subscribers over two workers (in the Python engine too, and in both
the step's deliveries are the sum of its intervals'), and a subscriber connection killed
mid-run counts what it missed as lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis
from support import collect, finished

from workbench.results.events import Interval
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

PUBSUB = [
    "workload.mix={publish=1}",
    "workload.pubsub.channels=4",
    "workload.pubsub.subscribers_per_channel=2",
    "workload.pubsub.message_size=256",
]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite3")


def _target(server: ServerProcess) -> list[str]:
    return ["target.system=redis", f"target.options.url={server.target_options['url']}"]


@pytest.mark.redis
@pytest.mark.parametrize("strategy", ["native", "multiplexed"])
async def test_every_expected_delivery_arrives_with_4_channels_x_2_subscribers(
    store: Store, redis_server: ServerProcess, strategy: str
) -> None:
    # The Python engine's multiplexed strategy too: both count deliveries alike.
    events = await collect(
        [
            *_target(redis_server),
            f"strategy.name={strategy}",
            *PUBSUB,
            "load.ops=4000",
            "load.workers=2",
            "load.concurrency=4",
        ],
        store,
    )
    (done,) = finished(events)
    t = done.stats
    assert done.status == "completed"
    assert t.published == 4000 and t.ops == 4000
    assert t.expected_deliveries == 2 * 4000
    assert t.delivered == t.expected_deliveries
    assert t.error_count == 0
    assert t.hist["deliver"].get_total_count() == t.delivered
    assert t.hist["publish"].get_total_count() == 4000
    # Each message moves its 256 bytes out once and in once per subscriber.
    assert t.bytes_out == 4000 * 256 and t.bytes_in == 2 * 4000 * 256
    # The subscribers are dealt among the workers: one worker's subscribers still receive
    # the other's publishes after its own budget is spent. Those deliveries land in its
    # last interval, so the step's deliveries are the sum of its intervals'.
    intervals = [e for e in events if isinstance(e, Interval)]
    assert sum(i.stats.delivered for i in intervals) == t.delivered


@pytest.mark.redis
async def test_a_subscriber_killed_mid_run_counts_its_losses(
    store: Store, redis_server: ServerProcess
) -> None:
    port = int(redis_server.target_options["url"].rsplit(":", 1)[1].split("/")[0])
    admin = redis.Redis(host="127.0.0.1", port=port)
    killed: list[str] = []

    async def kill_one_subscriber() -> None:
        # Wait until the step's 8 subscribers are there, then kill one of them by its id.
        for _ in range(200):  # bounded: 10 s
            subs = [c for c in admin.client_list() if c.get("cmd") == "subscribe"]
            if len(subs) == 8:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.6)
        victim = subs[0]
        admin.client_kill_filter(_id=victim["id"])
        killed.append(victim["addr"])

    chaos = asyncio.create_task(kill_one_subscriber())
    try:
        events = await collect(
            [
                *_target(redis_server),
                "strategy.name=native",
                *PUBSUB,
                "load.duration=2.0",
                "load.workers=1",
                "load.concurrency=2",
            ],
            store,
        )
        await chaos
    finally:
        chaos.cancel()
        admin.close()
    assert killed
    (done,) = finished(events)
    t = done.stats
    assert done.status == "completed"
    assert t.expected_deliveries == 2 * t.published > 0
    lost = t.expected_deliveries - t.delivered
    # The killed subscriber missed its channel's messages after the kill: about a quarter
    # of the publishes of the last ~1.4 s, and only those (the other seven got all).
    assert 0 < lost < t.published / 2
    # Lost, not failed: as in the Python engine, a dropped subscriber is no error.
    assert t.error_count == 0
    # Every delivery is in an interval: the late ones land in the last.
    intervals = [e for e in events if isinstance(e, Interval)]
    assert sum(i.stats.delivered for i in intervals) == t.delivered
