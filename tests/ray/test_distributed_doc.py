"""docs/distributed.md works as written: every command of it, run on the machines it
names, on the namespace test bed (netbed.py).

The page marks each command block with where it runs (`<!-- test: on=head -->`); a block
that cannot run here says why (`<!-- test: not run (...) -->`). Its placeholders become
the bed's addresses: the server is srv (10.77.0.1), the head a (10.77.0.2), the node b
(10.77.0.3), and the load network 10.77.0.2/31 (a and b, not srv). Each block runs in a
login shell of its machine: its ~/.profile is read first, as a login reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import netbed
import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"
MARKED = re.compile(r"<!-- test: (?P<how>[^>]*?) -->\s*\n```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
LOAD_NETWORK = "10.77.0.2/31"
TIMEOUT = 300.0  # seconds for one block (a Ray start on a busy machine)


@dataclass
class Block:
    on: list[str]  # the roles it runs on: head, node, server
    body: str
    stdin: str = ""  # "token": what the head's `ray get-auth-token` printed
    file: str = ""  # not a command: a file saved on the machine under this name
    skip: str = ""  # why it is not run


def blocks(text: str) -> list[Block]:
    found = []
    for m in MARKED.finditer(text):
        how = m["how"].strip()
        if how.startswith("not run"):
            found.append(Block([], m["body"], skip=how))
            continue
        fields = dict(part.split("=", 1) for part in how.split())
        found.append(
            Block(
                fields["on"].split(","),
                m["body"],
                stdin=fields.get("stdin", ""),
                file=fields.get("file", ""),
            )
        )
    return found


def test_every_command_block_of_the_page_says_where_it_runs() -> None:
    text = DOC.read_text()
    commands = text.count("```sh\n")
    marked = [b for b in blocks(text) if not b.file]
    assert commands == len(marked), "a ```sh block without its <!-- test: ... --> mark"
    assert all(set(b.on) <= {"head", "node", "server"} for b in marked)
    assert [b.skip for b in marked if b.skip] == [
        "not run (it installs from PyPI; the test bed shares the checkout's venv)"
    ]


def test_every_command_of_the_page_runs_as_written_on_three_machines() -> None:
    reason = netbed.why_not()
    if reason:
        pytest.skip(reason)
    bed = netbed.Bed.make(["srv", "a", "b"])
    roles = {"server": bed["srv"], "head": bed["a"], "node": bed["b"]}
    places = {
        "HEAD_ADDRESS": bed["a"].address,
        "SERVER_ADDRESS": bed["srv"].address,
        "LOAD_NETWORK": LOAD_NETWORK,
    }
    outputs: dict[str, str] = {}
    try:
        token = ""
        for block in blocks(DOC.read_text()):
            for role in block.on:
                host = roles[role]
                body = block.body
                for name, value in {**places, "THIS_ADDRESS": host.address}.items():
                    body = body.replace(name, value)
                if block.file:
                    (host.home / block.file).write_text(body)
                    continue
                done = host.run(
                    ["sh", "-ec", f"[ -f ~/.profile ] && . ~/.profile\n{body}"],
                    timeout=TIMEOUT,
                    stdin=token if block.stdin == "token" else None,
                )
                outputs[body.strip().splitlines()[-1]] = done.stdout + done.stderr
                if "ray get-auth-token" in body:
                    token = done.stdout.strip().splitlines()[-1]
        run = outputs["workbench run profile.toml --allow-remote"]
        # Two nodes of 2 CPUs each (this machine's), named by address, 4 workers spread.
        assert "-- step 1/1: run on redis/multiplexed, 16 clients, 4 worker(s)" in run, run
        (nodes,) = re.findall(r"nodes: (.*)", run)
        assert sorted(nodes.split("; ")) == [
            "10.77.0.2 (2 CPUs, 2 worker(s))",
            "10.77.0.3 (2 CPUs, 2 worker(s))",
        ]
        assert "== run (completed) ==" in run, run
        assert "Ray's own log lines go to" in run, run
        assert "(raylet)" not in run and "SIGTERM handler" not in run, run
        assert int(netbed.redis_info(bed["srv"], "db0").split(",")[0].split("=")[1]) > 0
        # The node's token is the head's, and it joined with it (token mode on both).
        assert (bed["b"].home / ".ray" / "auth_token").read_text().strip() == token
        # The firewalls: the server machine is outside the load network, so neither Ray's
        # port on the head nor anything else of a load machine lets it in.
        probe = bed["srv"].run(
            ["python3", "-c", "import socket; socket.create_connection(('10.77.0.2', 6379), 1)"],
            check=False,
        )
        assert probe.returncode != 0 and "timed out" in probe.stderr, probe.stderr
        # `ray stop` on the node left the cluster: nothing of Ray runs there any more.
        assert not bed["b"].pids("raylet") and not bed["b"].pids("gcs_server")
    finally:
        left = bed.remove()
        assert not left, f"processes of the test bed still alive: {left}"
