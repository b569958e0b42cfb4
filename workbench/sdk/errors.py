"""One error hierarchy for every face: a message for people and where it happened."""

from __future__ import annotations


class WorkbenchError(Exception):
    """An error a person can act on. `where` names the file, field or target involved."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class SpecError(WorkbenchError):
    """A profile, an override or a form field does not describe a valid experiment."""


class PluginError(WorkbenchError):
    """A plugin is unknown, broken, or declares something the contract does not allow."""


class TargetError(WorkbenchError):
    """The cache system under test cannot be reached or started."""


class StoreError(WorkbenchError):
    """The results store cannot be opened, or a run is not in it."""


class RunRefError(StoreError):
    """A run reference matches no run, or more than one."""


class RunActiveError(StoreError):
    """A run cannot be changed that way while its process is still running it."""
