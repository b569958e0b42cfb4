"""The one narrow-layout breakpoint: below this many columns, screens fold their side panels."""

from __future__ import annotations

from textual.widget import Widget

NARROW_BELOW = 110  # columns


def mark_narrow(widget: Widget, width: int) -> None:
    """Give `widget` the ``narrow`` class below the breakpoint (the stylesheet folds panels)."""
    widget.set_class(width < NARROW_BELOW, "narrow")
