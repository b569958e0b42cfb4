"""Distributions give the configured shares; the same seed gives the same sequence."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from workbench.sdk.errors import SpecError
from workbench.sdk.ops import GET, MIX_CODES, NEEDS, OPERATIONS, SET
from workbench.workload.forms import parse_key_distribution, parse_mix, parse_ttl, parse_value_size
from workbench.workload.generator import OpStream, ValueBuffer, size_chooser, ttl_chooser
from workbench.workload.keys import format_key, key_chooser, owned_chooser, owned_keys

DRAWS = 200_000


def draws(text: str, n: int = 10_000, count: int = DRAWS) -> list[int]:
    choose = key_chooser(parse_key_distribution(text), n, random.Random(7))
    return [choose() for _ in range(count)]


def test_hotcold_puts_the_configured_share_of_accesses_on_the_hot_keys() -> None:
    keys = draws("hotcold(0.8,0.2)")
    hot = sum(1 for k in keys if k < 2_000) / len(keys)
    assert hot == pytest.approx(0.8, abs=0.005)
    assert min(keys) == 0 and max(keys) == 9_999


def test_hotcold_other_shares() -> None:
    keys = draws("hotcold(0.95,0.05)")
    assert sum(1 for k in keys if k < 500) / len(keys) == pytest.approx(0.95, abs=0.005)


def test_zipf_matches_the_theoretical_shares() -> None:
    n, s = 1_000, 1.0
    keys = draws(f"zipf({s})", n)
    harmonic = sum(1 / i**s for i in range(1, n + 1))
    counts = Counter(keys)
    assert counts[0] / DRAWS == pytest.approx(1 / harmonic, abs=0.005)
    top20 = sum(1 / i**s for i in range(1, 201)) / harmonic
    assert sum(c for k, c in counts.items() if k < 200) / DRAWS == pytest.approx(top20, abs=0.005)


def test_uniform_spreads_evenly() -> None:
    keys = draws("uniform", 10)
    for c in Counter(keys).values():
        assert c / DRAWS == pytest.approx(0.1, abs=0.005)


def test_gaussian_centres_on_its_mean() -> None:
    keys = draws("gaussian(0.5,0.1)")
    mean = sum(keys) / len(keys)
    assert mean == pytest.approx(5_000, rel=0.01)
    within_one_sd = sum(1 for k in keys if 4_000 <= k < 6_000) / len(keys)
    assert within_one_sd == pytest.approx(0.6827, abs=0.01)


def test_sequential_walks_the_key_space() -> None:
    choose = key_chooser(parse_key_distribution("sequential"), 5, random.Random(1))
    assert [choose() for _ in range(7)] == [0, 1, 2, 3, 4, 0, 1]


def test_value_sizes() -> None:
    rng = random.Random(3)
    fixed = size_chooser(parse_value_size("fixed(4KiB)"), rng)
    assert fixed() == 4096
    uni = size_chooser(parse_value_size("uniform(8,3000)"), rng)
    sizes = [uni() for _ in range(10_000)]
    assert min(sizes) >= 8 and max(sizes) <= 3000
    weighted = size_chooser(parse_value_size("weighted(100:3,1MB:1)"), rng)
    counts = Counter(weighted() for _ in range(40_000))
    assert counts[100] / 40_000 == pytest.approx(0.75, abs=0.01)
    assert set(counts) == {100, 1024 * 1024}


def test_ttls() -> None:
    rng = random.Random(3)
    assert ttl_chooser(parse_ttl("none"), rng)() is None
    assert ttl_chooser(parse_ttl("fixed(2s)"), rng)() == 2.0
    assert ttl_chooser(parse_ttl("fixed(500ms)"), rng)() == 0.5
    r = ttl_chooser(parse_ttl("range(1,5)"), rng)
    assert all(1 <= r() <= 5 for _ in range(1000))


def stream(seed: int, client: int) -> OpStream:
    return OpStream(
        mix=parse_mix({"get": 0.7, "set": 0.3}),
        key_dist=parse_key_distribution("zipf(0.9)"),
        keys=1000,
        key_offset=0,
        key_prefix="k:",
        key_length=8,
        value_size=parse_value_size("uniform(1,100)"),
        ttl=parse_ttl("range(1,2)"),
        seed=seed,
        client_id=client,
    )


def test_same_seed_same_sequence_and_clients_differ() -> None:
    a = [stream(42, 3).next() for _ in range(1)]
    s1, s2, other = stream(42, 3), stream(42, 3), stream(42, 4)
    seq1 = [s1.next() for _ in range(500)]
    assert seq1 == [s2.next() for _ in range(500)]
    assert seq1 != [other.next() for _ in range(500)]
    assert a[0] == seq1[0]
    mix = Counter(op[0] for op in seq1)
    assert set(mix) == {GET, SET}


def test_keys_have_prefix_and_length() -> None:
    assert format_key("wb:", 42, 12) == b"wb:000000042"
    _code, index, key, _size, _ttl = stream(1, 0).next()
    assert key.startswith(b"k:") and len(key) == 8 and int(key[2:]) == index


def test_values_are_slices_of_one_buffer() -> None:
    buf = ValueBuffer(1000, seed=1)
    v = buf.value(5, 100)
    assert isinstance(v, memoryview) and len(v) == 100
    assert bytes(v) == bytes(buf.value(5, 100))


def test_owned_keys_cover_the_key_space_once() -> None:
    parts = [list(owned_keys(10, w, 3)) for w in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert list(owned_keys(5, 0, 1)) == [0, 1, 2, 3, 4]


def test_an_owned_chooser_draws_the_global_popularity_on_its_keys() -> None:
    n, draws = 1000, 40_000
    rng = random.Random(3)
    pick = key_chooser(parse_key_distribution("zipf(0.99)"), n, rng)
    mine = owned_chooser(pick, n, 1, 2)
    counts = Counter(mine() for _ in range(draws))
    assert all(k % 2 == 1 for k in counts)
    # Conditioned on odd keys: index 1 against 3 weighs (4/2)^0.99, about 1.99, as globally.
    assert 1.8 < counts[1] / counts[3] < 2.2
    # Nearly no mass on this worker's keys: the bound ends the draw on an owned key anyway.
    narrow = owned_chooser(lambda: 4, 10, 1, 2)
    assert narrow() == 5


@pytest.mark.parametrize(
    ("parse", "text", "fragment"),
    [
        (parse_key_distribution, "zipfian", "expected one of uniform, zipf, gaussian, sequential"),
        (parse_key_distribution, "zipf(-1)", "0 < s <= 20"),
        (parse_key_distribution, "hotcold(1.5,0.2)", "between 0 and 1"),
        (parse_value_size, "uniform(10,5)", "MIN <= MAX"),
        (parse_value_size, "fixed(12 parsecs)", "expected a size"),
        (parse_ttl, "forever", "expected one of none, fixed, range"),
    ],
)
def test_bad_distributions_say_what_was_expected(parse, text, fragment) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError) as err:
        parse(text)
    assert fragment in err.value.message
    assert "got" in err.value.message or "expected" in err.value.message


def test_bad_mix() -> None:
    with pytest.raises(SpecError, match="expected one of get, set"):
        parse_mix({"fetch": 1.0})
    with pytest.raises(SpecError, match="positive weight"):
        parse_mix({"get": 0.0})


def test_every_mix_operation_says_what_it_needs_of_a_strategy() -> None:
    assert NEEDS.keys() == MIX_CODES.keys()
    for op, needs in NEEDS.items():
        assert needs and needs <= set(OPERATIONS), op
