"""Steps one at a time: a caller sees each step's result before choosing the next."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from workbench.results.events import RunFinished, StepFinished, StepStarted
from workbench.results.store import Store
from workbench.run import session
from workbench.spec.steps import Step, load_spec


async def test_a_caller_picks_each_next_step_from_the_last_result(tmp_path: Path) -> None:
    spec = load_spec(None, ["load.warmup=0", "load.interval=0.25", "load.workers=1"])
    seen: list[StepFinished | None] = []

    def next_step(last: StepFinished | None) -> Step | None:
        seen.append(last)
        if len(seen) > 3:
            return None
        ops = 300 if last is None else last.stats.ops * 2  # each probe from the one before
        probe = dataclasses.replace(spec, load=dataclasses.replace(spec.load, ops=ops))
        return Step(len(seen) - 1, {"load.ops": str(ops)}, probe)

    store = Store(tmp_path / "runs.sqlite")
    events = [e async for e in session.run(spec, store, next_step=next_step)]
    assert seen[0] is None
    assert [s.stats.ops for s in seen[1:] if s is not None] == [300, 600, 1200]
    started = [e for e in events if isinstance(e, StepStarted)]
    assert [e.step for e in started] == [0, 1, 2]
    assert isinstance(events[-1], RunFinished) and events[-1].status == "completed"
    stored = store.load("last")
    assert [s.stats.ops for s in stored.steps] == [300, 600, 1200]


async def test_the_spec_s_own_steps_still_run_as_before(tmp_path: Path) -> None:
    spec = load_spec(None, ["load.warmup=0", "load.ops=200", "load.concurrency=[1,2]"])
    events = [e async for e in session.run(spec, Store(tmp_path / "runs.sqlite"))]
    assert [e.stats.ops for e in events if isinstance(e, StepFinished)] == [200, 200]
