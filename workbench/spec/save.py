"""Writing a spec back out as a TOML profile that `workbench run` runs unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomli_w

from workbench.spec.model import Spec, spec_to_dict


def _drop_none(value: Any) -> Any:
    # TOML has no null: a missing field takes its default, which is None for these fields.
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def spec_to_toml(spec: Spec, header: str = "") -> str:
    data = _drop_none(spec_to_dict(spec))
    if not data.get("sweep"):
        data.pop("sweep", None)
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    return comment + tomli_w.dumps(data)


def save_spec(spec: Spec, path: Path, header: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec_to_toml(spec, header))
