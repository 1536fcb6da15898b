"""The fast path's connection pool (`_http_pool`): connections reused, replaced when the server closed them, a
bound on connections that times out as a timeout, cancelled requests giving their connection back, 256
completions in flight at once all answered; proxies from the environment still used; `SHIFTBOX_HTTP_POOL`."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
from collections.abc import AsyncIterator

import httpcore
import httpx
import pytest

from shiftbox.llm import LLMConnection
from shiftbox.llm import _openai_http as fast_http
from shiftbox.llm._http_client import PoolTransport
from shiftbox.llm._http_pool import POOL_ENV
from shiftbox.llm._openai_http import ProviderHTTPError, post_completion
from shiftbox.testing import Reply, fake_openai

pytestmark = pytest.mark.anyio
ANSWER = json.dumps({"ok": True}).encode()


class CountingServer:
    """A minimal HTTP/1.1 server on this loop: answers every POST with ANSWER (setting the cookie `set_cookie`
    when given), keeps each request's bytes, counts the connections it accepted, and, with `close_after_reply`, closes each connection after its reply (keep-alive not announced as ended).
    `gate`, when set, holds every reply until it is set."""

    def __init__(self, close_after_reply: bool = False, set_cookie: bytes | None = None):
        self.close_after_reply, self.set_cookie = close_after_reply, set_cookie
        self.received: list[bytes] = []  # each request's bytes, as they came
        self.connections = 0
        self.requests = 0
        self.gate: asyncio.Event | None = None
        self.url = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                self.received.append(head + await reader.readexactly(length))
                self.requests += 1
                if not await self.answer(writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def answer(self, writer: asyncio.StreamWriter) -> bool:
        """Write the reply to the request just read; False: close the connection now."""
        if self.gate is not None:
            await self.gate.wait()
        cookie = b"Set-Cookie: " + self.set_cookie + b"; Path=/\r\n" if self.set_cookie else b""
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + cookie + b"Content-Length: "
                     + str(len(ANSWER)).encode() + b"\r\n\r\n" + ANSWER)
        await writer.drain()
        return not self.close_after_reply

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[CountingServer]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions"
        async with server:
            yield self


@contextlib.asynccontextmanager
async def pool_client(max_connections: int, max_keepalive: int) -> AsyncIterator[PoolTransport]:
    """The fast path's client for this loop, replaced for the block by one over a pool with these limits."""
    loop = asyncio.get_running_loop()
    transport = PoolTransport(max_connections, max_keepalive)
    previous = fast_http._clients.get(loop)
    fast_http._clients[loop] = httpx.AsyncClient(transport=transport)
    try:
        yield transport
    finally:
        await fast_http._clients[loop].aclose()
        if previous is None:
            del fast_http._clients[loop]
        else:
            fast_http._clients[loop] = previous


async def post(url: str, timeout_s: float = 30.0) -> dict:
    _, data = await post_completion(url, b"{}", LLMConnection(api_base=url, timeout_s=timeout_s), "sk-test")
    return data


async def test_sequential_requests_reuse_one_connection():
    async with CountingServer().running() as server, pool_client(10, 10) as transport:
        assert [await post(server.url) for _ in range(3)] == [{"ok": True}] * 3
        assert (server.requests, server.connections, transport._pool.idle_count) == (3, 1, 1)


async def test_a_connection_the_server_closed_is_replaced_not_reused():
    async with CountingServer(close_after_reply=True).running() as server, pool_client(10, 10) as transport:
        for _ in range(3):
            assert await post(server.url) == {"ok": True}
            await asyncio.sleep(0.05)  # the server's close reaches this side before the next request
        assert (server.requests, server.connections, transport._pool.idle_count) == (3, 3, 1)


async def test_the_fast_path_sends_the_bytes_httpx_client_post_sends():
    """Posting through the transport directly (the client layer skipped), over the pool's own HTTP/1.1
    connections, changes nothing on the wire: the bytes are those of a plain httpx client (httpcore's h11)."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hé"}]}, ensure_ascii=False).encode()
    async with CountingServer().running() as server, fresh_fast_path_client(), httpx.AsyncClient() as plain:
        await post_completion(server.url, body, LLMConnection(api_base=server.url, timeout_s=7.0), "sk-test")
        await plain.post(server.url, content=body, timeout=7.0, headers={
            "Authorization": "Bearer sk-test", "Content-Type": "application/json"})
    fast, by_client = server.received
    assert fast == by_client and fast.startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nAuthorization: Bearer sk-test\r\n" in fast and fast.endswith(body)


async def test_a_completion_skips_httpx_client_layer_but_keeps_its_cookies(monkeypatch):
    """No `AsyncClient.send` (auth flow, redirects, hooks) per call while no cookie is held; a cookie a server
    sets is kept by the client and sent with the next calls, as `client.post` does."""
    sent = []
    original = httpx.AsyncClient.send

    async def counted(self, request, **kwargs):
        sent.append(request)
        return await original(self, request, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "send", counted)
    async with CountingServer().running() as server, pool_client(10, 10):
        assert [await post(server.url) for _ in range(3)] == [{"ok": True}] * 3
    assert sent == []
    async with CountingServer(set_cookie=b"lb=node-7").running() as server, pool_client(10, 10):
        assert [await post(server.url) for _ in range(3)] == [{"ok": True}] * 3
    assert [b"\r\nCookie: lb=node-7\r\n" in request for request in server.received] == [False, True, True]


async def test_a_plain_completion_builds_no_httpx_request_or_response(monkeypatch):
    """With no HTTP cassette, proxy or cookie in play, the body goes straight into the pool: no httpx `Request` nor
    `Response` is made per call (their headers, URL and stream objects were a sixth of the fast path's CPU); an
    error reply still comes back as an httpx `Response` with its request, as before."""
    made = []
    for cls in (httpx.Request, httpx.Response):
        original = cls.__init__
        monkeypatch.setattr(cls, "__init__", lambda self, *a, _original=original, **k: (
            made.append(type(self).__name__), _original(self, *a, **k))[1])
    async with CountingServer().running() as server, pool_client(10, 10):
        await post(server.url)  # the first call of a client prepares its parts once
        made.clear()
        assert [await post(server.url) for _ in range(3)] == [{"ok": True}] * 3
        assert made == []
    with fake_openai([Reply.error(503, "busy", headers={"retry-after": "7"})]) as server:
        url = f"{server.base_url}/chat/completions"
        async with pool_client(10, 10):
            with pytest.raises(ProviderHTTPError) as caught:
                await post(url)
    response = caught.value.response
    assert isinstance(response, httpx.Response) and response.headers["retry-after"] == "7"
    assert response.request.method == "POST" and str(response.request.url) == url


class GzipServer(CountingServer):
    """Answers ANSWER gzip-encoded, as a server may when the client accepts it (httpx sends Accept-Encoding)."""

    async def answer(self, writer: asyncio.StreamWriter) -> bool:
        body = gzip.compress(ANSWER)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        await writer.drain()
        return True


async def test_an_encoded_reply_straight_from_the_pool_is_decoded_as_httpx_decodes_it():
    async with GzipServer().running() as server, pool_client(10, 10):
        assert [await post(server.url) for _ in range(2)] == [{"ok": True}] * 2
    assert b"\r\nAccept-Encoding: gzip, deflate" in server.received[0]


async def held(server: CountingServer, n: int = 1) -> list[asyncio.Task]:
    """`n` requests the server has received and holds (its gate closed) until the test sets the gate."""
    server.gate = asyncio.Event()
    calls = [asyncio.create_task(post(server.url)) for _ in range(n)]
    while server.requests < n:
        await asyncio.sleep(0.01)
    return calls


async def test_every_connection_busy_past_the_timeout_is_a_timeout_error():
    async with CountingServer().running() as server, pool_client(1, 1) as transport:
        first, = await held(server)
        with pytest.raises(ProviderHTTPError) as caught:
            await post(server.url, timeout_s=0.2)   # waits for the one connection, which stays busy
        assert caught.value.status_code == 408 and "Request timed out" in str(caught.value)
        server.gate.set()
        assert await first == {"ok": True}
        assert (server.requests, server.connections, transport._pool.idle_count) == (1, 1, 1)


async def test_a_cancelled_request_gives_its_connection_back():
    async with CountingServer().running() as server, pool_client(1, 1) as transport:
        stuck, = await held(server)
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck
        server.gate.set()
        assert await post(server.url, timeout_s=5.0) == {"ok": True}   # a leaked slot would time out here
        # the cancelled request's connection was mid-response: closed, not reused
        assert (server.requests, server.connections, transport._pool.idle_count) == (2, 2, 1)


async def test_idle_connections_beyond_the_keepalive_limit_are_closed():
    async with CountingServer().running() as server, pool_client(10, 2) as transport:
        calls = await held(server, 5)
        server.gate.set()
        assert await asyncio.gather(*calls) == [{"ok": True}] * 5
        assert (server.connections, transport._pool.idle_count) == (5, 2)


async def test_256_completions_in_flight_at_once_all_get_their_own_answer():
    def echo(body: dict) -> Reply:
        return Reply.text(f"answer to {body['messages'][0]['content']}")

    with fake_openai(echo) as server:
        url = f"{server.base_url}/chat/completions"
        connection = LLMConnection(api_base=server.base_url)
        async with pool_client(1000, 1000) as transport:
            bodies = [json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": f"q{i}"}]}).encode()
                      for i in range(256)]
            replies = await asyncio.gather(*(post_completion(url, body, connection, "sk-test") for body in bodies))
            idle = transport._pool.idle_count
    assert [data["choices"][0]["message"]["content"] for _, data in replies] == [f"answer to q{i}" for i in range(256)]
    assert len(server.requests) == 256 and 1 <= idle <= 256


@contextlib.asynccontextmanager
async def fresh_fast_path_client() -> AsyncIterator[None]:
    """The fast path makes this loop's client and pool anew in the block (reading the environment), closed after."""
    loop = asyncio.get_running_loop()
    previous = fast_http._clients.pop(loop, None), fast_http._pools.pop(loop, None)
    try:
        yield
    finally:
        made = fast_http._clients.pop(loop, None), fast_http._pools.pop(loop, None)
        if made[0] is not None:
            await made[0].aclose()
        if made[1] is not None:
            await made[1].aclose()
        for kept, previous_one in zip((fast_http._clients, fast_http._pools), previous, strict=True):
            if previous_one is not None:
                kept[loop] = previous_one


async def test_a_proxy_from_the_environment_still_carries_the_requests(monkeypatch):
    """httpx mounts HTTP_PROXY only for a client made without a transport of its own: the pool must not lose it."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with CountingServer().running() as proxy, fresh_fast_path_client():
        monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1/chat/completions"))
        assert await post("http://llm.invalid/v1/chat/completions") == {"ok": True}   # no such host: via the proxy
        assert isinstance(fast_http._client()._transport, PoolTransport)
    assert proxy.requests == 1


@pytest.mark.parametrize("pool", [None, "stack", "httpx"])
async def test_the_pool_is_chosen_with_shiftbox_http_pool(monkeypatch, pool):
    if pool is None:
        monkeypatch.delenv(POOL_ENV, raising=False)
    else:
        monkeypatch.setenv(POOL_ENV, pool)
    async with CountingServer().running() as server, fresh_fast_path_client():
        assert await post(server.url) == {"ok": True}
        transport = fast_http._client()._transport
        assert isinstance(transport, PoolTransport) == (pool != "httpx")
        assert isinstance(transport._pool, httpcore.AsyncConnectionPool) == (pool == "httpx")


async def test_an_unknown_pool_name_says_which_values_there_are(monkeypatch):
    monkeypatch.setenv(POOL_ENV, "aiohttp")
    async with fresh_fast_path_client():
        with pytest.raises(ValueError, match=r"SHIFTBOX_HTTP_POOL='aiohttp' is not a pool: set it to 'stack'"):
            await post("http://127.0.0.1:9/v1/chat/completions")
