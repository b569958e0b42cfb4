"""Loading a spec: a TOML profile plus ``--set path=value`` overrides, errors naming the file."""

from __future__ import annotations

import copy
import os
import stat
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from workbench.sdk.errors import SpecError
from workbench.sdk.options import parse_duration, parse_size
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
    if len(text) > MAX_OVERRIDE_CHARS:
        raise SpecError(
            f"expected PATH=VALUE of at most {MAX_OVERRIDE_CHARS:,} characters; got "
            f"{len(text):,} ({text[:40]!r}...)",
            "--set",
        )
    path, sep, raw = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise SpecError(f"expected PATH=VALUE, e.g. load.concurrency=16; got {text!r}", "--set")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        value = raw.strip()
    if _depth(value) > MAX_DEPTH:
        raise SpecError(f"nested more than {MAX_DEPTH} levels deep", path)
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


def get_path(data: Mapping[str, Any], path: str) -> Any:
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


def fold_sweeps(data: dict[str, Any], fold: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The reverse of `lift_sweeps`, in place: each unlabelled sweep axis at a sweepable
    path for which `fold(axis)` holds goes back to a list at its path; the other axes stay
    (and `sweep` goes when none does)."""
    kept = []
    for axis in data.get("sweep", []):
        if (
            isinstance(axis, dict)
            and axis.get("path") in SWEEPABLE
            and not axis.get("labels")
            and not axis.get("along")
            and fold(axis)
        ):
            set_path(data, axis["path"], list(axis.get("values", [])))
        else:
            kept.append(axis)
    if kept:
        data["sweep"] = kept
    else:
        data.pop("sweep", None)
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
        raise located(exc, source) from None


def located(exc: SpecError, source: str) -> SpecError:
    """The error with `source` (the profile, or --set) put in front of where it points."""
    if not source or exc.where == source or exc.where.startswith(f"{source}: "):
        return exc  # already names it (an error about --set itself, say)
    where = f"{source}: {exc.where}" if exc.where else source
    return SpecError(exc.message, where)


MAX_DEPTH = 32  # no spec nests deeper than a handful of tables; deeper is not a profile
# The largest profile and --set text read: the biggest shipped profile is a few KiB, and all
# of a spec is stored with every run and every step.
MAX_PROFILE_BYTES = 1024**2
MAX_OVERRIDE_CHARS = 64 * 1024
BOM = b"\xef\xbb\xbf"


def _read_bounded(path: Path) -> bytes:
    """At most MAX_PROFILE_BYTES + 1 bytes (a huge file or /dev/zero is refused). Opened
    without waiting: a named pipe no program writes to hung the command for good; one that
    is written to (`<(...)`) is read to its end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        kind = os.fstat(fd).st_mode
        if stat.S_ISDIR(kind):
            raise IsADirectoryError
        os.set_blocking(fd, True)
        raw = f.read(MAX_PROFILE_BYTES + 1)
        if stat.S_ISFIFO(kind) and not raw:
            raise SpecError("a pipe with nothing written to it; expected a TOML profile", str(path))
        return raw


def read_profile(path: Path) -> dict[str, Any]:
    """The TOML table in `path`; anything else is one SpecError naming the file."""
    where = str(path)
    try:
        raw = _read_bounded(path)
    except FileNotFoundError:
        raise SpecError("no such profile file", where) from None
    except IsADirectoryError:
        raise SpecError("is a directory; expected a TOML profile file", where) from None
    except OSError as exc:
        raise SpecError(f"cannot read the profile: {exc.strerror or exc}", where) from None
    if len(raw) > MAX_PROFILE_BYTES:
        raise SpecError(
            f"larger than {MAX_PROFILE_BYTES // 1024**2} MiB; expected a TOML profile", where
        )
    if raw.startswith(BOM):  # as TOML tools do, accept a UTF-8 byte order mark
        raw = raw[len(BOM) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"not a UTF-8 text file (byte {exc.start}); expected a TOML profile", where
        ) from None
    if "\x00" in text:
        raise SpecError("a binary file (it holds NUL bytes); expected a TOML profile", where)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"not valid TOML: {exc}", where) from None
    except RecursionError:
        data = None
    if data is None or _depth(data) > MAX_DEPTH:
        raise SpecError(f"nested more than {MAX_DEPTH} levels deep; not a profile", where)
    return data


def _depth(value: Any, level: int = 0) -> int:
    """How deeply tables and lists nest, stopping a little past MAX_DEPTH."""
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level
