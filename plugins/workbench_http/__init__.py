"""HTTP caches: a generic adapter on aiohttp, configured by request templates.

A template is ``"METHOD /path?query"`` relative to ``base_url``, with placeholders:

- ``{key}``: the key, percent-encoded (every byte outside ``A-Z a-z 0-9 - . _ ~``); in a
  JSON body, the key as UTF-8 text;
- ``{ttl}``: the TTL in seconds, or empty when the operation has none.

``get`` (default ``GET /lookup?key={key}``, the proxy of ``001_*.txt``) reads a key.
The response status decides: ``hit_status`` (default 200) is a hit, ``miss_status``
(default 404) a miss, anything else an error counted as ``http-NNN``. On a hit the value
is the JSON field ``value_field`` (default ``value``) when the response is JSON, else the
raw body; a JSON hit whose value is null, or that lacks a true ``hit_field`` when one is
set, counts as a miss.

``set`` (default ``POST /``) sends ``set_body``:

- exactly ``{value}``: the value's raw bytes (``application/octet-stream``);
- anything else is a JSON template (default ``{"key": "{key}", "value": "{value}",
  "ttl": {ttl}}``, the store of ``004_*.txt``) where ``{key}`` and ``{value}`` are
  replaced by JSON-escaped text (write them inside quotes) and ``{ttl}`` by a number or
  ``null``. JSON carries text, not bytes, so a value becomes text by ``value_encoding``:
  ``latin-1`` (default; each byte is the code point of the same number, so a server
  stores exactly as many characters as the value has bytes, and any bytes come back
  identical) or ``base64``. Hits are decoded the same way (with latin-1, text holding
  characters beyond U+00FF, written by someone else, is returned as its UTF-8 bytes).

A set succeeds on a ``set_status``; ``delete`` (no default: strategies then reject a
delete at run time, counted as ``unsupported``) answers True on ``delete_status``, False
on a ``miss_status``. Connection failures count as ``connection``, timeouts as
``timeout``, unreadable answers as ``protocol``.

Strategies: ``keep-alive`` (one aiohttp session per worker whose connection pool of
``pool_size`` is shared by the worker's virtual clients), ``new-connection`` (aiohttp, a
new TCP connection for every request) and ``lean`` (no aiohttp: one keep-alive
connection per virtual client and a minimal HTTP/1.1 client, as wrk does, for when the
server rather than the client library is to be measured; see `workbench_http.lean`).
``base_url`` must be a loopback address unless the spec sets ``target.allow_remote``.
Redirects are never followed (a 3xx answer counts as error ``http-3xx``): a redirect to
another host would get past that check.

``https://`` turns TLS on, in every strategy and the native engine, with the options of
redis and memcached: ``tls_ca`` (else the system's CAs), ``tls_cert``/``tls_key`` (mutual
TLS), ``tls_insecure`` (no verification, said in the report) and ``tls_sni`` (the name
sent and checked; without it the chain is checked, not the name). A certificate that does
not verify, or a refusal, counts under ``tls``. ``lean`` and the native engine handshake
before the load; the aiohttp strategies open connections on demand, so a pooled
connection's first op (``keep-alive``) or every op (``new-connection``, by design) holds
its handshake.

With ``target.managed = true`` the workbench starts one of the reference servers of
`workbench_http.servers` (``target.server.kind``: ``caching-proxy``, with a throw-away
redis-server unless ``redis_url`` is given, or ``kv-store``) and points the templates at it;
``target.server.tls = true`` serves it over HTTPS with a throw-away CA (removed at its stop),
and ``tls_auth_clients = true`` requires a client certificate.
"""

from __future__ import annotations

from workbench.sdk import (
    HTTP1,
    TLS_OPTIONS,
    CacheSystem,
    Option,
    OptionSet,
    ServerLauncher,
    Strategy,
    connect_on_demand,
    per_client,
    pool_of,
    runs_in_native_engine,
)
from workbench_http import facts
from workbench_http.config import check_target, endpoints
from workbench_http.managed import SERVER_OPTIONS, start_server
from workbench_http.templates import DEFAULT_SET_BODY

# add and replace are a set with a precondition (`config.CONDITIONS`; the native engine's
# `protocols/http.rs` sends the same headers), in every strategy.
CONDITIONAL_SETS = frozenset({"get", "set", "delete", "add", "replace"})


# aiohttp is imported when a strategy connects, not with the plugin (`connect_on_demand`).
connect_keep_alive = connect_on_demand("workbench_http.client", "connect_keep_alive")
connect_new = connect_on_demand("workbench_http.client", "connect_new")
connect_lean = connect_on_demand("workbench_http.lean", "connect_lean")


plugin = CacheSystem(
    name="http",
    description="HTTP caches through request templates (aiohttp); reference proxy and store",
    options=OptionSet(
        (
            Option(
                "base_url",
                "str",
                "http://127.0.0.1:8000",
                "server URL, loopback only; the templates' paths are appended",
            ),
            Option("get", "str", "GET /lookup?key={key}", "get request; {key} is percent-encoded"),
            Option("set", "str", "POST /", "set request; {key} and {ttl} may appear in the URL"),
            Option(
                "set_body",
                "str",
                DEFAULT_SET_BODY,
                "set body: a JSON template with {key} {value} {ttl}, or {value} for raw bytes",
            ),
            Option("delete", "str", "", "delete request, e.g. 'DELETE /?key={key}' (empty: none)"),
            Option(
                "value_encoding",
                "choice",
                "latin-1",
                "how value bytes travel as JSON text (one code point per byte, or base64)",
                choices=("latin-1", "base64"),
            ),
            Option("value_field", "str", "value", "JSON field of a hit's value (empty: raw body)"),
            Option("hit_field", "str", "", "JSON field that must be present and true for a hit"),
            Option("hit_status", "list", ["200"], "statuses of a hit"),
            Option("miss_status", "list", ["404"], "statuses of a miss"),
            Option("set_status", "list", ["200", "201", "204"], "statuses of a successful set"),
            Option("delete_status", "list", ["200", "202", "204"], "statuses of a deletion"),
            Option("headers", "list", [], "extra request headers, each 'Name: value'"),
            Option("timeout", "duration", 10.0, "whole-request timeout (0: none)"),
            Option("connect_timeout", "duration", 5.0, "connection timeout (0: none)"),
            Option("stats_path", "str", "", "path of a JSON statistics endpoint, e.g. /stats"),
            *TLS_OPTIONS,
        )
    ),
    strategies=(
        Strategy(
            "keep-alive",
            "one aiohttp session per worker; its keep-alive pool is shared by the clients",
            connect_keep_alive,
            operations=CONDITIONAL_SETS,
            options=OptionSet(
                (
                    Option(
                        "pool_size",
                        "int",
                        0,
                        "connections per worker (0: as many as clients are busy at once)",
                        minimum=0,
                    ),
                )
            ),
            connections=pool_of("pool_size"),
        ),
        Strategy(
            "new-connection",
            "a new TCP connection for every request (Connection: close)",
            connect_new,
            operations=CONDITIONAL_SETS,
            connections=per_client,
        ),
        Strategy(
            "lean",
            "one keep-alive connection per client, a minimal HTTP/1.1 client (no aiohttp)",
            connect_lean,
            operations=CONDITIONAL_SETS,
            connections=per_client,
        ),
        Strategy(
            "native",
            "native engine (Rust): one keep-alive connection per client, as wrk",
            runs_in_native_engine,
            operations=CONDITIONAL_SETS,
            engine="native",
            connections=per_client,
            protocol=HTTP1,
        ),
    ),
    default_strategy="keep-alive",
    # The caching proxy starts a redis-server behind it (unless given one).
    server=ServerLauncher(
        options=SERVER_OPTIONS,
        start=start_server,
        programs=(("redis-server", ("redis-server", "--version")),),
        recipes={kind: {"kind": kind} for kind in ("kv-store", "caching-proxy")},
    ),
    check=check_target,
    endpoints=endpoints,
    urls=facts.URLS,
    server_cores=facts.server_cores,
    libraries=facts.LIBRARIES,
)
