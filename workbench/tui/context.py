"""What a screen is handed when it is built: the results store to read and where profiles live.

Screens read through it (in worker threads when a call can block) and never reach for the
App: every change to stored runs goes up as a message the App handles (`messages.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.results.store import Store


@dataclass(frozen=True)
class ScreenContext:
    store: Store
    profiles_dir: Path
