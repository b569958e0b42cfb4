"""What the help screen lists: each screen's `HELP` and keys, and the keys every screen has.

Read from the screens' and the App's own `BINDINGS`, so a key added anywhere is listed.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.binding import BindingType

from workbench.tui.screens.compare import CompareScreen
from workbench.tui.screens.export import ExportScreen
from workbench.tui.screens.help import Section, binding_rows
from workbench.tui.screens.history import HistoryScreen, RunDetailScreen
from workbench.tui.screens.run import RunScreen
from workbench.tui.screens.setup import SetupScreen

EVERYWHERE = (
    "Keys that work on every screen. Letter keys (q, ?) act outside text fields; in a "
    "field they are typed."
)
MOVING = (
    ("Tab / Shift+Tab", "move to the next / previous field, table or panel"),
    ("↑ ↓ PgUp PgDn", "move in a table or a list; scroll a panel"),
    ("Ctrl+P", "the command palette: every command by name, and the profiles to open"),
)
SCREENS = (
    ("Setup (F2)", SetupScreen),
    ("Run (F3)", RunScreen),
    ("History (F4)", HistoryScreen),
    ("A stored run (Enter in History)", RunDetailScreen),
    ("Compare (F5)", CompareScreen),
    ("Export (e on Run, History or Compare)", ExportScreen),
)


def help_sections(app_bindings: Iterable[BindingType]) -> list[Section]:
    """The keys every screen has, then each screen's purpose and keys."""
    sections = [Section("Everywhere", EVERYWHERE, (*binding_rows(app_bindings), *MOVING))]
    for title, screen in SCREENS:
        keys = binding_rows(screen.BINDINGS)
        sections.append(Section(title, screen.HELP, (*keys, *getattr(screen, "MORE_KEYS", ()))))
    return sections
