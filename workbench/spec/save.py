"""Writing a spec back out as a TOML profile that `workbench run` runs unchanged.

A new file is written whole. An existing file is updated in place with tomlkit, so its
comments, order and layout stay; only the values that changed are touched, defaults the file
left out stay out, and sweeps keep the form the file wrote them in. When the updated file
would not load back to exactly the spec being saved, the file is left alone and the spec goes
to a new file beside it: a hand-written profile is never silently rewritten.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w
import tomlkit
from tomlkit.exceptions import TOMLKitError

from workbench.sdk.errors import SpecError
from workbench.sdk.options import parse_duration, parse_size
from workbench.spec.load import fold_sweeps, get_path, spec_from_data
from workbench.spec.model import Spec, spec_to_dict


def _drop_none(value: Any) -> Any:
    # TOML has no null: a missing field takes its default, which is None for these fields.
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def _profile_data(spec: Spec) -> dict[str, Any]:
    data: dict[str, Any] = _drop_none(spec_to_dict(spec))
    if not data.get("sweep"):
        data.pop("sweep", None)
    return data


def spec_to_toml(spec: Spec, header: str = "") -> str:
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    return comment + tomli_w.dumps(_profile_data(spec))


def _fold_like(data: dict[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """Sweep axes the old file wrote as a list at their path go back to that form."""
    return fold_sweeps(data, lambda axis: isinstance(get_path(old, axis["path"]), list))


def _merge(table: Any, new: Mapping[str, Any], defaults: Any) -> None:
    """Make tomlkit `table` hold `new`, touching only what differs."""
    for key in [k for k in table if k not in new]:
        del table[key]
    for key, value in new.items():
        default = defaults.get(key) if isinstance(defaults, Mapping) else None
        if key not in table:
            if value == default:
                continue  # the file left this default out; keep it out
            table[key] = value
            continue
        current = table[key]
        if isinstance(value, Mapping) and isinstance(current, Mapping) and value:
            _merge(current, value, default)
        elif _plain(current) != value and not _same_quantity(_plain(current), value):
            table[key] = value


def _plain(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


def _same_quantity(written: Any, value: Any) -> bool:
    """ "2s" written where the spec holds 2.0 (or "4KiB" for 4096) is the same value: keep it."""
    if (
        not isinstance(written, str)
        or isinstance(value, bool)
        or not isinstance(value, int | float)
    ):
        return False
    for parse in (parse_duration, parse_size):
        try:
            if parse(written, "") == value:
                return True
        except SpecError:
            continue
    return False


def updated_text(text: str, spec: Spec) -> str | None:
    """`text` (a profile) updated to hold `spec`, comments kept; None when that cannot be
    done faithfully (the file does not parse, or would not load back to `spec`)."""
    try:
        doc = tomlkit.parse(text)
        new = _fold_like(_profile_data(spec), doc.unwrap())
        _merge(doc, new, _profile_data(Spec()))
        result = tomlkit.dumps(doc)
        if spec_from_data(tomllib.loads(result)) != spec:
            return None
    except (TOMLKitError, tomllib.TOMLDecodeError, SpecError, ValueError, TypeError):
        return None
    return result


def _free_name(path: Path) -> Path:
    for n in range(1, 1000):
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        if not candidate.exists():
            return candidate
    raise OSError(f"no free file name beside {path}")


def save_spec(spec: Spec, path: Path, header: str = "") -> Path:
    """Save `spec` at `path` (see the module's doc); the path actually written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        text = updated_text(path.read_text(encoding="utf-8"), spec)
        if text is not None:
            path.write_text(text, encoding="utf-8")
            return path
        path = _free_name(path)
    path.write_text(spec_to_toml(spec, header), encoding="utf-8")
    return path
