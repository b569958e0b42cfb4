"""oracleGeneral traces as the workers capture them: merged in time order, next access filled in."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.sdk import load_plugin
from workbench.sdk.errors import SpecError
from workbench.simulate.limits import Limit, cache_limit
from workbench.simulate.policies import POLICIES, parse_policies
from workbench.workload.forms import parse_value_size
from workbench.workload.oracle_trace import (
    RECORD,
    merge_parts,
    part_path,
    read_trace,
    step_path,
    warmup_path,
    write_part,
)


def test_parts_merge_in_time_order_with_each_next_access(tmp_path: Path) -> None:
    trace = str(tmp_path / "t.oracleGeneral")
    # Two workers, each in its own send order; times in ns.
    write_part(part_path(trace, 0), [(1_000, 7, 10), (5_000, 9, 12), (3_000_000_000, 7, 11)])
    write_part(part_path(trace, 1), [(2_000, 9, 20), (4_000_000_000, 7, 21)])
    written = merge_parts([part_path(trace, 0), part_path(trace, 1)], trace)
    assert written == 5
    assert Path(trace).stat().st_size == 5 * RECORD.size == 120
    records = list(read_trace(trace))
    assert [r[1] for r in records] == [7, 9, 9, 7, 7]  # object ids, in send-time order
    assert [r[2] for r in records] == [10, 20, 12, 11, 21]  # sizes
    assert [r[0] for r in records] == [0, 0, 0, 2, 3]  # whole seconds since the first
    assert [r[3] for r in records] == [3, 2, -1, 4, -1]  # where each object comes next
    assert not Path(part_path(trace, 0)).exists()  # parts removed after the merge


def test_no_parts_is_an_empty_trace(tmp_path: Path) -> None:
    trace = str(tmp_path / "t.oracleGeneral")
    assert merge_parts([part_path(trace, 0)], trace) == 0
    assert Path(trace).read_bytes() == b""


def test_each_step_of_several_has_its_own_file() -> None:
    assert step_path("/x/t.oracleGeneral", 0, 1) == "/x/t.oracleGeneral"
    assert step_path("/x/t.oracleGeneral", 2, 3) == "/x/t.step2.oracleGeneral"
    assert warmup_path("/x/t.bin") == "/x/t.bin.warmup"


def test_policies_by_name_or_all() -> None:
    assert parse_policies("lru, S3-FIFO,lru") == ("lru", "s3fifo")
    assert parse_policies(["all"]) == tuple(POLICIES)
    with pytest.raises(SpecError) as info:
        parse_policies("lru,mru", "--simulate")
    assert info.value.where == "--simulate" and "lru, fifo" in info.value.message


def facts(system: str) -> dict[str, object]:
    """What the built-in system declares, as a stored step keeps it."""
    return load_plugin(system).facts({}, True)


def test_the_limit_is_read_as_each_system_counts_it() -> None:
    v = parse_value_size("fixed(100)")
    redis = facts("redis")
    assert cache_limit(redis, {}, {"maxmemory": 2 << 30}, {}, v) == Limit(2 << 30, "bytes")
    assert cache_limit(facts("memcached"), {}, {"memory_mb": 64}, {}, v) == Limit(64 << 20, "bytes")
    assert cache_limit(facts("umem"), {}, {"memory": 1 << 30}, {}, v) == Limit(1 << 30, "bytes")
    # The embedded cache: whichever limit binds first for the mean value size.
    few = {"max_entries": 2000, "max_bytes": 1 << 30}
    assert cache_limit(facts("embedded"), few, {}, {}, v) == Limit(2000, "objects")
    small = {"max_entries": 1_000_000, "max_bytes": 1 << 20}
    assert cache_limit(facts("embedded"), small, {}, {}, v) == Limit(1 << 20, "bytes")
    # An unmanaged server: what it reported (by the figure its system names), else nothing.
    assert cache_limit(redis, {}, {}, {"maxmemory": 5000}, v) == Limit(5000, "bytes")
    assert cache_limit(redis, {}, {}, {}, v) is None
    assert cache_limit({}, {}, {"maxmemory": 1}, {"maxmemory": 1}, v) is None  # declares none
