"""The native engine is told the protocol, never the system (issue 34): no string in
native/src names a cache system or reads one from the order, so a plugin whose strategy
declares a protocol the engine speaks runs on it unchanged. Protocol names ("resp",
"memcache-text", "http1") are the engine's to know."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "native" / "src"
SYSTEMS = ("redis", "memcached", "http", "umem", "umem-cache", "valkey", "varnish", "embedded")
SYSTEM_LITERAL = re.compile('"(?:' + "|".join(SYSTEMS) + ')"', re.IGNORECASE)


def test_no_string_in_the_crate_names_a_system() -> None:
    found = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path in sorted(SRC.rglob("*.rs"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if SYSTEM_LITERAL.search(line) or '"system"' in line
    ]
    assert not found, f"native/src names a system: {found}"


def test_the_check_would_see_a_system_matched_by_name() -> None:
    assert SYSTEM_LITERAL.search('        "redis" => redis(t),')
    assert SYSTEM_LITERAL.search('    if order.system != "Memcached" {')
    assert not SYSTEM_LITERAL.search('"resp" => Protocol::Resp,')
