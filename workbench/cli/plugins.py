"""`workbench plugins`: the discovered cache systems; `new` scaffolds one, `check` tests one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from workbench.cli.common import ExitStatus, one_line_errors, out
from workbench.conformance import CHECKS, Target, run_checks
from workbench.sdk.adapter import CacheSystem
from workbench.sdk.discovery import plugin_statuses
from workbench.sdk.errors import SpecError
from workbench.sdk.options import Option
from workbench.sdk.scaffold import scaffold

app = typer.Typer(
    help="Discovered cache systems and client strategies (no command: list them).",
    invoke_without_command=True,
)


def _option_line(o: Option) -> str:
    extra = f" (from ${o.env})" if o.env else ""
    return f"      {o.name} = {o.default!r}  {o.describe_kind()}{extra}: {o.help}"


def describe(system: CacheSystem) -> list[str]:
    lines = [f"{system.name}: {system.description}"]
    for o in system.options.options:
        lines.append(_option_line(o))
    if system.server is not None:
        lines.append("    managed server options (target.managed = true, target.server.*):")
        lines += [_option_line(o) for o in system.server.options.options]
    for s in system.strategies:
        mark = " (default)" if s.name == system.default_strategy else ""
        mode = "blocking, one thread per client" if s.blocking else "asyncio"
        if s.engine == "native":
            mode = "native engine"
        ops = ", ".join(sorted(s.operations))
        lines.append(f"  strategy {s.name}{mark}: {s.description} [{mode}; {ops}]")
        lines += [_option_line(o) for o in s.options.options]
    return lines


@app.callback()
@one_line_errors
def plugins(ctx: typer.Context) -> None:
    """List every plugin: loaded ones with strategies and options, broken ones with the error."""
    if ctx.invoked_subcommand is not None:
        return
    for row in plugin_statuses():
        if row.system is None:
            out(f"{row.name}: BROKEN ({row.value}): {row.error}")
        else:
            for line in describe(row.system):
                out(line)
        out()


@app.command("new")
@one_line_errors
def new(
    name: Annotated[str, typer.Argument(help="plugin name, e.g. keydb (lower case, digits, _)")],
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="where to write the project; default ./workbench-NAME"),
    ] = None,
) -> None:
    """Write a pip-installable plugin package: pyproject, adapter module, conformance test."""
    root = scaffold(name, directory)
    out(f"wrote plugin {name!r} in {root}")
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        out(f"  {path.relative_to(root)}")
    out()
    out("next:")
    out(f"  pip install -e {root}        # then `workbench plugins` lists {name}")
    out(f"  workbench plugins check {name}")
    out(f"  workbench run --set target.system={name} --set load.duration=2")


@app.command("check")
@one_line_errors
def check(
    name: Annotated[str, typer.Argument(help="the plugin (cache system) to check")],
    strategy: Annotated[
        str | None, typer.Option("--strategy", help="check one strategy; default: all")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            # No -s here: in `workbench run` -s is --server (memtier's name).
            help="option=value for the system (strategy.X, server.X for the others)",
        ),
    ] = None,
    managed: Annotated[
        bool,
        typer.Option(
            "--managed",
            help="start the system's own server for the checks, and stop one to check errors",
        ),
    ] = False,
    only: Annotated[
        list[str] | None, typer.Option("--only", help="run only this check (repeatable)")
    ] = None,
) -> None:
    """The conformance kit: run the contract's checks against a live target."""
    unknown = [c for c in only or [] if c not in CHECKS]
    if unknown:
        raise SpecError(f"unknown check {unknown[0]!r}; checks: {', '.join(CHECKS)}", "--only")

    def on_target(t: Target) -> None:
        mode = "blocking" if t.strategy.blocking else "asyncio"
        opts = ", ".join(f"{k}={v!r}" for k, v in t.system_options.items()) or "no options"
        out(f"{t.system.name} / strategy {t.strategy.name} ({mode}): {opts}")

    results = asyncio.run(
        run_checks(
            name,
            strategy,
            set_ or [],
            managed=managed,
            only=only or (),
            on_target=on_target,
            on_result=lambda r: out(f"  {r.line()}"),
        )
    )
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "skip")}
    out(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    if counts["fail"]:
        raise typer.Exit(int(ExitStatus.ERROR))
