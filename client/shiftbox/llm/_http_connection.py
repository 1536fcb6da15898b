"""The fast path's HTTP/1.1 connections: one request at a time over an asyncio protocol, the response read whole.

httpcore's HTTP/1.1 connection (h11's state machine, anyio's streams, a cancel scope and a socket poll per read)
cost about ten times the bytes' own work per completion against a local server: most of the fast path's CPU. The
fast path only posts a body and reads a whole JSON reply, so this connection does just that: it writes the request
head and body in one write, parses the status line and headers itself, and reads the body by Content-Length, by
chunks, or to the end of the connection. It speaks httpcore's connection interface (`handle_async_request`,
`is_available`, `has_expired`, `is_idle`, `aclose`) under `_http_pool.StackPool`, and raises httpcore's exceptions
(`ConnectError`, `ConnectTimeout`, `ReadTimeout`, `WriteTimeout`, `ReadError`, `RemoteProtocolError`), so httpx
maps them as before. Timeouts are timers on the wait itself, not cancellations.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import Any

import httpcore

MAX_HEAD_BYTES = 256 * 1024
"""A response head (status line and headers) longer than this is a protocol error, as h11's limit."""
NO_BODY_STATUS = frozenset({204, 304})


class _Protocol(asyncio.Protocol):
    """The socket's side: bytes received into a buffer, a waiter woken on data, end or loss, and write pausing."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.ended = False  # the server closed its side (or the connection was lost)
        self.error: BaseException | None = None
        self.paused: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: BaseException | None) -> None:
        self.ended, self.error = True, exc
        self._wake()
        if self.paused is not None and not self.paused.done():
            self.paused.set_result(None)

    def pause_writing(self) -> None:
        self.paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.paused is not None and not self.paused.done():
            self.paused.set_result(None)
        self.paused = None

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


async def _wait(future: asyncio.Future[None], timeout: float | None, error: type[Exception], what: str) -> None:
    """Wait for the future; past `timeout` seconds raise `error` (a timer, not a cancellation)."""
    if timeout is None:
        await future
        return
    timer = asyncio.get_running_loop().call_later(timeout, _expire, future)
    try:
        await future
    finally:
        timer.cancel()
    if future.result() is _EXPIRED:
        raise error(f"{what} timed out after {timeout} s")


_EXPIRED: Any = object()


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(_EXPIRED)


class _Body:
    """A response body already read whole: one part, then done."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    async def __aiter__(self) -> Any:
        if self.content:
            yield self.content

    async def aclose(self) -> None:
        return None


class HTTP11Connection:
    """One HTTP/1.1 connection to an origin, made on its first request; reusable while the server keeps it alive."""

    def __init__(self, origin: httpcore.Origin, ssl_context: ssl.SSLContext | None = None,
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
            raise httpcore.ConnectTimeout(f"connecting to {host}:{self.origin.port} timed out") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return protocol

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        timeouts = request.extensions.get("timeout", {})
        self.busy, self.expires_at = True, None
        if self.protocol is None:
            self.protocol = await self._connect(timeouts.get("connect"))
        protocol = self.protocol
        body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
        head = [request.method, b" ", request.url.target, b" HTTP/1.1\r\n"]
        chunked = False
        for name, value in request.headers:
            head += (name, b": ", value, b"\r\n")
            chunked = chunked or (name.lower() == b"transfer-encoding" and value.lower() == b"chunked")
        head.append(b"\r\n")
        if chunked:
            body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
        if protocol.ended or protocol.transport is None:
            raise httpcore.RemoteProtocolError("Server disconnected without sending a response.")
        protocol.transport.write(b"".join(head) + body)
        if protocol.paused is not None:
            await _wait(protocol.paused, timeouts.get("write"), httpcore.WriteTimeout, "writing the request")
        status, reason, version, headers, content = await self._response(protocol, request.method,
                                                                         timeouts.get("read"))
        self.busy = False
        if self.reusable and self.keepalive_expiry is not None:
            self.expires_at = time.monotonic() + self.keepalive_expiry
        return httpcore.Response(status=status, headers=headers, content=_Body(content),
                                 extensions={"http_version": version, "reason_phrase": reason})

    async def _more(self, protocol: _Protocol, timeout: float | None) -> None:
        """Wait for more bytes (or the end); ReadError when the connection broke."""
        if protocol.ended:
            raise httpcore.RemoteProtocolError("Server disconnected without sending a complete response.")
        protocol.waiter = asyncio.get_running_loop().create_future()
        await _wait(protocol.waiter, timeout, httpcore.ReadTimeout, "reading the response")
        if protocol.error is not None and not protocol.buffer:
            raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)

    async def _response(self, protocol: _Protocol, method: bytes, timeout: float | None,
                        ) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]], bytes]:
        buffer = protocol.buffer
        while True:  # skip informational (1xx) responses
            while (end := buffer.find(b"\r\n\r\n")) < 0:
                if len(buffer) > MAX_HEAD_BYTES:
                    raise httpcore.RemoteProtocolError("the response head is too long")
                if protocol.ended and not buffer:
                    raise httpcore.RemoteProtocolError("Server disconnected without sending a response.")
                await self._more(protocol, timeout)
            lines = bytes(buffer[:end]).split(b"\r\n")
            del buffer[:end + 4]
            version, _, rest = lines[0].partition(b" ")
            code, _, reason = rest.partition(b" ")
            if not (version.startswith(b"HTTP/1.") and code.isdigit() and len(code) == 3):
                raise httpcore.RemoteProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
            status = int(code)
            if not 100 <= status < 200 or status == 101:
                break
        headers: list[tuple[bytes, bytes]] = []
        length: int | None = None
        chunked, close = False, version == b"HTTP/1.0"
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise httpcore.RemoteProtocolError(f"malformed response header {line[:80]!r}")
            value = value.strip()
            headers.append((name, value))
            lowered = name.lower()
            if lowered == b"content-length":
                if not value.isdigit() or (length is not None and length != int(value)):
                    raise httpcore.RemoteProtocolError("a malformed Content-Length header")
                length = int(value)
            elif lowered == b"transfer-encoding":
                chunked = value.lower().endswith(b"chunked")
            elif lowered == b"connection":
                tokens = {t.strip() for t in value.lower().split(b",")}
                close = b"close" in tokens or (close and b"keep-alive" not in tokens)
        if method == b"HEAD" or status in NO_BODY_STATUS or 100 <= status < 200:
            content = b""
        elif chunked:
            content = await self._chunked(protocol, timeout)
        elif length is not None:
            while len(buffer) < length:
                await self._more(protocol, timeout)
            content = bytes(buffer[:length])
            del buffer[:length]
        else:  # neither: the body runs to the end of the connection
            while not protocol.ended:
                await self._more(protocol, timeout)
            content, close = bytes(buffer), True
            buffer.clear()
        if close or buffer:  # asked to close, or bytes nobody asked for: never reused
            self.reusable = False
        return status, reason, version, headers, content

    async def _chunked(self, protocol: _Protocol, timeout: float | None) -> bytes:
        """A chunked body: each chunk's size line and data, up to the last chunk and its trailers (dropped)."""
        buffer, parts = protocol.buffer, []
        while True:
            while (end := buffer.find(b"\r\n")) < 0:
                await self._more(protocol, timeout)
            size_text = bytes(buffer[:end]).split(b";")[0].strip()
            if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
                raise httpcore.RemoteProtocolError(f"a malformed chunk size {size_text[:20]!r}")
            size = int(size_text, 16)
            del buffer[:end + 2]
            if size == 0:  # trailers, up to an empty line
                while not buffer.startswith(b"\r\n") and (end := buffer.find(b"\r\n\r\n")) < 0:
                    await self._more(protocol, timeout)
                del buffer[:2 if buffer.startswith(b"\r\n") else end + 4]
                return b"".join(parts)
            while len(buffer) < size + 2:
                await self._more(protocol, timeout)
            parts.append(bytes(buffer[:size]))
            del buffer[:size + 2]

    def is_available(self) -> bool:
        """Whether it can take a request now: connected, not busy, still open and reusable, nothing unasked for
        received since its last response."""
        protocol = self.protocol
        return (protocol is not None and not self.busy and self.reusable and not protocol.ended
                and not protocol.buffer and protocol.transport is not None and not protocol.transport.is_closing())

    def has_expired(self) -> bool:
        return self.expires_at is not None and time.monotonic() > self.expires_at

    def is_idle(self) -> bool:
        return self.is_available()

    async def aclose(self) -> None:
        self.reusable = False
        if self.protocol is not None and self.protocol.transport is not None:
            self.protocol.transport.close()
