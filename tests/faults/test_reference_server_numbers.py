"""Issue 39 item 11: the reference servers' own programs refuse what `serve` refuses (a port
the kernel would replace, a NaN rate that switches the limit off, a negative capacity, a
backing Redis off this machine), and the key-value store refuses a TTL that is not a finite
number of seconds (NaN compared false with every bound and stored the key for ever)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from typer.testing import CliRunner
from workbench_http.servers import caching_proxy, kv_store

from workbench.cli.main import build_app
from workbench.sdk.servers import start_python_server

PROXY_REFUSALS = [
    ["--port", "65536"],
    ["--rate-limit", "nan"],
    ["--rate-limit", "inf"],
    ["--burst", "-1"],
    ["--max-keys", "-1"],
    ["--ttl", "nan"],
    ["--redis-url", "redis://10.1.2.3:6379"],
    ["--redis-url", "redis://127.0.0.1:1@10.1.2.3:6379"],
]


def _listened(*args: object) -> None:
    raise AssertionError("the program went on to listen")


@pytest.mark.parametrize("args", PROXY_REFUSALS, ids=" ".join)
def test_the_proxy_program_refuses_before_listening(args: list[str], capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(caching_proxy, "run", _listened)  # a failure must not serve for ever
    with pytest.raises(SystemExit) as ended:
        caching_proxy.main(args)
    assert ended.value.code == 2
    assert args[0] in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--partitions", "-1"], ["--expiration", "inf"]], ids=" ".join)
def test_the_store_program_refuses_before_listening(args: list[str], capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(kv_store, "run", _listened)
    with pytest.raises(SystemExit) as ended:
        kv_store.main(args)
    assert ended.value.code == 2
    assert args[0] in capsys.readouterr().err


def _send(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def test_the_store_refuses_a_ttl_that_is_not_finite() -> None:
    with start_python_server("workbench_http.servers.kv_store") as server:
        base = f"http://{server.host}:{server.port}/"
        for ttl in ('"nan"', "NaN", '"inf"', "Infinity", "1e400", "-1"):
            body = f'{{"key": "k", "value": "v", "ttl": {ttl}}}'.encode()
            assert _send(urllib.request.Request(base, data=body, method="POST")) == 400, ttl
        for ttl in ("nan", "inf"):
            put = urllib.request.Request(f"{base}?key=k&ttl={ttl}", data=b"v", method="PUT")
            assert _send(put) == 400, ttl
        assert _send(urllib.request.Request(base, data=b'{"key": "k", "value": "v", "ttl": 5}'))
        with urllib.request.urlopen(f"{base}stats", timeout=10) as stats:
            assert json.load(stats)["keys"] == 1  # only the finite TTL stored its key


SERVE_REFUSALS = [
    (["kv-store", "--set", "mode=bogus"], "target.server.mode"),
    (["kv-store", "--set", "partitions=0"], "target.server.partitions"),
    (["kv-store", "--set", "expiration=-1"], "target.server.expiration"),
    (["caching-proxy", "--set", "rate_limit=nan"], "target.server.rate_limit"),
    (["caching-proxy", "--set", "max_keys=-1"], "target.server.max_keys"),
]


@pytest.mark.parametrize(("args", "field"), SERVE_REFUSALS, ids=lambda a: " ".join(a[-1:]))
def test_serve_refuses_in_one_line_before_starting(args: list[str], field: str) -> None:
    """They printed the child's argparse usage and exited 1; now one line, exit 2."""
    res = CliRunner().invoke(build_app(["serve"]), ["serve", *args])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "listening" not in res.output, res.output
