"""The Python engine's trace feed shares a worker's requests as the native engine does: a
free client takes the trace's next request, and a key's later requests wait for the client
that holds it (each key's requests in the trace's order), without a real server."""

from __future__ import annotations

import zlib
from pathlib import Path

from workbench.engine.trace_feed import TraceEnd, TraceFeed
from workbench.engine.trace_keys import TraceKeys
from workbench.sdk.adapter import KeyRule
from workbench.spec.steps import load_spec


def _feed(tmp_path: Path, keys: str, client_ids: list[int], all_clients: int) -> TraceFeed:
    trace = tmp_path / "t.csv"
    # Each request's size is its position in the trace (plus 10), to tell them apart.
    rows = "".join(f"{i},{k},{10 + i}\n" for i, k in enumerate(keys))
    trace.write_text("time,key,size\n" + rows)
    spec = load_spec(
        None,
        [
            "target.system=redis",
            'strategy.name="multiplexed"',
            f'workload.trace.path="{trace}"',
            'workload.key_prefix="wb:"',
        ],
    )
    keys = TraceKeys.of(KeyRule())
    return TraceFeed(
        spec, client_ids, all_clients, frozenset({"get", "set"}), keys, lambda _: None, lambda: None
    )


def _key(stream_next: tuple[int, int, bytes, int, float | None]) -> str:
    return stream_next[2].decode()[3:]


def test_a_free_client_takes_the_next_request_and_a_held_keys_requests_wait_for_its_holder(
    tmp_path: Path,
) -> None:
    feed = _feed(tmp_path, "aabcab", [0, 1], 2)
    c0, c1 = feed.stream(0), feed.stream(1)
    assert _key(c0.next()) == "a"  # c0 holds a
    # c1 is free: the next a goes to c0's queue (a is held), and c1 takes b.
    assert _key(c1.next()) == "b"
    assert feed.queues[0] and feed.queues[0][0].key == "a"
    # c0's first a ended: its own queue comes first, whatever the trace holds after.
    assert _key(c0.next()) == "a"
    # c1's b ended, so b is free; c1 reads on and takes c.
    assert _key(c1.next()) == "c"
    assert feed.held == {"a": [0, 1], "c": [1, 1]}
    # c0's second a ended and its queue is empty: a is free, and c0 reads on (a, then b).
    assert _key(c0.next()) == "a"
    assert _key(c0.next()) == "b"
    assert feed.held == {"b": [0, 1], "c": [1, 1]}
    for c in (c0, c1):
        try:
            c.next()
            raise AssertionError("the trace has ended")
        except TraceEnd:
            pass
    assert feed.held == {} and feed.done.is_set()


def test_every_request_is_taken_once_and_each_keys_in_order_whatever_the_clients_pace(
    tmp_path: Path,
) -> None:
    keys = "".join("abcdefgh"[(i * i + i // 3) % 8] for i in range(400))
    feed = _feed(tmp_path, keys, [0, 1, 2], 3)
    streams = [feed.stream(c) for c in range(3)]
    taken: list[int] = []  # trace positions, in the order taken
    in_flight: dict[int, str] = {}  # per client, the key of its request (until it asks again)
    workers: set[int] = set()
    live = [0, 1, 2]
    turn = 0
    while live:
        c = live[turn % len(live)]
        turn += 1
        in_flight.pop(c, None)
        # The clients take turns unevenly (client 2 asks twice as often).
        for _ in range(2 if c == 2 else 1):
            in_flight.pop(c, None)
            try:
                _, index, key, size, _ = streams[c].next()
            except TraceEnd:
                live.remove(c)
                break
            k = key.decode()[3:]
            assert k not in in_flight.values(), (c, k, in_flight)  # never two at once
            in_flight[c] = k
            taken.append(size - 10)
            workers.add(c)
            assert index == zlib.crc32(key)
    assert sorted(taken) == list(range(len(keys)))  # every request, once
    for k in set(keys):  # each key's requests in the trace's order
        mine = [i for i in taken if keys[i] == k]
        assert mine == sorted(mine), k
    assert workers == {0, 1, 2}  # every client worked


def test_a_worker_keeps_only_the_keys_of_its_own_clients(tmp_path: Path) -> None:
    keys = "abcdefghij" * 3
    feed = _feed(tmp_path, keys, [1], 2)  # this worker holds client 1 of 2
    mine = [k for k in keys if zlib.crc32(k.encode()) % 2 == 1]
    assert mine and len(mine) < len(keys)
    stream, got = feed.stream(1), []
    while True:
        try:
            got.append(_key(stream.next()))
        except TraceEnd:
            break
    assert got == mine
