"""Making a results store's tables in a SQLite file, and refusing a file that is not one."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from workbench.sdk.errors import StoreError


def refuse_foreign(db: sqlite3.Connection, path: Path) -> None:
    """Another program's SQLite file is left as it is (it had our tables added to it, and
    was switched to WAL): a StoreError naming some of its tables."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    if tables and "runs" not in tables:
        db.close()
        raise StoreError(
            f"not a results store: another program's SQLite file (it holds "
            f"{', '.join(sorted(tables)[:5])}); name a new file or an existing store",
            str(path),
        )


def make_tables(
    db: sqlite3.Connection, schema: str, added_columns: Sequence[tuple[str, str, str]]
) -> None:
    """The tables and every later column, made by one writer at a time: processes opening a
    new store at once each found a column missing and added it (duplicate column name)."""
    db.executescript("BEGIN IMMEDIATE;" + schema)
    for table, column, declaration in added_columns:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    db.execute("COMMIT")


def abandoned_with_open_steps(db: sqlite3.Connection) -> list[str]:
    """Abandoned runs with a step still stored as running (marked before such steps were
    closed from their intervals, or just now)."""
    return [
        str(row[0])
        for row in db.execute(
            "SELECT DISTINCT s.run_id FROM steps s JOIN runs r ON r.id = s.run_id "
            "WHERE s.status='running' AND r.status='abandoned'"
        ).fetchall()
    ]
