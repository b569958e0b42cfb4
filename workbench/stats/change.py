"""From two sides' replicates to a change, its 95% interval and a verdict, as criterion says
it: ``change: [-3.1% -2.0% -0.9%] (p = 0.00 < 0.05)`` and *Performance has improved*.

A change is relative (new / base - 1) for rates and latencies, worked on logs, and in
points of the share (new - base) for shares (hit rate, error share), whose base may be 0.
The verdict follows criterion's rule: improved or regressed only when the whole interval
lies beyond the noise threshold on one side; a share's threshold is the noise taken of the
base's share, so a significant rise of errors from none is always beyond it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from workbench.stats import student

LEVEL = 0.95
SIGNIFICANCE = 0.05
IMPROVED, REGRESSED, NO_CHANGE = "improved", "regressed", "no change"


@dataclass(frozen=True)
class Change:
    """The change of one figure: [lo mid hi] at 95%, its p value and what it means."""

    lo: float
    mid: float
    hi: float
    p: float
    verdict: str  # IMPROVED, REGRESSED or NO_CHANGE
    points: bool  # lo, mid, hi are points of a share (0.01 = one point), not ratios
    base: float  # the base's figure
    noise: float  # the noise threshold, relative

    @property
    def significant(self) -> bool:
        return self.p < SIGNIFICANCE

    @property
    def within_noise(self) -> bool:
        """Different from no change at all, but not beyond the noise threshold."""
        return self.verdict == NO_CHANGE and self.significant

    @property
    def band(self) -> float:
        """The noise threshold in the change's own terms."""
        return self.limit(self.noise)

    def limit(self, threshold: float) -> float:
        """A relative threshold in the change's own terms: of a share, taken of the base's
        share (2% of a 60% hit rate is 1.2 points)."""
        return threshold * self.base if self.points else threshold

    def beyond(self, threshold: float, *, higher_better: bool) -> bool:
        """A significant regression whose whole interval lies beyond `threshold`."""
        limit = self.limit(threshold)
        return self.hi < -limit if higher_better else self.lo > limit


def judge(lo: float, hi: float, band: float, *, higher_better: bool) -> str:
    """Improved or regressed when [lo hi] lies wholly beyond +-band, else no change."""
    if lo > band:
        return IMPROVED if higher_better else REGRESSED
    if hi < -band:
        return REGRESSED if higher_better else IMPROVED
    return NO_CHANGE


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its figure, the figure of each replicate, and how many
    independent pieces (repeats, or blocks of intervals) the replicates were drawn from."""

    point: float
    replicates: np.ndarray
    units: int


def spread(side: Side, transform: Callable[[np.ndarray], np.ndarray]) -> float:
    """The variance of the side's figure (transformed), from its replicates, made unbiased:
    a bootstrap over n pieces gives (n - 1) / n of it."""
    values = transform(side.replicates)
    values = values[np.isfinite(values)]
    if values.size < 2 or side.units < 2:
        return float("nan")
    return float(np.var(values)) * side.units / (side.units - 1)


def welch(var_base: float, var_new: float, units_base: int, units_new: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of two sides' figures."""
    below = var_base**2 / (units_base - 1) + var_new**2 / (units_new - 1)
    return (var_base + var_new) ** 2 / below if below > 0 else math.inf


def compare(
    base: Side, new: Side, *, points: bool, higher_better: bool, noise: float
) -> Change | None:
    """The change from `base` to `new`, each side's replicates drawn independently; None
    when there is nothing to compare (a base of 0 for a ratio, no spread to read).

    The interval is the difference (of logs, for a ratio) plus or minus Student's t times
    its bootstrap standard error, with Welch's degrees of freedom from the pieces each side
    was drawn from. With three repeats a side that is t of 2 to 4 degrees (2.8 to 4.3),
    not the normal's 1.96: a percentile of so few pieces' bootstrap is too narrow, and a
    same-against-same comparison would then cry wolf one time in ten."""
    if points:
        transform, mid = (lambda v: v), new.point - base.point
    elif base.point > 0 and new.point > 0:
        transform, mid = np.log, math.log(new.point / base.point)
    else:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        var_base, var_new = spread(base, transform), spread(new, transform)
    if math.isnan(var_base) or math.isnan(var_new):
        return None
    se = math.sqrt(var_base + var_new)
    df = welch(var_base, var_new, base.units, new.units)
    half = student.quantile(1 - (1 - LEVEL) / 2, df) * se
    p = 2 * (1 - student.cdf(abs(mid) / se, df)) if se > 0 else float(mid == 0)
    lo, hi = mid - half, mid + half
    if not points:
        lo, mid, hi = math.expm1(lo), math.expm1(mid), math.expm1(hi)
    band = noise * base.point if points else noise
    verdict = judge(lo, hi, band, higher_better=higher_better)
    return Change(lo, mid, hi, min(1.0, p), verdict, points, base.point, noise)
