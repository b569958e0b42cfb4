"""`workbench compare` on stored runs whose figures are known (built like the golden
reports' runs, through the real store): matching, the estimate chosen, refusals, a
baseline read back from its JSON export, and the regression checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden.golden_runs import build

from workbench.report import render
from workbench.report.changes import compare_runs, comparisons_for, match, within_run
from workbench.report.json_read import read_json_runs
from workbench.report.model import read_run
from workbench.report.regressions import failures, parse, parse_all
from workbench.report.repeats import groups
from workbench.results.store import Store, StoredRun
from workbench.sdk.errors import SpecError
from workbench.stats.change import IMPROVED, NO_CHANGE, REGRESSED

AB = ["workload.key_distribution=hotcold(0.8,0.2)", "load.concurrency=4"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("compare") / "runs.sqlite3")


@pytest.fixture(scope="module")
def twelve(store: Store) -> dict[str, StoredRun]:
    """Runs of one step of 12 intervals: a base, the same again, and 1.5 times slower."""
    return {
        "base": build(store, "r-0007", overrides=AB, seed=7, intervals=12),
        "same": build(store, "r-0008", overrides=AB, seed=8, intervals=12),
        "slower": build(store, "r-0009", overrides=AB, seed=9, intervals=12, slow=1.5),
    }


def test_steps_are_matched_by_their_swept_values_and_the_rest_named(store: Store) -> None:
    base = read_run(build(store, "r-0001", overrides=["load.concurrency=[1, 4]"], seed=1))
    new = read_run(build(store, "r-0002", overrides=["load.concurrency=[4, 16]"], seed=2))
    pairs, only_base, only_new = match(groups(base, every=True), groups(new, every=True))
    assert [(b.title, n.title) for b, n in pairs] == [("concurrency=4", "concurrency=4")]
    assert [g.title for g in only_base] == ["concurrency=1"]
    assert [g.title for g in only_new] == ["concurrency=16"]
    comparison = compare_runs(base, new)
    assert [s.title for s in comparison.steps] == ["concurrency=4"]
    assert comparison.only_base == ("concurrency=1",) and comparison.only_new == ("concurrency=16",)
    text = render([base.stored, new.stored], "table")
    assert "Only in the base run, not compared: concurrency=1." in text


def test_runs_that_sweep_other_settings_match_on_the_ones_they_share(store: Store) -> None:
    base = read_run(build(store, "r-0003", overrides=["load.concurrency=[1, 4]"], seed=3))
    new = read_run(
        build(
            store,
            "r-0004",
            overrides=["load.concurrency=[1, 4]", "workload.value_size=fixed(200)"],
            seed=4,
        )
    )
    assert [s.title for s in compare_runs(base, new).steps] == ["concurrency=1", "concurrency=4"]


def test_too_few_samples_get_no_verdict(store: Store) -> None:
    base = read_run(build(store, "r-0005", overrides=AB, seed=5))  # 3 intervals each
    new = read_run(build(store, "r-0006", overrides=AB, seed=6, slow=2.0))
    (step,) = compare_runs(base, new).steps
    assert step.estimate.method == ""
    assert step.estimate.refused.startswith("too few samples: base 1 repeat of 3 intervals")
    assert all(f.change is None and f.verdict == "" for f in step.figures)
    assert "too few samples" in render([base.stored, new.stored], "criterion")


def test_intervals_are_block_bootstrapped_when_there_are_no_repeats(
    twelve: dict[str, StoredRun],
) -> None:
    base, same, slower = (read_run(twelve[k]) for k in ("base", "same", "slower"))
    (step,) = compare_runs(base, same).steps
    assert step.estimate.method == "intervals"
    assert "block bootstrap over intervals: base 12 intervals (blocks of 2)" in (
        step.estimate.describe()
    )
    for key in ("ops_per_s", "p50", "p99"):
        assert step.figure(key).verdict == NO_CHANGE, key
    (step,) = compare_runs(base, slower).steps
    assert step.figure("ops_per_s").verdict == REGRESSED
    assert step.figure("p50").verdict == REGRESSED
    assert step.figure("p50").change.mid == pytest.approx(0.5, abs=0.05)  # type: ignore[union-attr]
    (back,) = compare_runs(slower, base).steps
    assert back.figure("ops_per_s").verdict == IMPROVED


def test_the_same_comparison_twice_is_the_same_numbers(twelve: dict[str, StoredRun]) -> None:
    """A seeded bootstrap: a CI job, or a test, never flickers."""
    base, new = read_run(twelve["base"]), read_run(twelve["same"])
    first = [f.change for s in compare_runs(base, new).steps for f in s.figures]
    again = [f.change for s in compare_runs(base, new).steps for f in s.figures]
    assert first == again


def test_a_sweep_with_repeats_compares_its_values_over_the_repeats(store: Store) -> None:
    run = read_run(
        build(
            store,
            "r-0012",
            overrides=[*AB, 'strategy.name=["direct", "threads"]', "load.repeat=3"],
            seed=12,
        )
    )
    found = within_run(run)
    assert found is not None and found.axis == "strategy.name"
    (step,) = found.steps
    assert step.title == "name=threads against name=direct"
    assert step.estimate.method == "repeats" and step.estimate.base.repeats == 3
    assert step.figure("ops_per_s").verdict == REGRESSED  # threads: 1.4 times slower
    (again,) = comparisons_for([run])
    assert [s.title for s in again.steps] == [step.title]


def test_a_baseline_read_back_from_its_json_export_is_the_same_run(
    twelve: dict[str, StoredRun], tmp_path: Path
) -> None:
    stored = twelve["base"]
    path = tmp_path / "baseline.json"
    path.write_text(render(stored, "json"))
    (back,) = read_json_runs(path)
    assert back.id == stored.id and [s.strategy for s in back.steps] == ["direct"]
    original, copy = read_run(stored), read_run(back)
    assert copy.steps[0].summary == original.steps[0].summary
    (step,) = compare_runs(copy, original).steps
    for figure in step.figures:
        assert figure.base == figure.new and figure.verdict == NO_CHANGE, figure.metric.key
    assert (
        json.loads(render(back, "json"))["runs"][0]["steps"][0]["summary"]
        == json.loads(render(stored, "json"))["runs"][0]["steps"][0]["summary"]
    )


def test_a_file_that_is_not_an_export_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(SpecError) as err:
        read_json_runs(path)
    assert err.value.where == str(path) and "not a workbench run export" in err.value.message


def test_regression_checks_parse_and_name_what_is_wrong() -> None:
    check = parse("p99:+5%")
    assert check.metric.key == "p99" and check.threshold == pytest.approx(0.05)
    assert parse("thrpt:-3%").metric.key == "ops_per_s" and parse("errors:1%").metric.points
    for bad, says in (
        ("p99<5%", "expected METRIC:[+|-]N%"),
        ("p42:+5%", "unknown metric 'p42'"),
        ("p99:-5%", "p99 regresses up; write +N%"),
        ("ops_per_s:+5%", "ops_per_s regresses down; write -N%"),
        ("p99:+5", "expected METRIC"),
    ):
        with pytest.raises(SpecError) as err:
            parse(bad)
        assert says in str(err.value), bad


def test_regression_checks_fail_beyond_the_threshold_and_when_they_cannot_judge(
    store: Store, twelve: dict[str, StoredRun]
) -> None:
    base, slower = read_run(twelve["base"]), read_run(twelve["slower"])
    comparison = compare_runs(base, slower)
    lines = failures(parse_all(["p99:+5%", "ops_per_s:-3%"]), [comparison])
    assert len(lines) == 2 and all("regressed beyond" in line for line in lines)
    assert failures(parse_all(["p99:+500%"]), [comparison]) == []
    short = read_run(build(store, "r-0016", overrides=AB, seed=16))
    (line,) = failures(parse_all(["p99:+500%"]), [compare_runs(short, short)])
    assert "not judged: too few samples" in line
