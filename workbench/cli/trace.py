"""`workbench trace`: make (synth), inspect (info) and convert cache trace files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from workbench.cli.common import one_line_errors, out
from workbench.traces.formats import FORMATS, format_of, read, writer
from workbench.traces.info import analyze
from workbench.traces.synth import synth as synth_requests

app = typer.Typer(
    help="Cache traces (oracleGeneral, twitter, csv; .zst read and written directly).",
    no_args_is_help=True,
)
FORMAT_HELP = f"{', '.join(FORMATS)} (default: from the file name)"


@app.command("synth")
@one_line_errors
def synth(
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="FILE.oracleGeneral[.zst], FILE.twitter.csv[.zst] or FILE.csv[.zst]",
        ),
    ],
    requests: Annotated[int, typer.Option("--requests", help="requests to write")] = 100_000,
    objects: Annotated[int, typer.Option("--objects", help="distinct objects")] = 10_000,
    dist: Annotated[str, typer.Option("--dist", help="popularity, e.g. zipf(0.9)")] = "zipf(0.9)",
    sizes: Annotated[
        str, typer.Option("--sizes", help="value sizes, one per object")
    ] = "uniform(10,1000)",
    seed: Annotated[int, typer.Option("--seed")] = 1,
    rate: Annotated[float, typer.Option("--rate", help="requests per second of trace time")] = 1000,
    ttl: Annotated[int, typer.Option("--ttl", help="TTL in seconds on every request, 0: none")] = 0,
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
) -> None:
    """Write a synthetic trace from the workbench's own distributions."""
    target = format_of(str(output), fmt, "--format")
    gen = synth_requests(requests, objects, dist, sizes, seed, rate, ttl)
    n = writer(target)(gen, str(output))
    out(f"wrote {n} requests over {objects} objects to {output} ({target})")


@app.command("info")
@one_line_errors
def info(
    path: Annotated[Path, typer.Argument(help="a trace file")],
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    window: Annotated[
        int, typer.Option("--window", help="requests per working-set sample", min=1)
    ] = 100_000,
) -> None:
    """Requests, objects, time span, op mix, size and TTL percentiles, one-hit wonders,
    the zipf exponent and the working set over time."""
    name = format_of(str(path), fmt, "--format")
    stats = analyze(read(str(path), name), window)
    if as_json:
        out(json.dumps({"path": str(path), "format": name, **stats.as_json()}, indent=2))
        return
    out(f"{path} ({name})")
    out(f"  requests           {stats.requests}")
    out(f"  distinct objects   {stats.objects}")
    out(f"  time span          {stats.span:g} s ({stats.start:g} .. {stats.end:g})")
    out("  ops                " + ", ".join(f"{k} {v}" for k, v in stats.ops.items()))
    out("  value size         " + _pcts(stats.size_percentiles))
    out("  ttl (s)            " + _pcts(stats.ttl_percentiles))
    out(f"  one-hit wonders    {stats.one_hit_wonder_share:.1%} of objects")
    zipf = "n/a (too few repeated objects)" if stats.zipf_exponent is None else stats.zipf_exponent
    out(f"  zipf exponent fit  {zipf}")
    out(f"  working set        distinct objects per {window} requests, from trace time:")
    for row in stats.working_set:
        out(f"    {row['from_s']:>12g} s  {int(row['objects'])}")


def _pcts(p: dict[str, int]) -> str:
    return "  ".join(f"{k} {v}" for k, v in p.items()) or "-"


@app.command("convert")
@one_line_errors
def convert(
    source: Annotated[Path, typer.Argument(help="the trace to read")],
    output: Annotated[Path, typer.Option("--output", "-o", help="the trace to write")],
    from_fmt: Annotated[str | None, typer.Option("--from", help=FORMAT_HELP)] = None,
    to_fmt: Annotated[str | None, typer.Option("--to", help=FORMAT_HELP)] = None,
) -> None:
    """Convert between formats (and to or from .zst). oracleGeneral keeps no ops, key sizes
    or TTLs: converting to it drops deletes and reads everything else as gets."""
    src = format_of(str(source), from_fmt, "--from")
    dst = format_of(str(output), to_fmt, "--to")
    n = writer(dst)(read(str(source), src), str(output))
    out(f"wrote {n} requests to {output} ({dst})")
