"""What every command shares: exit codes, the store option, one-line errors."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import IntEnum
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from workbench.errors import PluginError, SpecError, StoreError, TargetError, WorkbenchError
from workbench.store import Store


class ExitStatus(IntEnum):
    OK = 0
    ERROR = 1
    BAD_INPUT = 2
    TARGET = 3  # `plugins check`: the target cannot be reached
    CHECKS_FAILED = 3  # `run`, `check`, `search`: a threshold was not met (run stored)
    RUN_FAILED = 4
    INTERRUPTED = 130


StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        envvar="WORKBENCH_STORE",
        help="results store (SQLite file); default ~/.local/share/cache-workbench/",
    ),
]

DEBUG = {"on": False}
F = TypeVar("F", bound=Callable[..., Any])


def open_store(path: Path | None) -> Store:
    return Store(path)


def fail(message: str, status: ExitStatus) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(int(status))


def one_line_errors(fn: F) -> F:
    """Turn workbench errors into one line and an exit code; tracebacks only with --debug."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except WorkbenchError as exc:
            if DEBUG["on"]:
                raise
            status = {
                SpecError: ExitStatus.BAD_INPUT,
                PluginError: ExitStatus.BAD_INPUT,
                TargetError: ExitStatus.TARGET,
                StoreError: ExitStatus.ERROR,
            }.get(type(exc), ExitStatus.ERROR)
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

    return wrapper  # type: ignore[return-value]


_STDOUT = {"open": True}


def out(text: str = "") -> None:
    """Print a line; a reader that went away (`| head`) must not stop a run."""
    if not _STDOUT["open"]:
        return
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _STDOUT["open"] = False
        # Point stdout at /dev/null so the interpreter's final flush does not fail either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
