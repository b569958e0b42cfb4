"""The `workbench` command. With no subcommand it opens the TUI."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from typing import Annotated

from workbench.cli import stop_signals

stop_signals.install()  # first: a SIGTERM during the imports is an interruption too

try:
    import typer

    from workbench import __version__
    from workbench.cli.common import DEBUG, EXIT_CODES_HELP, StoreOption
    from workbench.sdk.scratch import sweep_dead_owners
except KeyboardInterrupt:  # a Ctrl-C while the imports load: nothing has started yet
    sys.stderr.write("interrupted\n")
    stop_signals.exiting(130)
    raise SystemExit(130) from None

# Every command, in the order --help lists them: (its module, the attribute that is its
# function or its typer group, whether it is a group). A command line that names one
# imports and builds that one only: every other command's imports and typer's building of
# its options cost each start some tenths of a second of CPU.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "run": ("workbench.cli.run", "run_command", False),
    "runs": ("workbench.cli.runs", "app", True),
    "plugins": ("workbench.cli.plugins", "app", True),
    "report": ("workbench.cli.report", "command", False),
    "profiles": ("workbench.cli.profiles", "app", True),
    "serve": ("workbench.cli.serve", "command", False),
    "check": ("workbench.cli.check", "command", False),
    "compare": ("workbench.cli.compare", "command", False),
    "search": ("workbench.cli.search", "command", False),
    "simulate": ("workbench.cli.simulate", "command", False),
    "mrc": ("workbench.cli.mrc", "command", False),
    "trace": ("workbench.cli.trace", "app", True),
    "doctor": ("workbench.cli.doctor", "command", False),
}


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"workbench {__version__}")
        raise typer.Exit()


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


def build_app(names: Iterable[str]) -> typer.Typer:
    """The `workbench` command with the commands `names` (of `COMMANDS`)."""
    built = typer.Typer(
        name="workbench",
        help="Cache Workbench: cache experiments with live throughput and latency "
        "percentiles.\n\n" + EXIT_CODES_HELP,
        invoke_without_command=True,
        no_args_is_help=False,
        add_completion=True,
        pretty_exceptions_enable=False,
    )
    built.callback()(main_callback)
    for name in names:
        module, attribute, group = COMMANDS[name]
        found = getattr(importlib.import_module(module), attribute)
        if group:
            built.add_typer(found, name=name)
        else:
            built.command(name)(found)
    return built


def named_command(argv: list[str]) -> str | None:
    """The command a command line names, None when it names none of `COMMANDS` (the TUI,
    --help, --version, a mistyped name) or completes one: then every command is built."""
    if any(key.startswith("_WORKBENCH_COMPLETE") for key in os.environ):
        return None
    args = iter(argv)
    for arg in args:
        if arg == "--store":  # the one top-level option with a value
            next(args, None)
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def __getattr__(name: str) -> typer.Typer:
    """`app`: the command with every command (what tests and typer's tools import)."""
    if name == "app":
        return build_app(COMMANDS)
    raise AttributeError(name)


def main() -> None:
    try:
        # What a killed workbench process left in the temporary folder (a managed server's
        # directory, a scratch trace) goes at the next start of any command.
        sweep_dead_owners()
        named = named_command(sys.argv[1:])
        build_app(COMMANDS if named is None else [named])()
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
