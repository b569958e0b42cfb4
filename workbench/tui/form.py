"""The Setup form's data side, with no widgets: text ↔ spec values, drafts, validation.

A field's text means what it would mean after ``--set path=`` on the command line (a TOML
value, a list sweeps), and every check is the core's own (`spec_from_data`, `check_spec`),
so the form shows exactly the messages the CLI prints.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from workbench.sdk.errors import SpecError
from workbench.spec.load import fold_sweeps as fold_axes
from workbench.spec.load import get_path, set_path, spec_from_data
from workbench.spec.model import Spec
from workbench.spec.steps import Step, check_spec
from workbench.workload.forms import (
    KEY_DEFAULTS,
    KEY_DISTRIBUTIONS,
    TTL_DEFAULTS,
    TTL_FORMS,
    VALUE_SIZE_DEFAULTS,
    VALUE_SIZE_FORMS,
)

FieldKind = Literal["value", "text", "bool"]

# Tables the form writes whole: cleared before the fields put their entries back.
OWNED_TABLES = ("workload.mix", "target.options", "strategy.options", "target.server")

# kind -> names of its parameters, per distribution field (workload.py's, the parser's own)
DISTRIBUTION_KINDS: dict[str, Mapping[str, tuple[str, ...]]] = {
    "workload.key_distribution": KEY_DISTRIBUTIONS,
    "workload.value_size": VALUE_SIZE_FORMS,
    "workload.ttl": TTL_FORMS,
}
# kind -> the parameters a newly picked kind starts with
DISTRIBUTION_DEFAULTS: dict[str, Mapping[str, tuple[str, ...]]] = {
    "workload.key_distribution": KEY_DEFAULTS,
    "workload.value_size": VALUE_SIZE_DEFAULTS,
    "workload.ttl": TTL_DEFAULTS,
}
CUSTOM = "custom"  # the written form, e.g. a sweep list of distributions


def _toml_value(text: str) -> Any:
    return tomllib.loads(f"v = {text}")["v"]


def text_to_value(kind: FieldKind, text: str, sweep: bool = False) -> tuple[bool, Any]:
    """(present, value) for a field's text: empty is absent (the spec default applies)."""
    text = text.strip()
    if kind == "bool":
        return True, text.lower() in ("true", "1", "yes", "on")
    if not text:
        return False, None
    if kind == "text":
        if text.startswith(("[", '"')):  # a list (a sweep), or a quoted string such as ""
            try:
                return True, _toml_value(text)
            except tomllib.TOMLDecodeError:
                pass
        return True, text
    try:
        return True, _toml_value(text)
    except tomllib.TOMLDecodeError:
        pass
    if sweep and "," in text and not text.startswith("["):
        try:
            return True, _toml_value(f"[{text}]")
        except tomllib.TOMLDecodeError:
            pass
    return True, text  # as --set does: the core then says what it expected


def value_to_text(value: Any) -> str:
    """The text a field shows for a value from a profile."""
    if value is None:
        return ""
    if value == "":
        return '""'  # an explicit empty string, unlike an empty field (the default)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_item(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_item(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{value:.1f}"
    return str(value)


def _item(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    return value_to_text(v)


def split_distribution(path: str, value: Any) -> tuple[str, list[str]]:
    """A distribution's kind and its parameter texts, or CUSTOM with the whole text."""
    kinds = DISTRIBUTION_KINDS[path]
    if not isinstance(value, str):
        return CUSTOM, [value_to_text(value)]
    m = re.fullmatch(r"\s*([a-z_]+)\s*(?:\((.*)\))?\s*", value)
    if not m or m.group(1) not in kinds:
        return CUSTOM, [value]
    kind, inner = m.group(1), m.group(2) or ""
    names = kinds[kind]
    if kind == "weighted":
        return kind, [inner.strip()]
    params = [p.strip() for p in inner.split(",")] if inner.strip() else []
    if len(params) != len(names):
        return CUSTOM, [value]
    return kind, params


def join_distribution(path: str, kind: str, params: list[str]) -> str:
    if kind == CUSTOM:
        return params[0] if params else ""
    names = DISTRIBUTION_KINDS[path][kind]
    if not names:
        return kind
    return f"{kind}({','.join(p.strip() for p in params[: len(names)])})"


def fold_sweeps(data: dict[str, Any]) -> dict[str, Any]:
    """Explicit unlabelled sweep axes at a form path back into lists at that path (a copy;
    an axis with keys of its own stays an axis)."""
    return fold_axes(copy.deepcopy(data), lambda axis: set(axis) <= {"path", "values", "labels"})


def delete_path(data: dict[str, Any], path: str) -> bool:
    """Remove the entry at `path`; False if there was none."""
    parts = path.split(".")
    node: Any = data
    for part in parts[:-1]:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    if isinstance(node, dict) and parts[-1] in node:
        del node[parts[-1]]
        return True
    return False


def compose(base: dict[str, Any], values: Iterable[tuple[str, bool, Any]]) -> dict[str, Any]:
    """`base` (a profile's data) with the form's (path, present, value) entries applied."""
    data = copy.deepcopy(base)
    for table in OWNED_TABLES:
        delete_path(data, table)
    for path, present, value in values:
        if present:
            set_path(data, path, value)
        else:
            delete_path(data, path)
    for table in ("target.options", "strategy.options", "target.server"):
        if get_path(data, table) == {}:
            delete_path(data, table)
    return data


def error_path(where: str) -> str:
    """The spec path a core error names, without a sweep step's label."""
    if where.startswith("sweep ") and "}: " in where:
        where = where.split("}: ", 1)[1]
    where = re.sub(r"\s*\(step .*\)$", "", where)
    return where.strip()


@dataclass(frozen=True)
class Checked:
    spec: Spec | None
    steps: tuple[Step, ...]
    errors: tuple[SpecError, ...]


def check(data: dict[str, Any], max_errors: int = 8) -> Checked:
    """The spec, or every error the core finds (each field's first), in the CLI's words.

    The core stops at the first problem; to flag every bad field at once, the offending
    entry is set aside (its default takes its place) and the rest checked again.
    """
    errors: list[SpecError] = []
    work = copy.deepcopy(data)
    seen: set[str] = set()
    for _ in range(max_errors):
        try:
            spec = spec_from_data(work)
            steps = check_spec(spec)
        except SpecError as exc:
            errors.append(exc)
            path = error_path(exc.where)
            if path in seen or not _set_aside(work, path):
                break
            seen.add(path)
            continue
        if errors:
            return Checked(None, (), tuple(errors))
        return Checked(spec, tuple(steps), ())
    return Checked(None, (), tuple(errors))


def _set_aside(data: dict[str, Any], path: str) -> bool:
    while path:
        if delete_path(data, path):
            return True
        path = path.rpartition(".")[0]
        if path in ("", "load", "workload", "target", "strategy"):
            return False
    return False


def field_for(path: str, field_paths: Iterable[str]) -> str | None:
    """The form field an error path belongs to: the longest field path that contains it."""
    if path == "load":
        return "load.duration"
    best = None
    for fp in field_paths:
        if (path == fp or path.startswith(fp + ".") or path.startswith(fp + "[")) and (
            best is None or len(fp) > len(best)
        ):
            best = fp
    return best
