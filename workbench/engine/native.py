"""The native load engine (`native/`, Rust): where its binary is, and its probe client.

A native strategy (``Strategy(engine="native")``) runs in ``workbench-native`` worker
processes instead of the Python worker: same step orders in, same frames out (docs/frames.md).
``./dev setup`` builds the binary and installs it as ``.venv/bin/workbench-native``;
``WORKBENCH_NATIVE`` names another one (`workbench.spec.native_binary` finds it).

The conformance kit drives a strategy through ``connect``; for a native strategy (whose
declared connect is `adapter.runs_in_native_engine`) it uses `probe_connect` instead:
`ProbeConnection`'s clients send each request through ``workbench-native --probe``, the
engine's own encoders and parsers, one blocking connection per client.
Its ``server_stats`` reads the server as the coordinator does (`serverstats.connect_for_stats`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
import subprocess
from typing import Any

from workbench.engine.native_order import native_target
from workbench.engine.serverstats import connect_for_stats
from workbench.sdk.adapter import AdapterError, CacheSystem, Strategy
from workbench.sdk.errors import TargetError
from workbench.sdk.remote import ALLOW_REMOTE
from workbench.sdk.servers import python_module
from workbench.spec.native_binary import binary_path, require_binary

_HEADER = struct.Struct(">I")


def version() -> str:
    """The binary's version (``workbench-native 0.1.0`` -> ``0.1.0``), or "" if absent."""
    path = binary_path()
    if path is None:
        return ""
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip().rpartition(" ")[2]


def worker_command(engine: str) -> list[str]:
    """The argv of a worker process for `engine` ("python" or "native")."""
    if engine == "native":
        return [str(require_binary())]
    return python_module("workbench.engine.worker")


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(body)) + body


class ProbeConnection:
    """One ``workbench-native --probe`` process; each client is a connection id in it."""

    def __init__(
        self,
        system: CacheSystem,
        strategy: Strategy,
        options: dict[str, Any],
        strategy_options: dict[str, Any] | None = None,
    ) -> None:
        self.system = system
        self.strategy = strategy
        self.options = options
        self.strategy_options = strategy_options or {}
        self.proc: asyncio.subprocess.Process | None = None
        self.lock = asyncio.Lock()
        self.clients = 0
        self.stats: Any = None  # a connection of the default strategy, for server_stats

    async def open(self) -> ProbeConnection:
        binary = require_binary()
        protocol = self.strategy.protocol_for(self.options, self.strategy_options)
        target = native_target(self.system, protocol, self.options)  # the plugin's reading
        self.proc = await asyncio.create_subprocess_exec(
            str(binary),
            "--probe",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=2**26,
        )
        answer = await self.call(
            {
                "op": "open",
                "target": target,
                "allow_remote": bool(self.options.get(ALLOW_REMOTE)),
                "timeout": self.options.get("timeout"),
                "connect_timeout": self.options.get("connect_timeout"),
            }
        )
        if "error" in answer:
            await self.close()
            error = answer["error"]
            raise TargetError(error["message"], error.get("where", "target.options"))
        return self

    async def call(self, message: dict[str, Any]) -> dict[str, Any]:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise AdapterError("connection", "the native probe is closed")
        async with self.lock:  # one request at a time through the probe's pipe
            proc.stdin.write(_frame(message))
            await proc.stdin.drain()
            try:
                (size,) = _HEADER.unpack(await proc.stdout.readexactly(4))
                body = await proc.stdout.readexactly(size)
            except asyncio.IncompleteReadError:
                raise AdapterError("connection", "the native probe exited") from None
        answer: dict[str, Any] = json.loads(body)
        return answer

    async def client(self) -> ProbeClient:
        self.clients += 1
        return ProbeClient(self, self.clients)

    async def server_stats(self) -> dict[str, Any]:
        """The server's own figures, read as the system's default strategy reads them."""
        if self.stats is None:
            self.stats = await connect_for_stats(self.system, self.strategy, self.options, {})
        figures: dict[str, Any] = await self.stats.server_stats()
        return figures

    async def close(self) -> None:
        stats, self.stats = self.stats, None
        if stats is not None:
            with contextlib.suppress(Exception):
                await stats.close()
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


class ProbeClient:
    """A virtual client of the probe: its own connection inside the native process."""

    def __init__(self, conn: ProbeConnection, ident: int) -> None:
        self.conn = conn
        self.ident = ident

    async def _do(
        self,
        op: str,
        key: bytes,
        value: bytes | memoryview = b"",
        ttl: float | None = None,
        token: bytes | None = None,
    ) -> Any:
        answer = await self.conn.call(
            {
                "op": op,
                "client": self.ident,
                "key": base64.b64encode(key).decode(),
                "value": base64.b64encode(bytes(value)).decode(),
                "ttl": ttl,
                "token": base64.b64encode(token or b"").decode(),
            }
        )
        if "error" in answer:
            raise AdapterError(answer["error"]["kind"], answer["error"]["message"])
        return answer

    async def get(self, key: bytes) -> bytes | None:
        answer = await self._do("get", key)
        value = answer.get("value")
        return None if value is None else base64.b64decode(value)

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        await self._do("set", key, bytes(value), ttl)

    async def delete(self, key: bytes) -> bool:
        return bool((await self._do("delete", key)).get("deleted"))

    # The conditional writes and gets (docs/ops.md): each answers its outcome; the engine
    # sends incr and decr by 1, as a trace's are.
    async def _outcome(self, op: str, *args: Any) -> str:
        return str((await self._do(op, *args))["outcome"])

    async def gets(self, key: bytes) -> tuple[bytes, bytes] | None:
        answer = await self._do("gets", key)
        if answer.get("value") is None:
            return None
        return base64.b64decode(answer["value"]), base64.b64decode(answer["token"])

    async def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._outcome("add", key, value, ttl)

    async def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        return await self._outcome("replace", key, value, ttl)

    async def append(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._outcome("append", key, value)

    async def prepend(self, key: bytes, value: bytes | memoryview) -> str:
        return await self._outcome("prepend", key, value)

    async def cas(
        self, key: bytes, value: bytes | memoryview, ttl: float | None, token: bytes | None
    ) -> str:
        return await self._outcome("cas", key, value, ttl, token)

    async def incr(self, key: bytes, delta: int) -> str:
        return await self._outcome("incr", key, *_by_one(delta))

    async def decr(self, key: bytes, delta: int) -> str:
        return await self._outcome("decr", key, *_by_one(delta))

    async def touch(self, key: bytes, ttl: float | None) -> str:
        return await self._outcome("touch", key, b"", ttl)

    async def close(self) -> None:
        return None


def _by_one(delta: int) -> tuple[()]:
    """No arguments beyond the key: the engine's incr and decr are by 1."""
    if delta != 1:
        raise AdapterError("unsupported", f"the native engine counts by 1, not {delta}")
    return ()


def probe_connect(system: CacheSystem, strategy: Strategy) -> Any:
    """A Strategy.connect for a native `strategy` of `system` (used by the conformance kit)."""

    async def connect(system_options: dict[str, Any], strategy_options: dict[str, Any]) -> Any:
        return await ProbeConnection(system, strategy, system_options, strategy_options).open()

    return connect
