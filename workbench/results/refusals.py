"""Server-side refusals: errors that are the server's configuration speaking, not load.

memcached refuses items over its size limit ("object too large"), Redis refuses writes at
maxmemory without eviction ("OOM") and both refuse clients over their limit ("max number
of clients"). A run hitting them measures the refusal, whatever share of the ops it is,
so the summary says so once, with the setting to change.
"""

from __future__ import annotations

from collections.abc import Mapping

# (what the server says, lower case) -> what it means and what to change
REFUSALS: tuple[tuple[str, str], ...] = (
    (
        "object too large",
        "the server refused values above its item size limit (memcached -I, default 1 MB): "
        "raise target.server.max_item_size (managed) or memcached's -I, or lower "
        "workload.value_size",
    ),
    (
        "too large",
        "the server refused values above its item size limit: raise it, or lower "
        "workload.value_size",
    ),
    (
        "oom command not allowed",
        "Redis refused writes at maxmemory (OOM): raise target.server.maxmemory (managed) or "
        "maxmemory, or let it evict with maxmemory_policy = allkeys-lru",
    ),
    (
        "max number of clients",
        "the server refused connections over its client limit: raise Redis maxclients or "
        "memcached -c, or lower load.concurrency",
    ),
    (
        "out of memory",
        "the server ran out of memory for items: give it more (target.server memory) or "
        "lower workload.keys / workload.value_size",
    ),
)


def refusals(errors: Mapping[str, int], first_errors: Mapping[str, str]) -> list[str]:
    """One line per kind of refusal in a step's errors: count, the server's words, the fix."""
    lines = []
    for kind, count in errors.items():
        message = first_errors.get(kind, "")
        lowered = message.lower()
        for words, advice in REFUSALS:
            if words in lowered:
                lines.append(f'{count:,} {kind} error(s) "{message[:80]}": {advice}')
                break
    return lines
