"""The fast path's connection pool: idle connections on a stack per origin, so a request never scans them.

httpcore's pool walks every connection (and, for each idle one, every connection again) on each request and each
response closed, so its CPU per request grows with the number of connections: at 64 simulations in flight httpx
cost 2.6x what it did at 8. This pool keeps idle connections on a stack per origin (the most recently used on
top, still warm) and a count of connections open, so a request costs the same at 1 or 256 connections. Its
connections are `_http_connection.HTTP11Connection`s (a request and a whole response over an asyncio protocol), not
httpcore's.

The fast path posts straight into it (`StackPool.exchange`), with no proxy and no cassette in play; above it,
`_http_client.PoolTransport` gives it httpx's transport (request and response objects, its exception mapping, and the
wrapper HTTP cassettes install on it). Either way failures end as the same httpx exceptions: `PoolTimeout` when
every connection stays busy past the pool timeout, `ConnectError`, `ReadTimeout`, or `RemoteProtocolError` for a
server that closed a connection mid-request. The pool itself imports neither httpx nor httpcore (only
`handle_async_request`, httpcore's interface, does).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ._http_connection import (
    HTTP11Connection,
    Origin,
    PoolTimeout,
    Reply,
    UnsupportedProtocol,
    httpcore_errors,
)

if TYPE_CHECKING:
    import httpcore

T = TypeVar("T")

POOL_ENV = "SHIFTBOX_HTTP_POOL"
"""Which pool the fast path posts into: `stack` (`StackPool`, the default) or `httpx` (httpx's own, under its client,
with the limits the fast path had before; to compare, or to fall back)."""
POOLS = ("stack", "httpx")
MAX_CONNECTIONS = 1000
"""The fast path's pool's bound on connections, and on idle ones kept (`StackPool`'s two limits)."""
KEEPALIVE_EXPIRY_S = 5.0
"""How long an idle connection is kept (httpx's default): a server usually closes its own later than that."""


class StackPool:
    """httpcore's pool interface (`handle_async_request`, `aclose`) over a stack of idle HTTP/1.1 connections per
    origin: a request takes the top one that is still usable (closing those the server closed or that expired) or
    opens a new one, waiting up to the pool timeout while `max_connections` are busy; the response, once closed,
    puts its connection back on top, or closes it beyond `max_keepalive` idle ones."""

    def __init__(self, max_connections: int, max_keepalive: int, ssl_context: ssl.SSLContext | None = None,
                 keepalive_expiry: float = KEEPALIVE_EXPIRY_S):
        self.max_connections, self.max_keepalive, self.keepalive_expiry = max_connections, max_keepalive, keepalive_expiry
        self.ssl_context = ssl_context
        self.idle: dict[tuple[bytes, bytes, int], list[HTTP11Connection]] = {}  # by (scheme, host, port)
        self.idle_count = 0
        self.slots = asyncio.Semaphore(max_connections)  # a connection in use holds one
        self.closed = False

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        import httpcore

        origin = request.url.origin
        key = (origin.scheme, origin.host, origin.port)
        with httpcore_errors():
            connection, response = await self._checked_out(origin, key, request.extensions.get("timeout", {}),
                                                            lambda connection: connection.handle_async_request(request))
        return httpcore.Response(status=response.status, headers=response.headers,
                                 content=_Returned(response.stream, self, connection, key), extensions=response.extensions)

    async def exchange(self, origin: Origin | httpcore.Origin, method: bytes, data: bytes,
                       timeouts: dict[str, float | None]) -> Reply:
        """A whole request (head and body, as `request_head` makes it) sent and its whole response read, the
        connection given back at once: `handle_async_request` without httpcore's request and response objects (its
        failures are `HTTPFailure`s)."""
        key = (origin.scheme, origin.host, origin.port)
        connection, reply = await self._checked_out(origin, key, timeouts,
                                                    lambda connection: connection.exchange(method, data, timeouts))
        await self.release(connection, key)
        return reply

    async def _checked_out(self, origin: Origin | httpcore.Origin, key: tuple[bytes, bytes, int],
                           timeouts: dict[str, float | None],
                           send: Callable[[HTTP11Connection], Awaitable[T]]) -> tuple[HTTP11Connection, T]:
        """`send` over a connection to `origin` taken from the pool (a slot held, to be given back with `release`);
        on failure the connection is closed and the slot given back here."""
        if origin.scheme not in (b"http", b"https"):
            raise UnsupportedProtocol(f"Request URL has an unsupported protocol '{origin.scheme!r}'.")
        await self._acquire_slot(timeouts.get("pool"))
        try:
            connection = await self._connection(origin, key)
            try:
                return connection, await send(connection)
            except BaseException:
                await _close(connection)
                raise
        except BaseException:
            self.slots.release()
            raise

    async def _acquire_slot(self, timeout: float | None) -> None:
        if not self.slots.locked():
            await self.slots.acquire()  # returns at once, without a timer
            return
        try:
            await asyncio.wait_for(self.slots.acquire(), timeout)
        except TimeoutError:
            raise PoolTimeout(f"all {self.max_connections} connections stayed busy for {timeout} s") from None

    async def _connection(self, origin: Origin | httpcore.Origin, key: tuple[bytes, bytes, int]) -> HTTP11Connection:
        """The most recently used idle connection to `origin` still usable, else a new one (connected on use)."""
        stack = self.idle.get(key)
        while stack:
            connection = stack.pop()
            self.idle_count -= 1
            if connection.is_available() and not connection.has_expired():
                return connection
            await _close(connection)  # the server closed it, or its keep-alive expired
        return HTTP11Connection(origin, self.ssl_context, self.keepalive_expiry)

    async def release(self, connection: HTTP11Connection, key: tuple[bytes, bytes, int]) -> None:
        """A response was closed: its connection goes back on its stack when it can take another request."""
        self.slots.release()
        if self.closed or not connection.is_idle() or self.idle_count >= self.max_keepalive:
            await _close(connection)
            return
        self.idle.setdefault(key, []).append(connection)
        self.idle_count += 1

    async def aclose(self) -> None:
        self.closed = True
        stacks, self.idle, self.idle_count = self.idle, {}, 0
        for stack in stacks.values():
            for connection in stack:
                await _close(connection)

    async def __aenter__(self) -> StackPool:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


async def _close(connection: HTTP11Connection) -> None:
    """Close a connection even in a cancelled task (an anyio cancel scope would cancel the close again)."""
    with anyio.CancelScope(shield=True):
        await connection.aclose()


class _Returned:
    """A response body that returns its connection to the pool when closed (read to the end or not)."""

    def __init__(self, stream: Any, pool: StackPool, connection: HTTP11Connection,
                 key: tuple[bytes, bytes, int]):
        self.stream, self.pool, self.connection, self.key, self.closed = stream, pool, connection, key, False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self.stream:
                yield part
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                await self.stream.aclose()
            finally:
                await self.pool.release(self.connection, self.key)


def check_pool_name(pool: str) -> None:
    """A `SHIFTBOX_HTTP_POOL` value that is none of `POOLS` is an error naming them."""
    if pool not in POOLS:
        raise ValueError(f"{POOL_ENV}={pool!r} is not a pool: set it to 'stack' (the default) or 'httpx', or unset it")
