"""The progress bar of `workbench run` on a terminal: step k of n, elapsed, an ETA across the
whole sweep and the live ops/s and p99. Each interval's line, the step summaries and the
notices print above it, and stay when it goes.

Progress is a share of planned work: a step's share is its measured time over its duration,
or its ops over its op budget. The ETA is the time so far scaled by what is left, so the
time spent starting servers and warming up between steps is counted in it.
"""

from __future__ import annotations

import dataclasses
import time
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from workbench.cli.format import SummaryStyle, live_line, step_heading, step_summary
from workbench.results.events import Interval, Notice, RunStarted, StepFinished, StepStarted
from workbench.results.live import RunView
from workbench.results.metrics import format_us


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class RunProgress:
    """Feed it every event of a run (with the view after it); `close()` when the run ends."""

    def __init__(self, stream: IO[str], style: SummaryStyle = SummaryStyle()) -> None:
        self.console = Console(file=stream)
        # The verdict wraps at the terminal's width.
        self.style = dataclasses.replace(style, width=self.console.width)
        self.progress = Progress(
            TextColumn("[bold]{task.fields[step]}"),
            BarColumn(bar_width=30),
            TextColumn("{task.percentage:>3.0f}%"),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            TextColumn("{task.fields[live]}"),
            console=self.console,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task: Any = None
        self.steps = 0
        self.done = 0  # finished steps
        self.fraction = 0.0  # of the current step
        self.started = time.monotonic()
        self.live = ""
        self.step_text = ""
        self.budget: tuple[float | None, int | None] = (None, None)

    def print(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def on_event(self, event: object, view: RunView) -> None:
        if isinstance(event, RunStarted):
            self.steps = len(event.steps)
            self.started = time.monotonic()
            self.print(f"run {event.run_id} '{event.name}': {self.steps} step(s)")
            self.task = self.progress.add_task("run", total=100.0, **self._fields())
            self.progress.start()
        elif isinstance(event, StepStarted):
            load = event.spec.get("load", {})
            self.budget = (load.get("duration"), load.get("ops"))
            self.fraction = 0.0
            self.live = "starting"
            self.step_text = f"step {event.step + 1}/{self.steps}"
            self.print(step_heading(event, self.steps))
        elif isinstance(event, Interval) and not event.warmup and event.index >= 0:
            step = view.steps[event.step]
            duration, ops = self.budget
            if ops:
                self.fraction = min(1.0, step.totals.ops / ops)
            elif duration:
                self.fraction = min(1.0, event.elapsed / duration)
            if step.latest is not None:
                s = step.latest
                h = event.stats.hiccups
                machine = f"  hiccup max {format_us(h.max_us)}" if h is not None else ""
                # Each interval's line stays above the bar, as without a terminal.
                self.print(live_line(event.elapsed, s, step.totals.skipped_count, h))
                self.live = (
                    f"{s.ops_per_s:,.0f} ops/s  p50 {format_us(s.p(50.0))}  "
                    f"p99 {format_us(s.p(99.0))}{machine}  errors {s.errors:,}"
                )
        elif isinstance(event, Notice):
            self.print(f"{event.level}: {event.message}")
        elif isinstance(event, StepFinished):
            self.done += 1
            self.fraction = 0.0
            for line in step_summary(view.steps[event.step], self.style):
                self.print(line)
        self.refresh()

    def _share(self) -> float:
        if not self.steps:
            return 0.0
        return min(1.0, (self.done + self.fraction) / self.steps)

    def _fields(self) -> dict[str, Any]:
        spent = time.monotonic() - self.started
        share = self._share()
        eta = _clock(spent * (1 - share) / share) if share > 0 else "-:--"
        return {
            "step": self.step_text or f"step 0/{self.steps}",
            "eta": eta,
            "live": self.live,
        }

    def refresh(self) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=100.0 * self._share(), **self._fields())

    def close(self) -> None:
        if self.task is not None:
            self.progress.stop()
            self.task = None
