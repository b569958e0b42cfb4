"""Option declarations, parsed once for TOML, --set, the TUI form and the docs.

An `Option` is plain data. `parse_option` turns a raw value from any face (a TOML
value, a string typed in a form or after --set) into the declared kind, or raises a
`SpecError` whose message every face shows unchanged.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.sdk.errors import SpecError

OptionKind = Literal["str", "int", "float", "bool", "choice", "size", "duration", "list"]

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}
_DURATION_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "m": 60.0, "min": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Option:
    """One setting a plugin or strategy accepts."""

    name: str
    kind: OptionKind
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    # Secrets are read from the named environment variable at connect time and never stored.
    env: str | None = None
    required: bool = False

    def describe_kind(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        return {
            "str": "a string",
            "int": "an integer",
            "float": "a number",
            "bool": "true or false",
            "size": "a size such as 100, 4KiB or 1MB",
            "duration": "a duration such as 2, 500ms or 1m",
            "list": "a list of strings",
        }[self.kind]


@dataclass(frozen=True)
class OptionSet:
    """The options of one plugin or strategy, in declaration order."""

    options: tuple[Option, ...] = field(default_factory=tuple)

    def names(self) -> list[str]:
        return [o.name for o in self.options]

    def get(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def resolve(self, raw: dict[str, Any], where: str) -> dict[str, Any]:
        """Defaults filled in, every value parsed; unknown names are an error."""
        unknown = sorted(set(raw) - set(self.names()))
        if unknown:
            known = ", ".join(self.names()) or "none"
            raise SpecError(
                f"unknown option {unknown[0]!r}; known options: {known}", f"{where}.{unknown[0]}"
            )
        out: dict[str, Any] = {}
        for opt in self.options:
            if opt.name in raw:
                out[opt.name] = parse_option(opt, raw[opt.name], f"{where}.{opt.name}")
            elif opt.required:
                raise SpecError(f"required: expected {opt.describe_kind()}", f"{where}.{opt.name}")
            else:
                out[opt.name] = opt.default
        return out


def parse_size(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise SpecError(f"expected a size such as 100, 4KiB or 1MB; got {value!r}", where)
    if isinstance(value, int):
        if value < 0:
            raise SpecError(f"expected a size of 0 or more; got {value}", where)
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise SpecError(f"expected a size such as 100, 4KiB or 1MB; got {value!r}", where)
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


def parse_duration(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise SpecError(f"expected a duration such as 2, 500ms or 1m; got {value!r}", where)
    if isinstance(value, int | float):
        if not value >= 0 or not math.isfinite(value):
            raise SpecError(f"expected a finite duration of 0 or more; got {value}", where)
        return float(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _DURATION_UNITS:
        raise SpecError(f"expected a duration such as 2, 500ms or 1m; got {value!r}", where)
    return float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]


def parse_option(opt: Option, value: Any, where: str) -> Any:
    """Parse one raw value (native or string) into `opt.kind`, checking bounds and choices."""
    kind = opt.kind
    try:
        if kind == "str":
            parsed: Any = str(value)
        elif kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            parsed = int(value)
        elif kind == "float":
            if isinstance(value, bool):
                raise ValueError
            parsed = float(value)
            if not math.isfinite(parsed):
                raise ValueError
        elif kind == "bool":
            if isinstance(value, bool):
                parsed = value
            elif str(value).lower() in ("true", "yes", "on", "1"):
                parsed = True
            elif str(value).lower() in ("false", "no", "off", "0"):
                parsed = False
            else:
                raise ValueError
        elif kind == "choice":
            parsed = str(value)
            if parsed not in opt.choices:
                raise ValueError
        elif kind == "size":
            parsed = parse_size(value, where)
        elif kind == "duration":
            parsed = parse_duration(value, where)
        elif kind == "list":
            if isinstance(value, str):
                parsed = [v.strip() for v in value.split(",") if v.strip()]
            elif isinstance(value, list | tuple):
                parsed = [str(v) for v in value]
            else:
                raise ValueError
        else:  # pragma: no cover - guarded by OptionKind
            raise ValueError
    except (ValueError, TypeError):
        raise SpecError(f"expected {opt.describe_kind()}; got {value!r}", where) from None
    if isinstance(parsed, int | float) and not isinstance(parsed, bool):
        if opt.minimum is not None and parsed < opt.minimum:
            raise SpecError(f"expected at least {opt.minimum:g}; got {value!r}", where)
        if opt.maximum is not None and parsed > opt.maximum:
            raise SpecError(f"expected at most {opt.maximum:g}; got {value!r}", where)
    return parsed
