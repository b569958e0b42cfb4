"""Reference HTTP cache servers the workbench can start and measure.

Each is a module runnable as ``python -m workbench_http.servers.NAME --host H --port P ...``
that prints ``READY http://H:P`` (``https://`` with ``--tls-cert``) once it listens,
serves until SIGINT or SIGTERM, and then shuts down cleanly. They listen on loopback
only: they are benchmark targets with no authentication, never services.

- `caching_proxy`: the Redis caching proxy of ``001_*.txt`` (an LRU with a TTL in front
  of Redis, ``GET /lookup?key=K``).
- `kv_store`: the key-value store of ``004_*.txt`` (POST to store, GET to read, expiry,
  one dict or partitioned storage).

This module holds what both share: argument checks, the event loop choice, TLS
(``--tls-cert``/``--tls-key``, and ``--tls-client-ca`` to require a client certificate)
and the run-until-signalled loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import signal
import ssl
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from workbench.sdk import is_loopback


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--port", type=port, default=0, help="port (0: the kernel picks one)")
    parser.add_argument(
        "--loop",
        choices=("auto", "uvloop", "asyncio"),
        default="auto",
        help="event loop: uvloop when installed (auto), or the default asyncio loop",
    )
    parser.add_argument("--tls-cert", default="", help="PEM certificate: serve HTTPS")
    parser.add_argument("--tls-key", default="", help="PEM private key of --tls-cert")
    parser.add_argument(
        "--tls-client-ca", default="", help="PEM CA: require client certificates it signed"
    )
    return parser


def server_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The TLS context the arguments ask for (None: plain HTTP)."""
    if not args.tls_cert:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(args.tls_cert, args.tls_key or None)
    if args.tls_client_ca:
        ctx.load_verify_locations(args.tls_client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def port(text: str) -> int:
    """A port for argparse: past 65535 the kernel would pick one and the server be lost."""
    value = whole(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(
            f"expected a port from 0 (a free one) to 65535; got {text!r}"
        )
    return value


def whole(text: str) -> int:
    """A whole number of 0 or more for argparse (counts and capacities)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number; got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more; got {text!r}")
    return value


def rate(text: str) -> float:
    """A finite number of 0 or more for argparse: NaN would compare false with every limit
    and so switch a limit off unseen."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of 0 or more; got {text!r}")
    return value


def check_host(parser: argparse.ArgumentParser, host: str) -> None:
    if not is_loopback(host):
        parser.error(f"--host must be a loopback address (127.0.0.1, ::1, localhost), not {host}")


def duration(text: str) -> float:
    """A duration for argparse: 2, 2s, 500ms, 10m, 1h."""
    units = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    text = text.strip().lower()
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            number, scale = text[: -len(suffix)], units[suffix]
            break
    else:
        number, scale = text, 1.0
    try:
        value = float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a duration such as 2s or 500ms; got {text!r}"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite duration of 0 or more; got {text!r}")
    return value


def json_response(payload: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(payload, ensure_ascii=False).encode(),
        status=status,
        content_type="application/json",
    )


def new_loop(choice: str) -> tuple[asyncio.AbstractEventLoop, str]:
    if choice in ("auto", "uvloop"):
        try:
            import uvloop  # optional (not on Windows): asyncio's own loop is the fallback
        except ImportError:
            if choice == "uvloop":
                raise SystemExit("uvloop is not installed; use --loop asyncio") from None
        else:
            return uvloop.new_event_loop(), "uvloop"
    return asyncio.new_event_loop(), "asyncio"


async def _serve(
    make_app: Callable[[], Awaitable[web.Application]],
    host: str,
    port: int,
    loop_name: str,
    tls: ssl.SSLContext | None,
) -> None:
    app = await make_app()
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=1024, reuse_address=True, ssl_context=tls)
    await site.start()
    server = site._server
    sockets = getattr(server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    display = f"[{host}]" if ":" in host else host
    print(f"event loop: {loop_name}", flush=True)
    print(f"READY {'https' if tls else 'http'}://{display}:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(runner.cleanup(), timeout=5)
    print("stopped", flush=True)


def run(
    make_app: Callable[[], Awaitable[web.Application]],
    host: str,
    port: int,
    loop_choice: str,
    tls: ssl.SSLContext | None = None,
) -> None:
    """Serve the app built by `make_app` until SIGINT or SIGTERM; exit status 0."""
    loop, name = new_loop(loop_choice)
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(_serve(make_app, host, port, name, tls))
    except OSError as exc:  # the port is taken, say
        print(f"error: cannot listen on {host}:{port}: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    finally:
        loop.close()
