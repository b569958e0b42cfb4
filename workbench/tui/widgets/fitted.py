"""Figures that fit their width: a table that leaves out its least important columns first
and says which, and a border line that leaves out whole parts, instead of cutting at the edge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.widget import Widget
from textual.widgets import DataTable

Cell = str | Text
PADDING = 2  # DataTable's cell padding, one column each side


def fitting(
    columns: Sequence[str], rows: Sequence[Sequence[Cell]], drop_order: Sequence[str], room: int
) -> list[int]:
    """The indexes of the columns to show in `room` columns: every one when they fit, else
    without the columns of `drop_order`, the first left out first."""
    widths = [len(name) + PADDING for name in columns]
    for row in rows:
        for i, cell in enumerate(row):
            text = cell.plain if isinstance(cell, Text) else str(cell)
            widths[i] = max(widths[i], len(text) + PADDING)
    shown = list(range(len(columns)))
    for name in drop_order:
        if sum(widths[i] for i in shown) <= room:
            break
        if name in columns:
            shown.remove(columns.index(name))
    return shown


class FittedTable(DataTable[Cell]):
    """A DataTable given whole rows; it shows the columns that fit and names the others in
    its border's subtitle, after the table's own `note`."""

    def __init__(self, drop_order: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.drop_order = tuple(drop_order)
        self.note = ""
        self._columns: tuple[str, ...] = ()
        self._rows: list[tuple[str, Sequence[Cell]]] = []
        self._shown: list[int] = []

    def show_rows(self, columns: Sequence[str], rows: Sequence[tuple[str, Sequence[Cell]]]) -> None:
        """Every column and row (key, cells); the cursor stays on its row where it can."""
        self._columns = tuple(columns)
        self._rows = list(rows)
        self._refill()

    def _refill(self) -> None:
        room = self.scrollable_content_region.width or self.size.width
        shown = fitting(self._columns, [cells for _, cells in self._rows], self.drop_order, room)
        cursor = self.cursor_row
        if shown != self._shown or not self.columns:
            self.clear(columns=True)
            self.add_columns(*(self._columns[i] for i in shown))
            self._shown = shown
        else:
            self.clear()
        for key, cells in self._rows:
            self.add_row(*(cells[i] for i in shown), key=key)
        if self._rows:
            self.move_cursor(row=min(max(cursor, 0), len(self._rows) - 1), animate=False)
        hidden = [c for i, c in enumerate(self._columns) if i not in shown]
        parts = [self.note] if self.note else []
        if hidden:
            parts.append(f"{', '.join(hidden)} left out: wider shows them")
        self.border_subtitle = " · ".join(parts)

    def set_note(self, note: str) -> None:
        self.note = note
        self._refill()

    def on_resize(self) -> None:
        if self._columns:
            self._refill()


def fit_parts(chart: Widget, *parts: str) -> str:
    """The parts (markup) that fit the chart's border, the first first: a legend or a figure
    is left out whole, never cut."""
    room = chart.size.width - 6 if chart.size.width else 1_000
    kept: list[str] = []
    for part in parts:
        trial = "  ".join([*kept, part])
        if Text.from_markup(trial).cell_len > room:
            break
        kept.append(part)
    return "  ".join(kept)
