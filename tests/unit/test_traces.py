"""Trace formats read as streams: round trips between formats and through .zst, the stats
of `trace info`, and one line naming the record and byte offset for a bad file (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from workbench.simulate import runner
from workbench.workload.oracle_trace import RECORD
from workbench.workload.traces.formats import format_of, read, writer
from workbench.workload.traces.info import analyze, zipf_fit
from workbench.workload.traces.records import Request, TraceFormatError
from workbench.workload.traces.synth import synth

CLI = [sys.executable, "-m", "workbench.cli.main", "trace"]


def _sample(n: int = 3000) -> list[Request]:
    return list(synth(n, 300, "zipf(0.9)", "uniform(10,1000)", seed=7, rate=100))


@pytest.mark.parametrize(
    "name", ["t.oracleGeneral", "t.oracleGeneral.zst", "t.twitter.csv", "t.csv.zst"]
)
def test_every_format_round_trips_keys_sizes_and_order(tmp_path: Path, name: str) -> None:
    requests = _sample()
    path = str(tmp_path / name)
    assert writer(format_of(path))(requests, path) == len(requests)
    back = list(read(path))
    assert [(r.key, r.value_size, r.op) for r in back] == [
        (r.key, r.value_size, r.op) for r in requests
    ]
    assert [int(r.time) for r in back] == [int(r.time) for r in requests]


def test_oracle_general_next_access_points_at_the_next_request_of_the_object(
    tmp_path: Path,
) -> None:
    reqs = [
        Request(float(i), k, 0, 10, "get", 0) for i, k in enumerate(["5", "6", "5", "7", "6", "5"])
    ]
    path = tmp_path / "n.oracleGeneral"
    writer("oracleGeneral")(reqs, str(path))
    nxt = [rec[3] for rec in RECORD.iter_unpack(path.read_bytes())]
    assert nxt == [2, 4, 5, -1, -1, -1]


def test_twitter_keeps_ops_key_sizes_and_ttls(tmp_path: Path) -> None:
    path = tmp_path / "ops.twitter.csv"
    path.write_text("0,k:a,3,100,1,set,60\n1,k:a,3,0,1,delete,0\n2,k:b,3,5,2,gets,0\n")
    got = list(read(str(path)))
    assert got == [
        Request(0.0, "k:a", 3, 100, "set", 60),
        Request(1.0, "k:a", 3, 0, "delete", 0),
        Request(2.0, "k:b", 3, 5, "gets", 0),
    ]


def test_a_bad_line_names_its_record_and_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "bad.twitter.csv"
    path.write_text("0,a,1,10,0,get,0\n1,b,1,oops,0,get,0\n")
    with pytest.raises(TraceFormatError) as err:
        list(read(str(path)))
    assert (err.value.record, err.value.offset) == (1, 17)


def test_a_truncated_record_names_its_record_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "cut.oracleGeneral"
    writer("oracleGeneral")(_sample(10), str(path))
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(TraceFormatError) as err:
        list(read(str(path)))
    assert (err.value.record, err.value.offset) == (9, 9 * RECORD.size)


def test_a_truncated_zst_download_is_an_error_not_a_short_trace(tmp_path: Path) -> None:
    whole = tmp_path / "w.csv.zst"
    writer("csv")(_sample(), str(whole))
    cut = tmp_path / "cut.csv.zst"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(TraceFormatError, match="compressed stream ends inside a frame"):
        list(read(str(cut)))


def test_concatenated_zst_frames_read_as_one_stream(tmp_path: Path) -> None:
    path = tmp_path / "two.twitter.zst"
    lines = [b"0,a,1,10,0,get,0\n", b"1,b,1,20,0,set,0\n"]
    path.write_bytes(b"".join(zstandard.ZstdCompressor().compress(line) for line in lines))
    assert [r.key for r in read(str(path), "twitter")] == ["a", "b"]


def test_info_counts_objects_one_hit_wonders_and_ops() -> None:
    reqs = [
        Request(float(t), k, 0, s, op, ttl)
        for t, k, s, op, ttl in [
            (0, "a", 10, "get", 0),
            (1, "a", 10, "set", 30),
            (2, "b", 20, "get", 0),
            (3, "c", 30, "delete", 0),
        ]
    ]
    info = analyze(reqs, window=2)
    assert (info.requests, info.objects, info.span) == (4, 3, 3.0)
    assert info.ops == {"get": 2, "set": 1, "delete": 1}
    assert info.one_hit_wonder_share == round(2 / 3, 4)
    assert info.size_percentiles["p100"] == 30 and info.ttl_percentiles["p100"] == 30
    assert [w["objects"] for w in info.working_set] == [1, 2]


def test_the_zipf_fit_recovers_the_exponent_a_synthetic_trace_was_made_with() -> None:
    fit = analyze(synth(200_000, 5000, "zipf(0.9)", "fixed(10)", seed=3)).zipf_exponent
    assert fit is not None and 0.8 < fit < 1.0
    assert zipf_fit([5, 1, 1]) is None


def test_cli_synth_info_convert_and_a_bad_file_exits_2(tmp_path: Path) -> None:
    trace = tmp_path / "s.oracleGeneral.zst"
    made = subprocess.run(
        [*CLI, "synth", "--requests", "500", "--objects", "50", "-o", str(trace)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    info = subprocess.run([*CLI, "info", str(trace), "--json"], capture_output=True, text=True)
    assert info.returncode == 0 and '"requests": 500' in info.stdout
    csv = tmp_path / "s.csv"
    conv = subprocess.run([*CLI, "convert", str(trace), "-o", str(csv)], capture_output=True)
    assert conv.returncode == 0 and len(csv.read_text().splitlines()) == 501
    csv.write_text(csv.read_text() + "9,x\n")
    bad = subprocess.run([*CLI, "info", str(csv)], capture_output=True, text=True)
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1
    assert "record 501 at byte offset" in bad.stderr


@pytest.mark.skipif(not runner.available(), reason="libcachesim is not installed (the sim extra)")
@pytest.mark.parametrize("name", ["t.oracleGeneral.zst", "t.twitter.csv"])
def test_info_adds_libcachesim_s_analyzer_from_its_own_process(tmp_path: Path, name: str) -> None:
    trace = tmp_path / name
    writer(format_of(str(trace)))(synth(3000, 400, "zipf(1.0)", "fixed(100)", seed=8), str(trace))
    objects = analyze(read(str(trace))).objects
    res = subprocess.run([*CLI, "info", str(trace), "--json"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    lcs = json.loads(res.stdout)["libcachesim"]
    assert (lcs["requests"], lcs["objects"]) == (3000, objects)
    # Every object's first request is a compulsory miss.
    assert lcs["compulsory_miss_ratio"]["requests"] == pytest.approx(objects / 3000, abs=1e-4)
    assert 0.8 < lcs["zipf_alpha"] < 1.2
    without = [*CLI, "info", str(trace), "--json", "--no-libcachesim"]
    assert "libcachesim" not in json.loads(subprocess.run(without, capture_output=True).stdout)


def test_a_large_file_streams_in_bounded_memory(tmp_path: Path) -> None:
    """3M records (72 MB, zstd) read through in a fresh process whose peak RSS stays below
    the interpreter's own 60 MB plus the file's size: nothing holds the file or the
    requests (held, 3M requests are several hundred MB)."""
    path = tmp_path / "big.oracleGeneral.zst"
    block = b"".join(RECORD.pack(i, i % 1000, 100, -1) for i in range(100_000))
    with zstandard.open(path, "wb") as f:
        for _ in range(30):
            f.write(block)
    # The child's own peak (VmHWM), not getrusage's ru_maxrss: Linux carries the parent's
    # peak into a child across fork and exec, so under a large pytest process (a whole
    # suite's run) ru_maxrss said 375-380 MB for a reader that never held 100.
    code = (
        "import sys\n"
        "from workbench.workload.traces.formats import read\n"
        "n = sum(1 for _ in read(sys.argv[1]))\n"
        "hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
        "print(n, hwm.split()[1])\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    n, peak_kib = map(int, res.stdout.split())
    assert n == 3_000_000
    assert peak_kib < 120 * 1024, peak_kib  # the interpreter and imports are about 60 MB
