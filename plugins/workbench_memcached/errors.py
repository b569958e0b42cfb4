"""pymemcache's exceptions in the engine's error kinds, worded like memcached's replies."""

from __future__ import annotations

import ssl

from pymemcache.exceptions import (
    MemcacheClientError,
    MemcacheIllegalInputError,
    MemcacheServerError,
    MemcacheUnexpectedCloseError,
    MemcacheUnknownCommandError,
)

from workbench.sdk import AdapterError, error_kind, tls_error


def translate(exc: Exception, server: str) -> AdapterError:
    """pymemcache's exceptions in the engine's kinds, worded like the server's reply."""
    if isinstance(exc, ssl.SSLError) and not isinstance(exc, ssl.SSLEOFError):
        # An alert (no client certificate, a certificate that does not verify): `tls`. An
        # EOF stays a lost connection, as a server that went away mid-run gives one.
        failed = tls_error(exc, server)
        if failed is not None:
            return failed
    if isinstance(exc, OSError):  # timeout or connection, said with the server's address
        return AdapterError(error_kind(exc), f"memcached at {server}: {type(exc).__name__}: {exc}")
    detail = exc.args[0] if exc.args else ""
    if isinstance(detail, bytes):
        detail = detail.decode(errors="replace")
    if isinstance(exc, MemcacheUnexpectedCloseError):
        return AdapterError("connection", f"memcached at {server} closed the connection")
    if isinstance(exc, MemcacheIllegalInputError):
        return AdapterError("invalid", f"not sent to memcached at {server}: {detail}")
    if isinstance(exc, MemcacheUnknownCommandError):
        return AdapterError("server", f"memcached at {server}: ERROR")
    if isinstance(exc, MemcacheServerError):
        return AdapterError("server", f"memcached at {server}: SERVER_ERROR {detail}")
    if isinstance(exc, MemcacheClientError):
        return AdapterError("server", f"memcached at {server}: CLIENT_ERROR {detail}")
    return AdapterError("protocol", f"memcached at {server}: {type(exc).__name__}: {detail}")
