"""The charts alone, stacked in one SVG document (the same charts the `html` page embeds);
with ``chart=ID`` only that one (`workbench report RUN --format svg --chart percentiles`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.report import ReportError
from workbench.report.charts import charts, svg_all
from workbench.report.model import RunData


def render(runs: Sequence[RunData], **options: Any) -> str:
    drawn = charts(runs)
    if not drawn:
        raise ReportError("no step measured any operation: nothing to chart")
    wanted = options.get("chart")
    if wanted:
        ids = [c.id for c in drawn]
        if wanted not in ids:
            raise ReportError(
                f"no chart {wanted!r} for these runs; expected one of {', '.join(ids)}", "--chart"
            )
        drawn = [c for c in drawn if c.id == wanted]
    return svg_all(drawn)
