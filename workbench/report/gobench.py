"""Go benchmark lines, as in the Redis client library document (002).

    BenchmarkEmbedded/DirectGet100b-8  221239  1392 ns/op  100 B/op  218246 ops/s ...

One line per step and operation kind. ``N`` is the count of that operation, ``ns/op`` its
mean latency (what one call cost its client), ``B/op`` the value bytes it moved per
operation (received by gets, sent by sets and publishes). The workbench adds its own
metrics as Go's ``b.ReportMetric`` does: ``ops/s``, ``p50-ns``, ``p99-ns``, ``p99.9-ns``,
``hit-%`` and ``errors``. Several runs give one block each with the same names, ready for
``benchstat old.txt new.txt``. The ``-N`` suffix is the CPU count of the machine.
The repeats of a step (``--repeat N``) print the same name N times, as ``go test -count N``
does, so that benchstat gives their median and spread itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from workbench.report.markdown import footer, header
from workbench.report.model import CONCURRENCY, REPEAT, RunData, StepData, kind_summary
from workbench.sdk.ops import MESSAGE, RECEIVED, RECORDED, WITH_VALUE, in_group


def camel(text: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", str(text)) if p)


def size_suffix(value_size: str) -> str:
    m = re.fullmatch(r"\s*fixed\(\s*(\d+)\s*\)\s*", str(value_size))
    return f"{m.group(1)}b" if m else ""


def bench_name(step: StepData, kind: str) -> str:
    spec = step.spec
    size = size_suffix(spec["workload"]["value_size"])
    if kind in in_group(MESSAGE):  # messages have their own size
        swept = "workload.pubsub.message_size" in step.label
        size = "" if swept else f"{spec['workload']['pubsub']['message_size']}b"
    name = f"Benchmark{camel(step.system)}/{camel(step.strategy)}{camel(kind)}{size}"
    extras = []
    for path, value in step.label.items():
        if path in ("strategy.name", "target.system", "target", REPEAT):
            continue
        if path == "workload.value_size" and size:
            continue
        key = "c" if path == CONCURRENCY else path.split(".")[-1]
        extras.append(f"{key}={value}".replace(" ", "_"))
    if extras:
        name += "/" + "/".join(extras)
    return f"{name}-{step.run.environment.get('cpus') or 1}"


def bytes_per_op(step: StepData, kind: str) -> float:
    """Value bytes per operation. Sets and publishes draw their sizes from the same
    distribution, so they share the bytes sent; deliveries' bytes are taken out of the
    bytes received before gets are credited with the rest."""
    t = step.totals
    counts = {k: h.get_total_count() for k, h in t.hist.items()}
    senders = sum(counts.get(k, 0) for k in WITH_VALUE if k not in RECEIVED)
    sent = t.bytes_out / senders if senders else 0.0
    if kind == "get":
        received = max(0.0, t.bytes_in - t.delivered * sent)
        return received / counts["get"] if counts.get("get") else 0.0
    if kind in WITH_VALUE:
        return sent
    return 0.0


def lines_for(step: StepData) -> list[str]:
    out = []
    kinds = sorted(step.totals.hist, key=lambda k: (RECORDED.index(k) if k in RECORDED else 99, k))
    for kind in kinds:
        k = kind_summary(step, kind)
        if not k.ops:
            continue
        metrics = [
            f"{k.mean_us * 1000:10.0f} ns/op",
            f"{bytes_per_op(step, kind):8.0f} B/op",
            f"{k.ops_per_s:10.0f} ops/s",
            f"{k.p(50.0) * 1000:8.0f} p50-ns",
            f"{k.p(99.0) * 1000:8.0f} p99-ns",
            f"{k.p(99.9) * 1000:8.0f} p99.9-ns",
        ]
        if kind == "get" and step.summary.hit_rate is not None:
            metrics.append(f"{step.summary.hit_rate * 100:6.2f} hit-%")
        if step.summary.errors:
            metrics.append(f"{step.summary.errors} errors")
        out.append(f"{bench_name(step, kind):<40}\t{k.ops:8d}\t" + "\t".join(metrics))
    return out


def render(runs: Sequence[RunData], **options: Any) -> str:
    lines = header(runs, options.get("title") or "Benchmarks")
    if len(runs) > 1:
        lines += [
            "One block per run with the same benchmark names: save each to a file and compare "
            "them with `benchstat`.",
            "",
        ]
    for run in runs:
        env = run.environment
        if len(runs) > 1:
            lines += [f"### {run.name} (`{run.id}`)", ""]
        lines += [
            "```",
            f"goos: {str(env.get('system', '')).split(' ')[0].lower()}",
            f"goarch: {env.get('machine', '')}",
            f"pkg: cache-workbench/{run.spec['target']['system']}",
        ]
        if env.get("cpu_model"):
            lines.append(f"cpu: {env['cpu_model']}")
        for step in run.steps:
            if not step.started:
                lines.append(f"--- SKIP: {step.title} (not run)")
                continue
            body = lines_for(step)
            lines += body
            if step.status != "completed":
                lines.append(f"--- {step.status.upper()}: {step.name(with_run=False)}")
            elif not body:
                lines.append(f"--- FAIL: {step.name(with_run=False)} (nothing measured)")
        ok = all(s.status == "completed" for s in run.steps)
        lines += ["PASS" if ok else "FAIL", "```", ""]
    lines += footer(runs)
    return "\n".join(lines).rstrip("\n") + "\n"
