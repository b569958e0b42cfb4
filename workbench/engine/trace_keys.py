"""Which keys of a replayed trace go on the wire, decided once per step and applied to
every request as it is read, alike in the Python engine (`trace_feed`) and the native one
(`native/src/trace/replay.rs`, sent `TraceKeys.order()`).

A trace's key is data from a file nobody checked: `k1 flush_all` in a CSV trace went to
memcached as ``set wb:k1 flush_all 0 0 10``, `k2 noreply` made a delete wait for a reply
that never came, and a recorded key size of 100000 sent a 100 KB key. So a key is held to
the same rule as a key prefix (the system's `KeyRule`): one the protocol cannot carry is
not sent, and is counted among the step's skipped requests under a name that says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from workbench.sdk.adapter import KeyRule

# The longest replayed key whatever the protocol (a binary-safe one included): a recorded
# key size is a 32-bit field, and a key is built (and padded) in memory before it is sent.
MAX_TRACE_KEY = 64 * 1024
NOT_TEXT = "key with a space or control character"
_NOT_TEXT = re.compile(r"[\x00-\x20\x7f]")


@dataclass(frozen=True)
class TraceKeys:
    """The rule for a step's replayed keys (the prefix, the trace's key, its padding)."""

    max_bytes: int
    text: bool

    @classmethod
    def of(cls, rule: KeyRule) -> TraceKeys:
        limit = min(rule.max_bytes, MAX_TRACE_KEY) if rule.max_bytes else MAX_TRACE_KEY
        return cls(limit, rule.text)

    @property
    def too_long(self) -> str:
        return f"key over {self.max_bytes} bytes"

    def order(self) -> dict[str, Any]:
        """What the native engine is told: the limit, the text rule and the names to count
        refused keys under (the same names the Python engine counts)."""
        return {
            "max_bytes": self.max_bytes,
            "text": self.text,
            "too_long": self.too_long,
            "not_text": NOT_TEXT,
        }

    def refusal(self, prefix_bytes: int, key: str, key_size: int) -> str | None:
        """Why the key `prefix + key` padded to `key_size` is not sent, or None."""
        body = len(key) if key.isascii() else len(key.encode())
        if prefix_bytes + max(body, key_size) > self.max_bytes:
            return self.too_long
        if self.text and _NOT_TEXT.search(key):
            return NOT_TEXT
        return None
