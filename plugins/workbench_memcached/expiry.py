"""memcached's exptime: how a TTL in seconds travels."""

from __future__ import annotations

import math
import time

THIRTY_DAYS = 60 * 60 * 24 * 30  # memcached reads a larger exptime as a unix time


def exptime(ttl: float | None) -> int:
    """memcached's exptime for a TTL in seconds: 0 is none; past 30 days, a unix time."""
    if ttl is None or ttl == 0:
        return 0
    if ttl < 0:
        return -1  # already expired
    seconds = math.ceil(ttl)
    if seconds > THIRTY_DAYS:
        return int(time.time()) + seconds
    return seconds
