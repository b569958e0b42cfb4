"""Replaying a trace in both engines against a real, empty, unbounded Redis: every request
issued once, misses equal the trace's distinct objects (pipelined too, in the native
engine); the trace's own ops (as-recorded) with deletes and sets, skipped ops counted apart;
warm-up by requests and by trace time; a timed replay on the trace's schedule with its
offered count; a .zst file; a malformed file refused with one line."""

from __future__ import annotations

import collections
import os
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest
import zstandard
from support import collect, finished
from workbench_redis.server import start_redis

from workbench.results.store import Store
from workbench.sdk.discovery import load_plugin
from workbench.sdk.errors import SpecError
from workbench.spec.load import spec_from_data
from workbench.spec.native_binary import binary_path
from workbench.spec.resolve import default_strategy
from workbench.spec.steps import load_spec
from workbench.workload.traces.formats import read, writer
from workbench.workload.traces.info import analyze
from workbench.workload.traces.synth import synth

# A fresh managed Redis per run: empty, and without maxmemory (unbounded).
REDIS = ["target.system=redis", "target.managed=true"]
# The Python engine's lean shared-connection client, and the native engine.
ENGINES = [
    "multiplexed",
    pytest.param(
        "native",
        marks=pytest.mark.skipif(binary_path() is None, reason="the native engine is not built"),
    ),
]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite")


def _replay(path: Path, *extra: str, engine: str = "multiplexed") -> list[str]:
    return [
        *REDIS,
        f'strategy.name="{engine}"',
        f'workload.trace.path="{path}"',
        "load.duration=120",
        *extra,
    ]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("workers", [1, 2])
async def test_every_request_is_issued_once_and_misses_are_the_distinct_objects(
    store: Store, tmp_path: Path, workers: int, engine: str
) -> None:
    trace = tmp_path / "t.oracleGeneral.zst"
    writer("oracleGeneral")(synth(6000, 900, "zipf(0.9)", "uniform(10,1000)", seed=5), str(trace))
    info = analyze(read(str(trace)))
    events = await collect(
        _replay(trace, f"load.workers={workers}", "load.concurrency=8", engine=engine), store
    )
    (step,) = finished(events)
    assert step.status == "completed", step.reason
    s = step.stats
    assert s.hist["get"].get_total_count() == 6000
    assert s.misses == info.objects and s.hits == 6000 - info.objects
    assert s.hist["set"].get_total_count() == info.objects  # one fill per miss
    assert s.error_count == 0


async def test_a_pipelined_native_client_misses_each_object_once(
    store: Store, tmp_path: Path
) -> None:
    """16 requests in flight per client: a key's next get waits for the previous one and
    its fill, so the pipeline does not turn one miss into several."""
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    trace = tmp_path / "t.oracleGeneral"
    writer("oracleGeneral")(synth(8000, 300, "zipf(1.1)", "fixed(100)", seed=9), str(trace))
    info = analyze(read(str(trace)))
    pipelined = ["strategy.options.pipeline=16", "load.workers=1", "load.concurrency=4"]
    events = await collect(_replay(trace, *pipelined, engine="native"), store)
    (step,) = finished(events)
    s = step.stats
    assert s.hist["get"].get_total_count() == 8000
    assert s.misses == info.objects and s.hist["set"].get_total_count() == info.objects


@pytest.mark.parametrize("engine", ENGINES)
async def test_warm_up_is_the_first_requests_and_limit_cuts_the_trace(
    store: Store, tmp_path: Path, engine: str
) -> None:
    trace = tmp_path / "t.csv"
    writer("csv")(synth(3000, 400, "zipf(0.9)", "fixed(100)", seed=2), str(trace))
    events = await collect(
        _replay(
            trace,
            "workload.trace.limit=2000",
            "load.warmup_ops=500",
            "load.workers=1",
            "load.concurrency=4",
            engine=engine,
        ),
        store,
    )
    (step,) = finished(events)
    # The 1,500 requests after the first 500; an op in flight when the warm-up ends is
    # recorded in neither phase (the engine's rule), so up to one per client is not counted.
    assert 1500 - 4 <= step.stats.hist["get"].get_total_count() <= 1500


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("workers", [1, 2])
async def test_warm_up_by_trace_time_is_the_trace_s_first_seconds(
    store: Store, tmp_path: Path, engine: str, workers: int
) -> None:
    trace = tmp_path / "t.oracleGeneral.zst"
    # 4,000 requests at 1,000 per second of trace time: 2 s of warm-up leave 2,000.
    writer("oracleGeneral")(
        synth(4000, 600, "zipf(0.9)", "fixed(100)", seed=3, rate=1000), str(trace)
    )
    requests = list(read(str(trace)))
    after = sum(1 for r in requests if r.time - requests[0].time >= 2)
    assert 0 < after < 4000
    warm = ["workload.trace.warmup=2", f"load.workers={workers}", "load.concurrency=8"]
    events = await collect(_replay(trace, *warm, engine=engine), store)
    (step,) = finished(events)
    assert step.status == "completed", step.reason
    # Every client waits at the warm-up's end until all do: exactly the later requests.
    assert step.stats.hist["get"].get_total_count() == after


@pytest.mark.parametrize("engine", ENGINES)
async def test_as_recorded_replays_sets_gets_and_deletes_and_names_what_it_skips(
    store: Store, tmp_path: Path, engine: str
) -> None:
    trace = tmp_path / "ops.twitter.csv"
    trace.write_text(
        "0,k:a,6,100,1,set,60\n1,k:a,6,0,1,get,0\n2,k:a,6,0,1,delete,0\n"
        "3,k:a,6,0,1,get,0\n4,k:b,3,50,2,incr,0\n5,k:b,3,50,2,add,0\n6,k:b,3,50,2,gets,0\n"
    )
    events = await collect(_replay(trace, 'workload.trace.ops="as-recorded"', engine=engine), store)
    (step,) = finished(events)
    s = step.stats
    assert s.hist["set"].get_total_count() == 1 and s.hist["delete"].get_total_count() == 1
    assert s.errors == {}
    # The get after the set hits; after the delete, not; the gets after the add hits.
    assert (s.hits, s.misses) == (2, 1)
    assert s.outcomes == {"incr": {"not_found": 1}, "add": {"stored": 1}}
    assert s.skipped == {}


def test_bad_trace_fields_are_named(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    writer("csv")(synth(10, 5), str(trace))
    cases = {
        'workload.trace.path="/nonexistent.csv"': "workload.trace.path",
        'workload.trace.ops="sometimes"': "workload.trace.ops",
        "workload.trace.speed=-1": "workload.trace.speed",
        "workload.trace.limit=-1": "workload.trace.limit",
        'workload.trace.format="pcap"': "workload.trace.format",
    }
    for override, field in cases.items():
        with pytest.raises(SpecError) as err:
            load_spec(None, [*_replay(trace), override])
        assert field in str(err.value), (override, err.value)


def test_a_malformed_trace_stops_the_run_with_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = tmp_path / "bad.twitter.csv"
    trace.write_text("0,a,1,10,0,get,0\n1,b,1,ten,0,get,0\n")
    res = subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "trace", "info", str(trace)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 2
    assert res.stderr.strip() == (
        f"error: {trace}: record 1 at byte offset 17: expected timestamp,key,key size,"
        "value size,client id,op,ttl (invalid literal for int() with base 10: 'ten'); "
        "got b'1,b,1,ten,0,get,0'"
    )


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_timed_replay_keeps_the_trace_schedule(
    store: Store, tmp_path: Path, engine: str
) -> None:
    trace = tmp_path / "t.csv"
    # 300 requests, 100 per second of trace time: a 2.99 s span, replayed at speed 2.
    writer("csv")(synth(300, 50, "zipf(0.9)", "fixed(100)", seed=4, rate=100), str(trace))
    timed = ["workload.trace.speed=2", "load.workers=1"]
    events = await collect(_replay(trace, *timed, engine=engine), store)
    (step,) = finished(events)
    s = step.stats
    assert s.hist["get"].get_total_count() == 300
    # No request is sent before its time: the replay cannot finish before the last one is
    # due, 2.99 / 2 s in; the bound above only catches a schedule far off.
    assert 1.49 <= s.duration < 4.0, s.duration
    assert s.send_lag is not None and s.send_lag.get_total_count() == 300
    assert s.send_lag.get_value_at_percentile(0) >= 0
    assert s.offered == 300  # every request's intended start fell in the measured phase


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_record_that_cannot_be_read_fails_the_step_with_one_line(
    store: Store, tmp_path: Path, engine: str
) -> None:
    trace = tmp_path / "cut.oracleGeneral"
    records = b"".join(struct.pack("<IQIq", i // 100, i % 97, 100, -1) for i in range(1000))
    trace.write_bytes(records + b"12345")  # a record cut after 5 of its 24 bytes
    events = await collect(_replay(trace, "load.workers=1", engine=engine), store)
    (step,) = finished(events)
    assert step.status == "failed"
    assert step.reason == f"{trace}: record 1000 at byte offset 24000: truncated: 5 of 24 bytes"


def test_a_trace_keeps_the_native_engine_as_the_default() -> None:
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    spec = spec_from_data({}, ["target.system=redis", 'workload.trace.path="t.csv"'], "--set")
    assert default_strategy(load_plugin("redis"), spec)[0].name == "native"


def _peak_of_native_workers(peaks: dict[int, int], stop: threading.Event) -> None:
    """Poll this process's descendant native workers for their own peak RSS (VmHWM, kB)."""
    me = os.getpid()
    while not stop.wait(0.02):
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                text = status.read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
            if not fields.get("Name", "").strip().startswith("workbench-nativ"):
                continue
            pid, parent = int(fields["Pid"]), int(fields["PPid"])
            if parent == me or _descends(parent, me):
                peaks[pid] = max(peaks.get(pid, 0), int(fields.get("VmHWM", "0 kB").split()[0]))


def _descends(pid: int, ancestor: int) -> bool:
    for _ in range(8):  # bounded: the coordinator's worker is a child or grandchild
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


async def test_a_native_worker_streams_10m_requests_in_bounded_memory(
    store: Store, tmp_path: Path
) -> None:
    """10M requests (a Twitter-format .zst): the native worker reads every one, deals the
    gets to its clients and counts the rest as skipped, its own peak RSS far below 200 MB."""
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    trace = tmp_path / "big.twitter.csv.zst"
    # 1 request in 1,000 a get (10,000 sent), the rest sets of a value over 4 MiB (skipped
    # as read): 10M in all.
    block = "".join(
        f"{i // 1000},k{i % 50_000},6,{'100,0,get' if i % 1000 == 0 else '5000000,0,set'},0\n"
        for i in range(100_000)
    ).encode()
    with zstandard.open(trace, "wb") as f:
        for _ in range(100):
            f.write(block)
    peaks: dict[int, int] = {}
    stop = threading.Event()
    poller = threading.Thread(target=_peak_of_native_workers, args=(peaks, stop))
    poller.start()
    try:
        extra = ['workload.trace.ops="as-recorded"', "load.workers=1", "load.concurrency=8"]
        events = await collect(_replay(trace, *extra, engine="native"), store)
    finally:
        stop.set()
        poller.join()
    (step,) = finished(events)
    assert step.status == "completed", step.reason
    assert step.stats.hist["get"].get_total_count() == 10_000
    assert step.stats.skipped == {"value over 4 MiB": 9_990_000}
    assert peaks, "no native worker was seen"
    assert max(peaks.values()) < 200 * 1024, peaks


def _monitor(host: str, port: int, lines: list[bytes], ready: threading.Event) -> None:
    """Read a Redis MONITOR stream (every command the server runs, in its order) until
    the ECHO of `_END` shows up; bounded by the socket's timeout."""
    with socket.create_connection((host, port), timeout=120) as s:
        s.sendall(b"MONITOR\r\n")
        buf = b""
        while not buf.startswith(b"+OK\r\n"):
            buf += s.recv(65536)
        buf = buf[5:]
        ready.set()
        while True:
            *complete, buf = buf.split(b"\r\n")
            lines.extend(complete)
            if any(_END in line for line in complete):
                return
            chunk = s.recv(1 << 20)
            if not chunk:
                return
            buf += chunk


_END = b"h21-replay-end-of-run"
_MONITOR_LINE = re.compile(rb"^\+([\d.]+) \[\d+ ([^\]]+)\] (.*)$")
_ARG = re.compile(rb'"((?:[^"\\]|\\.)*)"')


def _ttl_of(options: list[bytes]) -> int:
    """The seconds a SET's options give (EX s or PX ms, in any case), 0 without."""
    upper = [o.upper() for o in options]
    for name, scale in ((b"EX", 1), (b"PX", 1000)):
        if name in upper:
            return int(options[upper.index(name) + 1]) // scale
    return 0


# Serial: when each client's last command comes is timing, which a parallel pass on a
# loaded machine stretched past the 15% it allows.
@pytest.mark.serial
@pytest.mark.parametrize("engine", ENGINES)
async def test_each_key_keeps_its_order_and_native_clients_share_the_work(
    store: Store, tmp_path: Path, engine: str
) -> None:
    """A skewed as-recorded trace (zipf 0.9 over 1,000 keys: by hash alone one of 8 clients
    would carry 1.48x the mean), pipelined: Redis runs each key's sets, gets and deletes in
    the trace's order (each set's TTL names its request). A free client takes the next
    request, so no client works on alone at the end. In the native engine, every
    connection's last command comes in the run's last 15% (dealt by hash, the most loaded
    client ran on alone for about a third of the run). The Python strategies share
    connections, so its clients' sharing is tested in tests/unit/test_trace_feed.py."""
    rng = random.Random(7)
    rows, expected = [], collections.defaultdict(list)
    for i, r in enumerate(synth(20_000, 1000, "zipf(0.9)", "fixed(100)", seed=1)):
        op = rng.choices(["set", "get", "delete"], [4, 5, 1])[0]
        ttl = 10_000 + i if op == "set" else 0
        key = f"k{r.key}"
        rows.append(f"{i // 100},{key},{len(key)},100,0,{op},{ttl}\n")
        expected[f"wb:{key}".encode()].append((op, ttl))
    trace = tmp_path / "ordered.twitter.csv"
    trace.write_text("".join(rows))
    shares = collections.Counter(zlib.crc32(k[3:]) % 8 for k, v in expected.items() for _ in v)
    assert max(shares.values()) / (20_000 / 8) > 1.4  # the split by hash alone is skewed
    lines: list[bytes] = []
    with start_redis() as server:
        ready = threading.Event()
        reader = threading.Thread(target=_monitor, args=(server.host, server.port, lines, ready))
        reader.start()
        try:
            assert ready.wait(30)
            extra = [
                f"target.options.url={server.target_options['url']}",
                "target.managed=false",
                'workload.trace.ops="as-recorded"',
                "load.workers=1",
                "load.concurrency=8",
            ]
            if engine == "native":
                extra.append("strategy.options.pipeline=16")
            events = await collect(_replay(trace, *extra, engine=engine), store)
        finally:
            with socket.create_connection((server.host, server.port), timeout=10) as s:
                s.sendall(b"ECHO " + _END + b"\r\n")
                s.recv(100)
            reader.join()
    (step,) = finished(events)
    assert step.status == "completed", step.reason
    seen: dict[bytes, list[tuple[str, int]]] = collections.defaultdict(list)
    last: dict[bytes, float] = {}  # per connection, the time of its last command
    first = None
    names = {b"SET": "set", b"GET": "get", b"DEL": "delete"}
    for line in lines:
        m = _MONITOR_LINE.match(line)
        if not m:
            continue
        args = _ARG.findall(m.group(3))
        if args[0].upper() not in names or not args[1].startswith(b"wb:k"):
            continue
        op = names[args[0].upper()]
        ttl = _ttl_of(args[3:]) if op == "set" else 0
        seen[args[1]].append((op, ttl))
        at = float(m.group(1))
        first = at if first is None else first
        last[m.group(2)] = at
    assert seen == expected  # every request once, each key's in the trace's order
    if engine == "native":
        assert len(last) == 8, last
        end, span = max(last.values()), max(last.values()) - first
        assert all(end - t < 0.15 * span for t in last.values()), (sorted(last.values()), first)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_cli_live_lines_say_how_many_requests_were_skipped(tmp_path: Path, engine: str) -> None:
    trace = tmp_path / "ops.twitter.csv"
    # A request the target does not send: an incr to a strategy without incr (redis-py's
    # pool in the Python engine; multiplexed has it), a value over 4 MiB to the native
    # engine (which does every op of the trace).
    size, op, skipped = (10, "incr", "incr 200")
    if engine != "multiplexed":
        size, op, skipped = (5_000_000, "set", "value over 4 MiB 200")
    # 2 s of trace time at speed 4 (0.5 s, two intervals or more): every other one skipped.
    rows = ((i, (size, op) if i % 2 else (10, "get")) for i in range(400))
    trace.write_text("".join(f"{i / 200},k{i % 20},3,{n},0,{o},0\n" for i, (n, o) in rows))
    strategy = "async-pool" if engine == "multiplexed" else engine
    overrides = [*_replay(trace, 'workload.trace.ops="as-recorded"', engine=strategy)]
    overrides += ["workload.trace.speed=4", "load.interval=0.2", "load.warmup=0", "load.workers=1"]
    args = [a for o in overrides for a in ("--set", o)]
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3")}
    res = subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "run", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    live = [ln for ln in res.stdout.splitlines() if ln.startswith("[") and "ops/s" in ln]
    assert live and live[-1].endswith("skipped 200"), live
    assert f"skipped 200 trace request(s) this target does not do: {skipped}" in res.stdout
