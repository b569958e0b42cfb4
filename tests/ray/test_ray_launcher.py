"""Workers as Ray actors across two nodes: the counts add up, and a lost node is survived."""

from __future__ import annotations

import faulthandler
import io
import os
import signal
import sys
from pathlib import Path

import pytest
from conftest import TwoNodes, alive
from support import collect, finished

from workbench.engine.launchers.ray import RayLauncher
from workbench.results.events import Event, Interval, Notice, RunFinished, StepStarted
from workbench.results.metrics import merged
from workbench.results.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite3")


def _ray(two_nodes: TwoNodes) -> list[str]:
    return ["load.launcher=ray", f"load.ray_address={two_nodes.address}", "load.workers=2"]


@pytest.mark.redis
async def test_a_run_across_two_nodes_stores_every_interval_and_op(
    two_nodes: TwoNodes, store: Store
) -> None:
    # Duration: the interval rule gives exactly 4 intervals of 0.25 s, each from both nodes.
    events = await collect([*_ray(two_nodes), "load.duration=1", "load.concurrency=4"], store)
    (started,) = [e for e in events if isinstance(e, StepStarted)]
    assert started.workers == 2
    assert sorted(n["workers"] for n in started.nodes) == [1, 1]  # spread: one per node
    assert all(n["cpus"] == 1 for n in started.nodes)
    intervals = [e for e in events if isinstance(e, Interval)]
    assert [i.index for i in intervals] == [0, 1, 2, 3]
    assert [i.elapsed for i in intervals] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    # Each interval is both workers' histograms added on one grid: span 0.25 s, not 0.5 s.
    assert all(i.stats.duration == pytest.approx(0.25) for i in intervals)
    assert all(len(i.stats.cpu) == 2 for i in intervals)
    (step,) = finished(events)
    assert step.status == "completed"
    assert merged([i.stats for i in intervals], concurrent=False).ops == step.stats.ops > 0
    stored = store.load(events[0].run_id)  # type: ignore[attr-defined]
    assert stored.status == "completed"
    assert len(stored.steps[0].intervals) == 4
    assert stored.steps[0].stats.ops == step.stats.ops

    # An op budget is issued exactly, shared between the actors on both nodes, here against
    # a managed Redis (reachable from both only because both "machines" are this one).
    events = await collect(
        [
            *_ray(two_nodes),
            "load.ops=3000",
            "load.concurrency=4",
            "target.system=redis",
            "target.managed=true",
        ],
        store,
    )
    (step,) = finished(events)
    assert step.status == "completed"
    assert step.stats.ops == 3000 and not step.stats.error_count
    warnings = [e.message for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert any("workers on the other nodes cannot reach it" in w for w in warnings)
    assert events[-1] == RunFinished(events[0].run_id, "completed")  # type: ignore[attr-defined]


async def test_a_node_lost_mid_run_is_reported_and_the_others_go_on(
    two_nodes: TwoNodes, store: Store
) -> None:
    raylet = two_nodes.raylet_pid(two_nodes.second)
    killed_after: list[int] = []

    def on_event(e: Event) -> None:
        if isinstance(e, Interval) and not killed_after:
            os.kill(raylet, signal.SIGKILL)  # the second node goes away, with its worker
            killed_after.append(e.index)

    events = await collect(
        [*_ray(two_nodes), "load.duration=6", "load.concurrency=4"], store, on_event=on_event
    )
    lost = [e for e in events if isinstance(e, Notice) and e.message.startswith("worker lost")]
    assert len(lost) == 1, [e.message for e in events if isinstance(e, Notice)]
    assert "Ray actor" in lost[0].message and "after measuring" in lost[0].message
    # Lost when its intervals stopped, and told by the end of its last one.
    assert "its last interval ended" in lost[0].message
    intervals = [e for e in events if isinstance(e, Interval)]
    assert [i.index for i in intervals] == list(range(24))  # the survivor measured to the end
    assert all(len(i.stats.cpu) == 1 for i in intervals[killed_after[0] + 12 :])
    (step,) = finished(events)
    assert step.status == "degraded" and step.stats.ops > 0
    stored = store.load(events[0].run_id)  # type: ignore[attr-defined]
    assert stored.status == "degraded" and stored.steps[0].status == "degraded"
    assert len(stored.steps[0].intervals) == 24
    assert any(n.message == lost[0].message for n in stored.notices)


async def test_a_worker_program_runs_as_its_actors_child_and_ends_with_it(
    two_nodes: TwoNodes,
) -> None:
    # The hook a native engine binary uses: the actor relays a program's frames.
    launcher = await RayLauncher.connect(two_nodes.address, "pack")
    try:
        (handle,) = await launcher.launch(
            1, command=[sys.executable, "-m", "workbench.engine.worker"]
        )
        child = handle.worker_pid
        assert child != handle.pid and os.path.exists(f"/proc/{child}")
        assert launcher.nodes([handle])[0]["workers"] == 1
        await handle.close()  # end of orders: the program exits, its frames end
        assert handle.ended and not handle.lost
    finally:
        await launcher.close()
    assert not alive(child)


class _Captured(io.StringIO):
    """stdout or stderr as the TUI (Textual) captures them: no file descriptor (-1)."""

    def fileno(self) -> int:
        return -1


async def test_under_the_tui_the_launcher_connects_and_ray_writes_nothing_on_screen(
    two_nodes: TwoNodes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ray.init enables faulthandler on sys.stderr unless it is on: under the TUI that
    # failed ("file.fileno() is not a valid file descriptor"). pytest turns it on: off here.
    was_on = faulthandler.is_enabled()
    faulthandler.disable()
    out, err = _Captured(), _Captured()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    log = tmp_path / "logs" / "run.ray.log"
    try:
        launcher = await RayLauncher.connect(two_nodes.address, "pack", log)
        try:
            (handle,) = await launcher.launch(1)
            await handle.close()
        finally:
            await launcher.close()
    finally:
        faulthandler.disable()
        if was_on:
            faulthandler.enable(file=sys.__stderr__)
    assert out.getvalue() == "" and err.getvalue() == ""  # nothing drawn over the TUI
    assert "SIGTERM handler is not set" in log.read_text()  # Ray's warning went to its file
