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
from collections.abc import Callable, Iterable
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
from workbench.results.live import point
from workbench.results.metrics import Stats, merged, summarise
from workbench.results.store_listing import Listing
from workbench.results.store_listing import RunRow as RunRow
from workbench.results.store_listing import StepFigures as StepFigures
from workbench.results.store_tables import abandoned_with_open_steps, make_tables, refuse_foreign
from workbench.results.stored_run import StoredIntervals as StoredIntervals
from workbench.results.stored_run import StoredRun as StoredRun
from workbench.results.stored_run import StoredStep as StoredStep
from workbench.results.stored_run import target_and_strategy as target_and_strategy
from workbench.sdk.errors import RunActiveError, RunRefError, StoreError
from workbench.spec.model import check_name, shown_name

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
    # The load machine's hiccups over the interval (`Stats.hiccups`, the hiccup meter's
    # figures), kept beside the workers' statistics rather than inside them.
    ("intervals", "hiccups", "TEXT"),
)
# Added columns a reader does without (an old store read where it cannot be upgraded
# reads them as NULL): `Store.column`.
OPTIONAL_COLUMNS = {("intervals", "hiccups")}


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


class Store(Listing):
    """The results store. `read_only`: for commands that only read (list, show, report):
    it is opened without write access, never created, and changes nothing."""

    def __init__(self, path: Path | str | None = None, *, read_only: bool = False) -> None:
        self.path = Path(path) if path else default_path()
        protect_database(self.path)
        self.read_only = read_only
        self._gone: set[str] = set()  # read-only: runs whose process is gone (not marked)
        self._columns: dict[tuple[str, str], str] = {}  # optional columns: `column`
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
            self._optional_columns()
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
        self._optional_columns()
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
            if column not in have and (table, column) not in OPTIONAL_COLUMNS:
                raise StoreError(
                    "written by an older version of the workbench and read-only here: open it "
                    "once where it can be written to upgrade it",
                    str(self.path),
                )

    def column(self, table: str, column: str) -> str:
        """An optional column (`OPTIONAL_COLUMNS`) to select, or NULL in a store that does
        not have it (an old one read where it cannot be upgraded)."""
        return self._columns.get((table, column), "NULL")

    def _optional_columns(self) -> None:
        """Which optional columns this store has: asked once, as it is opened."""
        for table, column in OPTIONAL_COLUMNS:
            have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
            self._columns[(table, column)] = column if column in have else "NULL"

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
        stats = event.stats.to_dict()
        hiccups = stats.pop("hiccups", None)
        self.db.execute(
            "INSERT OR REPLACE INTO intervals (run_id, step, idx, elapsed, stats, point, "
            "hiccups) VALUES (?,?,?,?,?,?,?)",
            (
                event.run_id,
                event.step,
                event.index,
                event.elapsed,
                json.dumps(stats),
                json.dumps(point(event).to_dict()),
                json.dumps(hiccups) if hiccups is not None else None,
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


def _from_intervals(intervals: Iterable[Interval]) -> Stats:
    """A step that never finished (abandoned, or a crash): its totals from its intervals."""
    return merged((i.stats for i in intervals), concurrent=False)
