"""The one narrow-layout breakpoint: below this many columns, screens fold their side panels."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Footer

NARROW_BELOW = 110  # columns


def mark_narrow(widget: Widget, width: int) -> None:
    """Give `widget` the ``narrow`` class below the breakpoint (the stylesheet folds panels)."""
    widget.set_class(width < NARROW_BELOW, "narrow")


def key_footer() -> Footer:
    """Every screen's footer of keys, compact: at 80 columns the keys of the busiest screen
    (History's seven) and F1's Help still fit beside the palette's."""
    return Footer(compact=True)
