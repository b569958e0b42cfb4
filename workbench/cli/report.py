"""`workbench report RUN... [--format F] [-o FILE]`: a stored run (or several, compared) as
markdown shaped like the source documents, or as JSON, CSV or an HdrHistogram log."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench.cli.common import ExitStatus, StoreOption, fail, one_line_errors, out, read_store
from workbench.files.output_files import check_output, protect_database, write_text
from workbench.report import FORMATS, render
from workbench.results.store import default_path

FORMAT_HELP = "; ".join(f"{name}: {desc}" for name, (_, desc) in FORMATS.items())


@one_line_errors
def command(
    runs: Annotated[
        list[str],
        typer.Argument(help="run ids, id prefixes, names, or 'last'; several give a comparison"),
    ],
    format_: Annotated[
        str, typer.Option("--format", "-f", help=f"one of {', '.join(FORMATS)}")
    ] = "table",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write to this file, not stdout")
    ] = None,
    chart: Annotated[
        str | None,
        typer.Option(
            help="with --format svg: only this chart (percentiles, throughput-over-time, "
            "latency-over-time, latency-vs-throughput, throughput-vs-swept)"
        ),
    ] = None,
    store: StoreOption = None,
) -> None:
    """A report of stored runs: table (default), criterion, wrk, gobench, hitrate, json, csv,
    hlog, html (a page with charts), svg (the charts). Several runs give one comparison,
    ratios against the first."""
    if format_ not in FORMATS:
        raise fail(
            f"unknown format {format_!r}; expected one of {', '.join(FORMATS)}",
            ExitStatus.BAD_INPUT,
        )
    if output is not None:
        protect_database(store or default_path())
        check_output(output, "--output")
    st = read_store(store)
    stored = [st.load(ref) for ref in runs]
    if chart and format_ != "svg":
        raise fail("--chart goes with --format svg", ExitStatus.BAD_INPUT)
    text = render(stored, format_, **({"chart": chart} if chart else {}))
    if output is None:
        out(text.rstrip("\n"))
        return
    try:
        write_text(output, text)
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}", ExitStatus.ERROR) from None
    typer.echo(f"wrote {format_} report of {len(stored)} run(s) to {output}", err=True)
