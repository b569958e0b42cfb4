"""A search run: the probes of `workbench.results.search_rules` driven through `session.run`,
one stored step each, the next rate chosen from the last probe's result.

Kept apart from `workbench.results.search_rules` (pure rules, beside the other judgements of
results) so that reports, which replay a stored search, never import the engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from workbench.results.checks import Check
from workbench.results.events import Event, Notice, StepFinished
from workbench.results.live import RunView
from workbench.results.search_length import LONG_LABEL
from workbench.results.search_rules import (
    RETRY_LABEL,
    Probe,
    Search,
    probe_of,
    probe_step_spec,
)
from workbench.run import session
from workbench.spec.model import SearchSpec, Spec
from workbench.spec.steps import check_spec


class SearchRun:
    """One search, run as one stored run of probes: iterate `events()`, then read `search`."""

    def __init__(self, spec: Spec, checks: Sequence[Check]) -> None:
        self.spec = spec
        self.checks = list(checks)
        self.search = Search(spec.search or SearchSpec())
        self.view = RunView()
        self._rates: dict[int, float] = {}
        self._recorded: set[int] = set()

    def probe(self, step: int) -> Probe:
        """Probe `step` as the search recorded it (with its attempt), once it finished."""
        self._record(step)
        return next(p for p in self.search.probes if p.step == step)

    def _record(self, index: int) -> None:
        """The finished probe `index` into the search, once (the step's end and the next
        step's request both come here, in either order)."""
        if index in self._recorded:
            return
        self._recorded.add(index)
        step = self.view.steps[index]
        self.search.record(probe_of(step, self._rates[index], self.checks))

    def _next(self, last: StepFinished | None) -> Any:
        if last is not None:
            self._record(last.step)
        rate = self.search.next_rate()
        if rate is None:
            return None
        attempt = self.search.next_attempt()
        seconds = self.search.next_seconds()
        index = len(self._rates)
        self._rates[index] = rate
        (planned,) = check_spec(probe_step_spec(self.spec, rate, seconds))
        label = {"load.rate": f"{rate:g}"}
        if attempt:  # stored with the step: the report, History and the TUI show it
            label[RETRY_LABEL] = str(attempt)
        if seconds > self.search.settings.probe:
            label[LONG_LABEL] = f"{seconds:g}"
        return replace(planned, index=index, label=label)

    async def events(
        self,
        store: Any,
        *,
        stop: asyncio.Event | None = None,
        name: str | None = None,
        notices: bool = False,
    ) -> AsyncIterator[Event]:
        """The run's events; with `notices`, after each probe an info `Notice` (live only,
        not stored) with its result and what the search made of it, for a view that shows
        notices but not the search (the TUI): why the search goes on, or stops."""
        # The run's own spec says what every probe shares: open loop, `probe` seconds each.
        settings = self.spec.search or SearchSpec()
        load = replace(self.spec.load, duration=settings.probe, ops=None, rate=settings.start)
        run_spec = replace(self.spec, load=load)
        async for event in session.run(run_spec, store, stop=stop, name=name, next_step=self._next):
            self.view = self.view.apply(event)
            if isinstance(event, StepFinished):  # recorded before anyone reads the search
                self._record(event.step)
            yield event
            if notices and isinstance(event, StepFinished):
                p = self.probe(event.step)
                # The decision first: a notice is one line, cut at the box's width.
                result = "pass" if p.passed else "FAIL"
                said = ", ".join(t for t in (result, self.search.said(p), p.why_failed()) if t)
                said = f"search: {p.rate:,.0f} ops/s {said}"
                notice = Notice(event.run_id, event.step, "info", said)
                self.view = self.view.apply(notice)
                yield notice
