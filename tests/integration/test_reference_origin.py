"""`workbench.sdk.origin`: the reference HTTP origin plugins put an HTTP cache in front of.
It serves what was PUT, with the time it has left as Cache-Control max-age."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

from workbench.sdk.origin import FOREVER, start_origin


def _call(method: str, url: str, body: bytes | None = None) -> tuple[int, bytes, str]:
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.read(), r.headers.get("Cache-Control", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), ""


def test_it_serves_what_was_put_with_its_time_to_live_and_stops_cleanly() -> None:
    origin = start_origin()
    base = origin.target_options["base_url"]
    value = bytes(range(256)) * 3 + b"\r\n\0"
    try:
        assert _call("GET", f"{base}/?key=a%20b")[0] == 404
        assert _call("PUT", f"{base}/?key=a%20b", value)[0] == 201
        assert _call("PUT", f"{base}/?key=a%20b&ttl=", value)[0] == 200  # replaced, no TTL
        status, body, cache_control = _call("GET", f"{base}/?key=a%20b")
        assert (status, body, cache_control) == (200, value, f"max-age={FOREVER}")
        assert _call("PUT", f"{base}/?key=short&ttl=0.4", b"v")[0] == 201
        assert _call("GET", f"{base}/?key=short")[2] == "max-age=1"  # rounded up, never 0
        time.sleep(0.5)
        assert _call("GET", f"{base}/?key=short")[0] == 404
        assert _call("PUT", f"{base}/?key=x&ttl=-1", b"v")[0] == 400
        assert [_call("DELETE", f"{base}/?key=a%20b")[0] for _ in range(2)] == [200, 404]
        stats = json.loads(_call("GET", f"{base}/stats")[1])
        assert (stats["puts"], stats["hits"], stats["keys"]) == (3, 2, 0)
    finally:
        origin.stop()
    assert origin.process.poll() is not None
    assert not Path(f"/proc/{origin.pid}").exists()
