"""The results store: one SQLite file (WAL) holding every run, step, interval and notice.

Location: the ``--store`` option, else ``$WORKBENCH_STORE``, else
``$XDG_DATA_HOME/cache-workbench/runs.sqlite3``. Events are written as they happen, so an
interrupted or crashed run keeps everything measured up to that point.

A long run is appended to, one row per interval, and never rewritten as a whole. Reading
one back costs the same whatever its length: a step's intervals are read lazily
(`StoredIntervals`, decoded one at a time as they are iterated), and its chart points and
CPU figures come from small per-interval rows (`StoredStep.samples`), never from decoding
every interval's histograms.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.files.output_files import protect_database
from workbench.files.run_owner import runner_gone
from workbench.results.events import (
    Event,
    Interval,
    Notice,
    RunFinished,
    RunStarted,
    RunStatus,
    StepFinished,
    StepSimulated,
    StepStarted,
)
from workbench.results.live import RunView, point
from workbench.results.metrics import Stats, merged, summarise
from workbench.results.store_tables import abandoned_with_open_steps, make_tables, refuse_foreign
from workbench.results.timeline import Point
from workbench.sdk.errors import RunActiveError, RunRefError, StoreError
from workbench.spec.model import DEFAULT_SYSTEM, check_name, shown_name

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at REAL NOT NULL, finished_at REAL,
    status TEXT NOT NULL, error TEXT, spec TEXT NOT NULL, environment TEXT NOT NULL,
    plan TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,
    title TEXT NOT NULL, label TEXT NOT NULL, spec TEXT NOT NULL, workers INTEGER NOT NULL,
    clients INTEGER NOT NULL, server TEXT NOT NULL, status TEXT NOT NULL, stats TEXT,
    ops_per_s REAL, p50_us REAL, p99_us REAL, hit_rate REAL, errors INTEGER,
    started_at REAL NOT NULL, finished_at REAL, PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS intervals (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER NOT NULL,
    idx INTEGER NOT NULL, elapsed REAL NOT NULL, stats TEXT NOT NULL,
    PRIMARY KEY (run_id, step, idx)
);
CREATE TABLE IF NOT EXISTS notices (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step INTEGER NOT NULL,
    level TEXT NOT NULL, message TEXT NOT NULL, at REAL NOT NULL
);
"""

# Columns added after the first release: (table, column, declaration). Older stores gain
# them when opened; rows written before hold NULL and read back as the defaults.
ADDED_COLUMNS = (
    ("runs", "runner", "TEXT"),  # {"host", "pid", "pid_start"} of the process running it
    ("steps", "resolved", "TEXT"),  # StepStarted.resolved(): the facts a reader needs
    ("steps", "simulated", "TEXT"),  # StepSimulated.results: the simulated hit rates
    # The interval's chart point (`live.point`): charts and views of a long run read these
    # small rows instead of decoding every interval's histograms.
    ("intervals", "point", "TEXT"),
)


# SQLite's page cache, per connection. A long run's store grows by tens of MB per hour,
# and the cache fills with the pages its appends touch until it is full: the default
# 2 MiB, then 512 KiB, took the first ~500 one-second intervals (8 minutes) to fill, a
# visible slope in the coordinator's memory. At 64 KiB it is full within the first
# intervals. Appends and the streamed reads of a long run gain nothing from a bigger one
# (measured: the same CPU per appended interval, 15-17 µs, at 64 and at 512 KiB).
CACHE_KIB = 64


ABANDONED_ERROR = "the process running it ended without finishing it"


def _connect(uri: str) -> sqlite3.Connection:
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def _writable(path: Path) -> bool:
    """True when this process can write the store file and make files beside it (its
    journal), or create it (in the nearest folder that exists)."""
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)


def _cannot_open(exc: BaseException, path: Path) -> str:
    """Why the store cannot be opened for writing, saying "read-only" when it is that."""
    text = str(exc)
    if isinstance(exc, OSError):
        read_only = exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    else:  # SQLite's "attempt to write a readonly database", or "unable to open" its journal
        read_only = "readonly" in text or not _writable(path)
    if read_only:
        return (
            f"cannot write the results store: its location is read-only ({text}); "
            "reading commands (runs list, runs show, report) still work, or give another "
            "store with --store or WORKBENCH_STORE"
        )
    return f"cannot open the results store: {text}"


def default_path() -> Path:
    if env := os.environ.get("WORKBENCH_STORE"):
        return Path(env)
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "cache-workbench" / "runs.sqlite3"


_INTERVAL_COLUMNS = "idx, elapsed, stats"
# What a view needs of an interval without its histograms: the chart point, and the
# duration, worker CPU and server figures its verdict sums (`verdict.Usage.plus`).
_SAMPLE_COLUMNS = (
    "idx, elapsed, point, json_extract(stats, '$.duration'), json_extract(stats, '$.cpu'), "
    "json_extract(stats, '$.server')"
)


class StoredIntervals(Sequence[Interval]):
    """A step's stored intervals, read from the store as they are used: `len` counts
    rows, iterating decodes one interval at a time, an index reads one row."""

    def __init__(self, store: Store, run_id: str, step: int) -> None:
        self.store, self.run_id, self.step = store, run_id, step

    def _where(self) -> tuple[str, tuple[Any, ...]]:
        return "FROM intervals WHERE run_id=? AND step=?", (self.run_id, self.step)

    def __len__(self) -> int:
        where, args = self._where()
        (n,) = self.store.db.execute(f"SELECT COUNT(*) {where}", args).fetchone()
        return int(n)

    def __iter__(self) -> Iterator[Interval]:
        where, args = self._where()
        rows = self.store.db.execute(f"SELECT {_INTERVAL_COLUMNS} {where} ORDER BY idx", args)
        for row in rows:
            yield self._interval(row)

    def __getitem__(self, i: int) -> Interval:  # type: ignore[override]
        if not isinstance(i, int):
            raise TypeError("stored intervals are read one index at a time, or iterated")
        where, args = self._where()
        order, offset = ("DESC", -i - 1) if i < 0 else ("", i)  # the last: no counting
        row = self.store.db.execute(
            f"SELECT {_INTERVAL_COLUMNS} {where} ORDER BY idx {order} LIMIT 1 OFFSET ?",
            (*args, offset),
        ).fetchone()
        if row is None:
            raise IndexError(f"no interval {i} in step {self.step} of run {self.run_id}")
        return self._interval(row)

    def _interval(self, row: tuple[Any, ...]) -> Interval:
        i, elapsed, stats = row
        return Interval(self.run_id, self.step, i, elapsed, Stats.from_dict(json.loads(stats)))

    def samples(self) -> Iterator[tuple[Point, Stats]]:
        """Per interval: its chart point and its counters without histograms (duration,
        worker CPU, server figures). Rows stored before points were kept are decoded."""
        where, args = self._where()
        for i, elapsed, pt, duration, cpu, server in self.store.db.execute(
            f"SELECT {_SAMPLE_COLUMNS} {where} ORDER BY idx", args
        ):
            if pt is None:
                (old,) = self.store.db.execute(
                    f"SELECT stats {where} AND idx=?", (*args, i)
                ).fetchone()
                stats = Stats.from_dict(json.loads(old))
                yield point(Interval(self.run_id, self.step, i, elapsed, stats)), stats
                continue
            light = Stats(
                duration=float(duration or 0.0),
                cpu=json.loads(cpu) if cpu else {},
                server=json.loads(server) if server else {},
            )
            yield Point.from_dict(json.loads(pt), elapsed), light


@dataclass
class StoredStep:
    index: int
    title: str
    label: dict[str, str]
    spec: dict[str, Any]
    workers: int
    clients: int
    server: dict[str, Any]
    status: str
    stats: Stats
    intervals: Sequence[Interval] = field(default_factory=list)  # StoredIntervals when read
    # StepStarted.resolved(); in runs stored before it was kept, what the spec says.
    resolved: dict[str, Any] = field(default_factory=dict)
    simulated: dict[str, Any] = field(default_factory=dict)  # StepSimulated.results, if any

    def samples(self) -> Iterator[tuple[Point, Stats]]:
        """Each interval's chart point and histogram-free counters (`StoredIntervals`)."""
        if isinstance(self.intervals, StoredIntervals):
            yield from self.intervals.samples()
            return
        for interval in self.intervals:
            yield point(interval), interval.stats

    @property
    def points(self) -> list[Point]:
        """One chart point per interval, as stored: the detail a report plots."""
        return [p for p, _ in self.samples()]

    @property
    def system(self) -> str:
        return str(self.resolved.get("system") or self.spec.get("target", {}).get("system", ""))

    @property
    def strategy(self) -> str:
        """The strategy the step ran ("" only in old runs that named none)."""
        return str(self.resolved.get("strategy") or self.spec.get("strategy", {}).get("name") or "")

    def started_event(self, run_id: str) -> StepStarted:
        r = self.resolved
        return StepStarted(
            run_id,
            self.index,
            self.title,
            self.label,
            self.spec,
            self.workers,
            self.clients,
            self.server,
            system=self.system,
            strategy=self.strategy,
            system_options=dict(r.get("system_options") or {}),
            strategy_options=dict(r.get("strategy_options") or {}),
            server_options=dict(r.get("server_options") or {}),
            engine=dict(r.get("engine") or {}),
            allow_remote=bool(r.get("allow_remote", False)),
            nodes=list(r.get("nodes") or []),
            connections=str(r.get("connections") or ""),
            facts=dict(r.get("facts") or {}),
        )


@dataclass
class StoredRun:
    id: str
    name: str
    created_at: float
    finished_at: float | None
    status: str
    error: str | None
    spec: dict[str, Any]
    environment: dict[str, Any]
    plan: list[dict[str, Any]]
    steps: list[StoredStep]
    notices: list[Notice]
    runner: dict[str, Any] = field(default_factory=dict)

    def events(self, *, intervals: bool = True) -> Iterator[Event]:
        """The run again as the engine produced it (without its Interval events if not
        `intervals`)."""
        yield RunStarted(
            self.id,
            self.name,
            self.spec,
            self.plan,
            self.environment,
            self.created_at,
            dict(self.runner),
        )
        for s in self.steps:
            yield s.started_event(self.id)
            if intervals:
                yield from s.intervals
            for n in self.notices:
                if n.step == s.index:
                    yield n
            if self.status != "running" or s.status != "running":
                yield StepFinished(self.id, s.index, s.status, s.stats)
            if s.simulated:
                yield StepSimulated(self.id, s.index, s.simulated)
        if self.status != "running":
            yield RunFinished(self.id, self.status, self.error)  # type: ignore[arg-type]

    def target(self) -> tuple[str, str]:
        """(systems, strategies) the run targets: `target_and_strategy`."""
        return target_and_strategy(self.spec, [s.strategy for s in self.steps if s.strategy])

    def view(self) -> RunView:
        """The run replayed through the reducer every face uses, as `events()` would
        replay it, without decoding every interval: each step's intervals come in as their
        stored points and counters, its totals as stored (`RunView.replayed`)."""
        view = RunView()
        for event in self.events(intervals=False):
            if isinstance(event, StepStarted):
                view = view.apply(event)
                s = self._step(event.step)
                last = _last(s.intervals)
                view = view.replayed(s.index, s.samples(), s.stats, last)
            else:
                view = view.apply(event)
        return view

    def _step(self, index: int) -> StoredStep:
        return next(s for s in self.steps if s.index == index)

    @property
    def allow_remote(self) -> bool:
        """Whether the run was allowed to load a target off this machine."""
        return bool(self.spec.get("target", {}).get("allow_remote")) or any(
            s.resolved.get("allow_remote") for s in self.steps
        )


@dataclass(frozen=True)
class RunRow:
    """One line of a run listing."""

    id: str
    name: str
    created_at: float
    status: str
    system: str
    strategy: str
    steps: int
    ops_per_s: float | None
    p50_us: float | None
    p99_us: float | None
    hit_rate: float | None
    errors: int
    # The step every figure of the row comes from (the fastest measured one): its title,
    # strategy and clients; None / "" when no step measured anything.
    step: str = ""
    step_strategy: str = ""
    clients: int | None = None


@dataclass(frozen=True)
class StepFigures:
    """One stored step's figures, as a run listing reads them (no histograms)."""

    run_id: str
    index: int
    label: dict[str, str]
    clients: int
    status: str
    ops_per_s: float | None
    p50_us: float | None
    p99_us: float | None
    hit_rate: float | None
    errors: int


class Store:
    """The results store. `read_only`: for commands that only read (list, show, report):
    it is opened without write access, never created, and changes nothing."""

    def __init__(self, path: Path | str | None = None, *, read_only: bool = False) -> None:
        self.path = Path(path) if path else default_path()
        protect_database(self.path)
        self.read_only = read_only
        self._gone: set[str] = set()  # read-only: runs whose process is gone (not marked)
        if read_only:
            self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            refuse_foreign(self.db, self.path)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            make_tables(self.db, SCHEMA, ADDED_COLUMNS)
            self.mark_abandoned()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(_cannot_open(exc, self.path), str(self.path)) from None

    def _open_read_only(self) -> None:
        if not self.path.is_file():
            raise StoreError("no runs stored yet (there is no results store here)", str(self.path))
        if self._needs_upgrade() and _writable(self.path):
            Store(self.path).close()  # one writing open adds the columns newer readers use
        uri = self.path.resolve().as_uri()
        try:
            self.db = _connect(f"{uri}?mode=ro")
            self._check_schema()
        except sqlite3.Error:
            # A WAL store on a read-only location: its -shm cannot be made. Nothing writes
            # there (this process cannot, so neither can a run), so read the file as it is.
            try:
                self.db = _connect(f"{uri}?immutable=1")
                self._check_schema()
            except sqlite3.Error as exc:
                raise StoreError(_cannot_open(exc, self.path), str(self.path)) from None
        self._gone = {
            run_id
            for run_id, runner in self.db.execute(
                "SELECT id, runner FROM runs WHERE status='running' AND runner IS NOT NULL"
            ).fetchall()
            if runner_gone(json.loads(runner))
        }

    def _needs_upgrade(self) -> bool:
        try:
            db = _connect(f"{self.path.resolve().as_uri()}?mode=ro")
            try:
                return any(
                    column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                    for table, column, _ in ADDED_COLUMNS
                )
            finally:
                db.close()
        except sqlite3.Error:
            return False

    def _check_schema(self) -> None:
        """Every table and column a reader selects is there (a store of an older version
        on a location this process cannot write to cannot be upgraded)."""
        for table, column, _ in ADDED_COLUMNS:
            have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
            if not have:
                raise StoreError(f"not a results store (it has no {table} table)", str(self.path))
            if column not in have:
                raise StoreError(
                    "written by an older version of the workbench and read-only here: open it "
                    "once where it can be written to upgrade it",
                    str(self.path),
                )

    def mark_abandoned(self) -> list[str]:
        """Runs stored as running whose process is gone (killed, or its terminal closed)
        become "abandoned"; what they measured stays. The ids marked."""
        gone = [
            run_id
            for run_id, runner in self.db.execute(
                "SELECT id, runner FROM runs WHERE status='running' AND runner IS NOT NULL"
            ).fetchall()
            if runner_gone(json.loads(runner))
        ]
        for run_id in gone:
            self.db.execute(
                "UPDATE runs SET status='abandoned', error=? WHERE id=? AND status='running'",
                (ABANDONED_ERROR, run_id),
            )
        # Its figures show in `runs list`, `runs show` (they read "-", "running").
        for run_id in abandoned_with_open_steps(self.db):
            self._close_unfinished_steps(run_id, "interrupted")
        return gone

    def close(self) -> None:
        self.db.close()

    def record(self, event: Event) -> None:
        """Keep one event; called before any face sees it."""
        keep = _KEEPERS.get(type(event))
        if keep is not None:
            keep(self, event, time.time())

    def _run_started(self, event: RunStarted, now: float) -> None:
        self.db.execute(
            "INSERT INTO runs (id, name, created_at, finished_at, status, error, spec, "
            "environment, plan, runner) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                event.run_id,
                event.name,
                event.started_at,
                None,
                "running",
                None,
                json.dumps(event.spec),
                json.dumps(event.environment),
                json.dumps(event.steps),
                json.dumps(event.runner) if event.runner else None,
            ),
        )

    def _step_started(self, event: StepStarted, now: float) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO steps (run_id, idx, title, label, spec, workers, "
            "clients, server, status, started_at, resolved) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                event.run_id,
                event.step,
                event.title,
                json.dumps(event.label),
                json.dumps(event.spec),
                event.workers,
                event.clients,
                json.dumps(event.server),
                "running",
                now,
                json.dumps(event.resolved()),
            ),
        )

    def _interval(self, event: Interval, now: float) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO intervals (run_id, step, idx, elapsed, stats, point) "
            "VALUES (?,?,?,?,?,?)",
            (
                event.run_id,
                event.step,
                event.index,
                event.elapsed,
                json.dumps(event.stats.to_dict()),
                json.dumps(point(event).to_dict()),
            ),
        )

    def _notice(self, event: Notice, now: float) -> None:
        self.db.execute(
            "INSERT INTO notices VALUES (?,?,?,?,?)",
            (event.run_id, event.step, event.level, event.message, now),
        )

    def _step_finished(self, event: StepFinished, now: float) -> None:
        s = summarise(event.stats)
        self.db.execute(
            "UPDATE steps SET status=?, stats=?, ops_per_s=?, p50_us=?, p99_us=?, "
            "hit_rate=?, errors=?, finished_at=? WHERE run_id=? AND idx=?",
            (
                event.status,
                json.dumps(event.stats.to_dict()),
                s.ops_per_s,
                s.p(50.0),
                s.p(99.0),
                s.hit_rate,
                s.errors,
                now,
                event.run_id,
                event.step,
            ),
        )

    def _step_simulated(self, event: StepSimulated, now: float) -> None:
        self.db.execute(
            "UPDATE steps SET simulated=? WHERE run_id=? AND idx=?",
            (json.dumps(event.results), event.run_id, event.step),
        )

    def _run_finished(self, event: RunFinished, now: float) -> None:
        self._close_unfinished_steps(
            event.run_id, "failed" if event.status == "failed" else "interrupted"
        )
        self.db.execute(
            "UPDATE runs SET status=?, error=?, finished_at=? WHERE id=?",
            (event.status, event.error, now, event.run_id),
        )

    def _close_unfinished_steps(self, run_id: str, status: RunStatus) -> None:
        """A run that ends with a step still running (a second Ctrl-C, its process killed)
        keeps its complete intervals: its totals and listed figures are taken from them."""
        running = self.db.execute(
            "SELECT idx FROM steps WHERE run_id=? AND status='running'", (run_id,)
        ).fetchall()
        for (idx,) in running:
            intervals = StoredIntervals(self, run_id, idx)
            self.record(StepFinished(run_id, idx, status, _from_intervals(intervals)))

    def resolve(self, ref: str) -> str:
        """The one run `ref` names: its exact id, a unique id prefix, its exact name, or
        'last' (the newest). None is a StoreError; an empty reference, or one matching
        several runs, a RunRefError naming them."""
        if not ref.strip():
            raise RunRefError(
                "expected a run id, an id prefix, a name or 'last'; got an empty reference"
            )
        if ref == "last":
            row = self.db.execute("SELECT id FROM runs ORDER BY created_at DESC LIMIT 1").fetchone()
            if row is None:
                raise StoreError("no runs stored yet", str(self.path))
            return str(row[0])
        row = self.db.execute("SELECT id FROM runs WHERE id=?", (ref,)).fetchone()
        if row is not None:
            return str(row[0])
        escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.db.execute(
            "SELECT id, name FROM runs WHERE name=? OR id LIKE ? ESCAPE '\\' "
            "ORDER BY created_at DESC",
            (ref, escaped + "%"),
        ).fetchall()
        if len(rows) == 1:
            return str(rows[0][0])
        if not rows:
            raise StoreError(
                f"no run {ref!r} in the store (see `workbench runs list`)", str(self.path)
            )
        shown = ", ".join(f"{rid} ({name!r})" for rid, name in rows[:5])
        more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
        raise RunRefError(f"{ref!r} matches {len(rows)} runs: {shown}{more}; give more of the id")

    def load(self, ref: str) -> StoredRun:
        run_id = self.resolve(ref)
        r = self.db.execute(
            "SELECT id, name, created_at, finished_at, status, error, spec, environment, plan, "
            "runner FROM runs WHERE id=?",
            (run_id,),
        ).fetchone()
        steps = []
        for row in self.db.execute(
            "SELECT idx, title, label, spec, workers, clients, server, "
            "status, stats, resolved, simulated FROM steps WHERE run_id=? ORDER BY idx",
            (run_id,),
        ):
            intervals = StoredIntervals(self, run_id, row[0])
            stats = Stats.from_dict(json.loads(row[8])) if row[8] else _from_intervals(intervals)
            steps.append(
                StoredStep(
                    row[0],
                    row[1],
                    json.loads(row[2]),
                    json.loads(row[3]),
                    row[4],
                    row[5],
                    json.loads(row[6]),
                    row[7],
                    stats,
                    intervals,
                    json.loads(row[9]) if row[9] else {},
                    json.loads(row[10]) if row[10] else {},
                )
            )
        notices = [
            Notice(run_id, step, level, msg)
            for step, level, msg in self.db.execute(
                "SELECT step, level, message FROM notices WHERE run_id=? ORDER BY at", (run_id,)
            )
        ]
        return StoredRun(
            r[0],
            shown_name(r[1]),
            r[2],
            r[3],
            self._status(r[0], r[4]),
            ABANDONED_ERROR if r[0] in self._gone else r[5],
            json.loads(r[6]),
            json.loads(r[7]),
            json.loads(r[8]),
            steps,
            notices,
            json.loads(r[9]) if r[9] else {},
        )

    def _status(self, run_id: str, status: str) -> str:
        return "abandoned" if run_id in self._gone else status

    def list_runs(self, limit: int = 500) -> list[RunRow]:
        """Runs, newest first; each row's figures all come from one step, its fastest measured
        one (ops/s, p50, p99, hit rate and errors of the same step, never mixed)."""
        rows = self.db.execute(
            "WITH ranked AS (SELECT s.*, ROW_NUMBER() OVER (PARTITION BY s.run_id ORDER BY "
            "(s.ops_per_s IS NULL OR s.ops_per_s <= 0), s.ops_per_s DESC, s.idx) AS rn, "
            "COUNT(*) OVER (PARTITION BY s.run_id) AS n FROM steps s) "
            "SELECT r.id, r.name, r.created_at, r.status, r.spec, COALESCE(b.n, 0), "
            "b.ops_per_s, b.p50_us, b.p99_us, b.hit_rate, b.errors, b.title, b.clients, "
            "b.resolved, b.spec FROM runs r LEFT JOIN ranked b ON b.run_id = r.id AND b.rn = 1 "
            "ORDER BY r.created_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        ran = self._strategies_ran([r[0] for r in rows])
        out = []
        for row in rows:
            rid, name, created, status, spec, n, ops, p50, p99, hr, errs = row[:11]
            title, clients, resolved, step_spec = row[11:]
            system, strategy = target_and_strategy(json.loads(spec), ran.get(rid, []))
            measured = bool(ops and ops > 0)
            facts = json.loads(resolved) if resolved else {}
            step_strategy = facts.get("strategy") or (
                json.loads(step_spec).get("strategy", {}).get("name", "") if step_spec else ""
            )
            out.append(
                RunRow(
                    rid,
                    shown_name(name),
                    created,
                    self._status(rid, status),
                    system,
                    strategy,
                    n,
                    ops if measured else None,
                    p50 if measured else None,
                    p99 if measured else None,
                    hr if measured else None,
                    (errs or 0) if measured else 0,
                    title or "" if measured else "",
                    step_strategy if title else "",
                    clients if title else None,
                )
            )
        return out

    def step_figures(self, run_ids: list[str]) -> list[StepFigures]:
        """The stored figures of every step of these runs, in run and step order."""
        if not run_ids:
            return []
        marks = ", ".join("?" * len(run_ids))
        rows = self.db.execute(
            "SELECT run_id, idx, label, clients, status, ops_per_s, p50_us, p99_us, hit_rate, "
            f"errors FROM steps WHERE run_id IN ({marks}) ORDER BY run_id, idx",
            run_ids,
        )
        return [
            StepFigures(rid, idx, json.loads(label), clients, status, ops, p50, p99, hr, errs or 0)
            for rid, idx, label, clients, status, ops, p50, p99, hr, errs in rows
        ]

    def _strategies_ran(self, run_ids: list[str]) -> dict[str, list[str]]:
        """The strategy each started step recorded, per run, in step order."""
        ran: dict[str, list[str]] = {}
        for start in range(0, len(run_ids), 500):  # SQLite's bound-variable limit
            chunk = run_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for rid, resolved, spec in self.db.execute(
                f"SELECT run_id, resolved, spec FROM steps WHERE run_id IN ({marks}) "
                "ORDER BY run_id, idx",
                chunk,
            ):
                facts = json.loads(resolved) if resolved else {}
                name = facts.get("strategy") or json.loads(spec).get("strategy", {}).get("name")
                if name:
                    ran.setdefault(rid, []).append(str(name))
        return ran

    def rename(self, ref: str, name: str) -> None:
        check_name(name, given=True)
        self.db.execute("UPDATE runs SET name=? WHERE id=?", (name, self.resolve(ref)))

    def delete(self, ref: str) -> None:
        """Delete a run and all it measured; refused while its process is still running it
        (it would go on writing to a run that is gone)."""
        run_id = self.resolve(ref)
        row = self.db.execute("SELECT status, runner FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is not None and row[0] == "running":
            runner = json.loads(row[1]) if row[1] else {}
            if _alive_here(runner):
                raise RunActiveError(
                    f"is still running (pid {runner['pid']}); expected a finished run: stop it "
                    "first (Ctrl-C, or F8 in the TUI), or delete it once its process is gone",
                    run_id,
                )
        self.db.execute("DELETE FROM runs WHERE id=?", (run_id,))


def _alive_here(runner: dict[str, Any]) -> bool:
    """The run's process is on this host and still the same process (see `runner_gone`)."""
    return (
        runner.get("host") == platform.node()
        and isinstance(runner.get("pid"), int)
        and not runner_gone(runner)
    )


# How each kind of event is kept: one writer per event type.
_KEEPERS: dict[type, Callable[[Store, Any, float], None]] = {
    RunStarted: Store._run_started,
    StepStarted: Store._step_started,
    Interval: Store._interval,
    Notice: Store._notice,
    StepFinished: Store._step_finished,
    StepSimulated: Store._step_simulated,
    RunFinished: Store._run_finished,
}


def _last(intervals: Sequence[Interval]) -> Stats | None:
    try:
        return intervals[-1].stats
    except IndexError:
        return None


def _from_intervals(intervals: Iterable[Interval]) -> Stats:
    """A step that never finished (abandoned, or a crash): its totals from its intervals."""
    return merged((i.stats for i in intervals), concurrent=False)


def target_and_strategy(spec: dict[str, Any], ran: list[str]) -> tuple[str, str]:
    """What a run targets, as every face shows it: the swept systems and strategies too,
    and for a run that named no strategy, the ones its steps recorded running (`ran`)."""
    systems = [spec["target"]["system"]]
    strategies = [spec["strategy"]["name"] or "default"]
    for axis in spec.get("sweep", []):
        if axis["path"] == "target.system":
            systems = [str(v) for v in axis["values"]]
        elif axis["path"] == "target":
            systems = [str(v.get("system", DEFAULT_SYSTEM)) for v in axis["values"]]
        elif axis["path"] == "strategy.name":
            strategies = [str(v) for v in axis["values"]]
    if strategies == ["default"] and ran:
        strategies = list(dict.fromkeys(ran))
    return ",".join(dict.fromkeys(systems)), ",".join(strategies)
