"""`workbench runs list|show|rename|delete`: the stored runs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from typing import Annotated

import typer

from workbench.cli.common import (
    ExitStatus,
    StoreOption,
    fail,
    one_line_errors,
    open_store,
    out,
    read_store,
)
from workbench.cli.format import step_summary
from workbench.report.listing import GroupRow, group_rows
from workbench.results.metrics import format_us
from workbench.results.store import RunRow, StepFigures, default_path

JsonOption = Annotated[bool, typer.Option("--json", help="JSON for scripts")]

app = typer.Typer(help="List, show, rename and delete stored runs.", no_args_is_help=True)


MAX_GROUP_ROWS = 12  # swept values listed under a run; more: `runs show`
HEAD = (
    f"{'id':<21} {'name':<28} {'when':<16} {'status':<11} {'system':<10} "
    f"{'strategy':<15} {'clients':>7} {'steps':>5} {'best ops/s':>12} {'p50':>8} "
    f"{'p99':>8} {'hit rate':>8} {'errors':>7}"
)


def _figures(ops: float | None, p50: float | None, p99: float | None, hr: float | None) -> str:
    measured = ops is not None
    return (
        f"{f'{ops:,.0f}' if measured else '-':>12} "
        f"{format_us(p50) if measured and p50 is not None else '-':>8} "
        f"{format_us(p99) if measured and p99 is not None else '-':>8} "
        f"{f'{hr:.1%}' if hr is not None else '-':>8}"
    )


def _run_line(r: RunRow) -> str:
    when = dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M")
    errors = f"{r.errors:,}" if r.ops_per_s is not None else "-"
    clients = str(r.clients) if r.clients is not None else "-"
    strategy = r.step_strategy or r.strategy or "-"
    return (
        f"{r.id:<21} {r.name[:28]:<28} {when:<16} {r.status:<11} {r.system[:10]:<10} "
        f"{strategy[:15]:<15} {clients:>7} {r.steps:>5} "
        f"{_figures(r.ops_per_s, r.p50_us, r.p99_us, r.hit_rate)} {errors:>7}"
    )


def _group_lines(run_id: str, found: list[GroupRow]) -> list[str]:
    """A row per swept value under its run: the median of its repeats."""
    if len(found) > MAX_GROUP_ROWS:
        return [f"  ({len(found)} swept values: `workbench runs show {run_id}` lists them)"]
    out = []
    for g in found:
        name = g.title + (f" ({g.repeats} repeats)" if g.repeats > 1 else "")
        figures = _figures(g.ops_per_s, g.p50_us, g.p99_us, g.hit_rate)
        errors = f"{g.errors:,}" if g.ops_per_s is not None else "-"
        out.append(f"  {name[:93]:<93} {g.clients:>7} {g.repeats:>5} {figures} {errors:>7}")
    return out


@app.command("list")
@one_line_errors
def list_runs(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Every stored run, newest first; a run of several steps also by swept value (each the
    median of its repeats)."""
    # No store yet is no runs yet: a read creates nothing.
    st = read_store(store) if (store or default_path()).exists() else None
    rows = st.list_runs() if st is not None else []
    several = [r.id for r in rows if r.steps > 1]
    by_run: dict[str, list[StepFigures]] = {}
    for figures in st.step_figures(several) if st is not None else []:
        by_run.setdefault(figures.run_id, []).append(figures)
    grouped = {rid: group_rows(steps) for rid, steps in by_run.items()}
    if as_json:
        docs = [
            {**dataclasses.asdict(r)}
            | (
                {"groups": [dataclasses.asdict(g) for g in grouped[r.id]]}
                if r.id in grouped
                else {}
            )
            for r in rows
        ]
        out(json.dumps(docs, indent=2))
        return
    if not rows:
        out("no runs stored yet: try `workbench run`")
        return
    out(HEAD)
    for r in rows:
        out(_run_line(r))
        if r.id in grouped:
            out("\n".join(_group_lines(r.id, grouped[r.id])))
    if several:
        out(
            "(a run of several steps shows its fastest step, then a row per swept value with "
            "the median of its repeats: `workbench runs show ID` for every step)"
        )


@app.command("show")
@one_line_errors
def show(
    run: Annotated[str, typer.Argument(help="run id, id prefix, name, or 'last'")],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """A stored run: its spec, environment, notices and per-step figures."""
    stored = read_store(store).load(run)
    if as_json:  # the same document as `workbench report RUN --format json`
        from workbench.report import render

        out(render(stored, "json").rstrip("\n"))
        return
    view = stored.view()
    env = stored.environment
    out(
        f"run {stored.id} '{stored.name}' {stored.status}"
        + (f": {stored.error}" if stored.error else "")
    )
    out(
        f"started {dt.datetime.fromtimestamp(stored.created_at):%Y-%m-%d %H:%M:%S} on "
        f"{env.get('host')} ({env.get('cpus')} CPUs, {env.get('cpu_model', '')}), "
        f"Python {env.get('python')}"
    )
    systems, strategies = stored.target()
    out(
        f"target {systems} strategy {strategies}; workload "
        f"{stored.spec['workload']['mix']} keys {stored.spec['workload']['keys']} "
        f"{stored.spec['workload']['key_distribution']} values "
        f"{stored.spec['workload']['value_size']}"
    )
    if stored.allow_remote:
        out("remote targets allowed (target.allow_remote = true)")
    if view.notices_dropped:
        out(f"({view.notices_dropped} earlier notices: `workbench report {stored.id} -f json`)")
    for n in view.notices:
        out(n)
    for step in view.steps:
        for line in step_summary(step):
            out(line)


@app.command("rename")
@one_line_errors
def rename(run: str, name: str, store: StoreOption = None) -> None:
    """Give a stored run a new name."""
    st = open_store(store)
    run_id = st.resolve(run)
    st.rename(run_id, name)
    out(f"renamed {run_id} to {name!r}")


@app.command("delete")
@one_line_errors
def delete(
    run: Annotated[str, typer.Argument(help="run id, unique id prefix, name, or 'last'")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="delete without asking")] = False,
    store: StoreOption = None,
) -> None:
    """Delete a stored run and everything measured in it (asks first on a terminal)."""
    st = open_store(store)
    run_id = st.resolve(run)
    if not yes:
        if not sys.stdin.isatty():
            raise fail(
                f"not deleting {run_id} without confirmation: add --yes", ExitStatus.BAD_INPUT
            )
        name = st.load(run_id).name
        if not typer.confirm(f"delete run {run_id} ({name!r})?", default=False):
            out("nothing deleted")
            return
    st.delete(run_id)
    out(f"deleted {run_id}")
