"""Charts (`html`, `svg`): each chart is there, drawn from the stored figures, and the page
renders in a real browser. matplotlib's bytes change across its releases, so these tests
read the charts' structure (ids and data lines), never compare whole files."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from golden_runs import scenarios

from workbench.report import ReportError, render
from workbench.report.charts import charts
from workbench.report.model import read_runs
from workbench.results.store import StoredRun

SWEEP_CHARTS = [
    "percentiles",
    "throughput-over-time",
    "latency-over-time",
    "latency-vs-throughput",
    "throughput-vs-swept",
    "hit-rate",  # the golden runs' gets miss
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[StoredRun]]:
    return scenarios(tmp_path_factory.mktemp("charts") / "runs.sqlite3")


@pytest.fixture(scope="module")
def sweep_page(runs: dict[str, list[StoredRun]]) -> str:
    """The sweep's html page, which several tests read: matplotlib takes seconds of CPU to
    draw its six charts."""
    (sweep,) = runs["sweep"]
    return render(sweep, "html")


def data_lines(svg: str, chart: str) -> list[int]:
    """Vertices of each data line of one chart (grid and ticks are not data lines)."""
    found = re.findall(rf'<g id="{chart}-data-\d+">\s*<path d="([^"]*)"', svg)
    return [len(re.findall(r"[ML] ", d)) for d in found]


def test_a_sweep_gets_every_chart_with_a_line_per_step(
    runs: dict[str, list[StoredRun]], sweep_page: str
) -> None:
    (sweep,) = runs["sweep"]
    page = sweep_page
    assert re.findall(r'<figure id="([a-z-]+)"', page) == SWEEP_CHARTS
    steps = [s for s in sweep.steps if s.stats.ops]
    # One percentile line and one throughput line per step, a point per interval.
    assert len(data_lines(page, "percentiles")) == len(steps)
    assert all(n >= 10 for n in data_lines(page, "percentiles"))
    assert data_lines(page, "throughput-over-time") == [len(s.intervals) for s in steps]
    # p50 and p99 per step over time; p50 and p99 per series against throughput.
    assert len(data_lines(page, "latency-over-time")) == 2 * len(steps)
    series = {s.label.get("strategy.name") for s in sweep.steps}
    per_series = len(steps) // len(series)
    assert data_lines(page, "latency-vs-throughput") == [per_series] * (2 * len(series))
    assert data_lines(page, "throughput-vs-swept") == [per_series] * len(series)


def test_the_page_shows_the_table_figures(
    runs: dict[str, list[StoredRun]], sweep_page: str
) -> None:
    (sweep,) = runs["sweep"]
    page = sweep_page
    rows = [ln for ln in render(sweep, "table").splitlines() if ln.startswith("| concurrency=")]
    assert len(rows) == len(sweep.steps)
    for row in rows:
        ops = row.split("|")[4].strip().strip("*")
        assert f"<td>{ops}</td>" in page


def test_a_single_step_has_no_sweep_charts(runs: dict[str, list[StoredRun]]) -> None:
    (single,) = runs["single"]
    assert [c.id for c in charts(read_runs(single))] == [*SWEEP_CHARTS[:3], "hit-rate"]


def test_compared_runs_overlay_on_one_chart(runs: dict[str, list[StoredRun]]) -> None:
    compared = runs["comparison"]
    page = render(compared, "svg")
    measured = sum(1 for r in compared for s in r.steps if s.stats.ops)
    assert page.startswith("<svg")
    assert len(data_lines(page, "percentiles")) == measured
    for run in compared:
        assert run.name in page  # the legend names each run


def test_charts_are_reproducible(runs: dict[str, list[StoredRun]], sweep_page: str) -> None:
    (sweep,) = runs["sweep"]
    assert render(sweep, "html") == sweep_page  # the page holds every chart's svg


def test_nothing_measured_is_said_not_drawn(runs: dict[str, list[StoredRun]]) -> None:
    (stopped,) = runs["interrupted"]
    empty = StoredRun(**{**stopped.__dict__, "steps": stopped.steps[2:]})
    with pytest.raises(ReportError, match="nothing to chart"):
        render(empty, "svg")
    assert "nothing to chart" in render(empty, "html")


class _Figures(HTMLParser):
    """The rendered DOM's figures, and the longest path drawn in each."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, int] = {}
        self.current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "figure":
            self.current = a.get("id") or ""
            self.figures[self.current] = 0
        elif tag == "path" and self.current is not None:
            points = len(re.findall(r"[ML]", a.get("d") or ""))
            self.figures[self.current] = max(self.figures[self.current], points)

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self.current = None


def test_the_page_renders_in_headless_chromium(sweep_page: str, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (./dev test installs it from apt)")
    page = tmp_path / "report.html"
    page.write_text(sweep_page, encoding="utf-8")
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    parser = _Figures()
    parser.feed(dom)
    assert list(parser.figures) == SWEEP_CHARTS
    assert all(points >= 3 for points in parser.figures.values()), parser.figures


def test_one_chart_alone(runs: dict[str, list[StoredRun]]) -> None:
    (sweep,) = runs["sweep"]
    alone = render(sweep, "svg", chart="latency-vs-throughput")
    assert re.findall(r'<g id="([a-z-]+)"', alone) == ["latency-vs-throughput"]
    with pytest.raises(ReportError, match="expected one of percentiles"):
        render(sweep, "svg", chart="pie")


def test_latency_against_throughput_reads_at_any_spread(
    runs: dict[str, list[StoredRun]],
) -> None:
    """Series far apart in ops/s get a log axis; point labels never overlap one another;
    one legend entry per series plus p50 and p99."""
    from workbench.report.charts import figure

    (sweep,) = runs["sweep"]
    data = read_runs([sweep])
    (chart,) = [c for c in charts(data) if c.id == "latency-vs-throughput"]
    fig = figure([chart])
    ax = fig.axes[0]
    xs = [x for line in ax.get_lines() for x in line.get_xdata()]
    assert ax.get_xscale() == ("log" if max(xs) / min(xs) > 5 else "linear")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    assert boxes, "the steps' points are labelled"
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), "two point labels overlap"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    series = {s.label.get("strategy.name") for s in sweep.steps}
    assert legend[-2:] == ["p50", "p99"] and len(legend) == len(series) + 2


def test_the_page_puts_simulated_hit_rates_beside_the_measured(
    runs: dict[str, list[StoredRun]],
) -> None:
    """Issue 22 item 3: the html report has the measured row, then one row per simulated
    policy, each saying which it is."""
    (run,) = runs["simulated"]
    page = render(run, "html")
    assert "<h2>Measured and simulated hit rates</h2>" in page
    rows = re.findall(r'<tr><td class="simulated">simulated: (\w+)</td>', page)
    assert rows == ["lru", "s3fifo", "belady"]
    assert "68.27%" in page and "79.56%" in page  # lru's and s3fifo's hit rates
    assert "<h2>Measured and simulated hit rates</h2>" not in render(runs["single"][0], "html")


def test_an_ab_with_repeats_reads_by_swept_value(runs: dict[str, list[StoredRun]]) -> None:
    """Issue 36 item 4: a categorical sweep with repeats is two groups, not six lines: the
    repeats of a value share a colour and a legend entry, its throughput is a bar per value
    (the median, whiskers to the lowest and highest), the latency over time is on a log
    axis, and the change of each figure is drawn with its interval in its verdict's colour."""
    from workbench.report.charts import figure
    from workbench.report.group_charts import VERDICT_COLORS

    (ab,) = runs["ab"]
    drawn = {c.id: c for c in charts(read_runs(ab))}
    assert list(drawn) == [*SWEEP_CHARTS, "changes"]
    fig = figure([drawn["percentiles"], drawn["latency-over-time"], drawn["throughput-vs-swept"]])
    percentiles, over_time, swept = fig.axes
    assert len(percentiles.get_lines()) == 6
    assert len({line.get_color() for line in percentiles.get_lines()}) == 2
    legend = [t.get_text() for t in percentiles.get_legend().get_texts()]
    assert legend == ["name=direct (3 repeats)", "name=threads (3 repeats)"]
    assert over_time.get_yscale() == "log"
    bars = swept.patches
    assert len(bars) == 2  # a bar per value, no line between categories
    heights = sorted(round(b.get_height()) for b in bars)
    medians = sorted(
        round(sorted(s.stats.ops / s.stats.duration for s in ab.steps if s.label[k] == v)[1])
        for k, v in (("strategy.name", "direct"), ("strategy.name", "threads"))
    )
    assert heights == medians
    (changes,) = figure([drawn["changes"]]).axes
    colors = {tuple(round(c, 3) for c in line.get_color()) if not isinstance(line.get_color(), str)
              else line.get_color() for line in changes.get_lines()}  # fmt: skip
    assert VERDICT_COLORS["regressed"] in colors


def test_the_page_groups_repeats_and_colours_each_verdict(
    runs: dict[str, list[StoredRun]],
) -> None:
    """Issue 36 items 2 and 4: the html page has the repeats' median [min max] (hit rates of
    hot and cold keys too), and the A/B table with a class, hence a colour, per verdict."""
    (ab,) = runs["ab"]
    page = render(ab, "html")
    assert "<h2>Repeats: median [min max]</h2>" in page
    assert "<th>hot keys</th><th>cold keys</th>" in page  # in the figures, step by step
    assert "<h2>A/B: each strategy.name against the first</h2>" in page
    cells = re.findall(r'<td class="change (\w+)">([^<]*)<br>', page)
    assert [c for c, _ in cells] == ["regressed"] * 4 + ["nochange"] * 2
    assert cells[0][1] == "-28.59%"  # thrpt, as the table report gives it
    assert "-28.59% [-36.69% -19.45%] **regressed**" in render(ab, "table")
