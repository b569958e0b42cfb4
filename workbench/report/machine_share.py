"""How much of the machine other work took while a step ran, from the CPU figures its
verdict recorded (`workbench.results.verdict`): the machine's busy CPUs less the workers' and the
server's. Two runs compared on a machine whose other load changed between them differ for
that reason too; a comparison says so rather than let it pass for the system's change."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from workbench.report.model import StepData

# Others' CPUs differing by more than this between the sides is worth a line.
NOTABLE_CPUS = 0.25


def others_cpus(step: StepData) -> float | None:
    """CPUs the machine spent on anything but this step's workers and server (None when
    its verdict has no machine figures)."""
    figures = step.view.verdict.figures
    busy, cpus = figures.get("machine_busy"), figures.get("machine_cpus")
    if busy is None or not cpus:
        return None
    ours = float(sum((figures.get("workers_core_share") or {}).values()))
    ours += float(figures.get("server_cores_used") or 0.0)
    return max(0.0, float(busy) * float(cpus) - ours)


def _median(steps: Sequence[StepData]) -> float | None:
    found = [v for s in steps if (v := others_cpus(s)) is not None]
    return statistics.median(found) if found else None


def machine_note(base: Sequence[StepData], new: Sequence[StepData]) -> str:
    """A line when other work took notably more of the machine on one side than the other
    ("" when it did not, or nothing recorded it)."""
    before, after = _median(base), _median(new)
    if before is None or after is None or abs(after - before) <= NOTABLE_CPUS:
        return ""
    cpus = base[0].view.verdict.figures.get("machine_cpus") if base else None
    return (
        f"other work took {before:.2f} of the machine's {cpus} CPUs in the base and "
        f"{after:.2f} in the new: part of a change may be the machine's"
    )
