"""App-level messages: what a screen tells the app. Widget messages live with their widgets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message

from workbench.sdk.errors import SpecError
from workbench.spec.model import Spec


@dataclass(frozen=True)
class Draft:
    """The set-up being edited: its plain data, and the spec or the errors it gives."""

    data: dict[str, Any] = field(default_factory=dict)
    spec: Spec | None = None
    errors: tuple[SpecError, ...] = ()


class DraftChanged(Message):
    """The Setup form changed; the app keeps the latest draft for its start key."""

    def __init__(self, draft: Draft) -> None:
        super().__init__()
        self.draft = draft


class CompareRuns(Message):
    """History asks for these stored runs to be compared."""

    def __init__(self, run_ids: list[str]) -> None:
        super().__init__()
        self.run_ids = run_ids


class RenameRun(Message):
    """A stored run gets a new name."""

    def __init__(self, run_id: str, name: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.name = name


class DeleteRun(Message):
    """A stored run and everything measured in it go (the App refuses the running one)."""

    def __init__(self, run_id: str, label: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.label = label  # how the notice names it


class ExportRuns(Message):
    """These stored runs (one, or a comparison) go to the export dialog."""

    def __init__(self, run_ids: list[str]) -> None:
        super().__init__()
        self.run_ids = run_ids


class OpenProfile(Message):
    """A profile file opens in Setup."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
