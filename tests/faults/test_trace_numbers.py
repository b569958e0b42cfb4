"""Issue 39 item 8: trace numbers no engine can replay, and trace files that do not hold
what they say, are one line naming the record and its offset (exit 2), never raw exception
text, a disagreement between the engines or a simulation of what was left."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

from workbench.sdk.servers import ServerProcess
from workbench.simulate import runner

BAD_TIMES = ["inf", "1e300", "nan"]


def _one_line(done, *needles: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(lines) == 1, done.stderr
    assert "Error" not in lines[0] and "--debug" not in lines[0], lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("time", BAD_TIMES)
def test_trace_info_refuses_a_time_no_engine_replays(tmp_path: Path, time: str) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(f"time,key,size\n0,a,10\n{time},b,10\n")
    done = cli(["trace", "info", str(trace), "--no-libcachesim"], tmp_path / "s.db")
    _one_line(done, "record 2 at byte offset 21", "finite")


@pytest.mark.parametrize("strategy", ["multiplexed", "native"])
def test_both_engines_refuse_an_infinite_trace_time(
    redis: ServerProcess, tmp_path: Path, strategy: str
) -> None:
    """The native engine sent such a request at once and reported 200% of the offered rate;
    the Python one waited or failed. Both fail the step now, naming the record."""
    trace = tmp_path / "t.csv"
    trace.write_text("time,key,size\n0,a,10\ninf,b,10\n1,c,10\n")
    overrides = [
        f'strategy.name="{strategy}"', f'workload.trace.path="{trace}"',
        "workload.trace.speed=1", "load.duration=5", "load.warmup=0",
        "load.workers=1", "load.concurrency=1",
    ]  # fmt: skip
    args = ["run", "-q", "-s", redis.target_options["url"]]
    done = cli([*args, *(a for o in overrides for a in ("--set", o))], tmp_path / "s.db")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "record 2 at byte offset 21" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("source", "args", "needles"),
    [
        ("time,key,size\n5,a,1\n1,b,1\n", [], ["request 2", "0 to 4294967295 s"]),
        ("time,key,size\n0,a,99999999999\n", [], ["record 1 at byte offset 14"]),
        ("time,key,size\n0,a,1\ninf,b,1\n", ["--to", "twitter"], ["record 2 at byte offset"]),
    ],
)
def test_trace_convert_refuses_in_one_line_and_leaves_nothing(
    tmp_path: Path, source: str, args: list[str], needles: list[str]
) -> None:
    (tmp_path / "in.csv").write_text(source)
    output = tmp_path / "out" / "OUT.oracleGeneral"
    output.parent.mkdir()
    done = cli(
        ["trace", "convert", str(tmp_path / "in.csv"), "-o", str(output), *args], tmp_path / "s.db"
    )
    _one_line(done, *needles)
    assert list(output.parent.iterdir()) == []


def test_a_garbage_zst_is_named_not_a_zstd_error(tmp_path: Path) -> None:
    garbage = tmp_path / "g.zst"
    garbage.write_bytes(bytes(range(256)) * 2)
    done = cli(["trace", "convert", str(garbage), "-o", str(tmp_path / "o.csv")], tmp_path / "s.db")
    _one_line(done, "record 0 at byte offset 0: corrupt zstd data")


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--objects", "10000000000"], "--objects"),  # a size per object: 40 GB
        (["--rate", "1e-300", "--requests", "3"], "--rate"),
        (["--rate", "nan", "--requests", "3"], "--rate"),
        (["--ttl", "99999999999999999999", "--requests", "3"], "--ttl"),
        (["--sizes", "fixed(99999999999)", "--requests", "3"], "--sizes"),
    ],
)
def test_trace_synth_refuses_numbers_it_cannot_write(
    tmp_path: Path, args: list[str], flag: str
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    done = cli(["trace", "synth", "-o", str(folder / "t.oracleGeneral"), *args], tmp_path / "s.db")
    _one_line(done, flag)
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(not runner.available(), reason="libcachesim is not installed")
def test_simulate_refuses_a_trace_cut_mid_record(tmp_path: Path) -> None:
    """libCacheSim read the 4 whole records of a corrupt 100-byte trace and the command said
    0.00% with exit 0."""
    trace = tmp_path / "t.oracleGeneral"
    store = tmp_path / "s.db"
    run = cli(
        ["run", "-q", "--test-time", "0.3", "--set", "load.warmup=0", "--trace-out", str(trace)],
        store,
    )
    assert run.returncode == 0, run.stderr
    trace.write_bytes(bytes(range(100)))
    done = cli(["simulate", "last", "-p", "lru"], store)
    _one_line(done, "record 4 at byte offset 96: truncated")
