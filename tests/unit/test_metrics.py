"""Recording, merging and encoding histograms; summaries agree with the histograms."""

from __future__ import annotations

import ctypes
import gc
import random
import tracemalloc

import pytest

from workbench.results.metrics import (
    DOC_TICKS,
    Recorded,
    Stats,
    decode,
    encode,
    fold,
    format_us,
    merged,
    new_histogram,
    percentile_curve,
    quantise,
    summarise,
)
from workbench.results.step_text import redirects_text


def latencies(n: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [int(rng.lognormvariate(11, 1.2)) + 1 for _ in range(n)]


def test_a_summary_of_wide_totals_works_in_machine_words_not_int_objects() -> None:
    """A long run's totals have some 15,000 non-empty buckets and are summarised every
    interval. Holding them as lists of int objects (about 100 bytes a bucket) left the
    coordinator's small-object arenas at a high-water mark that crept up through the first
    minutes of every soak run; arrays of machine words cost about 24 bytes a bucket."""
    rng = random.Random(7)
    hist = new_histogram()
    fold(hist, [int(rng.lognormvariate(13, 2.0)) + 1 for _ in range(300_000)])
    stats = Stats(duration=1.0, hist={"get": hist})
    buckets = len(Recorded(hist).indices)
    assert buckets > 10_000, "a histogram as wide as a long run's totals"
    one_histogram = ctypes.sizeof(hist.counts)  # summarise merges the op kinds into one

    def peak(work: object) -> int:
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            work()  # type: ignore[operator]
            return tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()

    assert peak(lambda: Recorded(hist)) < 40 * buckets
    assert peak(lambda: summarise(stats)) < one_histogram + 64 * buckets


def test_fold_keeps_what_recording_one_by_one_keeps() -> None:
    values = latencies(50_000)
    folded, direct = new_histogram(), new_histogram()
    fold(folded, values)
    for v in values:
        direct.record_value(v)
    assert folded.get_total_count() == direct.get_total_count() == 50_000
    for p in (*DOC_TICKS, 99.9, 99.99, 100.0):
        assert folded.get_value_at_percentile(p) == direct.get_value_at_percentile(p)
    assert folded.get_max_value() == direct.get_max_value()


@pytest.mark.parametrize("extra", [[], [7_200_000_000_000]], ids=["in range", "one beyond"])
def test_fold_fills_the_same_buckets_as_the_library(extra: list[int]) -> None:
    """fold computes bucket indexes itself: every count, the min, the max and the encoding
    must be what record_value gives, value by value (small, spread and repeated values)."""
    values = [*latencies(20_000, seed=3), *range(1, 3000), *[250_000] * 500, *extra]
    folded, direct = new_histogram(), new_histogram()
    for i in range(0, len(values), 64):
        fold(folded, values[i : i + 64])
    for v in values:
        direct.record_value(v)
    assert list(folded.counts) == list(direct.counts)
    assert folded.get_total_count() == direct.get_total_count()
    assert folded.get_min_value() == direct.get_min_value() == 1
    assert folded.get_max_value() == direct.get_max_value()
    assert encode(folded) == encode(direct)


def test_fold_refuses_a_negative_latency() -> None:
    with pytest.raises(ValueError, match="negative latency"):
        fold(new_histogram(), [5, -1])


def test_quantise_collapses_to_few_buckets() -> None:
    values = latencies(100_000)
    assert len(quantise(values)) < len(set(values)) / 3


def test_encoding_round_trip() -> None:
    h = new_histogram()
    fold(h, latencies(10_000))
    back = decode(encode(h))
    assert back.get_total_count() == h.get_total_count()
    assert back.get_value_at_percentile(99.0) == h.get_value_at_percentile(99.0)


def test_encoding_gives_hdrhistograms_own_text() -> None:
    rng = random.Random(3)
    for n in (0, 1, 7, 5_000):
        h = new_histogram()
        fold(h, [int(rng.lognormvariate(12, 2.5)) + 1 for _ in range(n)])
        assert encode(h) == h.encode().decode("ascii")
        back = decode(encode(h))  # a decoded histogram has the wire's payload header
        assert encode(back) == back.encode().decode("ascii")


def test_encoding_makes_no_ctypes_type_per_histogram() -> None:
    """hdrh's own encode makes a ctypes array type per distinct highest value (its buffer
    is `c_byte * n`): cycles that wait for a full garbage collection, and a soak run's
    coordinator grew by a megabyte in 20 minutes of them. Counted with the collector off."""

    def live_array_types() -> int:
        return sum(isinstance(o, type) and issubclass(o, ctypes.Array) for o in gc.get_objects())

    hists = []
    for k in range(200):  # 200 histograms, each with its own highest value
        h = new_histogram()
        h.record_value(1_000 + 997 * k * k)
        hists.append(h)
    gc.collect()
    gc.disable()
    try:
        before = live_array_types()
        for h in hists:
            encode(h)
        made = live_array_types() - before
    finally:
        gc.enable()
    assert made == 0


def stats(seed: int, duration: float = 1.0) -> Stats:
    h = new_histogram()
    fold(h, latencies(5_000, seed))
    return Stats(
        duration=duration,
        hist={"get": h},
        hits=4_000,
        misses=1_000,
        errors={"timeout": 2},
        first_errors={"timeout": "TimeoutError: slow"},
        bytes_in=400_000,
        hot_gets=3_000,
        hot_hits=2_900,
    )


def test_merge_of_workers_and_of_intervals() -> None:
    a, b = stats(1), stats(2)
    together = merged([a, b], concurrent=True)
    assert together.duration == 1.0
    assert together.hist["get"].get_total_count() == 10_000
    assert together.hits == 8_000 and together.errors == {"timeout": 4}
    assert together.hot_hits == 5_800
    in_a_row = merged([a, b], concurrent=False)
    assert in_a_row.duration == 2.0


def test_stats_dict_round_trip() -> None:
    s = stats(3)
    back = Stats.from_dict(s.to_dict())
    assert back.to_dict() == s.to_dict()


def test_summary_figures_come_from_the_histogram() -> None:
    s = stats(4, duration=2.0)
    summary = summarise(s)
    h = s.hist["get"]
    assert summary.ops == 5_000 and summary.ops_per_s == pytest.approx(2_500)
    assert summary.p(50.0) == h.get_value_at_percentile(50.0) / 1000
    assert summary.p(99.21875) == h.get_value_at_percentile(99.21875) / 1000
    assert summary.max_us == h.get_max_value() / 1000
    assert summary.hit_rate == pytest.approx(0.8)
    assert summary.errors == 2
    assert summary.mib_per_s == pytest.approx(400_000 / 2 / 1048576)


def test_percentile_curve_is_monotonic_and_reaches_the_max() -> None:
    h = new_histogram()
    fold(h, latencies(20_000))
    curve = percentile_curve(h)
    ps = [p for p, _ in curve]
    vs = [v for _, v in curve]
    assert ps == sorted(ps) and vs == sorted(vs)
    assert curve[-1] == (100.0, h.get_max_value() / 1000)


def test_format_us() -> None:
    assert format_us(0.5) == "500ns"
    assert format_us(12.34) == "12.3µs"
    assert format_us(4560) == "4.56ms"
    assert format_us(1_200_000) == "1.20s"


def test_recorded_buckets_answer_exactly_as_hdrhistogram() -> None:
    rng = random.Random(7)
    for shape in range(4):
        h = new_histogram()
        for _ in range(5000):
            v = int(rng.lognormvariate(8 + shape, 1.5)) + 1
            h.record_value(v)
        if shape == 3:
            h.record_value(1)  # the lowest bucket too
        for hist in (h, decode(encode(h))):
            r = Recorded(hist)
            ticks = [0.0, 1.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.999, 100.0]
            got = r.values_at(ticks)
            for t in ticks:
                assert got[t] == hist.get_value_at_percentile(t), (shape, t)
            mean, sd = r.mean_and_stddev()
            assert mean == pytest.approx(hist.get_mean_value(), rel=1e-12)
            assert sd == pytest.approx(hist.get_stddev(), rel=1e-9)


def test_cluster_redirects_are_said_as_memtier_says_them_and_only_when_there_were_some() -> None:
    assert redirects_text(Stats(duration=2.0)) == ""
    assert redirects_text(Stats(duration=2.0, moved=3, ask=140)) == (
        "redirects: MOVED 3 (1.5/s), ASK 140 (70.0/s) (each op sent again and counted once)"
    )
    total = Stats()
    total.merge(Stats(duration=1.0, moved=2), concurrent=False)
    total.merge(Stats(duration=1.0, ask=5), concurrent=False)
    assert (total.moved, total.ask) == (2, 5)
    assert Stats.from_dict(total.to_dict()).ask == 5
