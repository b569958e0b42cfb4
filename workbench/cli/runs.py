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
from workbench.results.metrics import format_us
from workbench.results.store import default_path

JsonOption = Annotated[bool, typer.Option("--json", help="JSON for scripts")]

app = typer.Typer(help="List, show, rename and delete stored runs.", no_args_is_help=True)


@app.command("list")
@one_line_errors
def list_runs(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Every stored run, newest first."""
    # No store yet is no runs yet: a read creates nothing.
    rows = read_store(store).list_runs() if (store or default_path()).exists() else []
    if as_json:
        out(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
        return
    if not rows:
        out("no runs stored yet: try `workbench run`")
        return
    out(
        f"{'id':<21} {'name':<28} {'when':<16} {'status':<11} {'system':<10} "
        f"{'strategy':<15} {'clients':>7} {'steps':>5} {'best ops/s':>12} {'p50':>8} "
        f"{'p99':>8} {'hit rate':>8} {'errors':>7}"
    )
    for r in rows:
        when = dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M")
        measured = r.ops_per_s is not None
        ops = f"{r.ops_per_s:,.0f}" if measured else "-"
        p50 = format_us(r.p50_us) if measured and r.p50_us is not None else "-"
        p99 = format_us(r.p99_us) if measured and r.p99_us is not None else "-"
        hr = f"{r.hit_rate:.1%}" if r.hit_rate is not None else "-"
        errors = f"{r.errors:,}" if measured else "-"
        clients = str(r.clients) if r.clients is not None else "-"
        strategy = r.step_strategy or r.strategy or "-"
        out(
            f"{r.id:<21} {r.name[:28]:<28} {when:<16} {r.status:<11} {r.system[:10]:<10} "
            f"{strategy[:15]:<15} {clients:>7} {r.steps:>5} {ops:>12} {p50:>8} {p99:>8} "
            f"{hr:>8} {errors:>7}"
        )
    if any(r.steps > 1 for r in rows):
        out("(a run of several steps shows its fastest step: `workbench runs show ID` for all)")


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
