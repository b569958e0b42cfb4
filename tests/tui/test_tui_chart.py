"""The braille chart and the figures, without an app."""

from __future__ import annotations

import math

from workbench.tui.figures import axis_us, format_rate, nines_label, percentile_x
from workbench.tui.widgets.chart import Axis, Series, plot
from workbench.tui.widgets.step_series import curve_series, percentile_axis, stepped


def test_plot_has_the_size_asked_for() -> None:
    lines = plot([Series("a", ((0, 1), (1, 2), (2, 3)))], 30, 8)
    assert len(lines) == 8
    assert all(line.cell_len == 30 for line in lines)


def test_plot_draws_braille_and_labels() -> None:
    lines = plot([Series("a", ((0, 0), (10, 100)))], 40, 6, y=Axis(fmt=lambda v: f"{v:g}"))
    text = "\n".join(line.plain for line in lines)
    assert any(0x2800 < ord(ch) <= 0x28FF for ch in text)
    assert "100" in lines[0].plain  # the top tick
    assert "0" in lines[-2].plain  # the bottom tick


def test_rising_line_goes_up_to_the_right() -> None:
    lines = plot([Series("a", ((0, 0), (1, 1)))], 20, 6)
    plot_rows = [line.plain for line in lines[:-1]]

    def first_col(row: str) -> int:
        return next(i for i, ch in enumerate(row) if 0x2800 < ord(ch) <= 0x28FF)

    assert first_col(plot_rows[0]) > first_col(plot_rows[-1])


def test_empty_chart_says_so() -> None:
    lines = plot([], 30, 5, empty="waiting for data")
    assert "waiting for data" in "".join(line.plain for line in lines)


def test_log_axis_and_non_finite_points() -> None:
    series = Series("a", ((0, 1.0), (1, 1000.0), (2, math.inf), (3, 10.0)))
    lines = plot([series], 30, 8, y=Axis(log=True, fmt=axis_us))
    labels = "".join(line.plain for line in lines)
    assert "1ms" in labels and "1µs" in labels


def test_percentile_axis_and_labels() -> None:
    assert percentile_x(0.0) == 0.0
    assert math.isclose(percentile_x(99.0), 2.0)
    assert percentile_x(100.0) == math.inf
    assert [nines_label(x) for x in range(5)] == ["0%", "90%", "99%", "99.9%", "99.99%"]
    curve = curve_series("c", [(0.0, 1.0), (90.0, 2.0), (99.9, 5.0), (100.0, 9.0)])
    assert len(curve.points) == 3  # the max, at infinity, is left out
    axis = percentile_axis((curve,))
    assert axis.lo == 0 and axis.hi == 3


def test_stepped_holds_each_interval() -> None:
    assert stepped([(1.0, 5.0), (2.0, 7.0)]) == ((0.0, 5.0), (1.0, 5.0), (1.0, 7.0), (2.0, 7.0))


def test_figures() -> None:
    assert format_rate(950) == "950"
    assert format_rate(12_345) == "12.3k"
    assert format_rate(1_250_000) == "1.25M"
    assert axis_us(1000) == "1ms"
    assert axis_us(0.1) == "100ns"
    assert axis_us(2.5) == "2.5µs"
