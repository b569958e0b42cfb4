"""Listing stored runs: each run in one row of its fastest step's figures, and every step's
figures for a listing by label. Read by `workbench runs`, the TUI's History and the
listing report; `Store` has these as methods (`workbench.results.store`)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from workbench.results.stored_run import target_and_strategy
from workbench.spec.model import shown_name


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


class Listing:
    """The listing queries of a store: its connection and the runs whose process is gone
    are the store's."""

    db: sqlite3.Connection
    _gone: set[str]

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
