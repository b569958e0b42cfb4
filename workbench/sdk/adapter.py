"""THE plugin contract: what a cache system and a client strategy declare and provide.

A plugin is a module-level ``plugin = CacheSystem(...)`` registered under the entry-point
group ``workbench.plugins``. Adapters only do I/O: the engine holds the stopwatch, counts
hits and misses, and classifies errors. An adapter never reads the clock or records.

Robustness rules:
- Options arrive already parsed and complete (defaults filled in) as plain dicts: the
  system's options and the strategy's options, separately.
- ``get`` returns the value's bytes, or ``None`` for a miss. Any exception is an error,
  classified by `error_kind`; raise `AdapterError(kind, ...)` to name the kind yourself.
- ``set`` receives a ``bytes`` or ``memoryview`` value and a TTL in seconds or ``None``.
- ``delete`` returns whether the key was there, or ``None`` when the protocol does not say.
- The conditional writes a strategy declares (``add``, ``replace``, ``cas``, ``append``,
  ``prepend``, ``incr``, ``decr``, ``touch``) each return their outcome, one of
  `workbench.sdk.ops.OUTCOMES` (``"stored"``, ``"not_stored"``...); ``gets`` returns
  ``(value, token)`` or ``None``, and ``cas(key, value, ttl, token)`` gets that token back
  (``None`` when no gets brought one). docs/plugins.md lists each one's signature.
- A strategy that declares ``cache_aside`` without ``get`` and ``set`` (a server whose
  read is get-or-set, such as umem-cache) is driven the same way: ``get``, and on a miss
  the ``set`` of that key at once; it need not support them on their own.
- Async strategies return clients whose methods are coroutines; blocking strategies
  (``blocking=True``) return clients with plain methods, driven one thread per client.
- ``subscribe`` must not return before the subscription is live on the server, so that
  nothing published after it returns is lost.
- A connection to a Redis Cluster may have ``redirects() -> tuple[int, int]``: the ops
  redirected by MOVED and by ASK since its last call (counts, not times). The driver reads
  it at each interval's end and shows the figures as ``moved`` and ``ask``.
- A cluster's ``server_stats`` may give each node's CPU seconds as ``NODE_CPU + "HOST:PORT"``:
  the verdict then judges the busiest node.
"""

from __future__ import annotations

import asyncio
import importlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from workbench.sdk.errors import PluginError
from workbench.sdk.facts import CacheSize, CoresRule, Refusal, ServerFigures, Urls
from workbench.sdk.ops import OPERATIONS
from workbench.sdk.options import Option, OptionSet
from workbench.sdk.protocols import protocol as known_protocol

if TYPE_CHECKING:  # endpoints' TLS settings import this module's AdapterError
    from workbench.sdk.endpoints import Endpoints

NODE_CPU = "node_cpu@"  # a server_stats figure: one cluster node's CPU seconds, by address
# Besides operations, what a strategy may say it lacks (in `Strategy.lacks`).
FEATURES = ("ttl",)


class AdapterError(Exception):
    """An error whose kind the adapter names (``"server"`` for an error reply, say)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def error_kind(exc: BaseException) -> str:
    """The kind an error is counted under: timeout, connection, an adapter's own, or the type."""
    if isinstance(exc, AdapterError):
        return exc.kind
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | socket.timeout):
        return "timeout"
    if isinstance(exc, ConnectionError | EOFError | BrokenPipeError):
        return "connection"
    if isinstance(exc, RuntimeError) and str(exc).endswith("the handler is closed"):
        # uvloop's refusal of a write on a transport the server already closed.
        return "connection"
    name = type(exc).__name__
    if "Timeout" in name:
        return "timeout"
    if "Connection" in name or isinstance(exc, OSError):
        return "connection"
    return name


@runtime_checkable
class Client(Protocol):
    """One virtual client's handle (async form; blocking strategies drop the ``async``)."""

    async def get(self, key: bytes) -> bytes | None: ...

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None: ...

    async def delete(self, key: bytes) -> bool | None: ...

    async def close(self) -> None: ...


class PubSubClient(Protocol):
    """Optional, for strategies that declare ``publish``/``subscribe``."""

    async def publish(self, channel: bytes, message: bytes) -> None: ...

    async def subscribe(self, channels: Sequence[bytes]) -> AsyncIterator[bytes]: ...


class Connection(Protocol):
    """What `Strategy.connect` gives: opens clients, reports server statistics, closes.

    A connection whose clients share a pool that opens lazily may also have
    `async open_pool(clients: int)`: the engine calls it once every client is made, before
    anything is measured, so no measured op pays for a connection's setup (a TLS handshake).
    """

    async def client(self) -> Any: ...

    async def server_stats(self) -> dict[str, Any]: ...

    async def close(self) -> None: ...


ConnectFn = Callable[[dict[str, Any], dict[str, Any]], Awaitable[Connection]]


def connect_on_demand(module: str, name: str) -> ConnectFn:
    """The connect function `name` of `module`, imported when a strategy first connects.
    Commands that list the plugins (`-s URL`, `workbench doctor`, the TUI) import every
    plugin's declaration; a client library imported with it (aiohttp loads the system's
    CA certificates, about 0.1 s) is paid by each of them for a system it does not use."""

    async def connect(system: dict[str, Any], strategy: dict[str, Any]) -> Connection:
        found: ConnectFn = getattr(importlib.import_module(module), name)
        return await found(system, strategy)

    return connect


# A system's check of what its protocol can carry, run at spec check before anything starts:
# given its resolved options and the longest key the workload makes, it raises a SpecError
# (or TargetError) naming the field and what was expected. Both engines send what it allowed.
WireCheck = Callable[[dict[str, Any], bytes], None]


@dataclass(frozen=True)
class KeyRule:
    """What a key on the system's wire may be, as data: a key prefix is judged by it at
    spec check (through the system's `check`), and a replayed trace's keys one by one as
    they are read, by both engines alike (the native engine is sent these two numbers).
    The default is a binary-safe protocol (RESP, or HTTP with keys percent-encoded)."""

    max_bytes: int = 0  # the protocol's own limit (memcached's 250); 0: none
    text: bool = False  # True: no space or control character (a text protocol ends keys there)

    def problem(self, key: bytes) -> str | None:
        """Why `key` cannot travel, to follow "expected keys "; None when it can."""
        if self.max_bytes and len(key) > self.max_bytes:
            return f"of at most {self.max_bytes} bytes; the longest would be {len(key)} bytes"
        if self.text:
            bad = next((b for b in key if b <= 0x20 or b == 0x7F), None)
            if bad is not None:
                return f"without spaces or control characters; got {chr(bad)!r} in {key[:60]!r}"
        return None


async def runs_in_native_engine(
    system_options: dict[str, Any], strategy_options: dict[str, Any]
) -> Connection:
    """The connect of a native strategy (``engine="native"``): its steps run in the native
    engine's workers (native/), and the conformance kit drives it through the engine's own
    probe; nothing in Python connects for it."""
    raise PluginError(
        "a native strategy runs in the native engine's workers, not through connect",
        "strategy.name",
    )


# How many connections one worker opens: given the system's and the strategy's resolved
# options and that worker's number of virtual clients. The limits check (engine/limits.py)
# counts open files with it before a step starts.
ConnectionCount = Callable[[Mapping[str, Any], Mapping[str, Any], int], int]


# The wire protocol a strategy speaks when it depends on its options (memcached's native
# strategy: text or meta): given the system's and the strategy's resolved options, the name
# of one protocol of `workbench.sdk.protocols`.
ProtocolChoice = Callable[[Mapping[str, Any], Mapping[str, Any]], str]


def per_client(system_options: Mapping[str, Any], options: Mapping[str, Any], clients: int) -> int:
    """One connection per virtual client (the default)."""
    return clients


def one_per_worker(
    system_options: Mapping[str, Any], options: Mapping[str, Any], clients: int
) -> int:
    """One connection shared by all of a worker's clients."""
    return 1


def no_connections(
    system_options: Mapping[str, Any], options: Mapping[str, Any], clients: int
) -> int:
    """None: the system lives inside the worker."""
    return 0


def pool_of(option: str) -> ConnectionCount:
    """As many as the strategy option `option` says, at most one per client (0: one per
    client, a pool that grows with the clients busy at once)."""

    def count(system_options: Mapping[str, Any], options: Mapping[str, Any], clients: int) -> int:
        size = int(options[option])
        return min(clients, size) if size > 0 else clients

    return count


def count_of(option: str) -> ConnectionCount:
    """Exactly as many as the strategy option `option` says, whatever the clients."""

    def count(system_options: Mapping[str, Any], options: Mapping[str, Any], clients: int) -> int:
        return int(options[option])

    return count


@dataclass(frozen=True)
class Strategy:
    """A way for clients to talk to the system: one connection each, a pool, pipelining..."""

    name: str
    description: str
    connect: ConnectFn
    operations: frozenset[str] = frozenset({"get", "set", "delete"})
    options: OptionSet = field(default_factory=OptionSet)
    blocking: bool = False
    # "native": steps of this strategy run in the native engine's workers (native/), not
    # the Python worker; `connect` then only serves the conformance kit.
    engine: str = "python"
    # Why it lacks an operation or a feature ("ttl"): the spec error a profile asking for
    # it gets says so.
    lacks: Mapping[str, str] = field(default_factory=dict, hash=False)
    # How many connections a worker opens (`per_client`, `one_per_worker`, `pool_of(option)`,
    # `count_of(option)`, `no_connections`, or a function of your own).
    connections: ConnectionCount = per_client
    # The wire protocol it speaks, by its name in `workbench.sdk.protocols` ("resp",
    # "memcache-text", "memcache-meta", "http1"), or a function of the resolved options
    # that names one. The native engine is told this protocol, never the system. None: the
    # plugin's own protocol, spoken by its adapter in the Python engine only.
    protocol: str | ProtocolChoice | None = None

    def supports_ttl(self) -> bool:
        return "set" in self.operations and "ttl" not in self.lacks

    def protocol_for(
        self, system_options: Mapping[str, Any], strategy_options: Mapping[str, Any]
    ) -> str | None:
        """The protocol this strategy speaks with these resolved options (None: its own)."""
        if self.protocol is None or isinstance(self.protocol, str):
            return self.protocol
        return known_protocol(self.protocol(system_options, strategy_options)).name


class ManagedServer(Protocol):
    """A server process the workbench started; stopped by its pid."""

    # Read-only to the workbench: a server may answer them with properties (ServerProcess's
    # pid is its process's) or with fields.
    @property
    def pid(self) -> int: ...

    @property
    def version(self) -> str: ...

    # Merged into the system's options so that clients reach this server.
    @property
    def target_options(self) -> dict[str, Any]: ...

    def memory(self) -> dict[str, int]: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class ServerLauncher:
    """How to start a server for this system on a free loopback port."""

    options: OptionSet
    start: Callable[[dict[str, Any]], ManagedServer]
    # The programs it runs, each with the arguments that make it print its version
    # (("redis-server", ("redis-server", "--version")),): `workbench doctor` looks for them.
    programs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Named server options `workbench serve NAME` starts, besides the system's own name
    # (the HTTP plugin's {"kv-store": {"kind": "kv-store"}, ...}).
    recipes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)
    # `start` is also what `workbench serve` runs: it adds `listen_host` and `listen_port`
    # to the options (`workbench.sdk.servers.listen_address`), which a launcher honours
    # by listening there.


@dataclass(frozen=True)
class CacheSystem:
    """A cache system under test and the client strategies that can drive it."""

    name: str
    description: str
    strategies: tuple[Strategy, ...]
    default_strategy: str
    options: OptionSet = field(default_factory=OptionSet)
    server: ServerLauncher | None = None
    # False when each worker process holds its own cache (the embedded one): the engine
    # then splits the key space between workers so that hit rates mean what they say.
    shared_state: bool = True
    # Options that are a capacity of that per-worker state (the embedded cache's entries and
    # bytes): the engine divides them between workers the way it splits the key space, so
    # that N workers together hold what one would.
    split_options: tuple[str, ...] = ()
    # Where keys go over several servers, for engines that place them themselves (the
    # native engine): the system options in, one rendezvous seed per server out, in the
    # order the servers are listed. None: one server takes every key.
    placement: Callable[[Mapping[str, Any]], tuple[int, ...]] | None = None
    # Addresses, keys, headers and templates checked before a run starts (see WireCheck).
    check: WireCheck | None = None
    # Where its servers are, read from its options by its one parser (`sdk.endpoints`): the
    # remote check and the native engine's order take them from here. None: a system of no
    # servers (the embedded cache), or one whose addresses only the generic check reads.
    endpoints: Callable[[Mapping[str, Any]], Endpoints] | None = None
    # What the core asks instead of matching the system's name (`workbench.sdk.facts`):
    # how `-s URL` names it, the option that sizes its cache (`--simulate`, `mrc`), the
    # cores its server may use (the verdict), which of its server's figures mean what,
    # the refusals its server gives with what to change, and the Python distributions
    # whose versions a run records.
    urls: Urls | None = None
    cache_size: CacheSize | None = None
    server_cores: CoresRule | None = None
    figures: ServerFigures = field(default_factory=ServerFigures)
    refusals: tuple[Refusal, ...] = ()
    libraries: tuple[str, ...] = ()

    def facts(self, server_options: Mapping[str, Any], managed: bool) -> dict[str, Any]:
        """What readers of a stored step need of this system, as plain data (kept with the
        step, so that reading a run never imports the plugin)."""
        cores = self.server_cores(server_options, managed) if self.server_cores else None
        return {
            "in_process": not self.shared_state,
            "server_cores": cores.cores if cores else None,
            "single_threaded": bool(cores and cores.single_threaded),
            "cache_size": self.cache_size.to_dict() if self.cache_size else None,
            "figures": self.figures.to_dict(),
            "refusals": [[r.words, r.advice] for r in self.refusals],
        }

    # What its keys may be (see KeyRule): a trace's keys that break it are not sent.
    keys: KeyRule = KeyRule()

    def strategy(self, name: str) -> Strategy:
        for s in self.strategies:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.strategies)
        raise PluginError(
            f"unknown strategy {name!r}; {self.name} strategies: {known}", "strategy.name"
        )


def worker_options(
    system: CacheSystem, options: dict[str, Any], workers: int, worker: int
) -> dict[str, Any]:
    """The system options worker `worker` of `workers` gets: `split_options` divided as the
    key space is (the first `total % workers` workers get one more), never below 1."""
    if system.shared_state or workers <= 1 or not system.split_options:
        return options
    out = dict(options)
    for name in system.split_options:
        total = out.get(name)
        if isinstance(total, int) and not isinstance(total, bool):
            base, extra = divmod(total, workers)
            out[name] = max(1, base + (1 if worker < extra else 0))
    return out


def check_declaration(obj: object, entry_name: str) -> CacheSystem:
    """Validate a loaded plugin object against the contract; raise PluginError if it fails."""
    if not isinstance(obj, CacheSystem):
        raise PluginError(
            f"entry point must name a CacheSystem, got {type(obj).__name__}", entry_name
        )
    if not obj.strategies:
        raise PluginError("declares no strategies", entry_name)
    names = [s.name for s in obj.strategies]
    if len(set(names)) != len(names):
        raise PluginError(f"duplicate strategy names in {names}", entry_name)
    if obj.default_strategy not in names:
        raise PluginError(
            f"default strategy {obj.default_strategy!r} is not one of {names}", entry_name
        )
    for s in obj.strategies:
        unknown = set(s.operations) - set(OPERATIONS)
        if unknown:
            raise PluginError(
                f"strategy {s.name!r} declares unknown operations {sorted(unknown)}", entry_name
            )
        odd = set(s.lacks) - set(OPERATIONS) - set(FEATURES)
        if odd:
            raise PluginError(
                f"strategy {s.name!r} says it lacks unknown things {sorted(odd)}", entry_name
            )
        if not callable(s.connect):
            raise PluginError(f"strategy {s.name!r} has no callable connect", entry_name)
        if not callable(s.connections):
            raise PluginError(f"strategy {s.name!r} has no callable connections", entry_name)
        _check_protocol(s, entry_name)
        if s.engine == "native" and obj.endpoints is None:
            raise PluginError(
                f"strategy {s.name!r} runs in the native engine, but the system declares no "
                "endpoints (where its servers are, `workbench.sdk.endpoints`)",
                entry_name,
            )
    for o in (*obj.options.options, *(o for s in obj.strategies for o in s.options.options)):
        if not isinstance(o, Option):
            raise PluginError(f"option {o!r} is not an Option", entry_name)
    return obj


def _check_protocol(s: Strategy, entry_name: str) -> None:
    """A declared protocol is one the native engine knows; a native strategy declares one."""
    if isinstance(s.protocol, str):
        try:
            known_protocol(s.protocol)
        except PluginError as exc:
            raise PluginError(f"strategy {s.name!r}: {exc.message}", entry_name) from None
    elif s.protocol is not None and not callable(s.protocol):
        raise PluginError(
            f"strategy {s.name!r}: protocol must be a protocol's name or a function of the "
            f"options; got {type(s.protocol).__name__}",
            entry_name,
        )
    if s.engine == "native" and s.protocol is None:
        raise PluginError(
            f"strategy {s.name!r} runs in the native engine but declares no protocol",
            entry_name,
        )
