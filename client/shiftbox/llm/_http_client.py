"""The fast path's httpx client: httpx's transport over `_http_pool.StackPool`, for what posting straight into the
pool does not cover (a proxy from the environment, an HTTP cassette, cookies, an https endpoint, a response httpx must
interpret). Importing this module imports httpx; the fast path does so only when it needs one of these."""

from __future__ import annotations

import functools
import ssl

import httpx

from ._http_pool import MAX_CONNECTIONS, StackPool, check_pool_name


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """httpx's own SSL context (certificates, SSL_CERT_FILE), made once a process: loading the certificates costs
    tens of ms of CPU, which every client made with its own (the preflight's, the fast path's) paid again."""
    return httpx.create_ssl_context()


class PoolTransport(httpx.AsyncHTTPTransport):
    """httpx's HTTP transport with `StackPool` underneath (a subclass, so what wraps httpx's transport still
    applies: HTTP cassettes route its requests). `pool`: the one the fast path already posts into straight, so its
    connections serve both."""

    def __init__(self, max_connections: int, max_keepalive: int, pool: StackPool | None = None):
        ssl_context = shared_ssl_context()
        super().__init__(verify=ssl_context)
        if pool is None:
            pool = StackPool(max_connections, max_keepalive, ssl_context)
        elif pool.ssl_context is None:
            pool.ssl_context = ssl_context  # for its https connections, made from now on
        self._pool = pool  # httpx sends every request to `_pool`


def fast_path_client(pool: str, stack: StackPool | None = None) -> httpx.AsyncClient:
    """The fast path's client for a `SHIFTBOX_HTTP_POOL` value: `stack` (the default; over `stack` when given) or
    `httpx`. Made as httpx makes one (so proxies from the environment are mounted as before), then given
    `PoolTransport` as its own transport (passing it to the constructor would turn the environment's proxies off)."""
    check_pool_name(pool)
    client = httpx.AsyncClient(verify=shared_ssl_context(),
                               limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))
    if pool == "stack":
        client._transport = PoolTransport(MAX_CONNECTIONS, MAX_CONNECTIONS, pool=stack)  # noqa: SLF001
    return client
