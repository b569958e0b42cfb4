"""What every command shares: exit codes, the store option, one-line errors."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import IntEnum
from functools import wraps
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer

from workbench.results.store import Store
from workbench.sdk.errors import (
    PluginError,
    RunActiveError,
    RunRefError,
    SpecError,
    StoreError,
    TargetError,
    WorkbenchError,
)


class ExitStatus(IntEnum):
    """What `workbench` exits with (listed in --help and the README)."""

    OK = 0
    RUN_FAILED = 1  # the run failed, the target could not be reached, or any other error
    BAD_INPUT = 2  # a bad profile, flag or argument: nothing was run
    CHECKS_FAILED = 3  # the run completed but a check on its figures failed
    INTERRUPTED = 130  # stopped by Ctrl-C or SIGTERM; what was measured is stored
    ERROR = 1
    TARGET = 1


EXIT_CODES_HELP = (
    "Exit status: 0 ok, 1 run failed (or the target unreachable), 2 bad input (nothing run), "
    "3 checks failed, 130 interrupted."
)


StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        envvar="WORKBENCH_STORE",
        help="results store (SQLite file); default ~/.local/share/cache-workbench/",
    ),
]

DEBUG = {"on": False}
P = ParamSpec("P")
R = TypeVar("R")


def open_store(path: Path | None) -> Store:
    """The store, for a command that writes (a run, rename, delete); created if need be."""
    return Store(path)


def read_store(path: Path | None) -> Store:
    """The store, for a command that only reads: opened read-only, never created."""
    return Store(path, read_only=True)


def fail(message: str, status: ExitStatus) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(int(status))


def one_line_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn workbench errors into one line and an exit code; tracebacks only with --debug."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except WorkbenchError as exc:
            if DEBUG["on"]:
                raise
            table = {
                SpecError: ExitStatus.BAD_INPUT,
                PluginError: ExitStatus.BAD_INPUT,
                TargetError: ExitStatus.RUN_FAILED,
                StoreError: ExitStatus.ERROR,
                RunRefError: ExitStatus.BAD_INPUT,
                RunActiveError: ExitStatus.BAD_INPUT,
            }
            # The nearest listed class decides, so a subclass (a trace's format error is a
            # SpecError) exits as its family does.
            status = next((table[k] for k in type(exc).__mro__ if k in table), ExitStatus.ERROR)
            raise fail(str(exc), status) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(int(ExitStatus.INTERRUPTED)) from None
        except Exception as exc:
            if DEBUG["on"]:
                raise
            typer.echo(
                f"error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", err=True
            )
            raise typer.Exit(int(ExitStatus.ERROR)) from None

    return wrapper


_STDOUT = {"open": True, "to_stderr": False}


def only_result_on_stdout() -> None:
    """From now on `out` writes to stderr: stdout is kept for one result (`--print-id`)."""
    _STDOUT["to_stderr"] = True


def result(text: str) -> None:
    """The one line a script reads from stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def out(text: str = "") -> None:
    """Print a line; a reader that went away (`| head`) must not stop a run."""
    if _STDOUT["to_stderr"]:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
        return
    if not _STDOUT["open"]:
        return
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except OSError:  # a reader gone (`| head`), or a closed terminal (EIO after SIGHUP)
        _STDOUT["open"] = False
        # Point stdout at /dev/null so the interpreter's final flush does not fail either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
