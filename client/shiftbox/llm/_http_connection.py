"""The fast path's HTTP/1.1 connections: one request at a time over an asyncio protocol, the response read whole.

httpcore's HTTP/1.1 connection (h11's state machine, anyio's streams, a cancel scope and a socket poll per read)
cost about ten times the bytes' own work per completion against a local server: most of the fast path's CPU. The
fast path only posts a body and reads a whole JSON reply, so this connection does just that: it writes the request
head and body in one write and feeds each piece received to llhttp's response parser (`httptools`), which frames the
response (Content-Length, chunks and trailers, interim 1xx, no body for 204/304, HTTP/1.0 and `Connection: close`)
and says whether the connection may be kept; the request's task wakes once, when the response is whole. It speaks
httpcore's connection interface (`handle_async_request`, `is_available`, `has_expired`, `is_idle`, `aclose`) under
`_http_pool.StackPool`. Its failures carry httpcore's names (`ConnectError`, `ConnectTimeout`, `ReadTimeout`,
`WriteTimeout`, `ReadError`, `RemoteProtocolError`) and become httpcore's own exceptions (`httpcore_errors`), so httpx
maps them as before, only when one happens: a run that meets none never imports httpcore. Timeouts are timers on the
wait itself, not cancellations.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import httptools

if TYPE_CHECKING:
    import httpcore

MAX_HEAD_BYTES = 256 * 1024
"""A response head (status line and headers) longer than this is a protocol error, as h11's limit."""


class HTTPFailure(Exception):
    """A failure of the fast path's HTTP, named as httpcore's exception it stands for (`httpcore_error`)."""


class ConnectError(HTTPFailure):
    pass


class TimeoutFailure(HTTPFailure):
    """A wait past its timeout (httpcore's `TimeoutException`)."""


class ConnectTimeout(TimeoutFailure):
    pass


class ReadTimeout(TimeoutFailure):
    pass


class WriteTimeout(TimeoutFailure):
    pass


class ReadError(HTTPFailure):
    pass


class RemoteProtocolError(HTTPFailure):
    pass


class PoolTimeout(TimeoutFailure):
    pass


class UnsupportedProtocol(HTTPFailure):
    pass


def httpcore_error(failure: HTTPFailure) -> Exception:
    """httpcore's exception of the failure's name, with its message (httpcore imported now)."""
    import httpcore

    return getattr(httpcore, type(failure).__name__)(*failure.args)


@contextlib.contextmanager
def httpcore_errors() -> Iterator[None]:
    """The block's `HTTPFailure`s raised as httpcore's exceptions (with their own causes): what httpcore's
    interface promises and httpx's exception mapping expects."""
    try:
        yield
    except HTTPFailure as failure:
        raise httpcore_error(failure) from failure.__cause__


class Origin(NamedTuple):
    """Where a connection goes, as httpcore's `Origin` holds it (`httpcore.Origin` is taken too)."""

    scheme: bytes
    host: bytes
    port: int | None


DEFAULT_PORTS = {b"http": 80, b"https": 443}


class _Protocol(asyncio.Protocol):
    """The socket's side: each piece received fed to the response parser, the waiter woken when the response is
    whole or broken, and write pausing. Bytes received while no response is expected (or after the expected one)
    are stray: the connection is never reused."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.ended = False  # the server closed its side (or the connection was lost)
        self.paused: asyncio.Future[None] | None = None
        self.parser: httptools.HttpResponseParser | None = None  # the expected response's, until it is whole
        self.stray = False
        self.pieces = 0  # pieces received for the expected response
        self.failure: Exception | None = None
        self.done = False

    def expect(self, method: bytes) -> None:
        """Get ready to read the response to a `method` request."""
        self.parser = httptools.HttpResponseParser(self)
        self.head_only = method == b"HEAD"
        self.done, self.failure, self.keep_alive, self.head_bytes, self.pieces = False, None, False, 0, 0
        self.status, self.reason, self.headers, self.body = 0, b"", [], []
        self.headers_done = self.framed = False

    # -- asyncio's callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        parser = self.parser
        if parser is None:
            self.stray = True
            return
        self.pieces += 1
        try:
            parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # a 101: what follows is not HTTP (the response itself is whole)
            self.keep_alive = False
        except httptools.HttpParserError as exc:
            if self.done:  # bytes after the response that do not start another one (or after its `close`)
                self.stray = True
            else:
                cause = exc.__context__ if isinstance(exc.__context__, RemoteProtocolError) else None
                self._fail(cause or RemoteProtocolError(f"a malformed response: {exc}"))
        if not self.headers_done and not self.done and self.failure is None:
            self.head_bytes += len(data)
            if self.head_bytes > MAX_HEAD_BYTES:
                self._fail(RemoteProtocolError("the response head is too long"))
        if self.done:
            self.parser = None
            self._wake()

    def eof_received(self) -> bool:
        self._ended(None)
        return False  # close the transport

    def connection_lost(self, exc: BaseException | None) -> None:
        self._ended(exc)
        if self.paused is not None and not self.paused.done():
            self.paused.set_result(None)

    def pause_writing(self) -> None:
        self.paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.paused is not None and not self.paused.done():
            self.paused.set_result(None)
        self.paused = None

    # -- the parser's callbacks (httptools)
    def on_message_begin(self) -> None:
        if self.done:  # another response after the expected one
            self.stray = True

    def on_status(self, reason: bytes) -> None:
        self.reason += reason  # llhttp may hand it over in pieces

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.headers_done:  # after the head: a chunked body's trailers, dropped
            value = value.rstrip(b" \t")
            self.headers.append((name, value))
            name = name.lower()  # framed: a body with a length or chunks, so cut short if the connection ends
            self.framed = self.framed or name == b"content-length" or (
                name == b"transfer-encoding" and value.lower().endswith(b"chunked"))

    def on_headers_complete(self) -> None:
        parser = self.parser
        assert parser is not None
        version = parser.get_http_version()
        if version not in ("1.1", "1.0"):
            raise RemoteProtocolError(f"not an HTTP/1.x response: HTTP/{version}")
        self.status, self.version = parser.get_status_code(), b"HTTP/" + version.encode()
        if 100 <= self.status < 200 and self.status != 101:  # interim: its end is skipped, the next head read
            self.reason, self.headers, self.framed, self.head_bytes = b"", [], False, 0
            return
        self.headers_done = True
        if self.head_only:  # llhttp cannot know a HEAD response has no body: it ends with its head
            self.on_message_complete()

    def on_body(self, body: bytes) -> None:
        if self.done:  # a HEAD response followed by bytes
            self.stray = True
        else:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.done or not self.headers_done:  # an interim response's end, or a HEAD response's (already whole)
            return
        assert self.parser is not None
        self.done, self.keep_alive = True, self.parser.should_keep_alive()

    # -- the end of the connection
    def _ended(self, exc: BaseException | None) -> None:
        self.ended = True
        if self.parser is None:
            return
        if self.headers_done and not self.framed:  # a body without length or chunks runs to the end: whole now
            self.done, self.keep_alive, self.parser = True, False, None
        elif exc is not None:
            self._fail(ReadError(str(exc) or type(exc).__name__))
        else:
            self._fail(RemoteProtocolError(
                f"Server disconnected without sending a {'complete ' if self.pieces else ''}response."))
        self._wake()

    def _fail(self, failure: Exception) -> None:
        self.failure, self.parser = failure, None
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


async def _wait(future: asyncio.Future[None], timeout: float | None, error: type[Exception], what: str,
                progress: _Protocol | None = None) -> None:
    """Wait for the future; past `timeout` seconds (without bytes received on `progress`, when given) raise `error`
    (a timer, not a cancellation)."""
    if timeout is None:
        await future
        return
    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle

    seen = progress.pieces if progress is not None else 0

    def expire() -> None:
        nonlocal timer, seen
        if progress is not None and progress.pieces != seen:  # still arriving: the timeout is between reads
            seen = progress.pieces
            timer = loop.call_later(timeout, expire)
        elif not future.done():
            future.set_result(_EXPIRED)

    timer = loop.call_later(timeout, expire)
    try:
        await future
    finally:
        timer.cancel()
    if future.result() is _EXPIRED:
        raise error(f"{what} timed out after {timeout} s")


_EXPIRED: Any = object()


class _Body:
    """A response body already read whole: one part, then done."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    async def __aiter__(self) -> Any:
        if self.content:
            yield self.content

    async def aclose(self) -> None:
        return None


class Reply(NamedTuple):
    """A whole response: status, headers as received (name, value), body, `HTTP/1.x`, reason phrase."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    version: bytes
    reason: bytes


def request_head(method: bytes, target: bytes, headers: Sequence[tuple[bytes, bytes]]) -> tuple[bytes, bool]:
    """A request's head as sent (request line, headers, blank line), and whether its body goes in chunks."""
    head = [method, b" ", target, b" HTTP/1.1\r\n"]
    chunked = False
    for name, value in headers:
        head += (name, b": ", value, b"\r\n")
        chunked = chunked or (name.lower() == b"transfer-encoding" and value.lower() == b"chunked")
    head.append(b"\r\n")
    return b"".join(head), chunked


class HTTP11Connection:
    """One HTTP/1.1 connection to an origin, made on its first request; reusable while the server keeps it alive."""

    def __init__(self, origin: Origin | httpcore.Origin, ssl_context: ssl.SSLContext | None = None,
                 keepalive_expiry: float | None = None):
        self.origin, self.ssl_context, self.keepalive_expiry = origin, ssl_context, keepalive_expiry
        self.protocol: _Protocol | None = None
        self.busy = False
        self.reusable = True
        self.expires_at: float | None = None

    async def _connect(self, timeout: float | None) -> _Protocol:
        loop = asyncio.get_running_loop()
        host = self.origin.host.decode("ascii")
        context = None
        if self.origin.scheme == b"https":
            context = self.ssl_context or ssl.create_default_context()
            context.set_alpn_protocols(["http/1.1"])  # as httpcore offers it
        try:
            _, protocol = await asyncio.wait_for(loop.create_connection(
                _Protocol, host, self.origin.port, ssl=context, server_hostname=host if context else None), timeout)
        except TimeoutError as exc:
            raise ConnectTimeout(f"connecting to {host}:{self.origin.port} timed out") from exc
        except (OSError, ssl.SSLError) as exc:
            raise ConnectError(str(exc) or type(exc).__name__) from exc
        return protocol

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        import httpcore

        body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
        head, chunked = request_head(request.method, request.url.target, request.headers)
        if chunked:
            body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
        with httpcore_errors():
            reply = await self.exchange(request.method, head + body, request.extensions.get("timeout", {}))
        return httpcore.Response(status=reply.status, headers=reply.headers, content=_Body(reply.body),
                                 extensions={"http_version": reply.version, "reason_phrase": reply.reason})

    async def exchange(self, method: bytes, data: bytes, timeouts: dict[str, float | None]) -> Reply:
        """Send a whole request (`request_head` and its body, `data`) and read its whole response (connecting first
        when not connected yet)."""
        self.busy, self.expires_at = True, None
        if self.protocol is None:
            self.protocol = await self._connect(timeouts.get("connect"))
        protocol = self.protocol
        if protocol.ended or protocol.transport is None:
            raise RemoteProtocolError("Server disconnected without sending a response.")
        protocol.expect(method)
        protocol.transport.write(data)
        if protocol.paused is not None:
            await _wait(protocol.paused, timeouts.get("write"), WriteTimeout, "writing the request")
        if not protocol.done and protocol.failure is None:
            protocol.waiter = asyncio.get_running_loop().create_future()
            await _wait(protocol.waiter, timeouts.get("read"), ReadTimeout, "reading the response", protocol)
        if protocol.failure is not None:
            raise protocol.failure
        self.busy = False
        if not protocol.keep_alive or protocol.stray:  # asked to close, or bytes nobody asked for: never reused
            self.reusable = False
        if self.reusable and self.keepalive_expiry is not None:
            self.expires_at = time.monotonic() + self.keepalive_expiry
        body = protocol.body[0] if len(protocol.body) == 1 else b"".join(protocol.body)
        return Reply(protocol.status, protocol.headers, body, protocol.version, protocol.reason)

    def is_available(self) -> bool:
        """Whether it can take a request now: connected, not busy, still open and reusable, nothing unasked for
        received since its last response."""
        protocol = self.protocol
        return (protocol is not None and not self.busy and self.reusable and not protocol.ended
                and not protocol.stray and protocol.transport is not None and not protocol.transport.is_closing())

    def has_expired(self) -> bool:
        return self.expires_at is not None and time.monotonic() > self.expires_at

    def is_idle(self) -> bool:
        return self.is_available()

    async def aclose(self) -> None:
        self.reusable = False
        if self.protocol is not None and self.protocol.transport is not None:
            self.protocol.transport.close()
