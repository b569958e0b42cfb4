"""A braille line chart: data in, text out. Renders the same in tmux, any terminal, any theme.

`plot(...)` is a pure function (series and a size → lines of rich `Text`), so it is tested
without an app; `Chart` is the widget: a `series` reactive, colours from the theme.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

# Dot (column, row) inside a braille cell → its bit.
_DOTS = {
    (0, 0): 0x01,
    (0, 1): 0x02,
    (0, 2): 0x04,
    (1, 0): 0x08,
    (1, 1): 0x10,
    (1, 2): 0x20,
    (0, 3): 0x40,
    (1, 3): 0x80,
}
# The theme colours series take, in order: distinct on dark and light themes alike.
PALETTE = ("primary", "warning", "success", "error", "accent", "secondary")


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[tuple[float, float], ...]
    color: str = ""  # a colour, or empty for the palette's next


@dataclass(frozen=True)
class Axis:
    """How values map onto an axis and how ticks are labelled."""

    log: bool = False
    fmt: Callable[[float], str] = field(default=lambda v: f"{v:g}")
    lo: float | None = None  # fixed bounds; None: from the data
    hi: float | None = None
    ticks: Sequence[float] | None = None  # positions (in data units) to label


# Plot cells by (column, row): [braille dot bits, index of the series drawn last there].
Cells = dict[tuple[int, int], list[int]]


def _nice_ceiling(v: float) -> float:
    if v <= 0:
        return 1.0
    exp = math.floor(math.log10(v))
    base = 10.0**exp
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if v <= m * base + 1e-12:
            return m * base
    return 10 * base


def _bounds(values: list[float], axis: Axis, zero: bool) -> tuple[float, float]:
    if axis.log:
        pos = [v for v in values if v > 0]
        lo = axis.lo if axis.lo is not None else (min(pos) if pos else 1.0)
        hi = axis.hi if axis.hi is not None else (max(pos) if pos else 10.0)
        lo_e = math.floor(math.log10(lo))
        hi_e = max(math.ceil(math.log10(hi)), lo_e + 1)
        return 10.0**lo_e, 10.0**hi_e
    lo = axis.lo if axis.lo is not None else (0.0 if zero else min(values, default=0.0))
    hi = axis.hi if axis.hi is not None else max(values, default=1.0)
    if axis.hi is None:
        hi = _nice_ceiling(hi) if zero else hi
    if hi <= lo:
        hi = lo + 1.0
    return lo, hi


def _scale(v: float, lo: float, hi: float, log: bool) -> float:
    """0..1 along the axis."""
    if log:
        v = max(v, lo)
        return (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    return (v - lo) / (hi - lo)


def _y_ticks(lo: float, hi: float, axis: Axis, rows: int) -> list[float]:
    if axis.ticks is not None:
        return [t for t in axis.ticks if lo <= t <= hi]
    if axis.log:
        decades = range(round(math.log10(lo)), round(math.log10(hi)) + 1)
        ticks = [10.0**d for d in decades]
        while len(ticks) > max(2, rows // 2 + 1):
            ticks = ticks[::2] if ticks[-1] == ticks[::2][-1] else [*ticks[:-1:2], ticks[-1]]
        return ticks
    n = 2 if rows < 6 else 4 if rows < 14 else 5
    return [lo + (hi - lo) * i / n for i in range(n + 1)]


def _line(cells: Cells, x0: int, y0: int, x1: int, y1: int, c: int) -> None:
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    while True:
        cell = cells.setdefault((x0 // 2, y0 // 4), [0, c])
        cell[0] |= _DOTS[(x0 % 2, y0 % 4)]
        cell[1] = c
        if x0 == x1 and y0 == y1:
            return
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            x0 += sx
        if e2 <= dx:
            err += dx
            y0 += sy


@dataclass(frozen=True)
class _Frame:
    """Where data lands: the axes' bounds and the braille dot grid they map onto."""

    x: Axis
    y: Axis
    xlo: float
    xhi: float
    ylo: float
    yhi: float
    dots_w: int
    dots_h: int

    def dot(self, px: float, py: float) -> tuple[int, int] | None:
        """The dot of a data point, or None when it falls outside the x range."""
        fx = _scale(px, self.xlo, self.xhi, self.x.log)
        if not (-1e-9 <= fx <= 1 + 1e-9):
            return None
        fy = min(max(_scale(py, self.ylo, self.yhi, self.y.log), 0.0), 1.0)
        return round(fx * (self.dots_w - 1)), round((1 - fy) * (self.dots_h - 1))


def _draw(series: Sequence[Series], frame: _Frame) -> Cells:
    """Each series as joined line segments: cell -> [braille dot bits, series index]."""
    cells: Cells = {}
    for i, s in enumerate(series):
        prev: tuple[int, int] | None = None
        for px, py in s.points:
            dot = frame.dot(px, py) if math.isfinite(px) and math.isfinite(py) else None
            if dot is not None:
                _line(cells, *(prev or dot), *dot, i)
            prev = dot
    return cells


def _plot_row(cells: Cells, r: int, cols: int, styles: list[str]) -> list[tuple[str, str]]:
    """Row `r` of the plot as runs of (characters, style)."""
    runs: list[tuple[str, str]] = []
    run_style = ""
    run: list[str] = []
    for c in range(cols):
        cell = cells.get((c, r))
        ch, st = (chr(0x2800 + cell[0]), styles[cell[1]]) if cell else (" ", "")
        if st != run_style and run:
            runs.append(("".join(run), run_style))
            run = []
        run_style = st
        run.append(ch)
    if run:
        runs.append(("".join(run), run_style))
    return runs


def _empty_chart(width: int, height: int, empty: str, style: str) -> list[Text]:
    lines = [Text(" " * width) for _ in range(height)]
    lines[(height - 1) // 2] = Text(empty[:width].center(width), style=style)
    return lines


def plot(
    series: Sequence[Series],
    width: int,
    height: int,
    *,
    x: Axis | None = None,
    y: Axis | None = None,
    colors: Sequence[str] = (),
    empty: str = "waiting for data",
    axis_style: str = "dim",
) -> list[Text]:
    """The chart as `height` lines of `width` cells: y labels, braille plot, x labels."""
    x = x or Axis()
    y = y or Axis()
    width, height = max(width, 8), max(height, 2)
    xs = [p[0] for s in series for p in s.points if math.isfinite(p[0])]
    ys = [p[1] for s in series for p in s.points if math.isfinite(p[1])]
    rows = height - 1
    if not xs:
        return _empty_chart(width, height, empty, axis_style)
    ylo, yhi = _bounds(ys, y, zero=not y.log)
    xlo, xhi = _bounds(xs, x, zero=False)
    if x.hi is None and not x.log and len(set(xs)) == 1:
        xlo, xhi = xs[0] - 1, xs[0] + 1
    yticks = _y_ticks(ylo, yhi, y, rows)
    labels = {round((1 - _scale(t, ylo, yhi, y.log)) * (rows - 1)): y.fmt(t) for t in yticks}
    label_w = max((len(v) for v in labels.values()), default=0) + 1
    cols = max(width - label_w, 2)
    cells = _draw(series, _Frame(x, y, xlo, xhi, ylo, yhi, cols * 2, rows * 4))
    styles = [s.color or (colors[i % len(colors)] if colors else "") for i, s in enumerate(series)]
    lines = []
    for r in range(rows):
        line = Text(no_wrap=True)
        label = labels.get(r, "")
        line.append(label.rjust(label_w - 1) + ("┤" if label else "│"), style=axis_style)
        for chars, style in _plot_row(cells, r, cols, styles):
            line.append(chars, style=style)
        lines.append(line)
    lines.append(_x_labels(xlo, xhi, x, cols, label_w, axis_style))
    return lines


def _x_labels(lo: float, hi: float, axis: Axis, cols: int, pad: int, style: str) -> Text:
    buf = [" "] * (cols + pad)
    ticks = (
        [t for t in axis.ticks if lo <= t <= hi]
        if axis.ticks is not None
        else [lo, (lo + hi) / 2, hi]
    )
    placed_until = -1
    for t in ticks:
        label = axis.fmt(t)
        pos = pad + round(_scale(t, lo, hi, axis.log) * (cols - 1))
        start = min(max(pos - len(label) // 2, pad - 1), cols + pad - len(label))
        if start <= placed_until:
            continue
        buf[start : start + len(label)] = list(label)
        placed_until = start + len(label)
    return Text("".join(buf)[: cols + pad], style=style, no_wrap=True)


class Chart(Widget):
    """A titled braille chart; set `series` (and optionally the axes) to redraw."""

    DEFAULT_CSS = """
    Chart {
        height: 1fr;
        min-height: 4;
        border: round $foreground 25%;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        padding: 0 1 0 0;
    }
    """

    series: reactive[tuple[Series, ...]] = reactive((), always_update=True)

    def __init__(
        self,
        title: str = "",
        *,
        x: Axis | None = None,
        y: Axis | None = None,
        empty: str = "waiting for data",
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = title
        self.x_axis = x or Axis()
        self.y_axis = y or Axis()
        self.empty = empty

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._theme_changed, init=False)

    def _theme_changed(self, _theme: str) -> None:
        self.refresh()

    # Not `colors`: that name is DOMNode's (the widget's own background and foreground).
    def palette(self) -> list[str]:
        variables = self.app.theme_variables
        return [variables.get(name, "") for name in PALETTE]

    def legend(self) -> str:
        colors = self.palette()
        parts = []
        for i, s in enumerate(self.series):
            color = s.color or colors[i % len(colors)]
            parts.append(f"[{color}]━[/] {s.name}")
        return "  ".join(parts)

    def watch_series(self) -> None:
        self.border_subtitle = self.legend()

    def render(self) -> Text:
        size = self.content_size
        lines = plot(
            self.series,
            size.width,
            size.height,
            x=self.x_axis,
            y=self.y_axis,
            colors=self.palette(),
            empty=self.empty,
        )
        return Text("\n", no_wrap=True).join(lines)
