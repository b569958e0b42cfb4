"""The Varnish plugin: a managed varnishd with a memory limit in front of the reference
origin, its figures from varnishstat, LRU evictions at the limit, a run of the 003 shape,
and nothing left behind. The conformance kit over each strategy, both engines, is in
test_builtin_conformance."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from plugin_helpers import CLI, show
from workbench_varnish import facts, plugin
from workbench_varnish.client import VarnishConnection
from workbench_varnish.server import find, start_varnish
from workbench_varnish.stats import parse_varnishstat, read_varnishstat
from workbench_varnish.target import parse_target
from workbench_varnish.vcl import render

from workbench.sdk import AdapterError, TargetError

MiB = 1 << 20


def test_varnishstat_counters_and_storage_are_read() -> None:
    def counter(value: int) -> dict[str, object]:
        return {"description": "", "flag": "c", "format": "i", "value": value}

    text = json.dumps(
        {
            "version": 1,
            "timestamp": "2026-11-28T10:55:22",
            "counters": {
                "MAIN.cache_hit": counter(20),
                "MAIN.cache_miss": counter(34),
                "MAIN.n_lru_nuked": counter(15),
                "MAIN.n_object": counter(16),
                "SMA.mem.g_bytes": counter(16_004_992),
                "SMA.mem.g_space": counter(772_224),
                "SMA.Transient.g_bytes": counter(0),
            },
        }
    )
    got = parse_varnishstat(text)
    assert got["cache_hit"] == 20 and got["cache_miss"] == 34 and got["n_lru_nuked"] == 15
    assert (got["n_object"], got["bytes_stored"]) == (16, 16_004_992)
    assert got["storage_limit"] == 16_004_992 + 772_224


def test_the_target_and_the_url_scheme() -> None:
    options = plugin.options.resolve({"base_url": "http://127.0.0.1:6081/"}, "target.options")
    assert parse_target(options).base_url == "http://127.0.0.1:6081"
    for bad in ("https://127.0.0.1:6081", "http://127.0.0.1:6081/cache", "http://10.0.0.9:80"):
        with pytest.raises(TargetError) as caught:
            parse_target({**options, "base_url": bad})
        assert caught.value.where == "target.options.base_url"
    assert facts.url_options("varnish://127.0.0.1:6081") == {"base_url": "http://127.0.0.1:6081"}
    assert 'port = "4242"' in render("127.0.0.1", 4242)
    assert plugin.facts({"memory": 64 * MiB}, True)["cache_size"]["option"] == "memory"


def _fill(base_url: str, instance: str, count: int, size: int) -> dict[str, object]:
    """Sets `count` values of `size` bytes through the plugin's client, reads each back,
    and returns varnishstat's figures and how many read back."""

    async def go() -> dict[str, object]:
        system = plugin.options.resolve(
            {"base_url": base_url, "instance": instance}, "target.options"
        )
        conn = VarnishConnection(parse_target(system), 4)
        client = await conn.client()
        try:
            for i in range(count):
                await client.set(b"k%d" % i, os.urandom(size), None)
            found = [await client.get(b"k%d" % i) for i in range(count)]
            stats = await conn.server_stats()
        finally:
            await conn.close()
        return {**stats, "found": sum(v is not None for v in found)}

    return asyncio.run(go())


def test_at_its_memory_limit_varnish_evicts_and_nothing_is_left_behind() -> None:
    server = start_varnish(memory=2 * MiB)
    scratch = Path(server.target_options["instance"]).parent
    pids = (server.varnishd.pid, server.pid, server.origin.pid)
    try:
        assert server.pid != server.varnishd.pid  # the cache process, not its manager
        got = _fill(
            server.target_options["base_url"], server.target_options["instance"], 40, 100_000
        )
        memory = server.memory()
    finally:
        server.stop()
    assert got["n_lru_nuked"] > 0 and 0 < got["found"] < 40, got
    assert got["storage_limit"] == 2 * MiB and got["bytes_stored"] <= 2 * MiB, got
    assert memory["rss_bytes"] > 0 and memory["origin_rss_bytes"] > 0
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )
    assert not scratch.exists()


def test_statistics_of_an_instance_that_is_not_there_are_an_error(tmp_path: Path) -> None:
    find("varnishstat")  # the plugin's own lookup; installed with varnish
    with pytest.raises(AdapterError) as caught:
        asyncio.run(read_varnishstat(str(tmp_path / "nothing")))
    assert caught.value.kind == "stats" and "nothing" in str(caught.value)


@pytest.mark.parametrize("strategy", ["keep-alive", "native"])
def test_a_003_run_at_a_memory_limit(strategy: str, tmp_path: Path) -> None:
    """Cache-aside over 64 keys of 64 KiB (4 MiB) into 2 MiB: some hits, not all."""
    argv = [
        *CLI, "run",
        "--set", "target.system=varnish",
        "--set", "target.managed=true",
        "--set", "target.server.memory=2MiB",
        "--set", f"strategy.name={strategy}",
        "--set", "workload.mix={ cache_aside = 1 }",
        "--set", "workload.keys=64",
        "--set", "workload.value_size=fixed(64KiB)",
        "--set", "load.ops=300",
        "--set", "load.concurrency=4",
        "--set", "load.workers=1",
    ]  # fmt: skip
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3")}
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, show(done, argv)
    summary = next(line for line in done.stdout.splitlines() if "hit rate" in line)
    rate = float(summary.split("hit rate")[1].split("%")[0])
    assert 0 < rate < 100 and "errors 0" in summary, done.stdout
