"""Requests as the fast path's httpx client sends them, made without importing httpx (or httpcore).

For a plain `http://` URL (a local vLLM or SGLang server, the fake server) with no proxy in the environment, the
request's head is the one httpx's client builds (its default headers, then the call's; `Host` first,
`Content-Length` last), written here as bytes, and the request goes straight into the fast path's pool. A failure
becomes httpx's exception (`httpx_errors`) only when it happens. So a run against such a server reaches its first
completion without loading httpx, httpcore and what they import (about a tenth of a second of CPU at start-up);
anything else (https, a proxy, a URL httpx would rewrite) goes through the httpx client as before.
tests/client/llm/test_http_bare.py and test_http_pool.py check the bytes against httpx's own.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import sys
from typing import TYPE_CHECKING, NamedTuple

from ._http_connection import (
    DEFAULT_PORTS,
    HTTP11Connection,
    HTTPFailure,
    Origin,
    Reply,
    httpcore_error,
    request_head,
)

if TYPE_CHECKING:
    import httpx

_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_PLAIN_URL = re.compile(rf"http://(?P<host>{_LABEL}(?:\.{_LABEL})*)(?::(?P<port>[0-9]{{1,5}}))?"
                        r"(?P<path>(?:/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*/?)")
"""An http URL httpx leaves as it is: a lower-case host name or IPv4 address, a port, a path of unreserved characters
without dot segments; no user, query or fragment."""
_TOKEN = re.compile(r"[\x21-\x7e]+")
"""A credential httpx sends as it is (visible ASCII)."""


LENGTH_SLOT = b"\0length\0"
"""Stands for the Content-Length value in a head made once (`Head`: split around it)."""


class Head(NamedTuple):
    """A request's origin, and its head as sent, split around its Content-Length value (`after` empty without
    one)."""

    origin: Origin
    before: bytes
    after: bytes

    def request(self, content: bytes) -> bytes:
        """The head with `content`'s length in its slot, then `content`: the request's bytes as sent."""
        return b"%s%d%s%s" % (self.before, len(content), self.after, content)


@functools.cache
def _client_headers() -> tuple[tuple[bytes, bytes], ...]:
    """httpx's client's default headers, as httpx 0.28 makes them (Accept-Encoding names the decoders it has)."""
    encodings = ["gzip", "deflate"]
    if importlib.util.find_spec("brotli") or importlib.util.find_spec("brotlicffi"):
        encodings.append("br")
    if importlib.util.find_spec("zstandard"):
        encodings.append("zstd")
    version = importlib.metadata.version("httpx")
    return ((b"Accept", b"*/*"), (b"Accept-Encoding", ", ".join(encodings).encode()), (b"Connection", b"keep-alive"),
            (b"User-Agent", f"python-httpx/{version}".encode()))


def no_proxies() -> bool:
    """Whether httpx's client would mount no proxy from the environment (it reads `urllib.request.getproxies`, which
    outside macOS and Windows reads only the `*_proxy` variables: with none set, urllib.request is not imported)."""
    if sys.platform not in ("darwin", "win32") and not any(name.lower().endswith("_proxy") for name in os.environ):
        return True
    import urllib.request

    proxies = urllib.request.getproxies()
    return not any(proxies.get(scheme) for scheme in ("http", "https", "all"))


@functools.lru_cache(maxsize=256)
def bare_head(method: bytes, url: str, api_key: str, content_type: bool) -> Head | None:
    """The head httpx's client would send for `method` to `url` with `Authorization: Bearer <api_key>` (and
    `Content-Type: application/json`, and a body's length, when `content_type`), else None when httpx could send
    something else (not a plain http URL, a key it would encode otherwise)."""
    match = _PLAIN_URL.fullmatch(url)
    if match is None or not _TOKEN.fullmatch(api_key):
        return None
    host, port, path = match["host"], match["port"], match["path"] or "/"
    number = int(port) if port is not None else DEFAULT_PORTS[b"http"]
    if number > 65535:
        return None
    netloc = host if number == DEFAULT_PORTS[b"http"] else f"{host}:{number}"
    headers = [(b"Host", netloc.encode()), *_client_headers(), (b"Authorization", f"Bearer {api_key}".encode())]
    if content_type:
        headers += [(b"Content-Type", b"application/json"), (b"Content-Length", LENGTH_SLOT)]
    head, _ = request_head(method, path.encode(), headers)
    before, _, after = head.partition(LENGTH_SLOT)
    return Head(Origin(b"http", host.encode(), number), before, after)


@functools.lru_cache(maxsize=64)
def timeouts(timeout_s: float) -> dict[str, float]:
    """httpx's `Timeout(timeout_s).as_dict()`: every wait of a request bounded by the same timeout."""
    return {"connect": timeout_s, "read": timeout_s, "write": timeout_s, "pool": timeout_s}


async def bare_get(url: str, api_key: str, timeout_s: float) -> Reply | None:
    """`GET url` (with the key) sent as httpx's client sends it, over a connection of its own: the whole reply; None
    when httpx's client would send something else (`bare_head`, `no_proxies`). Failures are `HTTPFailure`s."""
    head = bare_head(b"GET", url, api_key, False) if no_proxies() else None
    if head is None:
        return None
    connection = HTTP11Connection(head.origin)
    try:
        return await connection.exchange(b"GET", head.before, timeouts(timeout_s))
    finally:
        await connection.aclose()


def httpx_response(reply: Reply, request: httpx.Request | None = None) -> httpx.Response:
    """A reply read whole as httpx's `Response` (its body decoded as httpx decodes it), for what reads one."""
    import httpx

    response = httpx.Response(status_code=reply.status, headers=reply.headers, stream=httpx.ByteStream(reply.body),
                              request=request, extensions={"http_version": reply.version,
                                                           "reason_phrase": reply.reason})
    response.read()  # decoded as httpx decodes it (Content-Encoding)
    return response


class httpx_errors:  # noqa: N801  (used as a function: `with httpx_errors():`)
    """The block's `HTTPFailure`s raised as httpx's transport raises them (httpx's exception from httpcore's), httpx
    imported then. A class rather than a generator: it wraps every request of the fast path."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, failure: BaseException | None, tb: object) -> None:
        if isinstance(failure, HTTPFailure):
            from httpx._transports.default import map_httpcore_exceptions

            with map_httpcore_exceptions():
                raise httpcore_error(failure) from failure.__cause__
