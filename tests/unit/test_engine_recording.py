"""The engine's one recording path, its interval frames and the interval grid."""

from __future__ import annotations

import asyncio
import threading

import pytest
from workbench_embedded import DirectClient, ThreadClient
from workbench_embedded.cache import LockedCache, LruCache

from workbench.engine import frames
from workbench.engine.accounting import KIND_NAMES, Buffers, record, to_stats
from workbench.engine.client_plans import ClientPlan
from workbench.engine.clients import LoadState, PubSubPlan, async_client, thread_client
from workbench.results.metrics import STATS_KEYS, Stats, fold, new_histogram
from workbench.sdk.ops import CACHE_ASIDE, DELETE, GET, PUBLISH, SET
from workbench.workload.forms import parse_key_distribution, parse_ttl, parse_value_size
from workbench.workload.generator import OpStream, ValueBuffer

MIX = {GET: 3.0, SET: 1.0, DELETE: 1.0, CACHE_ASIDE: 1.0}
OPS = 3000


def _stream(mix: dict[int, float]) -> OpStream:
    return OpStream(
        mix=mix,
        key_dist=parse_key_distribution("uniform"),
        keys=50,
        key_offset=0,
        key_prefix="wb:",
        key_length=12,
        value_size=parse_value_size("fixed(40)"),
        ttl=parse_ttl("none"),
        seed=3,
        client_id=0,
    )


def _state() -> LoadState:
    state = LoadState(remaining=OPS, budget_stops=True, measuring=True)
    state.begin(0)
    return state


async def _async_buffers(mix: dict[int, float]) -> Buffers:
    state = _state()
    state.loop = asyncio.get_running_loop()
    client = DirectClient(LruCache(1000, 1 << 20))
    plan = ClientPlan(0, mix)
    await async_client(
        client, _stream(mix), ValueBuffer(40, 1), state, plan, PubSubPlan([b"c"], 0, 64)
    )
    return state.buf


def _thread_buffers(client: object, mix: dict[int, float]) -> Buffers:
    state = _state()
    worker = threading.Thread(
        target=thread_client,
        args=(client, _stream(mix), ValueBuffer(40, 1), state, ClientPlan(0, mix)),
    )
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive()
    return state.buf


def _counts(buf: Buffers) -> tuple[object, ...]:
    lat = {KIND_NAMES[c]: len(v) for c, v in buf.lat.items() if v}
    return (lat, buf.hits, buf.misses, buf.bytes_in, buf.bytes_out, buf.hot_gets, buf.hot_hits)


async def test_async_and_thread_loops_record_the_same_things() -> None:
    on_loop = await _async_buffers(MIX)
    on_thread = _thread_buffers(ThreadClient(LockedCache(LruCache(1000, 1 << 20))), MIX)
    assert _counts(on_loop) == _counts(on_thread)
    assert on_loop.hits + on_loop.misses == len(on_loop.lat[GET]) > OPS / 2


class _Calls:
    """A blocking client that only notes what it is asked to do."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def get(self, key: bytes) -> None:
        self.calls.append("get")

    def set(self, key: bytes, value: object, ttl: float | None) -> None:
        self.calls.append("set")

    def delete(self, key: bytes) -> bool:
        self.calls.append("delete")
        return True


def test_a_blocking_loop_never_turns_an_op_it_does_not_know_into_a_delete() -> None:
    client = _Calls()
    buf = _thread_buffers(client, {PUBLISH: 1.0})
    assert client.calls == []
    assert buf.errors == {"UnsupportedOp": OPS}


def test_buffers_keep_one_list_per_op_kind_and_none_unused() -> None:
    assert set(Buffers().lat) == set(KIND_NAMES)
    buf = Buffers()
    record(buf, CACHE_ASIDE, 500, None, True, 0, 0)
    record(buf, SET, 700, None, False, 40, 0)
    record(buf, PUBLISH, 900, None, False, 64, 3)
    assert list(buf.lat[GET]) == [500] and list(buf.lat[SET]) == [700]
    assert list(buf.lat[PUBLISH]) == [900]
    assert (buf.misses, buf.hot_gets, buf.bytes_out, buf.published, buf.expected) == (
        1,
        1,
        104,
        1,
        3,
    )


async def test_an_interval_frame_carries_exactly_the_stats_keys() -> None:
    buf = Buffers()
    record(buf, GET, 1000, b"x", False, 0, 0)
    buf.send_lag.append(250)
    stats = await to_stats(buf, 1.0)
    frame = frames.interval(0, 1.0, stats)
    assert tuple(frame["stats"]) == STATS_KEYS
    assert {"cpu", "offered", "send_lag"} <= set(STATS_KEYS)
    back = Stats.from_dict(frame["stats"])
    assert back.send_lag is not None and back.send_lag.get_total_count() == 1


def test_a_negative_latency_is_refused_not_clamped() -> None:
    with pytest.raises(ValueError, match="negative latency"):
        fold(new_histogram(), [10, -5])


@pytest.mark.parametrize(
    ("duration", "interval", "ends"),
    [
        (2.0, 1.0, [1.0, 2.0]),
        (5.04, 1.0, [1.0, 2.0, 3.0, 4.0, 5.04]),
        (2.3, 1.0, [1.0, 2.3]),
        (2.5, 1.0, [1.0, 2.0, 2.5]),
        (0.4, 1.0, [0.4]),
        (1.0, 0.25, [0.25, 0.5, 0.75, 1.0]),
    ],
)
def test_interval_ends_follow_the_fold_rule(
    duration: float, interval: float, ends: list[float]
) -> None:
    assert list(frames.interval_ends(duration, interval)) == pytest.approx(ends)
    assert frames.interval_count(duration, interval) == len(ends)


def test_open_loop_offers_each_client_its_share_of_the_rate() -> None:
    plan = ClientPlan(1, {GET: 1.0}, period_ns=1000, offset_ns=250)
    assert plan.offered(0, 0, 10_000) == 10
    assert plan.offered(0, 250, 251) == 1
    assert plan.offered(0, 251, 1250) == 0
    assert plan.offered(0, 251, 1251) == 1
    assert ClientPlan(0, {GET: 1.0}).offered(0, 0, 10_000) == 0
