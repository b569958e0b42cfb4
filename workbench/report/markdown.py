"""What every markdown report shares: the header naming what was measured, and the footer
with the exact command (and the spec as TOML) that measures it again."""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
import tomllib
from collections.abc import Callable, Sequence
from typing import Any

from workbench.report.machine import hiccup_table
from workbench.report.model import (
    CONCURRENCY,
    STATUS_WORDS,
    RunData,
    StepData,
    strategy_name,
    target_options,
    target_version,
)
from workbench.results.self_checks import failed_line
from workbench.spec.load import SWEEPABLE, spec_from_data
from workbench.spec.model import Spec, spec_from_dict, spec_to_dict
from workbench.spec.save import spec_to_toml

# Spec fields whose keys are free-form: written whole as an inline table, never field by field.
FREE_FORM = ("target.options", "target.server", "strategy.options", "workload.mix")
# Left out of the one-line command: changes nothing that is measured (the TOML keeps it).
NOT_MEASURED = ("description",)


def when(timestamp: float | None) -> str:
    if not timestamp:
        return "-"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def escape_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def status_banner(runs: Sequence[RunData]) -> list[str]:
    lines = []
    for run in runs:
        if run.status == "completed":
            continue
        what = STATUS_WORDS.get(run.status, run.status)
        error = f" ({run.stored.error})" if run.stored.error else ""
        lines.append(f"> **Run {run.id} '{run.name}' {what}**{error}.")
        not_run = [s.title for s in run.steps if not s.started]
        if not_run:
            lines.append(f"> Steps never started: {', '.join(not_run)}.")
    if lines:
        lines.append("")
    return lines


def _swept(run: RunData, path: str) -> list[Any] | None:
    for axis in run.spec.get("sweep", []):
        if axis.get("path") == path:
            return list(axis.get("labels") or axis.get("values") or [])
    return None


def _axis_text(values: list[Any]) -> str:
    return ", ".join(
        str(v.get("system") or v.get("name") or v) if isinstance(v, dict) else str(v)
        for v in values
    )


def describe_target(run: RunData) -> str:
    spec = run.spec
    target = spec["target"]
    swept = _swept(run, "target.system") or _swept(run, "target")
    systems = _axis_text(swept) + " (swept)" if swept else target["system"]
    versions = sorted({v for s in run.started_steps if (v := target_version(s))})
    parts = [systems]
    if versions:
        parts.append(f"version {', '.join(versions)}")
    if target.get("managed"):
        parts.append("managed server on a free loopback port")
    if run.stored.allow_remote:
        parts.append("remote targets allowed (target.allow_remote = true)")
    if target.get("options"):
        parts.append("options " + _inline_table(target["options"]))
    if target.get("server"):
        parts.append("server " + _inline_table(target["server"]))
    return "; ".join(parts)


def describe_strategy(run: RunData) -> str:
    swept = _swept(run, "strategy.name")
    # Steps record the strategy they really ran (a target sweep runs each system's default).
    ran = list(dict.fromkeys(s.strategy for s in run.started_steps))
    if swept:
        text = _axis_text(swept) + " (swept)"
    elif len(ran) > 1:
        text = ", ".join(ran)
    else:
        text = ran[0] if ran else strategy_name(run.spec)
    options = run.spec["strategy"].get("options")
    return text + (f"; options {_inline_table(options)}" if options else "")


def describe_connections(run: RunData) -> str:
    """How the clients of each started step mapped to connections, each way once."""
    ways = list(dict.fromkeys(s.view.connections for s in run.started_steps if s.view.connections))
    if len(ways) > 4:
        return "; ".join(ways[:3]) + f"; and {len(ways) - 3} more (per step in `runs show`)"
    return "; ".join(ways) or "-"


def describe_workload(run: RunData) -> str:
    w = run.spec["workload"]
    if w.get("groups"):
        mix = "; ".join(
            f"{g['name']}: {g['concurrency']} clients, {_mix_text(g['mix'])}" for g in w["groups"]
        )
    else:
        mix = _mix_text(w["mix"])
    keys = _swept(run, "workload.key_distribution")
    sizes = _swept(run, "workload.value_size")
    ttls = _swept(run, "workload.ttl")
    parts = [
        mix,
        f"{w['keys']:,} keys {(_axis_text(keys) + ' (swept)') if keys else w['key_distribution']}",
        f"values {(_axis_text(sizes) + ' (swept)') if sizes else w['value_size']}",
        f"ttl {(_axis_text(ttls) + ' (swept)') if ttls else w['ttl']}",
    ]
    if w.get("prefill"):
        parts.append("prefilled")
    if "publish" in w["mix"] or any("publish" in g["mix"] for g in w.get("groups", [])):
        p = w["pubsub"]
        parts.append(
            f"pub/sub {p['channels']} channel(s) x {p['subscribers_per_channel']} subscriber(s), "
            f"{p['message_size']} B messages"
        )
    return "; ".join(parts)


def _mix_text(mix: dict[str, float]) -> str:
    total = sum(mix.values()) or 1.0
    return " / ".join(f"{k} {v / total:.0%}" for k, v in mix.items() if v > 0)


def describe_load(run: RunData) -> str:
    load = run.spec["load"]
    conc = _swept(run, CONCURRENCY)
    parts = [f"concurrency {_axis_text(conc) + ' (swept)' if conc else load['concurrency']}"]
    if load.get("ops"):
        parts.append(f"{load['ops']:,} ops per step")
    else:
        parts.append(f"{load['duration']:g} s per step")
    if load.get("warmup_ops"):
        parts.append(f"after {load['warmup_ops']:,} warmup ops")
    else:
        parts.append(f"after {load['warmup']:g} s warmup")
    workers = sorted({s.workers for s in run.started_steps if s.workers})
    parts.append(
        f"{', '.join(map(str, workers)) if workers else load['workers'] or 'one per core'} "
        "worker process(es)"
    )
    rate = _swept(run, "load.rate") or load.get("rate")
    chosen = [s.spec["load"].get("rate") for s in run.started_steps] if not run.stored.plan else []
    if chosen and all(chosen):  # steps chosen as the run went: a rate search's probes
        parts.append(f"open loop at {', '.join(f'{r:g}' for r in chosen)} ops/s (searched)")
    else:
        parts.append(f"open loop at {rate} ops/s" if rate else "closed loop")
    parts.append(f"seed {run.spec.get('seed', 1)}")
    return "; ".join(parts)


def describe_environment(run: RunData) -> str:
    env = run.environment
    libs = ", ".join(f"{k} {v}" for k, v in sorted(env.get("libraries", {}).items()))
    machine = f"{env.get('cpus', '?')} CPUs"
    if env.get("cpu_model"):
        machine += f" ({env['cpu_model']})"
    return (
        f"host {env.get('host', '?')}, {machine}, {env.get('machine', '')} "
        f"{env.get('system', '')}; Python {env.get('python', '?')}, workbench "
        f"{env.get('workbench', '?')}" + (f"; {libs}" if libs else "")
    )


def describe_run(run: RunData) -> str:
    started = len(run.started_steps)
    steps = (
        f"{started} of {len(run.steps)} steps"
        if started < len(run.steps)
        else (f"{len(run.steps)} step(s)")
    )
    created = when(run.stored.created_at)
    return f"`{run.id}` '{escape_cell(run.name)}', {run.status}, {created}, {steps}"


def tls_insecure_banner(runs: Sequence[RunData]) -> list[str]:
    """Said loudly: a run whose TLS certificates were not verified (tls_insecure)."""
    insecure = [
        r.name
        for r in runs
        if (r.spec.get("target", {}).get("options") or {}).get("tls_insecure")
        or any(target_options(s).get("tls_insecure") for s in r.started_steps)
    ]
    if not insecure:
        return []
    names = ", ".join(f"'{n}'" for n in insecure)
    return [
        f"> **TLS certificates NOT verified (tls_insecure = true) in {names}**: the server "
        "was not authenticated.",
        "",
    ]


def header(runs: Sequence[RunData], title: str) -> list[str]:
    """The title, the status banner, and what was measured where: one column per run."""
    names = ", ".join(f"'{r.name}'" for r in runs)
    lines = [f"# {title}: {names}", ""]
    lines += status_banner(runs)
    lines += tls_insecure_banner(runs)
    rows = [
        ("run", describe_run),
        ("target", describe_target),
        ("strategy", describe_strategy),
        ("connections", describe_connections),
        ("workload", describe_workload),
        ("load", describe_load),
        ("environment", describe_environment),
    ]
    if len(runs) == 1:
        lines += ["| | |", "| --- | --- |"]
    else:
        lines += [
            "| | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " |",
            "| --- |" + " --- |" * len(runs),
        ]
    for name, fn in rows:
        lines.append(f"| {name} | " + " | ".join(escape_cell(fn(r)) for r in runs) + " |")
    lines.append("")
    return lines


def verdict_notes(runs: Sequence[RunData]) -> list[str]:
    """What limited each step (`workbench.results.verdict`), one line each; none for old runs."""
    several = len(runs) > 1
    lines = [
        f"- {escape_cell(step.name(with_run=several))}: {verdict.line}" + _self_check_note(step)
        for run in runs
        for step in run.started_steps
        if (verdict := step.view.verdict).known
    ]
    if not lines:
        return []
    return [
        "### What limited each step",
        "",
        "From the CPU the workers, the server and the machine used, and in open loop the "
        "schedule kept (see *Knowing what was measured* in docs/measuring.md):",
        "",
        *lines,
        "",
    ]


def _self_check_note(step: StepData) -> str:
    """The step's failed self-checks (`workbench.results.self_checks`), "" when none failed."""
    failed = failed_line(step.view.self_checks)
    return f" **Self-check failed:** {failed}" if failed else ""


def footer(runs: Sequence[RunData]) -> list[str]:
    """What limited each step, then how to measure it again: one command per run, and the
    full spec as a TOML profile."""
    lines = verdict_notes(runs)
    lines += hiccup_table(runs)
    lines += ["## Reproduce", ""]
    for run in runs:
        if len(runs) > 1:
            lines += [f"Run `{run.id}` '{run.name}':", ""]
        command = reproduce_command(run.spec)
        if command:
            lines += ["```sh", command, "```", ""]
        toml = spec_as_toml(run.spec)
        lines += [
            "<details><summary>the spec as a TOML profile "
            "(save it as <code>profile.toml</code>, then <code>workbench run profile.toml</code>)"
            "</summary>",
            "",
            "```toml",
            toml.rstrip("\n"),
            "```",
            "",
            "</details>",
            "",
        ]
    return lines


def spec_as_toml(spec: dict[str, Any]) -> str:
    try:
        return spec_to_toml(spec_from_dict(spec))
    except Exception:  # a spec from an older workbench: still show what was stored
        return "# (stored spec, as JSON)\n# " + json.dumps(spec)


# --- the one-line command -------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_value(value: Any) -> str:
    """One value as inline TOML, as `--set` parses it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return _inline_table(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _inline_table(value: dict[str, Any]) -> str:
    items = ", ".join(
        f"{k if _BARE_KEY.match(k) else json.dumps(k)} = {toml_value(v)}"
        for k, v in value.items()
        if v is not None
    )
    return "{" + items + "}" if items else "{}"


def _raw(value: Any) -> str:
    """The text after `path=`: a plain string when `--set` would read it back unchanged."""
    if isinstance(value, str) and value == value.strip() and value:
        try:
            tomllib.loads(f"v = {value}")
        except tomllib.TOMLDecodeError:
            return value
    return toml_value(value)


def _diff(spec: Any, default: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in spec.items():
        path = prefix + key
        if path in NOT_MEASURED or path == "sweep" or value is None:
            continue
        base = default.get(key) if isinstance(default, dict) else None
        if isinstance(value, dict) and isinstance(base, dict) and path not in FREE_FORM:
            out += _diff(value, base, path + ".")
        elif value != base:
            out.append((path, value))
    return out


def overrides(spec: dict[str, Any]) -> list[str] | None:
    """`--set` arguments that rebuild `spec` from the defaults, checked by rebuilding it."""
    default = spec_to_dict(Spec())
    sweep = list(spec.get("sweep") or [])
    base = _diff(spec, default)
    candidates: list[list[str]] = []
    # Lists at sweepable paths read best; they become axes after any explicit ones.
    lifted = [a for a in sweep if a["path"] in SWEEPABLE and not a.get("labels")]
    explicit = [a for a in sweep if a not in lifted]
    lifted_paths = {a["path"] for a in lifted}
    sets = [f"{p}={_raw(v)}" for p, v in base if p not in lifted_paths]
    if explicit:
        sets.append(f"sweep={toml_value(explicit)}")
    sets += [f"{a['path']}={toml_value(list(a['values']))}" for a in lifted]
    candidates.append(sets)
    # Otherwise every axis, in order, as one explicit sweep list.
    if sweep:
        candidates.append([f"{p}={_raw(v)}" for p, v in base] + [f"sweep={toml_value(sweep)}"])
    wanted = {k: v for k, v in spec.items() if k not in NOT_MEASURED}
    if not wanted.get("sweep"):
        wanted.pop("sweep", None)
    for sets in candidates:
        try:
            got = spec_to_dict(spec_from_data({}, sets))
        except Exception:
            continue
        got = {k: v for k, v in got.items() if k not in NOT_MEASURED}
        if not got.get("sweep"):
            got.pop("sweep", None)
        if got == wanted:
            return sets
    return None


def reproduce_command(spec: dict[str, Any]) -> str | None:
    sets = overrides(spec)
    if sets is None:
        return None
    return " ".join(["workbench run", *(f"--set {shlex.quote(s)}" for s in sets)])


def step_sections(runs: Sequence[RunData], body: Callable[[StepData], list[str]]) -> list[str]:
    """A `### step` section per planned step of every run: `body(step)`, or "Not run."."""
    several = len(runs) > 1
    lines: list[str] = []
    for run in runs:
        for step in run.steps:
            name = step.name(with_run=several) if step.started else step.title
            status = "" if step.status == "completed" else f" ({step.status})"
            lines += [f"### {name}{status}", ""]
            lines += body(step) if step.started else ["Not run.", ""]
    return lines
