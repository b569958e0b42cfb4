"""How a failed HTTPS exchange, or a plain one that met a TLS port, is said in one line.

aiohttp wraps the ssl module's errors (`ClientConnectorCertificateError`,
`ClientConnectorSSLError` raised ``from`` the SSL error); `workbench.sdk.tls` words them, under
the ``tls`` kind, as for redis and memcached. A plain client on a TLS port gets no answer:
the server drops it after failing the handshake, which the ``connection`` message names.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp

from workbench.sdk import AdapterError, closed_after_handshake, tls_cause
from workbench_http.config import Config

PLAIN_ON_TLS = " (is it a TLS port? use https://)"


def address(config: Config) -> str:
    return urlsplit(config.base_url).netloc


def tls_failure(exc: BaseException, config: Config) -> AdapterError | None:
    """The SSL error behind an aiohttp exception as one ``tls`` line (None: not TLS)."""
    if isinstance(exc, aiohttp.ClientSSLError):
        # aiohttp's wrappers are SSL errors by class but lack their fields: use the
        # ssl module's own error they were raised from.
        if exc.__cause__ is None:
            return AdapterError("tls", f"TLS with {address(config)} failed: {exc}")
        exc = exc.__cause__
    return tls_cause(exc, address(config))


def refused(exc: BaseException, config: Config, answered: bool) -> AdapterError | None:
    """A TLS connection given no client certificate, dropped before any answer: the server
    wants one (an asyncio server closes without sending its alert)."""
    tls = config.tls
    if tls is None or tls.cert or answered:
        return None
    if not isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError):
        return None
    return closed_after_handshake(address(config), exc)


def plain_on_tls_hint(exc: BaseException, config: Config) -> str:
    """For http://: the server dropped the connection without an answer, as a TLS port does."""
    if config.tls is None and isinstance(exc, aiohttp.ServerDisconnectedError):
        return PLAIN_ON_TLS
    return ""
