"""The hiccup meter's figures: slices laid on intervals, merged, stored, read back; which
hiccups count for a step and which long waits they explain (workbench.results.hiccups, stalls)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from workbench.engine.hiccup_meter import SliceBook, StepHiccups
from workbench.results import store as store_module
from workbench.results.events import Interval, RunStarted, StepFinished, StepStarted
from workbench.results.hiccups import Hiccup, Hiccups, lines
from workbench.results.metrics import Stats, merged, new_histogram
from workbench.results.stalls import MachineUsage, clean, counts, explained
from workbench.results.store import Store, StoredIntervals

READY = {"type": "ready", "meter": "native", "tick_ns": 1_000_000, "threshold_ns": 1_000_000}
S = 1_000_000_000  # ns per second


def slice_(start: float, end: float, events: list[list[object]] = (), seen: dict | None = None):  # type: ignore[assignment]
    """A meter frame from `start` to `end` (wall seconds): 50 wake-ups 70 µs late on CPU 0."""
    return {
        "type": "slice",
        "start": int(start * S),
        "end": int(end * S),
        "hist": [[70_000, 50]],
        "cpus": {"0": [50, 70_000, 0, 0]},
        "events": list(events),
        "seen": seen or {},
    }


def test_slices_fall_in_the_interval_their_middle_is_in_and_hiccups_keep_their_time() -> None:
    book = SliceBook(READY)
    origin = 1000.0
    for k in range(20):  # 1 s of 50 ms slices from the origin
        events = [[1, int((origin + 0.52) * S), 33_000_000, ["server"]]] if k == 11 else []
        book.add(slice_(origin + k * 0.05, origin + (k + 1) * 0.05, events, {"server": 1}))
    assert book.through(origin + 1.0) and not book.through(origin + 1.05, now=origin + 1.06)
    first = book.take(origin, origin + 0.5, origin)
    second = book.take(origin + 0.5, origin + 1.0, origin)
    assert first is not None and second is not None
    assert first.hist.get_total_count() == 10 * 50 and not first.events
    assert second.events == [Hiccup("1", second.events[0].at, 33_000_000, ("server",))]
    assert abs(second.events[0].at - 0.52) < 1e-6
    assert second.seen == {"server": ["1"]} and second.meter == "native"
    assert book.take(origin + 1.0, origin + 1.5, origin) is None  # nothing came for it


def test_an_interval_waits_for_the_meter_at_most_its_bound() -> None:
    book = SliceBook(READY)
    assert not book.through(10.0, now=10.1)
    assert book.through(10.0, now=10.6)  # MAX_WAIT later: go on without
    book.ended = True
    assert book.through(99.0, now=0.0)


def test_a_silent_meter_of_another_machine_is_not_waited_for() -> None:
    """A host lost mid-run: its meter sends nothing more and nothing says it ended. Each
    interval after it waited its full bound for it, and the run ended late."""
    book = SliceBook(READY, prefix="10.77.0.5/", wait=1.5, silence=1.5)
    book.add(slice_(9.95, 10.0), now=10.1)
    assert not book.through(11.0, now=11.2)  # a slow poll: waited for
    assert book.through(12.0, now=11.6)  # 1.5 s of silence: lost, not waited for
    local = SliceBook(READY)  # this machine's meter ends with its output
    local.add(slice_(9.95, 10.0), now=10.1)
    assert not local.through(12.0, now=11.6)


def test_a_step_side_attaches_hiccups_and_keeps_clean_intervals_apart() -> None:
    book = SliceBook(READY)
    origin = 50.0
    for k in range(40):
        events = [[0, int((origin + 0.3) * S), 20_000_000, []]] if k == 6 else []
        book.add(slice_(origin + k * 0.05, origin + (k + 1) * 0.05, events, {"worker 0": 0}))
    side = StepHiccups(book, remote_server=False)
    side.begins(origin)
    parts = []
    for end in (0.5, 1.0, 1.5, 2.0):
        stats = Stats(duration=0.5, hist={"get": new_histogram()})
        stats.hist["get"].record_value(25_000_000 if end == 0.5 else 80_000)
        side.attach(stats, end)
        parts.append(stats)
    hiccups = [p.hiccups for p in parts]
    assert all(h is not None for h in hiccups)
    assert [h.clean is not None for h in hiccups if h] == [False, True, True, True]
    assert hiccups[0] is not None and hiccups[0].wait_ns >= 25_000_000
    total = merged(parts, concurrent=False).hiccups
    assert total is not None and total.intervals == 4 and total.clean_intervals == 3
    assert total.clean is not None and total.clean.get_max_value() < 1_000_000
    assert total.count == 0  # the slice figures had no hiccup counted; the event is kept
    assert [e.length_ns for e in total.events] == [20_000_000]


def test_hiccups_on_cpus_nobody_used_do_not_count() -> None:
    h = Hiccups(
        events=[Hiccup("0", 1.0, 5_000_000), Hiccup("1", 1.2, 9_000_000, ("server",))],
        seen={"server": ["1"], "worker 0": ["1"]},
    )
    assert [e.cpu for e in counts(h)] == ["1"]
    h.seen = {}
    assert len(counts(h)) == 2  # nothing watched: every CPU counts


def test_a_wait_far_longer_than_every_hiccup_is_not_explained() -> None:
    stall = Hiccup("1", 0.2, 30_000_000, ("server",))
    h = Hiccups(events=[stall], wait_ns=35_000_000)
    assert explained(h) and not clean(h)
    h.wait_ns = 500_000_000  # a server stopped for half a second
    assert not explained(h)
    later = Hiccups(wait_ns=40_000_000)  # the queue the stall left, drained next interval
    assert explained(later, before=(Hiccup("1", 0.45, 30_000_000),), start=0.5)
    assert not explained(later, before=(Hiccup("1", 0.1, 30_000_000),), start=0.5)


def test_machine_usage_sums_what_the_intervals_say() -> None:
    usage = MachineUsage()
    stalled = Hiccups(
        events=[Hiccup("1", 0.3, 30_000_000)], wait_ns=32_000_000, cpus={"1": [500, 0, 1, 0]}
    )
    usage = usage.plus(stalled, 0.5).plus(Hiccups(wait_ns=900_000_000), 0.5)
    assert usage.count == 1 and usage.explained_ns == 32_000_000
    late = usage.unexplained()
    assert late is not None and late.wait_ns == 900_000_000 and late.at == 1.0
    assert usage.text(1_000_000) == "CPU 1 lost 30.00ms at 0.3 s; 1 hiccup over 1.00ms"
    # The second interval's 0.9 s wait is past what a 30 ms stall explains: not the
    # machine's to excuse (a server stopped in a probe that also had a hiccup).
    assert not usage.explains()
    near = MachineUsage().plus(stalled, 0.5).plus(Hiccups(wait_ns=45_000_000), 0.5)
    assert near.unexplained_ns() == 45_000_000 and near.explains()  # a stall's size, placed off


def test_hiccups_survive_the_store_beside_the_workers_statistics(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite3")
    h = Hiccups("native", 1_000_000, 1_000_000, events=[Hiccup("0", 0.1, 2_000_000)])
    h.hist.record_value(2_000_000)
    h.cpus = {"0": [10, 2_000_000, 1, 2_000_000]}
    stats = Stats(duration=1.0, hist={"get": new_histogram()}, hiccups=h)
    stats.hist["get"].record_value(100_000)
    spec = {"target": {"system": "embedded"}, "load": {}}
    store.record(RunStarted("r", "n", spec, [{"index": 0, "label": {}, "title": "t"}], {}, 0.0))
    store.record(StepStarted("r", 0, "t", {}, spec, 1, 1))
    store.record(Interval("r", 0, 0, 1.0, stats))
    store.record(StepFinished("r", 0, "completed", stats))
    (row,) = store.db.execute("SELECT stats, hiccups FROM intervals").fetchall()
    assert "hiccups" not in row[0] and "native" in row[1]
    step = store.load("r").steps[0]
    (back,) = list(step.intervals)
    assert back.stats.hiccups is not None and back.stats.hiccups.events == h.events
    (_, light), *_ = list(step.samples())
    assert light.hiccups is not None and light.hiccups.count == 1
    assert step.points[0].hiccup_max_us is not None
    assert any("CPU 0: 1 over" in line for line in lines(step.stats.hiccups))


def test_a_store_from_before_the_meter_reads_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.sqlite3"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE intervals DROP COLUMN hiccups")
    db.execute("INSERT INTO runs VALUES ('r','n',0,1,'completed',NULL,'{}','{}','[]',NULL)")
    db.execute(
        "INSERT INTO intervals (run_id, step, idx, elapsed, stats, point) VALUES "
        "('r', 0, 0, 1.0, ?, NULL)",
        ('{"duration": 1.0}',),
    )
    db.commit()
    db.close()
    monkeypatch.setattr(store_module, "_writable", lambda _path: False)  # cannot upgrade it
    store = Store(path, read_only=True)
    assert store.column("intervals", "hiccups") == "NULL"
    (interval,) = list(StoredIntervals(store, "r", 0))
    assert interval.stats.hiccups is None and interval.stats.duration == 1.0


def test_a_local_server_whose_process_is_unknown_may_run_on_any_cpu() -> None:
    """A loopback target whose listening process was not found (another user's): a stall
    on any CPU counts against the step, not only on the workers' CPUs."""
    origin = 1000.0
    for anywhere, expected in ((False, ["1"]), (True, ["0", "1"])):
        book = SliceBook(READY)
        side = StepHiccups(book, remote_server=False, server_anywhere=anywhere)
        side.begins(origin)
        for k in range(2):
            frame = slice_(origin + k * 0.05, origin + (k + 1) * 0.05, [], {"worker 0": 1})
            frame["cpus"] = {"0": [50, 70_000, 0, 0], "1": [50, 70_000, 0, 0]}
            book.add(frame)
        stats = Stats(duration=0.1, hist={"get": new_histogram()})
        side.attach(stats, 0.1)
        assert stats.hiccups is not None
        stats.hiccups.events = [Hiccup("0", 0.05, 5_000_000)]  # on no worker's CPU
        assert sorted({c for cpus in stats.hiccups.seen.values() for c in cpus}) == expected
        assert len(counts(stats.hiccups)) == len(expected) - 1


def test_a_hiccup_the_runs_own_processes_held_does_not_count() -> None:
    book = SliceBook(READY)
    theirs = [1, int(0.2 * S), 30_000_000, ["server"], None]
    worker = [1, int(0.5 * S), 40_000_000, ["server"], "worker 0"]
    server = [1, int(0.6 * S), 60_000_000, ["server"], "server"]
    old = [1, int(0.9 * S), 5_000_000, ["server"]]  # a meter from before: not known ours
    book.add(slice_(0.0, 1.0, [theirs, worker, server, old], {"server": 1}))
    h = book.take(0.0, 1.0, 0.0)
    assert h is not None
    assert [e.own for e in h.events] == ["", "worker 0", "server", ""]
    assert [e.length_ns for e in counts(h)] == [30_000_000, 5_000_000]
    usage = MachineUsage().plus(h, 1.0)
    assert usage.count == 2 and usage.longest == h.events[0]
    # The wait behind our own worker is the load's, not the server's: it explains a wait;
    # the server's own hold does not (it ran; a wait then is its own).
    worker_only = Hiccups(events=[h.events[1]], seen={"server": ["1"]}, wait_ns=80_000_000)
    assert not counts(worker_only) and clean(worker_only)  # a clean interval...
    assert explained(worker_only)  # ...whose 80 ms wait the load's own sharing explains
    server_only = Hiccups(events=[h.events[2]], seen={"server": ["1"]}, wait_ns=80_000_000)
    assert clean(server_only) and not explained(server_only)
    assert MachineUsage().plus(server_only, 1.0).unexplained_ns() == 80_000_000
    assert MachineUsage().plus(worker_only, 1.0).unexplained_ns() == 0
    assert [Hiccup.from_list(e.to_list()) for e in h.events] == h.events
    assert h.events[0].to_list() == ["1", 0.2, 30_000_000, ["server"]]  # as stored before
