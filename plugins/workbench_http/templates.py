"""Request templates: ``METHOD /path?query`` with {key} and {ttl}, and the set body.

A URL template renders the request target of a get, set or delete; the body template
renders a set's body, raw value bytes or JSON text (see the package docstring).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from urllib.parse import quote, urlsplit

from yarl import URL

from workbench.sdk import TargetError

DEFAULT_SET_BODY = '{"key": "{key}", "value": "{value}", "ttl": {ttl}}'
RAW_BODY = "{value}"
_PLACEHOLDER = re.compile(r"\{(key|value|ttl)\}")
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
JSON = "application/json"
URL_CACHE_SIZE = 200_000  # URLs kept per template and worker


def option_where(name: str) -> str:
    """Where a system option lives in a spec, for an error message."""
    return f"target.options.{name}"


def ttl_text(ttl: float | None) -> str:
    if ttl is None:
        return ""
    return str(int(ttl)) if float(ttl).is_integer() else repr(float(ttl))


class UrlTemplate:
    """``METHOD /path?query`` with {key} and {ttl}: renders request targets and URLs."""

    def __init__(self, text: str, base: str, option: str) -> None:
        method, _, path = text.strip().partition(" ")
        method, path = method.upper(), path.strip()
        if method not in METHODS or not path.startswith("/"):
            raise TargetError(
                f"expected a template such as 'GET /lookup?key={{key}}'; got {text!r}",
                option_where(option),
            )
        if "{value}" in path:
            raise TargetError("{value} belongs in set_body, not in the URL", option_where(option))
        parts = urlsplit(base)
        self.method = method
        self.text = text
        self.origin = f"{parts.scheme}://{parts.netloc}"
        # literal, name, literal, name, ... of the request target (the base URL's own path
        # first, so that http://host/api plus /lookup asks for /api/lookup)
        self.parts = _PLACEHOLDER.split(parts.path.rstrip("/") + path)
        try:
            URL(self.origin + self.target(b"k", 1.0), encoded=True)
        except ValueError as exc:
            raise TargetError(f"not a valid URL template: {exc}", option_where(option)) from None
        self.has_ttl = "ttl" in self.parts[1::2]
        # Keys repeat, so their URLs are kept (quoting and parsing cost more than the
        # request's own formatting); a template with {ttl} is rendered every time.
        self.cache: dict[bytes, URL] = {}

    def target(self, key: bytes, ttl: float | None) -> str:
        """The request target (path and query), placeholders filled in and encoded."""
        parts = self.parts
        out = [parts[0]]
        for i in range(1, len(parts), 2):
            name = parts[i]
            out.append(quote(key, safe="") if name == "key" else quote(ttl_text(ttl), safe=""))
            out.append(parts[i + 1])
        return "".join(out)

    def url(self, key: bytes, ttl: float | None = None) -> URL:
        if self.has_ttl:
            return URL(self.origin + self.target(key, ttl), encoded=True)
        cache = self.cache
        url = cache.get(key)
        if url is None:
            if len(cache) >= URL_CACHE_SIZE:
                cache.clear()
            url = cache[key] = URL(self.origin + self.target(key, ttl), encoded=True)
        return url


class BodyTemplate:
    """The set body: raw value bytes, or a JSON template with escaped placeholders."""

    def __init__(self, text: str, encoding: str) -> None:
        self.raw = text.strip() == RAW_BODY
        self.content_type = "application/octet-stream" if self.raw else JSON
        self.parts = _PLACEHOLDER.split(text)
        self.to_text: Callable[[bytes | memoryview], str] = (
            (lambda v: base64.b64encode(v).decode("ascii"))
            if encoding == "base64"
            else (lambda v: bytes(v).decode("latin-1"))
        )
        if not self.raw:
            try:
                json.loads(self.render(b"k", b"v", 1.5))
                json.loads(self.render(b"k", b"v", None))
            except ValueError as exc:
                raise TargetError(
                    f"with placeholders filled in this is not JSON ({exc}); "
                    'write e.g. {"key": "{key}", "value": "{value}"}, or {value} for raw bytes',
                    option_where("set_body"),
                ) from None

    def render(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> bytes:
        if self.raw:
            return bytes(value)
        parts = self.parts
        out = [parts[0]]
        for i in range(1, len(parts), 2):
            name = parts[i]
            if name == "key":
                out.append(json.dumps(key.decode("utf-8", "replace"), ensure_ascii=False)[1:-1])
            elif name == "value":
                out.append(json.dumps(self.to_text(value), ensure_ascii=False)[1:-1])
            else:
                out.append("null" if ttl is None else ttl_text(ttl))
            out.append(parts[i + 1])
        return "".join(out).encode("utf-8")
