"""The `workbench` command. With no subcommand it opens the TUI."""

from __future__ import annotations

import os
import sys
from typing import Annotated

from workbench.cli import stop_signals

stop_signals.install()  # first: a SIGTERM during the imports is an interruption too

try:
    import typer

    from workbench import __version__
    from workbench.cli import (
        check,
        compare,
        doctor,
        mrc,
        plugins,
        profiles,
        report,
        runs,
        search,
        serve,
        simulate,
        trace,
    )
    from workbench.cli.common import DEBUG, EXIT_CODES_HELP, StoreOption
    from workbench.cli.run import run_command
except KeyboardInterrupt:  # a Ctrl-C while the imports load: nothing has started yet
    sys.stderr.write("interrupted\n")
    stop_signals.exiting(130)
    raise SystemExit(130) from None

app = typer.Typer(
    name="workbench",
    help="Cache Workbench: cache experiments with live throughput and latency percentiles.\n\n"
    + EXIT_CODES_HELP,
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=True,
    pretty_exceptions_enable=False,
)
app.command("run")(run_command)
app.add_typer(runs.app, name="runs")
app.add_typer(plugins.app, name="plugins")
app.command("report")(report.command)
app.add_typer(profiles.app, name="profiles")
app.command("serve")(serve.command)
app.command("check")(check.command)
app.command("compare")(compare.command)
app.command("search")(search.command)
app.command("simulate")(simulate.command)
app.command("mrc")(mrc.command)
app.add_typer(trace.app, name="trace")
app.command("doctor")(doctor.command)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"workbench {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
    store: StoreOption = None,
) -> None:
    """Opens the interactive workbench when no command is given."""
    DEBUG["on"] = debug
    if store is not None:
        # `workbench --store X <command>`: the command's own --store reads this variable
        # (its option is parsed after this callback), so X wins over an inherited one.
        os.environ["WORKBENCH_STORE"] = str(store)
    if ctx.invoked_subcommand is None:
        # The one place the CLI reaches the TUI (an allowed import-linter seam), imported
        # here because textual costs every other command its start-up time.
        from workbench.tui.app import run_app

        run_app(store=store)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # a Ctrl-C while typer builds the commands, before any runs
        sys.stderr.write("interrupted\n")
        stop_signals.exiting(130)
        raise SystemExit(130) from None
    except SystemExit as done:  # typer ends every command so
        code = done.code
        stop_signals.exiting(code if isinstance(code, int) else (0 if code is None else 1))
        raise


if __name__ == "__main__":
    main()
