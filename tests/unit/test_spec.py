"""Spec loading, overrides, sweeps and the errors people see for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.sdk.errors import SpecError
from workbench.spec.load import spec_from_data
from workbench.spec.model import spec_to_dict
from workbench.spec.save import save_spec
from workbench.spec.steps import check_spec, load_spec, plan
from workbench.workload.forms import parse_ttl, parse_value_size


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "x.toml"
    p.write_text(text)
    return p


def error_of(path: Path | None, *overrides: str) -> str:
    with pytest.raises(SpecError) as err:
        load_spec(path, list(overrides))
    return str(err.value)


def test_defaults_are_valid_and_target_the_embedded_cache() -> None:
    spec = load_spec(None)
    assert spec.target.system == "embedded"
    assert len(check_spec(spec)) == 1


def test_bad_distribution_names_file_field_and_expectation(tmp_path: Path) -> None:
    p = write(tmp_path, '[workload]\nkey_distribution = "zipfian"\n')
    msg = error_of(p)
    assert msg.startswith(f"{p}: workload.key_distribution: expected one of uniform, zipf")
    assert "got 'zipfian'" in msg


def test_unknown_field_is_named(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, "[load]\nconcurency = 4\n"))
    assert "load.concurency: unknown field; expected one of concurrency" in msg


def test_wrong_type_is_named(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, '[load]\nconcurrency = "many"\n'))
    assert "load.concurrency: expected an integer; got 'many'" in msg


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, "[load\n"))
    assert str(tmp_path / "x.toml") in msg and "not valid TOML" in msg


def test_missing_profile() -> None:
    assert "no such profile file" in error_of(Path("/nonexistent/p.toml"))


def test_unknown_system_lists_installed_ones() -> None:
    msg = error_of(None, "target.system=casandra")
    assert "unknown cache system 'casandra'; installed:" in msg and "embedded" in msg


def test_unknown_strategy_lists_strategies() -> None:
    msg = error_of(None, "strategy.name=turbo")
    assert "embedded strategies: direct, threads" in msg


def test_unsupported_operation_is_an_error_before_the_run() -> None:
    msg = error_of(None, "strategy.name=threads", "workload.mix.publish=1")
    assert "does not support publish, subscribe" in msg


def test_bad_option_value_names_the_option() -> None:
    msg = error_of(None, "target.options.max_entries=0")
    assert "target.options.max_entries: expected at least 1" in msg
    msg = error_of(None, "target.options.colour=1")
    assert "target.options.colour: unknown option 'colour'" in msg


def test_load_bounds() -> None:
    assert "load.concurrency: expected at least 1" in error_of(None, "load.concurrency=0")
    too_short = error_of(None, "load.duration=0")
    assert "load.duration: expected a duration of at least 0.05 s" in too_short


def test_set_parses_toml_values_and_plain_strings() -> None:
    spec = load_spec(
        None, ["workload.value_size=uniform(8,3000)", "load.rate=1000", "workload.prefill=true"]
    )
    assert spec.workload.value_size == "uniform(8,3000)"
    assert spec.load.rate == 1000.0
    assert spec.workload.prefill is True


def test_set_without_equals() -> None:
    assert "expected PATH=VALUE" in error_of(None, "load.concurrency")


def test_list_at_a_sweepable_path_becomes_steps() -> None:
    spec = load_spec(None, ["load.concurrency=[1,4,16]", 'strategy.name=["direct","threads"]'])
    steps = plan(spec)
    assert [(s.spec.load.concurrency, s.spec.strategy.name) for s in steps] == [
        (1, "direct"),
        (1, "threads"),
        (4, "direct"),
        (4, "threads"),
        (16, "direct"),
        (16, "threads"),
    ]
    assert steps[3].title == "concurrency=4, name=threads"
    assert all(not s.spec.sweep for s in steps)


def test_explicit_sweep_over_whole_tables(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        """
[[sweep]]
path = "target"
values = [{system = "embedded", options = {max_entries = 10}},
          {system = "embedded", options = {max_entries = 1000}}]
labels = ["small", "large"]
""",
    )
    steps = plan(load_spec(p))
    assert [s.label["target"] for s in steps] == ["small", "large"]
    assert steps[1].spec.target.options["max_entries"] == 1000


def test_a_bad_step_is_named_by_its_sweep_values() -> None:
    msg = error_of(None, 'workload.value_size=["fixed(10)","fixed(lots)"]')
    assert "workload.value_size" in msg and "fixed(lots)" in msg


def test_saved_profile_loads_back_identical(tmp_path: Path) -> None:
    spec = load_spec(
        None, ["load.concurrency=[1,4]", "workload.key_distribution=zipf(0.99)", "load.ops=1000"]
    )
    path = tmp_path / "saved.toml"
    save_spec(spec, path, header="saved by a test")
    assert path.read_text().startswith("# saved by a test\n")
    again = load_spec(path)
    assert spec_to_dict(again)["sweep"] == spec_to_dict(spec)["sweep"]
    assert again.workload == spec.workload and again.load.ops == 1000


def test_spec_dict_round_trip_is_lossless() -> None:
    spec = load_spec(None, ["load.concurrency=[1,2]", "target.options.max_entries=5"])
    assert spec_from_data(spec_to_dict(spec)) == spec


def test_a_bare_number_is_a_fixed_value_size_or_ttl() -> None:
    spec = load_spec(None, ["workload.value_size=100", "workload.ttl=60"])
    assert parse_value_size(spec.workload.value_size) == parse_value_size("fixed(100)")
    assert parse_ttl(spec.workload.ttl) == parse_ttl("fixed(60)")
    assert parse_value_size("4KiB") == parse_value_size("fixed(4KiB)")


def test_a_sweep_sets_other_paths_along_with_its_values() -> None:
    spec = load_spec(
        None,
        [
            'sweep=[{path="target.system", values=["redis", "memcached"], '
            'along={"strategy.name"=["pipeline", "multiplexed"]}}]'
        ],
    )
    steps = plan(spec)
    assert [(s.spec.target.system, s.spec.strategy.name) for s in steps] == [
        ("redis", "pipeline"),
        ("memcached", "multiplexed"),
    ]
    assert [s.title for s in steps] == ["system=redis", "system=memcached"]
    # Equal values are two steps, each with its own along value (by position, not value).
    twice = load_spec(
        None,
        [
            'sweep=[{path="target.system", values=["redis", "redis"], '
            'along={"strategy.name"=["pipeline", "multiplexed"]}}]'
        ],
    )
    assert [s.spec.strategy.name for s in plan(twice)] == ["pipeline", "multiplexed"]
    with pytest.raises(SpecError) as info:
        load_spec(None, ['sweep=[{path="target.system", values=["redis"], along={x=[1, 2]}}]'])
    assert (
        info.value.where.endswith("sweep[0].along.x") and "expected 1 values" in info.value.message
    )
