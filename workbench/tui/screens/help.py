"""The help screen (F1, or ? outside a text field): every screen, key and action.

It is drawn from the screens' own `BINDINGS` and `HELP` texts, which the App hands it as
`Section`s, so a key added to a screen shows here without this module knowing the App.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from workbench.tui.layout import key_footer


def key_name(key: str) -> str:
    """A key as people write it: "ctrl+r" -> "Ctrl+R", "f2" -> "F2", "question_mark" -> "?"."""
    names = {
        "question_mark": "?",
        "left_square_bracket": "[",
        "right_square_bracket": "]",
        "space": "Space",
        "escape": "Esc",
        "delete": "Del",
        "enter": "Enter",
    }
    shown = []
    for one in key.split(","):
        if one in names:
            shown.append(names[one])
            continue
        *mods, last = one.split("+")
        last = last.upper() if mods or (last[0] == "f" and last[1:].isdigit()) else last
        shown.append("+".join([*(m.capitalize() for m in mods), last]))
    return " / ".join(shown)


@dataclass(frozen=True)
class Section:
    """One screen (or the keys every screen has): what it is for and its keys."""

    title: str
    about: str
    keys: tuple[tuple[str, str], ...]  # (key, what it does)


def binding_rows(bindings: Iterable[BindingType]) -> tuple[tuple[str, str], ...]:
    """(key, what it does) for each action, its keys together, its tooltip after its name."""
    keys: dict[str, list[str]] = {}
    what: dict[str, str] = {}
    for b in bindings:
        if not isinstance(b, Binding):
            continue
        keys.setdefault(b.action, []).append(b.key_display or key_name(b.key))
        if b.action not in what or b.tooltip:
            what[b.action] = f"{b.description}: {b.tooltip}" if b.tooltip else b.description
    return tuple((" / ".join(keys[action]), what[action]) for action in keys)


def section_table(section: Section) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True, min_width=12)
    table.add_column(ratio=1)
    for key, what in section.keys:
        table.add_row(key, what)
    return table


class HelpScreen(ModalScreen[None]):
    """Every screen, what it is for, and its keys; Esc, F1, ? or q closes it."""

    BINDINGS = [Binding("escape,f1,question_mark,q", "dismiss", "Close", key_display="Esc")]

    def __init__(self, sections: Sequence[Section]) -> None:
        super().__init__(classes="dialog-screen")
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            for section in self.sections:
                yield Static(Text(section.title, style="bold"), classes="help-title")
                if section.about:
                    yield Static(section.about, classes="help-about")
                yield Static(section_table(section), classes="help-keys")
        yield key_footer()

    def on_mount(self) -> None:
        dialog = self.query_one("#help-dialog")
        dialog.border_title = "Help: screens and keys"
        dialog.border_subtitle = "Esc closes · ↑↓ scroll"
        dialog.focus()
