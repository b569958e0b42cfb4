"""The RESP client kit: what a plugin for Redis or a server that speaks its protocol
(Valkey, and the other forks) needs on the client side, stated once. Imported by name
(``from workbench.sdk.resp import ...``): it brings in redis-py and hiredis, which a plugin
for another protocol never loads.

- `target`: the system's options and its one reading of them (`RespSystem`,
  `read_target`, `resp_endpoints`, `target_options`), redis-py's arguments from it
- `facts`: the facts the core asks of a RESP system (URLs, maxmemory, cores, INFO's
  figures, refusals), `RespFacts`
- `wire`: a lean RESP2 connection (one write per loop turn, replies matched in order);
  `pubsub`: a subscribed connection; `info`: INFO on a side connection
- `redispy`: the strategies on redis-py (blocking per client or pooled, asyncio pool)
- `cluster`: the ``cluster`` strategy (RedisCluster per client, redirections counted);
  `cluster_servers`: a managed cluster of throw-away servers
- `handshake`: redis-py's connect check that names a TLS refusal
"""

from workbench.sdk.resp.facts import RespFacts
from workbench.sdk.resp.info import CPU_FIELDS, InfoReader, parse_info
from workbench.sdk.resp.target import (
    POLICIES,
    RespSystem,
    RespTarget,
    no_retries,
    read_target,
    resp_endpoints,
    target_options,
)
from workbench.sdk.resp.wire import RespProtocol, check, connect, open_resp, pack

__all__ = [
    "CPU_FIELDS",
    "POLICIES",
    "InfoReader",
    "RespFacts",
    "RespProtocol",
    "RespSystem",
    "RespTarget",
    "check",
    "connect",
    "no_retries",
    "open_resp",
    "pack",
    "parse_info",
    "read_target",
    "resp_endpoints",
    "target_options",
]
