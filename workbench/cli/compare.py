"""`workbench compare BASE NEW... [--noise 2%] [--fail-on-regression 'p99:+5%']`: did it
change? Each step of each NEW run against the same step of BASE, with a 95% interval and a
verdict per figure (`workbench.report.changes`); one run alone: its swept values against
the first. Runs are stored runs or exported JSON files (a baseline kept in a repository)."""

from __future__ import annotations

from typing import Annotated

import typer

from workbench.cli.common import ExitStatus, StoreOption, fail, one_line_errors
from workbench.cli.compare_options import (
    DEFAULT_NOISE,
    FailOnRegressionOption,
    NoiseOption,
    parse_noise,
)

FORMATS = ("text", "markdown", "json")


@one_line_errors
def command(
    base: Annotated[
        str,
        typer.Argument(help="the base: run id, id prefix, name, 'last', or an exported JSON file"),
    ],
    new: Annotated[
        list[str] | None,
        typer.Argument(
            help="the run(s) to judge against the base (the same forms); none: "
            "the base's swept values against its first"
        ),
    ] = None,
    noise: NoiseOption = DEFAULT_NOISE,
    fail_on_regression: FailOnRegressionOption = None,
    format_: Annotated[
        str, typer.Option("--format", "-f", help=f"one of {', '.join(FORMATS)}")
    ] = "text",
    store: StoreOption = None,
) -> None:
    """Did it change? Each figure (ops/s, p50, p99, p99.9, error share, hit rate) of each
    step of NEW against BASE: the change with its 95% interval and improved, regressed or
    no change. Bootstrap over the repeats when both have 3 or more, else over blocks of
    intervals; too few samples gets no verdict.

    Exit codes: 0 compared (and every --fail-on-regression passed); 1 an error; 2 bad
    input; 3 a --fail-on-regression failed."""
    if format_ not in FORMATS:
        raise fail(
            f"unknown format {format_!r}; expected one of {', '.join(FORMATS)}",
            ExitStatus.BAD_INPUT,
        )
    threshold = parse_noise(noise)
    checks = list(fail_on_regression or [])
    from workbench.cli import comparing  # numpy and the bootstrap: loaded for this command

    comparing.parse_all(checks)  # a malformed check is refused before anything is read
    runs = [comparing.read_run(r) for r in comparing.load_runs([base, *(new or [])], store)]
    comparisons = comparing.comparisons_of(runs[0], runs[1:], threshold)
    comparing.show(comparisons, format_)
    if not comparing.judge(checks, comparisons):
        raise typer.Exit(int(ExitStatus.CHECKS_FAILED))
