"""How long a search probe measures: `search.probe` seconds, or, for a rate whose probe was
too short for the percentile it failed, as long as that percentile needs at that rate.

A 1 s probe at 8,000 ops/s holds 8,000 ops; a p99 needs 100,000
(`workbench.results.self_checks.needed`), so its p99 is the 80th slowest op: one stall of
the machine, or chance, decides it. Failing the rate on it ends a search far below the
server's knee, and probing it again for 1 s only asks the same question of as few ops.
So a probe that failed *for too few samples* (`search_causes.FEW_SAMPLES`) is followed by
one *long* probe of the same rate, measured for needed/rate seconds (after the profile's
warm-up, as every probe), rounded up to the probe's interval, and at most
``search.max_probe`` seconds; the rate is decided on that probe alone
(`search_causes.decide_long`). ``search.max_probe = 0`` turns this off, as does --strict
(its rule is the one from before: any failure fails).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from workbench.results.search_causes import FEW_SAMPLES
from workbench.spec.model import SearchSpec

if TYPE_CHECKING:
    from workbench.results.search_probe import Probe

LONG_LABEL = "search.long"  # the step label of a long probe: its measured seconds
# Ops a long probe falls short of rate x seconds by (in flight at its end, sends late
# at its start): a few percent more time keeps it above what its percentile needs.
LONG_MARGIN = 1.05
LONG_STEP = 0.1  # a long probe's seconds are rounded up to this (its intervals' length)


def long_seconds(settings: SearchSpec, rate: float, needed_ops: int) -> float:
    """The measured seconds a probe at `rate` needs to hold `needed_ops` ops, at least
    `search.probe` and at most `search.max_probe`."""
    wanted = needed_ops / rate * LONG_MARGIN if rate > 0 else math.inf
    wanted = math.ceil(wanted / LONG_STEP - 1e-9) * LONG_STEP
    return round(max(settings.probe, min(settings.max_probe, wanted)), 6)


def lengthens(settings: SearchSpec, probe: Probe) -> bool:
    """Whether `probe` is followed by a long probe of its rate: it failed for too few
    samples, was not long itself, and a longer one is allowed (not --strict,
    `search.max_probe` above `search.probe`)."""
    if settings.strict or probe.long or probe.passed or probe.cause != FEW_SAMPLES:
        return False
    return long_seconds(settings, probe.rate, probe.needed_ops) > settings.probe


def lengthened_text(settings: SearchSpec, probe: Probe) -> str:
    """What the search does after a probe too short for its percentile, in a few words."""
    seconds = long_seconds(settings, probe.rate, probe.needed_ops)
    capped = seconds >= settings.max_probe and (
        probe.rate * seconds < probe.needed_ops * LONG_MARGIN
    )
    bound = f", search.max_probe {settings.max_probe:g}s" if capped else ""
    return (
        f"too few samples in {probe.seconds:g}s: probing this rate again for {seconds:g}s "
        f"(~{probe.rate * seconds:,.0f} ops of the {probe.needed_ops:,} its percentile "
        f"needs{bound}), the rate decided on that probe"
    )


def long_text(probe: Probe) -> str:
    """What a long probe decided, in a few words."""
    few = probe.ops < probe.needed_ops
    short = f", still fewer than the {probe.needed_ops:,} ops it needs" if few else ""
    if probe.passed:
        return f"long probe ({probe.seconds:g}s): the rate passes"
    return f"long probe ({probe.seconds:g}s{short}): decided on it"
