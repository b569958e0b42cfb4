"""Every command of the README and of the guides in docs/ runs as written, in seconds.

Each ```sh block is headed by a mark:

- ``<!-- test: run -->``: run here, in a fresh folder per page (with ``profiles/`` beside it,
  as in a checkout) and a store of its own, the page's blocks one after another in bash
  with ``-e -o pipefail``;
- ``<!-- test: run with=redis,memcached,http -->``: the same, with those servers started
  first on free loopback ports: the page's 6379, 11211 and 8000 become their ports;
- ``<!-- test: not run (why) -->``: a command that cannot run here, and why.

`workbench run` and `workbench search` are shortened to seconds by a `workbench` first on
PATH that passes every argument on and adds `--set` overrides after them (applied last):
a named profile's quick form (`quick_profiles.QUICK`), else 0.3 s steps. A reference tool
runs as written but shortened the same way (`SHORTER`: memtier's `--test-time 10` runs
1 s); one that is not installed (memtier_benchmark is GPL and never a dependency) answers
"not installed" instead of running; the workbench's own line beside it still runs.
distributed.md has its own test on a bed of network namespaces (tests/ray/).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
from quick_profiles import QUICK, SHORT
from workbench_memcached.server import start_memcached
from workbench_redis.server import start_redis

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    "README.md",
    "docs/cli.md",
    "docs/experiments.md",
    "docs/measuring.md",
    "docs/open-loop.md",
    "docs/hit-rates.md",
    "docs/traces.md",
    "docs/native.md",
    "docs/reliability.md",
    "docs/reports.md",
]
MARKED = re.compile(r"<!-- test: (?P<how>[^>]*?) -->\s*\n```sh\n(?P<body>.*?)```", re.S)
REFERENCE_TOOLS = ("memtier_benchmark", "redis-benchmark", "memaslap", "memcslap", "wrk")
PORTS = {"redis": "6379", "memcached": "11211", "http": "8000"}
TIMEOUT = 300.0  # seconds for one block

# The `workbench` the blocks call: the real one, with the shortening overrides after.
WRAPPER = """#!{python}
import json, os, re, subprocess, sys
quick, short, real = json.loads({config!r})
args = sys.argv[1:]
extra = []
if args[:1] == ["run"]:
    named = args[1] if len(args) > 1 and not args[1].startswith("-") else ""
    stem = os.path.basename(named).removesuffix(".toml")
    extra = quick.get(stem, short)
elif args[:1] == ["search"]:
    extra = ["load.warmup=0", "search.probe=0.3", "search.max_probes=3", "search.max_probe=0.6"]
sets = [part for value in extra for part in ("--set", value)]
if args[:1] != ["search"]:
    os.execv(real, [real, *args, *sets])
# A search whose every failing probe the machine's own stalls failed (the test machine
# saturated by the suite's other workers) is inconclusive, not the page's fault: the
# next commands of the block still run. Any other failure fails the page.
done = subprocess.run([real, *args, *sets], stdout=subprocess.PIPE, text=True)
sys.stdout.write(done.stdout)
causes = set(re.findall(r"FAIL \\((\\w+)", done.stdout))
if done.returncode == 3 and causes == {{"machine"}} and "inconclusive" in done.stdout:
    print("(doc test: the machine stalled on every probe; inconclusive)", file=sys.stderr)
    sys.exit(0)
sys.exit(done.returncode)
"""


# A reference tool that is installed runs as written, but for as long as the shortened
# workbench beside it: its duration (or request count) flag's value is replaced.
SHORTER = {
    "memtier_benchmark": {"--test-time": "1"},
    "redis-benchmark": {"-n": "10000"},
    "memaslap": {"-t": "1s"},
    "wrk": {"-d": "1s"},
}
SHORTENED = """#!{python}
import json, os, sys
shorter = json.loads({shorter!r})
args = sys.argv[1:]
for i, arg in enumerate(args[:-1]):
    if arg in shorter:
        args[i + 1] = shorter[arg]
os.execv({real!r}, [{real!r}, *args])
"""


def blocks(text: str) -> list[tuple[str, str]]:
    """(mark, body) of every marked ```sh block."""
    return [(m["how"].strip(), m["body"]) for m in MARKED.finditer(text)]


@pytest.mark.parametrize("page", PAGES)
def test_every_command_block_of_the_page_is_marked(page: str) -> None:
    text = (ROOT / page).read_text()
    marked = blocks(text)
    assert text.count("```sh\n") == len(marked), f"{page}: a ```sh block without its mark"
    for how, _ in marked:
        assert how == "run" or how.startswith(("run with=", "not run (")), (page, how)
    assert any(how.startswith("run") for how, _ in marked), f"{page}: no command runs"


def _shell_with_wrapper(folder: Path) -> dict[str, str]:
    """PATH with the shortening `workbench` first, the venv's tools next."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    real = str(Path(sys.executable).with_name("workbench"))
    config = json.dumps([QUICK, SHORT, real])
    wrapper = bin_dir / "workbench"
    wrapper.write_text(WRAPPER.format(python=sys.executable, config=config))
    wrapper.chmod(0o755)
    for tool in REFERENCE_TOOLS:
        stand_in = bin_dir / tool
        found = shutil.which(tool)
        if found is None:
            stand_in.write_text(f"#!/bin/sh\necho '{tool}: not installed here'\n")
        else:
            shorter = json.dumps(SHORTER.get(tool, {}))
            text = SHORTENED.format(python=sys.executable, real=found, shorter=shorter)
            stand_in.write_text(text)
        stand_in.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{Path(sys.executable).parent}:{env['PATH']}"
    env["WORKBENCH_STORE"] = str(folder / "runs.sqlite3")
    env.pop("WORKBENCH_NATIVE", None)
    return env


def _servers(wanted: set[str], stack: ExitStack) -> dict[str, str]:
    """Each wanted server started on a free loopback port: its placeholder -> its port."""
    ports: dict[str, str] = {}
    if "redis" in wanted:
        ports[PORTS["redis"]] = str(stack.enter_context(start_redis()).port)
    if "memcached" in wanted:
        ports[PORTS["memcached"]] = str(stack.enter_context(start_memcached(memory_mb=64)).port)
    if "http" in wanted:
        from http_support import kv_store

        server = kv_store()
        stack.callback(server.stop)
        ports[PORTS["http"]] = str(server.port)
    return ports


@pytest.mark.parametrize("page", PAGES)
def test_every_command_of_the_page_runs_as_written(page: str, tmp_path: Path) -> None:
    runnable = [(how, body) for how, body in blocks((ROOT / page).read_text()) if how != "not run"]
    runnable = [(how, body) for how, body in runnable if not how.startswith("not run")]
    (tmp_path / "profiles").symlink_to(ROOT / "profiles")
    env = _shell_with_wrapper(tmp_path)
    with ExitStack() as stack:
        for how, body in runnable:
            wanted = set(how.removeprefix("run").strip().removeprefix("with=").split(",")) - {""}
            for placeholder, port in _servers(wanted, stack).items():
                body = body.replace(placeholder, port)
            done = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", body],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
            assert done.returncode == 0, f"{page}:\n{body}\n{done.stdout}\n{done.stderr}"
