"""`workbench plugins`: the discovered cache systems, their strategies and options."""

from __future__ import annotations

import typer

from workbench.adapter import CacheSystem
from workbench.cli.common import one_line_errors, out
from workbench.options import Option
from workbench.plugins import plugin_statuses

app = typer.Typer(
    help="Discovered cache systems and client strategies.", invoke_without_command=True
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
