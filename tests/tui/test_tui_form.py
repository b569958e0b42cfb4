"""The Setup form's data side: field text as --set reads it, and the CLI's own errors."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.sdk.errors import SpecError
from workbench.spec.fields import FIELDS, default_at
from workbench.spec.load import SWEEPABLE
from workbench.spec.model import Load, Spec
from workbench.spec.steps import load_spec
from workbench.tui.form import (
    CUSTOM,
    check,
    compose,
    error_path,
    field_for,
    fold_sweeps,
    join_distribution,
    split_distribution,
    text_to_value,
    value_to_text,
)
from workbench.tui.widgets.fields import empty_hint


@pytest.mark.parametrize(
    ("kind", "text", "sweep", "expected"),
    [
        ("value", "16", False, (True, 16)),
        ("value", "", False, (False, None)),
        ("value", "[1, 4, 16]", True, (True, [1, 4, 16])),
        ("value", "1, 4, 16", True, (True, [1, 4, 16])),
        ("value", "abc", False, (True, "abc")),
        ("value", "2.5", False, (True, 2.5)),
        ("text", "zipf(0.99)", False, (True, "zipf(0.99)")),
        ("text", '["zipf(0.99)", "uniform"]', False, (True, ["zipf(0.99)", "uniform"])),
        ("text", "123", False, (True, "123")),
        ("bool", "true", False, (True, True)),
    ],
)
def test_text_to_value(kind, text, sweep, expected) -> None:  # type: ignore[no-untyped-def]
    assert text_to_value(kind, text, sweep) == expected


def test_value_to_text_round_trips() -> None:
    for value in (16, 2.5, 5.0, [1, 4, 16], ["a", "b"], True):
        kind = "value"
        assert text_to_value(kind, value_to_text(value), True) == (True, value)


def test_distributions_split_and_join() -> None:
    path = "workload.key_distribution"
    assert split_distribution(path, "hotcold(0.8,0.2)") == ("hotcold", ["0.8", "0.2"])
    assert join_distribution(path, "hotcold", ["0.8", "0.2"]) == "hotcold(0.8,0.2)"
    assert split_distribution(path, "uniform") == ("uniform", [])
    assert join_distribution(path, "uniform", ["", ""]) == "uniform"
    assert split_distribution(path, ["zipf(0.99)", "uniform"])[0] == CUSTOM
    assert split_distribution("workload.value_size", "weighted(100:9, 10KiB:1)") == (
        "weighted",
        ["100:9, 10KiB:1"],
    )


def cli_error(*overrides: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        load_spec(None, list(overrides))
    return info.value


def test_check_gives_the_cli_messages_for_every_bad_field() -> None:
    data = {"load": {"concurrency": "abc", "duration": -1}, "workload": {"ttl": "forever"}}
    result = check(data)
    assert result.spec is None
    by_path = {error_path(e.where): e.message for e in result.errors}
    assert by_path["load.concurrency"] == cli_error("load.concurrency=abc").message
    assert by_path["load.duration"] == cli_error("load.duration=-1").message
    assert by_path["workload.ttl"] == cli_error("workload.ttl=forever").message


def test_check_a_good_sweep() -> None:
    result = check({"load": {"concurrency": [1, 4], "duration": 1.0}})
    assert result.spec is not None
    assert [s.title for s in result.steps] == ["concurrency=1", "concurrency=4"]


def test_sweep_step_errors_name_the_field() -> None:
    result = check({"load": {"rate": [100, -1]}})
    assert result.spec is None
    assert error_path(result.errors[0].where) == "load.rate"


def test_field_for_maps_error_paths_to_fields() -> None:
    fields = ["load.duration", "workload.mix", "target.options.max_bytes"]
    assert field_for("workload.mix.get", fields) == "workload.mix"
    assert field_for("load", fields) == "load.duration"
    assert field_for("target.options.max_bytes", fields) == "target.options.max_bytes"
    assert field_for("target.options.nope", fields) is None


def test_compose_owns_tables_and_drops_cleared_fields() -> None:
    base = {
        "workload": {"mix": {"get": 1.0, "delete": 1.0}, "keys": 5},
        "target": {"options": {"x": 1}},
    }
    data = compose(base, [("workload.mix", True, {"set": 1.0}), ("workload.keys", False, None)])
    assert data["workload"] == {"mix": {"set": 1.0}}
    assert "options" not in data["target"]


def test_fold_sweeps_puts_lists_back_at_their_paths() -> None:
    data = {"sweep": [{"path": "load.concurrency", "values": [1, 2]}], "load": {"concurrency": 1}}
    assert fold_sweeps(data) == {"load": {"concurrency": [1, 2]}}
    labelled = {"sweep": [{"path": "load.concurrency", "values": [1], "labels": ["one"]}]}
    assert fold_sweeps(labelled) == labelled


def test_every_core_field_is_a_spec_path_with_the_model_default() -> None:
    paths = [f.path for f in FIELDS]
    assert len(paths) == len(set(paths))
    for field in FIELDS:
        assert field.default == default_at(field.path)  # an unknown path raises
    # Every field of Load is in the form, and what an empty field shows starts with the
    # model's default (so a changed default shows without retyping a placeholder).
    assert {f"load.{f.name}" for f in dataclasses.fields(Load)} <= set(paths)
    by_path = {f.path: f for f in FIELDS}
    assert empty_hint(by_path["load.concurrency"]).startswith(str(Spec().load.concurrency))
    assert empty_hint(by_path["load.duration"]).startswith(str(Spec().load.duration))
    assert empty_hint(by_path["load.rate"]) == by_path["load.rate"].note  # default None
    assert by_path["load.concurrency"].sweepable and "load.concurrency" in SWEEPABLE
