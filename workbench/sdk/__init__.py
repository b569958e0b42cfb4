"""The plugin SDK: everything a plugin may import from the workbench, and nothing else.

A plugin writes ``from workbench.sdk import CacheSystem, Strategy, Option, ...`` (or imports
a submodule: ``workbench.sdk.servers``). The SDK is the workbench's bottom layer: it imports
nothing else of the workbench, so a plugin built on it depends on none of the core (an
import-linter contract checks both). What is here:

- `adapter`: the contract (`CacheSystem`, `Strategy`, `Connection`, `AdapterError`, ...)
- `options`: option kinds, parsed alike for TOML, ``--set``, the form and the docs
- `errors`: the error hierarchy every face prints
- `ops`: the op kinds, their codes and what each needs of a strategy
- `protocols`: the wire protocols the native engine speaks, for `Strategy.protocol`
- `facts`: what a system declares so the core never matches its name (URLs, cache size...)
- `servers`: managed servers (free port, start, wait, memory, stop by pid)
- `resp_server`, `builds`, `origin` (imported by name, not re-exported here): the recipe of
  a Redis-compatible managed server, a server built once from its source, and the reference
  HTTP origin an HTTP cache is put in front of
- `resp` (imported by name too: it brings in redis-py and hiredis): the RESP client kit a
  plugin for Redis or a server speaking its protocol stands on (target, strategies, INFO,
  cluster, facts)
- `remote`: the loopback guard and the remote-target opt-in
- `endpoints`: where a system's servers are (`Endpoints`), and the strict URL reader
- `tls`, `tls_certs`: TLS options, contexts, error lines, throw-away certificates
- `discovery`: plugins by entry point; `scaffold`: ``workbench plugins new``
"""

from workbench.sdk import ops, protocols
from workbench.sdk.adapter import (
    FEATURES,
    NODE_CPU,
    AdapterError,
    CacheSystem,
    ConnectFn,
    Connection,
    ConnectionCount,
    KeyRule,
    ManagedServer,
    ProtocolChoice,
    ServerLauncher,
    Strategy,
    WireCheck,
    connect_on_demand,
    count_of,
    error_kind,
    no_connections,
    one_per_worker,
    per_client,
    pool_of,
    runs_in_native_engine,
)
from workbench.sdk.discovery import load_plugin, plugin_names
from workbench.sdk.endpoints import Endpoints, Login, Url, read_host_port, read_url
from workbench.sdk.errors import PluginError, SpecError, TargetError, WorkbenchError
from workbench.sdk.facts import CacheSize, CoresRule, Refusal, ServerCores, ServerFigures, Urls
from workbench.sdk.ops import OPERATIONS, OpKind
from workbench.sdk.options import Option, OptionSet, parse_duration, parse_size
from workbench.sdk.protocols import HTTP1, MEMCACHE_META, MEMCACHE_TEXT, RESP, WireProtocol
from workbench.sdk.remote import is_loopback, require_loopback
from workbench.sdk.servers import (
    LOOPBACK,
    ServerProcess,
    free_port,
    host_port,
    launch,
    listen_address,
    process_memory,
    program_version,
    python_module,
    require_program,
    start_python_server,
)
from workbench.sdk.tls import (
    TLS_OPTIONS,
    TlsSettings,
    closed_after_handshake,
    plain_port_timeout,
    tls_cause,
    tls_error,
    tls_settings,
)
from workbench.sdk.tls_certs import TlsFiles, make_tls_files

__all__ = [
    "FEATURES",
    "HTTP1",
    "LOOPBACK",
    "MEMCACHE_META",
    "MEMCACHE_TEXT",
    "NODE_CPU",
    "OPERATIONS",
    "RESP",
    "TLS_OPTIONS",
    "AdapterError",
    "CacheSize",
    "CacheSystem",
    "ConnectFn",
    "Connection",
    "ConnectionCount",
    "CoresRule",
    "Endpoints",
    "KeyRule",
    "Login",
    "ManagedServer",
    "OpKind",
    "Option",
    "OptionSet",
    "PluginError",
    "ProtocolChoice",
    "Refusal",
    "ServerCores",
    "ServerFigures",
    "ServerLauncher",
    "ServerProcess",
    "SpecError",
    "Strategy",
    "TargetError",
    "TlsFiles",
    "TlsSettings",
    "Url",
    "Urls",
    "WireCheck",
    "WireProtocol",
    "WorkbenchError",
    "closed_after_handshake",
    "connect_on_demand",
    "count_of",
    "error_kind",
    "free_port",
    "host_port",
    "is_loopback",
    "launch",
    "listen_address",
    "load_plugin",
    "make_tls_files",
    "no_connections",
    "one_per_worker",
    "ops",
    "parse_duration",
    "parse_size",
    "per_client",
    "plain_port_timeout",
    "plugin_names",
    "pool_of",
    "process_memory",
    "program_version",
    "protocols",
    "python_module",
    "read_host_port",
    "read_url",
    "require_loopback",
    "require_program",
    "runs_in_native_engine",
    "start_python_server",
    "tls_cause",
    "tls_error",
    "tls_settings",
]
