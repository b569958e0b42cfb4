"""Server-side refusals: errors that are the server's configuration speaking, not load.

A server refuses items over its size limit, writes when it is out of memory, and clients
over its limit. A run hitting them measures the refusal, whatever share of the ops it is,
so the summary says so once, with the setting to change: the system's own advice first
(`CacheSystem.refusals`, stored with the step: Redis's OOM names maxmemory), else the
general one below.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

# (what the server says, lower case) -> what it means and what to change, for any server
REFUSALS: tuple[tuple[str, str], ...] = (
    (
        "too large",
        "the server refused values above its item size limit: raise it, or lower "
        "workload.value_size",
    ),
    (
        "max number of clients",
        "the server refused connections over its client limit: raise it, or lower load.concurrency",
    ),
    (
        "out of memory",
        "the server ran out of memory for items: give it more (target.server memory) or "
        "lower workload.keys / workload.value_size",
    ),
)


def refusals(
    errors: Mapping[str, int],
    first_errors: Mapping[str, str],
    declared: Iterable[Sequence[str]] = (),
) -> list[str]:
    """One line per kind of refusal in a step's errors: count, the server's words, the fix.
    `declared`: the step's system's own (words, advice) pairs, tried first."""
    known = [(str(words).lower(), str(advice)) for words, advice in declared]
    lines = []
    for kind, count in errors.items():
        message = first_errors.get(kind, "")
        lowered = message.lower()
        for words, advice in (*known, *REFUSALS):
            if words in lowered:
                lines.append(f'{count:,} {kind} error(s) "{message[:80]}": {advice}')
                break
    return lines
