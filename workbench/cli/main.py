"""The `workbench` command. With no subcommand it opens the TUI."""

from __future__ import annotations

from typing import Annotated

import typer

from workbench import __version__
from workbench.cli import plugins, runs
from workbench.cli.common import DEBUG, EXIT_CODES_HELP, StoreOption
from workbench.cli.run import run_command

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


def _optional_commands() -> None:
    """Nouns that live in their own modules and may grow independently."""
    import importlib

    for module, name in (
        ("workbench.cli.report", "report"),
        ("workbench.cli.profiles", "profiles"),
        ("workbench.cli.serve", "serve"),
    ):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        if hasattr(mod, "app"):
            app.add_typer(mod.app, name=name)
        else:
            app.command(name)(mod.command)


_optional_commands()


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
    if ctx.invoked_subcommand is None:
        from workbench.tui.app import run_app

        run_app(store=store)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
