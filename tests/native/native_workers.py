"""Drive a worker process (native or Python) directly with one step order, as the
coordinator does, and collect its frames."""

from __future__ import annotations

import dataclasses
import json
import struct
import subprocess
import sys
import time
from dataclasses import replace
from typing import Any

from workbench.engine.frames import StepOrder
from workbench.results.metrics import Stats
from workbench.spec.model import Spec, spec_from_dict, spec_to_dict
from workbench.spec.native_binary import binary_path
from workbench.spec.resolve import resolve_step

_HEADER = struct.Struct(">I")


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return _HEADER.pack(len(body)) + body


def read_frames(data: bytes) -> list[dict[str, Any]]:
    out, pos = [], 0
    while pos + 4 <= len(data):
        (size,) = _HEADER.unpack_from(data, pos)
        out.append(json.loads(data[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    return out


def spec(**changes: Any) -> Spec:
    """A spec from dotted paths: spec(**{"load.duration": 1.0})."""
    data = spec_to_dict(Spec())
    for path, value in changes.items():
        *head, last = path.split(".")
        node = data
        for part in head:
            node = node[part]
        node[last] = value
    return spec_from_dict(data)


def order(s: Spec, worker: int = 0, workers: int = 1) -> dict[str, Any]:
    """The step order the coordinator sends: the spec and what it resolved to. The remote
    check is left to the worker, so that its own guard can be tested: the step is resolved
    as if the remote target were allowed, then given the spec's own remote decision."""
    allowed = replace(s, target=replace(s.target, allow_remote=True))
    resolved = replace(resolve_step(allowed), allow_remote=s.target.allow_remote)
    return StepOrder.for_worker(s, resolved, workers, worker).frame()


def run_worker(
    engine: str, s: Spec, worker: int = 0, workers: int = 1, timeout: float = 120
) -> list[dict[str, Any]]:
    """Every frame one worker of `engine` wrote for the step `s` (started 50 ms ahead)."""
    if engine == "native":
        path = binary_path()
        assert path is not None, "the native engine is not built: ./dev setup"
        argv = [str(path)]
    else:
        argv = [sys.executable, "-m", "workbench.engine.worker"]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    frames: list[dict[str, Any]] = []
    try:
        proc.stdin.write(frame(order(s, worker, workers)))
        proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            head = proc.stdout.read(4)
            if len(head) < 4:
                break
            (size,) = _HEADER.unpack(head)
            message = json.loads(proc.stdout.read(size))
            frames.append(message)
            if message["type"] == "armed":
                proc.stdin.write(frame({"type": "go", "start": time.time() + 0.05}))
                proc.stdin.flush()
            if message["type"] == "step_done":
                break
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return frames


def intervals(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if f["type"] == "interval" and f["index"] >= 0 and not f["warmup"]]


def stats_of(f: dict[str, Any]) -> Stats:
    """Decoded with the Python side's reader (keys it does not know yet are skipped)."""
    known = {fl.name for fl in dataclasses.fields(Stats)}
    return Stats.from_dict({k: v for k, v in f["stats"].items() if k in known})


def total(frames: list[dict[str, Any]]) -> Stats:
    out = Stats()
    for f in intervals(frames):
        out.merge(stats_of(f), concurrent=False)
    return out


def status(frames: list[dict[str, Any]]) -> str:
    done = [f for f in frames if f["type"] == "step_done"]
    assert done, frames
    return str(done[-1]["status"])
