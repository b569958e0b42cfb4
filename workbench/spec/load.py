"""Loading a spec: a TOML profile plus ``--set path=value`` overrides, errors naming the file."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workbench.errors import SpecError
from workbench.options import parse_duration, parse_size
from workbench.spec.model import Spec, spec_from_dict

# A list written at one of these paths is a sweep: one step per value.
SWEEPABLE = (
    "load.concurrency",
    "load.rate",
    "workload.value_size",
    "workload.key_distribution",
    "workload.ttl",
    "strategy.name",
    "target.system",
    "load.workers",
)


# Fields written with units in a profile or after --set (60s, 1m, 500ms; 4KiB); the Spec
# keeps plain seconds and bytes.
DURATIONS = ("load.duration", "load.warmup", "load.interval")
SIZES = ("workload.pubsub.message_size",)


def parse_units(data: dict[str, Any]) -> None:
    """Turn a duration or size written as text into seconds or bytes, in place."""
    for paths, parse in ((DURATIONS, parse_duration), (SIZES, parse_size)):
        for path in paths:
            value = get_path(data, path)
            if isinstance(value, str):
                set_path(data, path, parse(value, path))


def parse_override(text: str) -> tuple[str, Any]:
    """``a.b=VALUE``: VALUE as a TOML value when it is one, else as a plain string."""
    path, sep, raw = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise SpecError(f"expected PATH=VALUE, e.g. load.concurrency=16; got {text!r}", "--set")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return path, value


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise SpecError(f"cannot set inside a {type(child).__name__}", path)
        node = child
    node[parts[-1]] = value


def get_path(data: dict[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def lift_sweeps(data: dict[str, Any]) -> dict[str, Any]:
    """Move lists written at sweepable paths into explicit sweep axes."""
    data = copy.deepcopy(data)
    sweep = list(data.get("sweep", []))
    for path in SWEEPABLE:
        value = get_path(data, path)
        if isinstance(value, list):
            if not value:
                raise SpecError("expected a value or a non-empty list of values", path)
            sweep = [a for a in sweep if not (isinstance(a, dict) and a.get("path") == path)]
            sweep.append({"path": path, "values": value})
            set_path(data, path, value[0])
    if sweep:
        data["sweep"] = sweep
    return data


def spec_from_data(data: dict[str, Any], overrides: Iterable[str] = (), source: str = "") -> Spec:
    """Apply overrides, lift sweep lists, and build the Spec; errors name `source`."""
    data = copy.deepcopy(data)
    try:
        for text in overrides:
            path, value = parse_override(text)
            set_path(data, path, value)
        parse_units(data)
        return spec_from_dict(lift_sweeps(data))
    except SpecError as exc:
        raise _located(exc, source) from None


def _located(exc: SpecError, source: str) -> SpecError:
    if not source:
        return exc
    where = f"{source}: {exc.where}" if exc.where else source
    return SpecError(exc.message, where)


def read_profile(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise SpecError("no such profile file", str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"not valid TOML: {exc}", str(path)) from None


def load_spec(path: Path | None, overrides: Iterable[str] = ()) -> Spec:
    """A profile file (or the defaults when None) with overrides applied, fully checked."""
    from workbench.spec.plan import check_spec

    data = read_profile(path) if path else {}
    source = str(path) if path else "--set" if overrides else ""
    spec = spec_from_data(data, overrides, source)
    try:
        check_spec(spec)
    except SpecError as exc:
        raise _located(exc, source) from None
    return spec
