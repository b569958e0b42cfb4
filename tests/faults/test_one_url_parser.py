"""Issue 39 item 5: one URL parser decides where the load goes. A URL the plugin's parser
cannot read exactly (a query, a fragment, a user part with an '@' trick, a database that is
not a plain integer) is exit 2 naming the field, before anything connects; a URL it reads
sends the load, in either engine, to the server and database it names, and the run's
server figures come from there too. Where connections go is read from the servers' own
CLIENT LIST and INFO, not from the workbench."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from faults_support import WORKBENCH, cli
from workbench_redis.server import start_redis

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess


@pytest.fixture
def two_redis() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    first, second = start_redis(), start_redis()
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


def _watch(server: ServerProcess) -> redis.Redis:
    """A connection of this test's own, opened before the run: its CLIENT LIST and INFO."""
    conn = redis.Redis(host=server.host, port=server.port, client_name="wb-test-watch")
    conn.ping()
    return conn


def _connections(conn: redis.Redis) -> int:
    return int(conn.info("stats")["total_connections_received"])


def _load_clients(conn: redis.Redis) -> list[dict[str, str]]:
    """The server's clients other than this test's own connection."""
    return [c for c in conn.client_list() if c.get("name") != "wb-test-watch"]


REFUSED = {
    "query": ("redis://127.0.0.1:{first}?x=@localhost:{second}", "query"),
    "fragment": ("redis://127.0.0.1:{first}#@localhost:{second}", "fragment"),
    "database": ("redis://127.0.0.1:{first}/1_0", "database"),
    "user part": ("redis://u@localhost:@127.0.0.1:{first}", "user"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_url_the_parser_cannot_read_exactly_is_exit_2_before_any_connection(
    tmp_path: Path, two_redis: tuple[ServerProcess, ServerProcess], case: str
) -> None:
    first, second = two_redis
    url = REFUSED[case][0].format(first=first.port, second=second.port)
    watches = [_watch(first), _watch(second)]
    before = [_connections(w) for w in watches]
    args = ["run", "-q", "--set", "target.system=redis", "--set", f"target.options.url={url}"]
    res = cli([*args, "-c", "2", "--test-time", "1s"], tmp_path / "runs.sqlite3", timeout=120)
    assert res.returncode == 2, (res.stdout, res.stderr)
    (line,) = res.stderr.strip().splitlines()
    assert "target.options.url" in line and REFUSED[case][1] in line, line
    assert [_connections(w) for w in watches] == before  # nothing connected anywhere


@pytest.mark.parametrize("strategy", ["native", "multiplexed"])
def test_the_load_and_the_server_figures_go_where_the_url_says(
    tmp_path: Path, two_redis: tuple[ServerProcess, ServerProcess], strategy: str
) -> None:
    first, second = two_redis
    named, other = _watch(first), _watch(second)
    before = _connections(other)
    store = tmp_path / "runs.sqlite3"
    url = f"redis://127.0.0.1:{first.port}/3"
    args = ["run", "-q", "--store", str(store), "--set", "target.system=redis"]
    args += ["--set", f"target.options.url={url}", "--set", f"strategy.name={strategy}"]
    args += ["--set", 'workload.mix={"set" = 1.0}', "-c", "2", "--test-time", "2s"]
    proc = subprocess.Popen([*WORKBENCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: list[dict[str, str]] = []
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        seen += [c for c in _load_clients(named) if c.get("cmd") == "set"]
        assert _load_clients(other) == []
        time.sleep(0.05)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (out, err)
    assert seen and {c["db"] for c in seen} == {"3"}, seen
    assert _connections(other) == before
    assert other.dbsize() == 0 and named.execute_command("SELECT", 0) and named.dbsize() == 0
    loaded = redis.Redis(host=first.host, port=first.port, db=3).dbsize()
    assert loaded > 0
    (step,) = Store(store).load("last").steps
    assert step.stats.server["keys"] == loaded  # the figures are the loaded database's
