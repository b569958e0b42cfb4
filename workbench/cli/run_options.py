"""The options of `workbench run` that only it takes, declared once: the command's
signature then reads as the list of what it accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench.simulate.policies import POLICIES

OUT_PANEL = "Files from the run"
JSON_OUT = "the stored run as JSON (--report json:FILE); memtier --json-out-file"

ProfileArgument = Annotated[
    Path | None,
    typer.Argument(
        help="a TOML profile, or the name of one in profiles/ or shipped with the "
        "workbench (quick, kv-store...); none: a short default run on the embedded cache"
    ),
]

SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="override any spec field, e.g. load.concurrency=[1,4,16] (a list sweeps); "
        "applied after the flags",
    ),
]

NameOption = Annotated[str | None, typer.Option(help="name of the stored run")]

QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="no live lines")]

PrintIdOption = Annotated[
    bool,
    typer.Option(
        "--print-id",
        help="print the run id alone on stdout (everything else goes to stderr), "
        "for scripts: `id=$(workbench run --print-id ...)`",
    ),
]

ReportOption = Annotated[
    list[str] | None,
    typer.Option(
        "--report",
        metavar="FORMAT[:FILE]",
        help="a report when the run ends, as `workbench report` gives it; no FILE: on "
        "stdout after the summary; repeatable",
        rich_help_panel=OUT_PANEL,
    ),
]

JsonOutOption = Annotated[
    Path | None,
    typer.Option("--json-out", "--json-out-file", rich_help_panel=OUT_PANEL, help=JSON_OUT),
]

CsvOutOption = Annotated[
    Path | None,
    typer.Option(
        help="one CSV row per interval and per step (--report csv:FILE)",
        rich_help_panel=OUT_PANEL,
    ),
]

HlogOutOption = Annotated[
    Path | None,
    typer.Option(help="HdrHistogram interval log (--report hlog:FILE)", rich_help_panel=OUT_PANEL),
]

AllowRemoteOption = Annotated[
    bool,
    typer.Option(
        "--allow-remote",
        help="allow a target that is not on this machine (target.allow_remote = true)",
    ),
]

BaselineOption = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        metavar="RUN|FILE.json",
        help="when the run ends, compare it with this run (id, name, 'last') or exported "
        "JSON file, as `workbench compare BASELINE NEW` does",
    ),
]

TraceOutOption = Annotated[
    str | None,
    typer.Option(
        "--trace-out",
        metavar="FILE",
        help="write what the workers sent in the measured phase as a libCacheSim "
        "oracleGeneral trace (workload.trace_out); several steps: FILE.stepN each",
        rich_help_panel=OUT_PANEL,
    ),
]

SimulateOption = Annotated[
    str | None,
    typer.Option(
        "--simulate",
        metavar="POLICIES",
        help="replay each step's requests through these eviction policies at the "
        "server's limit (libCacheSim) and show them beside the measured hit rates: "
        f"{', '.join(POLICIES)} or all (simulate.policies)",
        rich_help_panel=OUT_PANEL,
    ),
]
