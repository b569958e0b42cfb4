"""`workbench mrc PROFILE --sizes 256MiB,...,4GiB [--measure]`: hit rate against cache size,
simulated for every policy (libCacheSim) and measured on the real servers at chosen sizes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli.common import ExitStatus, StoreOption, fail, one_line_errors, open_store, out
from workbench.files.output_files import check_output, protect_database, write_text
from workbench.results.store import default_path
from workbench.sdk.errors import SpecError
from workbench.sdk.options import parse_size
from workbench.simulate.policies import POLICIES, parse_policies
from workbench.simulate.runner import require
from workbench.spec.load import read_profile
from workbench.spec.profile_files import find_profile
from workbench.spec.steps import load_spec

# The curves' modules (numpy, the charts) are imported by the command when it runs, not
# here: every other command of the CLI would load them at its start.
if TYPE_CHECKING:
    from workbench.report.mrc import Curves


def _sizes(text: str, where: str) -> list[int]:
    sizes = sorted({parse_size(part.strip(), where) for part in text.split(",") if part.strip()})
    if not sizes or sizes[0] < 1:
        raise SpecError(f"expected sizes above 0 such as 256MiB,1GiB; got {text!r}", where)
    return sizes


@one_line_errors
def command(
    profile: Annotated[Path, typer.Argument(help="a TOML profile, or the name of one")],
    sizes: Annotated[
        str, typer.Option("--sizes", help="cache sizes, e.g. 256MiB,512MiB,1GiB,2GiB,4GiB")
    ],
    policies: Annotated[
        str, typer.Option("--policies", "-p", help=f"{', '.join(POLICIES)}, or all")
    ] = "all",
    unit: Annotated[
        str,
        typer.Option(help="bytes, or objects (every object counts 1; sizes are counts)"),
    ] = "bytes",
    measure_: Annotated[
        bool,
        typer.Option(
            "--measure", help="also run the profile's real servers at the --measure-sizes"
        ),
    ] = False,
    measure_sizes: Annotated[
        str | None,
        typer.Option(help="the sizes the servers run at (default: every --sizes)"),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="the chart: FILE.svg, or FILE.html with the table"),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Hit rate against cache size for a profile's workload: a line per eviction policy
    (simulated by libCacheSim over the profile's own requests, in seconds) and, with
    --measure, a point per real server at the sizes it ran at. Prints a table."""
    from workbench.report import mrc as mrc_report
    from workbench.run.mrc import measure, simulated_curves

    if unit not in ("bytes", "objects"):
        raise fail(f"--unit: expected bytes or objects; got {unit!r}", ExitStatus.BAD_INPUT)
    names = parse_policies(policies, "--policies")
    wanted = _sizes(sizes, "--sizes")
    if output is not None:
        if measure_:
            protect_database(store or default_path())
        check_output(output, "--output")
    require()
    path = find_profile(profile)
    spec = load_spec(path)
    curves = simulated_curves(spec, spec.name, wanted, names, unit)
    out(
        f"simulated {curves.requests:,} requests x {len(names)} policies x {len(wanted)} "
        f"sizes in {curves.seconds:.1f} s (libCacheSim)"
    )
    if measure_:
        at = _sizes(measure_sizes, "--measure-sizes") if measure_sizes else wanted
        asyncio.run(measure(read_profile(path), str(path), at, open_store(store), curves))
    for line in mrc_report.table(curves):
        out(line)
    if output is not None:
        text = mrc_report.html(curves) if output.suffix == ".html" else _svg(curves)
        write_text(output, text)
        typer.echo(f"wrote the chart to {output}", err=True)


def _svg(curves: Curves) -> str:
    from workbench.report.charts import svg
    from workbench.report.mrc import chart

    return svg(chart(curves))
