"""`workbench simulate RUN [--policies P]`: a stored run's captured traces through eviction
policies (libCacheSim, in a subprocess) at each step's limit; stored with the steps."""

from __future__ import annotations

from typing import Annotated

import typer

from workbench.cli.common import StoreOption, one_line_errors, open_store, out
from workbench.report import simulated
from workbench.report.model import read_run
from workbench.results.events import StepSimulated
from workbench.sdk.errors import SpecError
from workbench.simulate.policies import POLICIES, parse_policies
from workbench.simulate.runner import require
from workbench.simulate.steps import simulate_step


@one_line_errors
def command(
    run: Annotated[str, typer.Argument(help="a run id, id prefix, name, or 'last'")],
    policies: Annotated[
        str,
        typer.Option(
            "--policies",
            "-p",
            help=f"eviction policies: {', '.join(POLICIES)}, or all",
        ),
    ] = "all",
    store: StoreOption = None,
) -> None:
    """Simulate a stored run that captured traces (run with --trace-out FILE): every step's
    requests through each policy at the step's own limit, stored with the step and shown
    beside the measured hit rates."""
    names = parse_policies(policies, "--policies")
    require()
    st = open_store(store)
    stored = st.load(run)
    traced = [s for s in stored.steps if s.spec.get("workload", {}).get("trace_out")]
    if not traced:
        raise SpecError(
            "captured no trace: run it with --trace-out FILE (workload.trace_out)",
            f"run {stored.id}",
        )
    for step in traced:
        results = simulate_step(step.spec, step.resolved, step.stats.server, names)
        st.record(StepSimulated(stored.id, step.index, results))
    for line in simulated.table([read_run(st.load(stored.id))]):
        out(line)
