"""Synthetic runs with fixed numbers, for TUI tests and screenshots."""

from __future__ import annotations

from workbench.results.events import Interval, RunFinished, RunStarted, StepFinished, StepStarted
from workbench.results.live import RunView
from workbench.results.metrics import Stats, merged, new_histogram
from workbench.results.store import Store
from workbench.sdk import load_plugin
from workbench.spec.model import Spec, spec_to_dict

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
ENV = {
    "host": "bench",
    "cpus": 8,
    "machine": "x86_64",
    "system": "Linux",
    "python": "3.11.7",
    "workbench": "0.1.0",
    "libraries": {},
    "cpu_model": "Test CPU",
}

# What the embedded system declares, as the engine stores it with each step.
EMBEDDED_FACTS = load_plugin("embedded").facts({}, False)


def interval_stats(seed: int, scale: float = 1.0) -> Stats:
    """One second of made-up load: fixed latencies (ns), hits, misses, bytes, memory."""
    get, put = new_histogram(), new_histogram()
    base = int((800 + 40 * seed) * scale)
    for i, count in enumerate((4000, 3000, 1500, 800, 120, 30, 5, 1)):
        get.record_value(base * (i + 1) ** 2, count)
        put.record_value(int(base * 1.5) * (i + 1) ** 2, count // 9 + 1)
    gets = get.get_total_count()
    return Stats(
        duration=1.0,
        hist={"get": get, "set": put},
        hits=int(gets * 0.8),
        misses=gets - int(gets * 0.8),
        bytes_in=gets * 100,
        bytes_out=put.get_total_count() * 100,
        hot_gets=int(gets * 0.8),
        hot_hits=int(gets * 0.75),
        server={"used_memory": 1_000_000 + seed * 1000, "curr_items": 5000},
    )


def synthetic_events(
    run_id: str = "20231114-221320-aaaa",
    name: str = "quick",
    concurrency: tuple[int, ...] = (16,),
    intervals: int = 5,
    scale: float = 1.0,
    started_at: float = T0,
    finish: bool = True,
    system: str = "embedded",
    strategy: str = "direct",
) -> list:
    spec = Spec(name=name)
    data = spec_to_dict(spec)
    data["load"]["workers"] = 2
    data["target"]["system"] = system
    steps = [
        {
            "index": i,
            "label": {"load.concurrency": str(c)} if len(concurrency) > 1 else {},
            "title": f"concurrency={c}" if len(concurrency) > 1 else "run",
        }
        for i, c in enumerate(concurrency)
    ]
    if len(concurrency) > 1:
        data["sweep"] = [{"path": "load.concurrency", "values": list(concurrency), "labels": []}]
    events: list = [RunStarted(run_id, name, data, steps, ENV, started_at)]
    for i, c in enumerate(concurrency):
        step = steps[i]
        events.append(
            StepStarted(
                run_id,
                i,
                step["title"],
                step["label"],
                data,
                workers=2,
                clients=c,
                system=system,
                strategy=strategy,  # what the engine records for the default
                connections=(
                    f"{c} clients in-process, 2 workers"
                    if system == "embedded"
                    else f"{c} clients = {c} connections, 2 workers"
                ),
                facts=load_plugin(system).facts({}, False),
            )
        )
        parts = []
        for k in range(intervals):
            st = interval_stats(k + i, scale * (1 + i * 0.3))
            parts.append(st)
            events.append(Interval(run_id, i, k, float(k + 1), st))
        if finish:
            events.append(StepFinished(run_id, i, "completed", merged(parts, concurrent=False)))
    if finish:
        events.append(RunFinished(run_id, "completed"))
    return events


def view_of(events: list) -> RunView:
    view = RunView()
    for e in events:
        view = view.apply(e)
    return view


def record(store: Store, events: list) -> None:
    for e in events:
        store.record(e)
