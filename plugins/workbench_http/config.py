"""The system options checked and compiled once per worker, and what an answer means."""

from __future__ import annotations

import base64
import json
import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.sdk import (
    AdapterError,
    Endpoints,
    TargetError,
    TlsSettings,
    Url,
    read_url,
    require_loopback,
    tls_settings,
)
from workbench.sdk.ops import NOT_STORED, STORED
from workbench_http.templates import BodyTemplate, UrlTemplate, option_where

SCHEMES = {"http": 80, "https": 443}


def read_base_url(url: str, options: Mapping[str, Any] | None = None) -> Url:
    """The base URL read exactly (`read_url`: no query, no fragment, no user part); loopback
    unless the engine's opt-in is in `options` (a step that allowed remote targets)."""
    parts = read_url(url, SCHEMES, option_where("base_url"))
    if parts.username is not None:
        raise TargetError(
            f"expected no user part in the base URL (give credentials as headers); got {url!r}",
            option_where("base_url"),
        )
    require_loopback(parts.host, option_where("base_url"), options)
    return parts


def check_base_url(url: str, options: Mapping[str, Any] | None = None) -> str:
    """The base URL without its trailing slash, as `read_base_url` reads it."""
    read_base_url(url, options)
    return url.rstrip("/")


def endpoints(options: Mapping[str, Any]) -> Endpoints:
    """The server as `read_base_url` reads it, and what the native engine's http1 codec needs:
    the Host header as the URL spells it, the base path, the templates and the statuses."""
    parts = read_base_url(str(options["base_url"]), options)
    http1 = {name: options[name] for name in _NATIVE_SETTINGS}
    http1.update(host_header=parts.netloc, base_path=parts.path)
    return Endpoints(
        servers=((parts.host, parts.port),),
        origin=option_where("base_url"),
        tls=tls_settings(dict(options), "target.options") if parts.scheme == "https" else None,
        http1=http1,
        tls_advice="use https://",
    )


# The options the native engine's http1 codec reads (native/src/protocols/http.rs).
_NATIVE_SETTINGS = (
    "get", "set", "delete", "set_body", "value_encoding", "hit_status", "miss_status",
    "set_status", "delete_status", "hit_field", "value_field", "headers",
)  # fmt: skip


# An HTTP header name is a token (RFC 9110 5.6.2); a value holds no CR, LF or other
# control character but the tab, so no header can end early and start another.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_REQUEST_TARGET_BAD = re.compile(r"[\x00-\x20\x7f-\U0010ffff]")
_TEMPLATES = ("get", "set", "delete")
_PATHS = ("base_url", "stats_path")  # the whole text is part of the request target


def check_target(options: dict[str, Any], longest_key: bytes) -> None:
    """The spec check's: every option compiles, and nothing in the templates or headers
    can break the request line or a header. Keys travel percent-encoded in URLs and
    JSON-escaped in bodies, so any key can be sent."""
    Config.from_options(options)
    for name in (*_TEMPLATES, *_PATHS):
        text = str(options[name]).strip()
        target = text.partition(" ")[2].strip() if name in _TEMPLATES else text
        bad = _REQUEST_TARGET_BAD.search(target)
        if bad:
            raise TargetError(
                "expected a request target of printable ASCII (percent-encode the rest); "
                f"got {bad.group()!r} in {text[:80]!r}",
                option_where(name),
            )
    for line in options["headers"]:
        name, _, value = line.partition(":")
        if not _TOKEN.fullmatch(name.strip()) or _CONTROL.search(value):
            raise TargetError(
                "expected 'Name: value' with a token as the name and no control characters "
                f"(CR, LF...) in the value; got {line[:80]!r}",
                option_where("headers"),
            )


@dataclass
class Config:
    """The system options, checked and compiled once per worker."""

    base_url: str
    get: UrlTemplate
    set: UrlTemplate
    delete: UrlTemplate | None
    body: BodyTemplate
    headers: dict[str, str]
    hit_status: frozenset[int]
    miss_status: frozenset[int]
    set_status: frozenset[int]
    delete_status: frozenset[int]
    hit_field: str
    value_field: str
    from_text: Callable[[str], bytes]
    total_timeout: float  # seconds, 0: none
    connect_timeout: float
    stats_path: str
    tls: TlsSettings | None  # https:// only

    def ssl_context(self) -> ssl.SSLContext | None:
        return self.tls.context() if self.tls else None

    @classmethod
    def from_options(cls, o: dict[str, Any]) -> Config:
        base = check_base_url(o["base_url"], o)
        headers: dict[str, str] = {}
        for line in o["headers"]:
            name, sep, value = line.partition(":")
            if not sep or not name.strip():
                raise TargetError(f"expected 'Name: value'; got {line!r}", option_where("headers"))
            headers[name.strip()] = value.strip()
        encoding = o["value_encoding"]
        return cls(
            base_url=base,
            get=UrlTemplate(o["get"], base, "get"),
            set=UrlTemplate(o["set"], base, "set"),
            delete=UrlTemplate(o["delete"], base, "delete") if o["delete"].strip() else None,
            body=BodyTemplate(o["set_body"], encoding),
            headers=headers,
            hit_status=_statuses(o["hit_status"], "hit_status"),
            miss_status=_statuses(o["miss_status"], "miss_status"),
            set_status=_statuses(o["set_status"], "set_status"),
            delete_status=_statuses(o["delete_status"], "delete_status"),
            hit_field=o["hit_field"],
            value_field=o["value_field"],
            from_text=(
                (lambda t: base64.b64decode(t, validate=True))
                if encoding == "base64"
                else _latin1_bytes
            ),
            total_timeout=o["timeout"],
            connect_timeout=o["connect_timeout"],
            stats_path=o["stats_path"],
            tls=tls_settings(o, "target.options") if base.startswith("https://") else None,
        )

    # What an answer means; shared by every strategy.

    def got(
        self, status: int, is_json: bool, body: bytes, target: str, reason: str | None
    ) -> bytes | None:
        """A get's answer: the value, None for a miss, or raise an AdapterError."""
        if status in self.hit_status:
            if not is_json or not self.value_field:
                return None if self.hit_field else body
            try:
                data = json.loads(body)
            except ValueError as exc:
                raise AdapterError("protocol", f"a hit whose body is not JSON: {exc}") from None
            if not isinstance(data, dict):
                raise AdapterError("protocol", "a hit whose JSON body is not an object")
            if self.hit_field and not data.get(self.hit_field):
                return None
            value = data.get(self.value_field)
            if value is None:
                return None
            if not isinstance(value, str):
                value = json.dumps(value)
            try:
                return self.from_text(value)
            except ValueError as exc:
                raise AdapterError(
                    "protocol", f"a value not in {self.value_field!r}: {exc}"
                ) from None
        if status in self.miss_status:
            return None
        raise _status_error(self.get.method, target, status, reason, body)

    def was_set(self, status: int, body: bytes, target: str, reason: str | None) -> None:
        if status not in self.set_status:
            raise _status_error(self.set.method, target, status, reason, body)

    def stored_if(self, status: int, body: bytes, target: str, reason: str | None) -> str:
        """The outcome of a conditional set (add, replace): stored, or not stored when the
        server refused its precondition (412 Precondition Failed)."""
        if status == PRECONDITION_FAILED:
            return NOT_STORED
        self.was_set(status, body, target, reason)
        return STORED

    def deleted(self, status: int, body: bytes, target: str, reason: str | None) -> bool:
        if status in self.delete_status:
            return True
        if status in self.miss_status:
            return False
        assert self.delete is not None
        raise _status_error(self.delete.method, target, status, reason, body)

    def no_delete(self) -> AdapterError:
        return AdapterError(
            "unsupported",
            "no delete template: set target.options.delete, e.g. 'DELETE /?key={key}'",
        )


# add and replace are a set with a precondition (RFC 9110 13.1): If-None-Match: * stores
# only where there is no value, If-Match: * only where there is one; a server that
# refuses answers 412. A server that ignores the headers stores every one: the conformance
# kit's conditional check tells which a target is.
CONDITIONS = {"add": "If-None-Match", "replace": "If-Match"}
PRECONDITION_FAILED = 412


def _latin1_bytes(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:  # text another writer stored: its UTF-8 bytes
        return text.encode("utf-8", errors="surrogatepass")


def _statuses(values: list[str], option: str) -> frozenset[int]:
    problem = TargetError(f"expected HTTP status codes; got {values!r}", option_where(option))
    try:
        codes = frozenset(int(v) for v in values)
    except ValueError:
        raise problem from None
    if not all(100 <= c <= 599 for c in codes):
        raise problem
    return codes


def _status_error(
    method: str, target: str, status: int, reason: str | None, body: bytes
) -> AdapterError:
    snippet = body[:120].decode("utf-8", errors="replace")
    # `target` is a request target, or a whole template that already begins with the method.
    request = target if target.startswith(f"{method} ") else f"{method} {target}"
    return AdapterError(f"http-{status}", f"{request}: {status} {reason or ''} {snippet}")


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        elif isinstance(v, int | float | str | bool):
            out[f"{prefix}{k}"] = v
    return out
