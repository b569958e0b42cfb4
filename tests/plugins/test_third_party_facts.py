"""A stranger's plugin gets what the built-in ones get, from what it declares (issue 34): a
small plugin made here, registered through an entry point and built on `workbench.sdk`
alone, declares its URLs, the option that sizes its cache, its server's cores, figures and
refusals, and its managed server; `-s URL`, the verdict, `--simulate`, `mrc`, refusal
advice and `workbench serve` then work for it, and the core never names it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.cli.flags import Flags, server_overrides, tls_overrides
from workbench.results.verdict import context_for
from workbench.run.mrc import at_limit
from workbench.sdk import discovery
from workbench.simulate.limits import cache_limit
from workbench.spec.load import spec_from_data
from workbench.spec.resolve import resolve_step
from workbench.workload.forms import parse_value_size

NAME = "toyredis"
# redis-server under another name, spoken to with redis-py: a plugin of a RESP server.
PLUGIN = """
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis

from workbench.sdk import (
    CacheSize, CacheSystem, Option, OptionSet, Refusal, ServerCores, ServerFigures,
    ServerLauncher, Strategy, Urls, free_port, launch, listen_address, per_client,
)


def url_options(url):
    return {"url": "redis://" + urlsplit(url).netloc + "/0"}


def start(options):
    host, port = listen_address(options)
    port = port or free_port(host)
    argv = ["redis-server", "--port", str(port), "--bind", host, "--save", "",
            "--appendonly", "no", "--maxmemory", str(options["maxmemory"]),
            "--maxmemory-policy", options["policy"]]
    return launch("toyredis", argv, host, port, version="toyredis 1.0",
                  target_options={"url": f"redis://{host}:{port}/0"})


class Client:
    def __init__(self, r):
        self.r = r

    async def get(self, key):
        return await self.r.get(key)

    async def set(self, key, value, ttl):
        await self.r.set(key, bytes(value), ex=int(ttl) if ttl else None)

    async def delete(self, key):
        return bool(await self.r.delete(key))


class Connection:
    def __init__(self, url):
        self.r = aioredis.Redis.from_url(url)

    async def client(self):
        return Client(self.r)

    async def server_stats(self) -> dict[str, Any]:
        info = await self.r.info()
        return {k: info[k] for k in ("used_memory", "maxmemory", "used_cpu_user",
                                     "used_cpu_sys") if k in info}

    async def close(self):
        await self.r.aclose()


async def connect(system, strategy):
    return Connection(system["url"])


plugin = CacheSystem(
    name="toyredis",
    description="redis-server as a stranger's plugin",
    options=OptionSet((Option("url", "str", "redis://127.0.0.1:6379/0", "where it is"),)),
    strategies=(Strategy("plain", "redis-py asyncio", connect, connections=per_client),),
    default_strategy="plain",
    server=ServerLauncher(
        OptionSet((
            Option("maxmemory", "size", 0, "memory limit (0: none)", minimum=0),
            Option("policy", "str", "allkeys-lru", "eviction policy"),
        )),
        start,
        programs=(("redis-server", ("redis-server", "--version")),),
        recipes={"toy-small": {"maxmemory": 1048576}},
    ),
    urls=Urls(("toyredis",), url_options, forms=("toyredis://HOST:PORT",)),
    cache_size=CacheSize("maxmemory"),
    server_cores=lambda server, managed: ServerCores(1.0, single_threaded=True),
    figures=ServerFigures(cpu=("used_cpu_user", "used_cpu_sys"), used_bytes="used_memory",
                          limit_bytes="maxmemory"),
    refusals=(Refusal("when used memory >", "toyredis is full: raise its maxmemory"),),
)
"""


@pytest.fixture
def toy_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plugin installed as a stranger installs one: a distribution with an entry point,
    visible to this process and to the workers and commands it starts."""
    site = tmp_path / "site"
    info = site / "wbthird_toyredis-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wbthird-toyredis\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[workbench.plugins]\n{NAME} = wbthird_toyredis:plugin\n"
    )
    (site / "wbthird_toyredis.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(site))
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(site), path) if p))
    discovery.load_plugin.cache_clear()
    yield site
    discovery.load_plugin.cache_clear()


def spec_of(**target: Any) -> Any:
    return spec_from_data({"target": {"system": NAME, **target}}, (), "test")


def test_its_url_scheme_picks_it_and_sets_its_options(toy_site: Path) -> None:
    out = server_overrides("toyredis://127.0.0.1:6390", {})
    assert out[0] == f'target.system="{NAME}"'
    assert 'target.options.url="redis://127.0.0.1:6390/0"' in out
    with pytest.raises(Exception, match="declares none"):  # it declares no TLS
        tls_overrides(Flags(tls=True), {"target": {"system": NAME}})


def test_the_verdict_simulate_and_mrc_read_what_it_declares(toy_site: Path) -> None:
    managed = resolve_step(spec_of(managed=True, server={"maxmemory": "4mb"}))
    facts = managed.facts
    context = context_for({"target": {"system": NAME}, "load": {}}, facts)
    assert (context.server_cores, context.single_threaded) == (1.0, True)
    limit = cache_limit(facts, managed.system_options, managed.server_options, {},
                        parse_value_size("fixed(100)"))  # fmt: skip
    assert limit is not None and (limit.size, limit.unit) == (4 * 1024**2, "bytes")
    # An unmanaged one: the limit its server reports, by the figure it named.
    outside = resolve_step(spec_of()).facts
    reported = cache_limit(outside, {}, {}, {"maxmemory": 8192}, parse_value_size("fixed(1)"))
    assert reported is not None and reported.size == 8192
    assert at_limit({"target": {"system": NAME, "managed": True}}, 2048)["target"]["server"] == {
        "maxmemory": 2048
    }


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


@pytest.mark.redis
def test_a_full_server_gets_its_own_advice_and_a_simulated_reference(
    toy_site: Path, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite3"
    res = cli(
        "run", "-q", "--store", str(store), "--set", f"target.system={NAME}",
        "--set", "target.managed=true", "--set", "target.server.maxmemory=3mb",
        "--set", "target.server.policy=noeviction", "-d", "16KiB", "--ratio", "1:1",
        "-n", "200", "-c", "2", "-w", "1", "--set", "load.warmup=0", "--simulate", "lru",
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    (notice,) = [ln for ln in res.stdout.splitlines() if ln.startswith("notice:")]
    assert "toyredis is full: raise its maxmemory" in notice
    assert "simulated lru at the same limit" in res.stdout, res.stdout


@pytest.mark.redis
def test_workbench_serve_starts_its_server_and_a_recipe(toy_site: Path) -> None:
    for name in (NAME, "toy-small"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "workbench.cli.main", "serve", name],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            seen = ""
            while "Ctrl-C" not in seen and (line := proc.stdout.readline()):
                seen += line
            assert "toyredis 1.0 listening on 127.0.0.1:" in seen, seen
            assert f"workbench run --set target.system={NAME}" in seen
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            assert proc.returncode == 0 and "stopped" in out, err
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
