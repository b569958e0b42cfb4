"""Throw-away certificates for managed TLS servers: a CA, a server certificate for
127.0.0.1/localhost and a client certificate (for mutual TLS), all signed by that CA and
written by the `openssl` command into the server's scratch directory (removed at its stop)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from workbench.sdk.servers import require_program

DAYS = "2"  # the certificates outlive no run
# ECDSA P-256 keys: made in milliseconds where an RSA 2048 key takes a quarter to half a
# second of CPU (three per TLS server), and every TLS client here (OpenSSL, Python's ssl,
# rustls with ring in the native engine) accepts them.
NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str) -> None:
    program = require_program("openssl", "openssl")
    done = subprocess.run([program, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def _signed(directory: Path, name: str, ca: Path, ca_key: Path, extensions: str) -> None:
    key, csr, cert = (directory / f"{name}.{ext}" for ext in ("key", "csr", "crt"))
    ext = directory / f"{name}.ext"
    ext.write_text(extensions)
    _openssl("req", "-new", *NEW_KEY, "-nodes", "-keyout", str(key),
             "-subj", f"/CN=workbench-{name}", "-out", str(csr))  # fmt: skip
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
             "-CAcreateserial", "-days", DAYS, "-extfile", str(ext), "-out", str(cert))  # fmt: skip


def make_tls_files(directory: Path) -> TlsFiles:
    """A fresh CA and the certificates it signs, in `directory`."""
    ca, ca_key = directory / "ca.crt", directory / "ca.key"
    _openssl("req", "-x509", "-new", *NEW_KEY, "-nodes", "-keyout", str(ca_key),
             "-subj", "/CN=workbench-throwaway-ca", "-days", DAYS, "-out", str(ca))  # fmt: skip
    names = "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost"
    _signed(directory, "server", ca, ca_key, f"{names}\nextendedKeyUsage=serverAuth\n")
    _signed(directory, "client", ca, ca_key, "extendedKeyUsage=clientAuth\n")
    return TlsFiles(
        ca=ca,
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
    )
