"""The statistics of `workbench compare`: resampling, figures, Student's t, and the honesty
of the intervals on synthetic data whose truth is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.stats import bootstrap, estimate, student
from workbench.stats.change import IMPROVED, NO_CHANGE, REGRESSED, Side, compare


def test_block_weights_draw_n_intervals_in_wrapping_blocks() -> None:
    rng = np.random.default_rng(1)
    w = bootstrap.block_weights(rng, 27, 500)
    assert w.shape == (500, 27)
    assert np.all(w.sum(axis=1) == 27)
    assert bootstrap.block_length(27) == 3 and bootstrap.block_length(1) == 1


def test_weights_are_the_same_for_the_same_seed_and_differ_for_another() -> None:
    a = bootstrap.weights([10, 10, 10], over_repeats=False, seed=5)
    b = bootstrap.weights([10, 10, 10], over_repeats=False, seed=5)
    c = bootstrap.weights([10, 10, 10], over_repeats=False, seed=6)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_over_repeats_draws_repeats_then_their_intervals() -> None:
    lengths = [4, 6, 5]
    w = bootstrap.weights(lengths, over_repeats=True, replicates=300)
    parts = np.split(w, [4, 10], axis=1)
    # Each repeat's weights add up to its intervals times how often it was drawn.
    copies = np.stack([p.sum(axis=1) / n for p, n in zip(parts, lengths, strict=True)], axis=1)
    assert np.all(copies == np.round(copies)) and np.all(copies.sum(axis=1) == 3)
    assert np.any(copies == 0) and np.any(copies >= 2)  # some left out, some drawn twice
    drawn_once = parts[0][copies[:, 0] == 1]
    assert not np.all(drawn_once == 1)  # inside a drawn repeat, blocks of its intervals
    assert bootstrap.units([4, 6, 5], over_repeats=True) == 3
    assert bootstrap.units([8, 27], over_repeats=False) == 4 + 9


def test_over_intervals_keeps_every_repeat_with_its_own_count() -> None:
    w = bootstrap.weights([4, 6], over_repeats=False, replicates=300)
    assert np.all(w[:, :4].sum(axis=1) == 4) and np.all(w[:, 4:].sum(axis=1) == 6)


def test_percentile_of_summed_histograms_reads_only_the_span_it_needs() -> None:
    """The shortcut (only the buckets between the parts' own percentiles) gives exactly
    what summing every bucket gives."""
    rng = np.random.default_rng(3)
    counts = rng.poisson(rng.uniform(0, 30, size=(12, 400)) * (rng.random((12, 400)) < 0.3))
    counts[4] = 0  # an interval that recorded nothing
    running = np.cumsum(counts.astype(float), axis=1)
    values = np.sort(rng.uniform(1, 1000, 400))
    w = bootstrap.weights([6, 6], over_repeats=False, replicates=400)
    summed = np.cumsum(w @ counts, axis=1)
    for q in (0.1, 50.0, 90.0, 99.0, 99.9, 100.0):
        target = np.maximum(np.floor(q / 100 * summed[:, -1] + 0.5), 1)
        full = values[np.minimum((summed < target[:, None]).sum(axis=1), 399)]
        assert np.array_equal(estimate.percentile(w, running, values, q), full), q


def test_ratio_is_of_weighted_sums_and_nan_of_nothing() -> None:
    w = np.array([[1.0, 1.0], [2.0, 0.0], [0.0, 0.0]])
    got = estimate.ratio(w, np.array([10.0, 30.0]), np.array([1.0, 2.0]))
    assert got[0] == pytest.approx(40 / 3) and got[1] == 10.0 and math.isnan(got[2])
    assert estimate.tail_count_needed(99.9) == 10_000 and estimate.tail_count_needed(50) == 20


@pytest.mark.parametrize(
    ("df", "t975"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (math.inf, 1.96)]
)
def test_student_quantiles_are_the_tables(df: float, t975: float) -> None:
    assert student.quantile(0.975, df) == pytest.approx(t975, abs=1e-4)
    assert student.quantile(0.025, df) == pytest.approx(-t975, abs=1e-4)
    assert student.cdf(t975, df) == pytest.approx(0.975, abs=1e-5)


def side(values: list[float], rng: np.random.Generator | None = None) -> Side:
    """A side of repeats with the given figures: replicates from resampling them."""
    data = np.array(values)
    rng = rng or np.random.default_rng(0)
    picks = rng.integers(0, len(data), size=(2000, len(data)))
    return Side(float(data.mean()), data[picks].mean(axis=1), len(data))


def test_the_same_figures_are_no_change() -> None:
    same = side([100.0, 102.0, 98.0])
    change = compare(same, same, points=False, higher_better=True, noise=0.02)
    assert change is not None and change.verdict == NO_CHANGE and change.mid == 0
    assert change.lo < 0 < change.hi and change.p == pytest.approx(1.0)


def test_a_clear_shift_is_found_in_the_direction_that_matters() -> None:
    base, new = side([100.0, 101.0, 99.0]), side([130.0, 131.0, 129.0])
    up = compare(base, new, points=False, higher_better=True, noise=0.02)
    assert up is not None and up.verdict == IMPROVED and up.mid == pytest.approx(0.30)
    assert up.lo > 0.02 and up.significant
    latency = compare(base, new, points=False, higher_better=False, noise=0.02)
    assert latency is not None and latency.verdict == REGRESSED
    assert latency.beyond(0.05, higher_better=False) and not latency.beyond(
        0.5, higher_better=False
    )


def test_shares_change_in_points_and_errors_from_none_regress() -> None:
    none = Side(0.0, np.zeros(2000), 3)
    some = side([0.010, 0.012, 0.011])
    change = compare(none, some, points=True, higher_better=False, noise=0.02)
    assert change is not None and change.points and change.mid == pytest.approx(0.011)
    assert change.verdict == REGRESSED  # 2% of a share of 0 is 0: any significant rise
    assert compare(none, none, points=True, higher_better=False, noise=0.02).verdict == NO_CHANGE


def test_a_ratio_of_nothing_is_not_compared() -> None:
    assert (
        compare(side([0.0] * 3), side([5.0] * 3), points=False, higher_better=True, noise=0.02)
        is None
    )


def simulated(rng: np.random.Generator, shift: float, sigma: float) -> tuple[Side, Side]:
    """Two sides of 3 repeats of 10 intervals each: the repeats' figures vary by `sigma`
    (a machine that is not the same from one run to the next), the intervals' a little
    more; the new side's truth is `shift` above the base's."""
    sides = []
    for truth in (1000.0, 1000.0 * (1 + shift)):
        level = truth * np.exp(rng.normal(0, sigma, size=3))
        ops = np.repeat(level, 10) * np.exp(rng.normal(0, sigma / 2, size=30))
        duration = np.ones(30)
        w = bootstrap.weights([10] * 3, over_repeats=True, seed=int(rng.integers(1 << 30)))
        sides.append(Side(ops.sum() / 30, estimate.ratio(w, ops, duration), 3))
    return sides[0], sides[1]


def test_same_against_same_says_no_change_nineteen_times_in_twenty() -> None:
    """The truth is no change: the 95% interval must hold 0 in about 95 of 100 pairs (and
    no change be said, with the 2% threshold, in more)."""
    rng = np.random.default_rng(36)
    pairs = [simulated(rng, 0.0, 0.05) for _ in range(200)]
    changes = [compare(a, b, points=False, higher_better=True, noise=0.0) for a, b in pairs]
    holding = sum(c is not None and c.lo <= 0 <= c.hi for c in changes)
    assert holding >= 0.93 * len(pairs)
    quiet = [compare(a, b, points=False, higher_better=True, noise=0.02) for a, b in pairs]
    assert sum(c is not None and c.verdict == NO_CHANGE for c in quiet) >= 0.97 * len(pairs)


def test_a_real_change_is_found_every_time() -> None:
    rng = np.random.default_rng(37)
    changes = [
        compare(*simulated(rng, 0.5, 0.05), points=False, higher_better=True, noise=0.02)
        for _ in range(100)
    ]
    assert all(c is not None and c.verdict == IMPROVED for c in changes)
