"""TLS for the client side of every plugin: the options (`tls_ca`, `tls_cert`, `tls_key`,
`tls_insecure`, `tls_sni`), the `ssl.SSLContext` they make, and one-line messages for the
ways a handshake fails (counted under the ``tls`` error kind)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.sdk.adapter import AdapterError
from workbench.sdk.errors import TargetError
from workbench.sdk.options import Option

TLS_OPTIONS: tuple[Option, ...] = (
    Option("tls_ca", "str", "", "PEM file of the CA that signed the server (empty: system CAs)"),
    Option("tls_cert", "str", "", "PEM client certificate for mutual TLS (with tls_key)"),
    Option("tls_key", "str", "", "PEM private key of tls_cert"),
    Option("tls_insecure", "bool", False, "skip certificate verification (said in the report)"),
    Option("tls_sni", "str", "", "server name sent and verified (empty: no name check)"),
)


@dataclass(frozen=True)
class TlsSettings:
    ca: str
    cert: str
    key: str
    insecure: bool
    sni: str

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca or None)
        # Loopback targets: a test certificate's name rarely fits 127.0.0.1, so the name is
        # checked only when tls_sni names it.
        ctx.check_hostname = bool(self.sni) and not self.insecure
        if self.insecure:
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert:
            ctx.load_cert_chain(self.cert, self.key or None)
        return ctx


def tls_settings(options: dict[str, Any], where: str) -> TlsSettings:
    """The TLS options of a target; a named file that is missing is a bad profile."""
    settings = TlsSettings(
        ca=str(options.get("tls_ca") or ""),
        cert=str(options.get("tls_cert") or ""),
        key=str(options.get("tls_key") or ""),
        insecure=bool(options.get("tls_insecure", False)),
        sni=str(options.get("tls_sni") or ""),
    )
    for field in ("ca", "cert", "key"):
        path = getattr(settings, field)
        if path and not Path(path).is_file():
            raise TargetError(
                f"expected a PEM file; {path!r} does not exist", f"{where}.tls_{field}"
            )
    if settings.key and not settings.cert:
        raise TargetError("tls_key needs tls_cert", f"{where}.tls_key")
    return settings


def tls_error(exc: BaseException, address: str) -> AdapterError | None:
    """A handshake failure as one line under the ``tls`` kind (None: not a TLS failure)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = exc.verify_message or exc.reason or str(exc)
        return AdapterError("tls", f"TLS: certificate of {address} does not verify: {reason}")
    if isinstance(exc, ssl.SSLError):
        reason = str(exc.reason or exc)
        if reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
            return AdapterError(
                "tls", f"TLS: {address} does not speak TLS (is it a plain port?): {reason}"
            )
        return AdapterError("tls", f"TLS handshake with {address} failed: {reason}")
    return None


def tls_cause(exc: BaseException, address: str) -> AdapterError | None:
    """`tls_error` of the SSL error a client library wrapped (its cause or context), if any."""
    seen: BaseException | None = exc
    for _ in range(8):  # bounded: a chain of wrapped errors is short
        if seen is None:
            return None
        failed = tls_error(seen, address)
        if failed is not None:
            return failed
        seen = seen.__cause__ or seen.__context__
    return None


def closed_after_handshake(address: str, cause: object) -> AdapterError:
    """A TLS server, given no client certificate, that closed or reset the connection after
    the handshake and before any reply. With TLS 1.3 a server that requires a client
    certificate checks it only after the client's handshake is done: it sends the alert
    CERTIFICATE_REQUIRED and closes, and a reset that follows (unread bytes on its side) can
    reach the client before the client's event loop has read the alert. So this close is
    named as what it nearly always is, under the same ``tls`` kind as the alert."""
    return AdapterError(
        "tls",
        f"TLS: {address} closed the connection after the handshake and before any reply "
        f"({cause or 'EOF'}): it requires a client certificate (alert CERTIFICATE_REQUIRED, "
        "its usual cause); set tls_cert and tls_key",
    )


def plain_port_timeout(address: str, seconds: float) -> AdapterError:
    """A TLS handshake unanswered: a plain port waits for a line that never comes."""
    return AdapterError(
        "tls",
        f"TLS: no handshake answer from {address} in {seconds:g}s: is it a plain (non-TLS) port?",
    )
