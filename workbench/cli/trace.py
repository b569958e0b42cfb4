"""`workbench trace`: make (synth), inspect (info) and convert cache trace files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Annotated, Any

import typer

from workbench.cli.common import StoreOption, one_line_errors, out, read_store
from workbench.files.output_files import check_output
from workbench.results.metrics import Stats
from workbench.results.step_text import outcomes_text
from workbench.results.store import StoredRun
from workbench.sdk.errors import WorkbenchError
from workbench.sdk.scratch import scratch_folder
from workbench.simulate import runner
from workbench.simulate.policies import INSTALL
from workbench.workload.traces.formats import FORMATS, format_of, read, writer
from workbench.workload.traces.info import analyze
from workbench.workload.traces.synth import synth as synth_requests

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
    check_output(output, "--output")
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
    libcachesim: Annotated[
        bool,
        typer.Option(
            "--libcachesim/--no-libcachesim",
            help="add libCacheSim's analyzer (its own process), when it is installed",
        ),
    ] = True,
    replay: Annotated[
        str | None,
        typer.Option(
            "--run",
            help="a stored run that replayed this trace (id, prefix, name or 'last'): what "
            "each op did in each of its steps",
        ),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Requests, objects, time span, op mix, size and TTL percentiles, one-hit wonders,
    the zipf exponent and the working set over time; with libcachesim installed, also its
    analyzer's compulsory miss ratio, zipf fit and mean frequency. With --run, what each op
    of the trace did in that run's replay: sent, its outcomes, or skipped."""
    name = format_of(str(path), fmt, "--format")
    stats = analyze(read(str(path), name), window)
    lcs = _libcachesim(path, name) if libcachesim and runner.available() else None
    replays = replayed(read_store(store).load(replay)) if replay else None
    if as_json:
        data: dict[str, Any] = {"path": str(path), "format": name, **stats.as_json()}
        if lcs is not None:
            data["libcachesim"] = lcs
        if replays is not None:
            data["replays"] = replays
        out(json.dumps(data, indent=2))
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
    _print_replays(replays or [])
    if libcachesim:
        _print_libcachesim(lcs)


def _print_libcachesim(lcs: dict[str, Any] | None) -> None:
    if lcs is None:
        out(f"  libCacheSim        not installed: {INSTALL}")
        return
    if "error" in lcs:
        out(f"  libCacheSim        {lcs['error']}")
        return
    miss = lcs.get("compulsory_miss_ratio", {})
    out("  libCacheSim's analyzer (its own process):")
    out(
        f"    compulsory misses  {miss.get('requests', 0):.2%} of requests, "
        f"{miss.get('bytes', 0):.2%} of bytes"
    )
    if "zipf_alpha" in lcs:  # the analyzer fits none to too few repeated objects
        out(f"    zipf alpha         {lcs['zipf_alpha']} (R² {lcs.get('zipf_r2')})")
    out(f"    mean frequency     {lcs.get('frequency_mean')} requests per object")


def _print_replays(replays: list[dict[str, Any]]) -> None:
    for r in replays:
        out(f"  replayed in run {r['run']} step {r['step']} ({r['target']}):")
        out(f"    hits {r['hits']:,}  misses {r['misses']:,}")
        for op, did in r["ops"].items():
            out(f"    {op:<9} {did['text']}")


def replayed(run: StoredRun) -> list[dict[str, Any]]:
    """What each op did in each step of a stored run: sent (with its outcomes) or
    skipped, by name, as the step's totals say."""
    return [
        {
            "run": run.id,
            "step": step.index + 1,
            "target": f"{step.system}/{step.strategy}",
            "hits": step.stats.hits,
            "misses": step.stats.misses,
            "ops": _op_results(step.stats),
        }
        for step in run.steps
    ]


def _op_results(t: Stats) -> dict[str, dict[str, Any]]:
    ops: dict[str, dict[str, Any]] = {}
    for op, hist in t.hist.items():
        sent = hist.get_total_count()
        outcomes = t.outcomes.get(op, {})
        text = f"{sent:,} sent" + (f" ({outcomes_text(outcomes)})" if outcomes else "")
        ops[op] = {"sent": sent, "outcomes": dict(outcomes), "text": text}
    for what, n in t.skipped.items():
        ops.setdefault(what, {"sent": 0, "outcomes": {}, "text": ""})
        ops[what]["skipped"] = n
        ops[what]["text"] = ", ".join(x for x in (ops[what]["text"], f"{n:,} skipped") if x)
    return ops


def _libcachesim(path: Path, name: str) -> dict[str, Any]:
    """libCacheSim's analyzer over the file; another format goes through a temporary
    oracleGeneral copy (its reader's format), which reads every op but delete as a get.
    Its failure is one line of the output ({"error": ...}), not the command's."""
    try:
        if name == "oracleGeneral":
            return runner.analyze(str(path))
        with scratch_folder("analyze") as tmp:
            copy = str(Path(tmp) / "copy.oracleGeneral")
            writer("oracleGeneral")(read(str(path), name), copy)
            return runner.analyze(copy)
    except (WorkbenchError, subprocess.TimeoutExpired) as exc:
        return {"error": f"the analyzer failed: {exc}"}


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
    check_output(output, "--output")
    n = writer(dst)(read(str(source), src), str(output))
    out(f"wrote {n} requests to {output} ({dst})")
