"""`workbench profiles`: each profile's systems and strategies, its steps and how long it takes
(issue 24 item 6), read from the shipped profiles."""

from __future__ import annotations

from pathlib import Path

from workbench.cli.profiles import estimate, what_runs
from workbench.spec.steps import check_spec, load_spec

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def test_each_system_with_the_strategies_it_runs() -> None:
    steps = check_spec(load_spec(PROFILES / "memory-limit-hit-rate.toml"))
    assert what_runs(steps) == "umem: conn-per-thread; memcached: multiplexed; redis: multiplexed"


def test_timed_steps_are_added_up() -> None:
    # 3 s measured, 0.5 s of warm-up, 1 s of start-up and tail
    assert estimate(check_spec(load_spec(PROFILES / "quick.toml"))) == "about 4 s"
    sweep = check_spec(load_spec(PROFILES / "embedded-sweep.toml"))
    each = [(s.spec.load.duration or 0) + s.spec.load.warmup + 1 for s in sweep]
    assert estimate(sweep) == f"about {sum(each):.0f} s"


def test_steps_of_n_ops_say_their_count_and_not_a_time() -> None:
    steps = check_spec(load_spec(PROFILES / "memory-limit-hit-rate.toml"))
    assert estimate(steps) == "50,000 ops each (time depends on the rate)"
    mixed = check_spec(load_spec(None, ["load.duration=2", "load.warmup=0"]))
    mixed += check_spec(load_spec(None, ["load.ops=1000"]))
    assert estimate(mixed) == "about 3 s + 1 step of 1,000 ops (time depends on the rate)"


def test_a_replayed_trace_ends_with_the_trace_not_at_its_upper_bound() -> None:
    # Its load.duration (600 s) is only a bound: the step ends when the trace does.
    steps = check_spec(load_spec(PROFILES / "trace-replay.toml"))
    assert estimate(steps) == "each replaying its trace to the end (time depends on the rate)"
