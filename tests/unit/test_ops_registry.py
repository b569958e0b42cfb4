"""The op-kind registry is the one statement of op kinds: its rows are consistent, every
list the workbench reads is a filter of it, and no other module states a list of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from workbench.engine.accounting import KIND_NAMES, Buffers
from workbench.sdk import ops, protocols
from workbench.sdk.errors import PluginError

ROOT = Path(__file__).resolve().parents[2]
# Literals that are a default value, not a statement of which op kinds exist.
DEFAULTS = {
    "workbench/sdk/adapter.py": "a strategy's default operations: get, set, delete",
    "workbench/spec/model.py": "the default mix: 90% get, 10% set",
}


def test_names_codes_and_trace_names_are_each_unique() -> None:
    assert len({k.name for k in ops.KINDS}) == len(ops.KINDS)
    assert len({k.code for k in ops.KINDS}) == len(ops.KINDS)
    trace_names = [n for k in ops.KINDS for n in k.trace_names]
    assert len(set(trace_names)) == len(trace_names)
    assert {k.group for k in ops.KINDS} <= {ops.READ, ops.WRITE, ops.REMOVE, ops.MESSAGE}


def test_codes_keep_the_numbers_the_native_order_and_stored_runs_use() -> None:
    """A mix names operations by code in the native order: codes never move."""
    assert (ops.GET, ops.SET, ops.DELETE, ops.CACHE_ASIDE, ops.PUBLISH) == (0, 1, 2, 3, 4)
    assert ops.DELIVER == 5 and ops.SUBSCRIBE == 6
    assert (ops.ADD, ops.REPLACE, ops.CAS, ops.APPEND, ops.PREPEND) == (7, 8, 9, 10, 11)
    assert (ops.INCR, ops.DECR, ops.TOUCH, ops.GETS) == (12, 13, 14, 15)
    assert {k.name: k.code for k in ops.KINDS if k.in_mix} == ops.MIX_CODES


def test_the_lists_are_filters_of_the_registry() -> None:
    conditional = ("add", "replace", "cas", "append", "prepend", "incr", "decr", "touch")
    assert (
        *("get", "set", "delete", "cache_aside", "publish", "subscribe"),
        *conditional,
        "gets",
    ) == ops.OPERATIONS
    assert ("get", "set", "delete", "publish", "deliver", *conditional, "gets") == ops.RECORDED
    assert ops.RECEIVED == ("deliver",)
    assert set(ops.TRACE_OPS) == {"get", "gets", "set", "delete", *conditional}
    assert {n: ops.kind(n).code for n in ops.TRACE_OPS} == ops.AS_RECORDED
    assert {ops.BY_CODE[c].name for c in ops.WITH_OUTCOME} == set(conditional)
    assert {ops.GET, ops.GETS, ops.CACHE_ASIDE} == ops.READS
    assert ops.NEEDS["publish"] == {"publish", "subscribe"}
    assert ops.NEEDS["cache_aside"] == {"get", "set"}
    assert ops.in_group(ops.MESSAGE) == ("publish", "deliver")


def test_a_trace_op_is_issued_as_itself_or_its_stand_in_or_skipped() -> None:
    """A replay sends a trace's op as recorded to a strategy that declares it; a gets goes
    as a get to one without cas; anything else undeclared is skipped (None)."""
    kv = frozenset({"get", "set", "delete"})
    everything = frozenset(ops.OPERATIONS)
    assert ops.replay_code("gets", everything) == ops.GETS
    assert ops.replay_code("gets", kv) == ops.GET
    assert ops.replay_code("add", kv) is None
    assert ops.replay_code("add", kv | {"add"}) == ops.ADD
    assert ops.replay_code("cas", kv | {"cas"}) is None  # a cas needs the gets' token
    assert ops.replay_code("cas", kv | {"cas", "gets"}) == ops.CAS
    assert ops.replay_code("frobnicate", everything) is None


def test_outcomes_are_named_once_and_written_with_spaces() -> None:
    assert ops.OUTCOMES == ("stored", "not_stored", "exists", "not_found", "not_numeric")
    assert ops.outcome_text(ops.NOT_STORED) == "not stored"


def test_the_python_engine_records_every_recorded_kind_by_its_code() -> None:
    assert {ops.kind(n).code: n for n in ops.RECORDED} == KIND_NAMES
    assert set(Buffers().lat) == {ops.kind(n).code for n in ops.RECORDED}


def test_the_table_is_plain_data_with_every_row() -> None:
    table = ops.table()
    assert [row["code"] for row in table] == [k.code for k in ops.KINDS]
    assert table[0] == {
        "name": "get",
        "code": 0,
        "group": ops.READ,
        "carries_value": False,
        "issued": True,
        "in_mix": True,
        "recorded": True,
        "trace_names": ["get"],
        "needs": ["get"],
        "runs": True,
        "has_outcome": False,
        "stands_in": "",
    }


def op_name_literals(path: Path) -> list[tuple[int, list[str]]]:
    """Tuples, lists, sets and dict keys in `path` naming two op kinds or more."""
    known = set(ops.BY_NAME) | set(ops.TRACE_OPS)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items: list[ast.expr | None] = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = list(node.keys)
        else:
            continue
        names = [i.value for i in items if isinstance(i, ast.Constant) and i.value in known]
        if len(names) >= 2:
            found.append((node.lineno, names))
    return found


def test_no_module_but_the_registry_states_a_list_of_op_kinds() -> None:
    stated = {
        str(p.relative_to(ROOT)): found
        for p in sorted((ROOT / "workbench").rglob("*.py"))
        if p.name != "ops.py" and (found := op_name_literals(p))
    }
    assert set(stated) <= set(DEFAULTS), f"op kinds listed outside workbench.sdk.ops: {stated}"


def test_protocols_have_stable_names_and_an_unknown_one_is_refused() -> None:
    assert [p.name for p in protocols.PROTOCOLS] == [
        "resp",
        "memcache-text",
        "memcache-meta",
        "http1",
    ]
    with pytest.raises(PluginError, match=r"unknown wire protocol 'gopher'.*resp"):
        protocols.protocol("gopher")
