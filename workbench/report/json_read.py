"""Runs read back from the JSON the ``json`` report writes (``--json-out``, ``workbench report
-f json``), so a baseline can be a file kept in a repository: ``workbench compare
baseline.json last``, ``workbench run PROFILE --baseline baseline.json``.

The file holds every interval with its histograms, so a run read back is the run that was
stored: the same figures, the same comparison.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbench.report.json_report import FORMAT
from workbench.results.events import Interval, Notice
from workbench.results.metrics import Stats
from workbench.results.store import StoredRun, StoredStep
from workbench.sdk.errors import SpecError


def looks_like_file(ref: str) -> bool:
    """A reference that names a JSON file rather than a stored run."""
    return ref.endswith(".json") or "/" in ref


def read_json_runs(path: Path) -> list[StoredRun]:
    """Every run of an exported JSON document; a file that is not one is a SpecError naming
    it and what was expected."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror or exc}", str(path)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"not JSON ({exc})", str(path)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not doc.get("runs"):
        raise SpecError(
            f'not a workbench run export: expected {{"format": "{FORMAT}", "runs": [...]}} '
            "as `workbench report RUN -f json` writes",
            str(path),
        )
    try:
        return [_run(r) for r in doc["runs"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"a run in it is incomplete or malformed ({exc!r})", str(path)) from None


def _run(data: dict[str, Any]) -> StoredRun:
    run_id = str(data["id"])
    steps = [_step(run_id, s) for s in data["steps"] if "stats" in s]
    notices = [
        Notice(run_id, int(n["step"]), n["level"], str(n["message"]))
        for n in data.get("notices", [])
    ]
    return StoredRun(
        run_id,
        str(data["name"]),
        float(data["created_at"]),
        data.get("finished_at"),
        str(data["status"]),
        data.get("error"),
        dict(data["spec"]),
        dict(data.get("environment", {})),
        list(data.get("plan", [])),
        steps,
        notices,
    )


def _step(run_id: str, data: dict[str, Any]) -> StoredStep:
    index = int(data["index"])
    intervals = [
        Interval(run_id, index, int(i["index"]), float(i["elapsed"]), Stats.from_dict(i["stats"]))
        for i in data.get("intervals", [])
    ]
    return StoredStep(
        index,
        str(data["title"]),
        dict(data["label"]),
        dict(data["spec"]),
        int(data["workers"]),
        int(data["clients"]),
        dict(data.get("server", {})),
        str(data["status"]),
        Stats.from_dict(data["stats"]),
        intervals,
        dict(data.get("resolved", {})),
    )
