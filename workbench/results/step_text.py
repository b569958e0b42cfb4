"""Lines reports and the CLI write about a step's counters beyond its latencies: Redis
Cluster redirections, and what the conditional writes did."""

from __future__ import annotations

from collections.abc import Mapping

from workbench.results.metrics import Stats
from workbench.sdk.ops import OUTCOMES, outcome_text


def outcomes_text(counts: Mapping[str, int]) -> str:
    """A conditional write's outcomes as reports write them, in the registry's order:
    "stored 212, not stored 594"."""
    order = {o: i for i, o in enumerate(OUTCOMES)}
    ranked = sorted(counts.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))
    return ", ".join(f"{outcome_text(o)} {n:,}" for o, n in ranked)


def outcome_lines(stats: Stats) -> list[str]:
    """Each conditional write's count and outcomes: "add: 806 (stored 212, not stored 594)"."""
    return [
        f"{kind}: {sum(counts.values()):,} ({outcomes_text(counts)})"
        for kind, counts in sorted(stats.outcomes.items())
    ]


def redirects_text(stats: Stats) -> str:
    """Redis Cluster redirections as memtier shows them (MOVED/s, ASK/s); "" when none."""
    if not (stats.moved or stats.ask):
        return ""
    dur = stats.duration or 0.0

    def rate(n: int) -> str:
        return f" ({n / dur:,.1f}/s)" if dur > 0 else ""

    return (
        f"redirects: MOVED {stats.moved:,}{rate(stats.moved)}, ASK {stats.ask:,}{rate(stats.ask)}"
        " (each op sent again and counted once)"
    )
