"""The fast path's own HTTP/1.1 connections (`_http_connection`): responses framed by length, by chunks or by the
end of the connection, arriving in pieces; interim responses skipped; a connection reused only when the server
keeps it; and every failure the httpx exception (so the fast path's error) httpcore's connection gave."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import httpcore
import pytest

from shiftbox.llm import LLMConnection
from shiftbox.llm._http_connection import HTTP11Connection
from shiftbox.llm._openai_http import ProviderHTTPError, post_completion
from shiftbox.llm._retries import cause_of
from tests.client.llm.test_http_pool import CountingServer, fresh_fast_path_client

pytestmark = pytest.mark.anyio
ANSWER = {"ok": "ü" * 3}
RAW = json.dumps(ANSWER, ensure_ascii=False).encode()


class ScriptedServer(CountingServer):
    """Answers the n-th request with `replies[n]`: byte pieces written with a pause between them (so the client
    sees them in separate reads); `None` closes the connection without answering; a reply ending in `CLOSE` closes
    the connection after it. Counts the connections it accepted."""

    CLOSE = b""

    def __init__(self, *replies: list[bytes] | None):
        super().__init__()
        self.replies = list(replies)

    async def answer(self, writer: asyncio.StreamWriter) -> bool:
        reply = self.replies[self.requests - 1]
        for piece in reply or [self.CLOSE]:
            if piece is self.CLOSE:
                return False
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.01)
        return True

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[ScriptedServer]:
        """Running, with the fast path's client made anew for the block."""
        async with self.running(), fresh_fast_path_client():
            yield self


def ok(*extra_headers: bytes) -> list[bytes]:
    """A 200 with Content-Length, its head and body in three pieces."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"".join(h + b"\r\n" for h in extra_headers)
    return [head, b"Content-Length: %d\r\n\r\n" % len(RAW) + RAW[:5], RAW[5:]]


async def post(url: str, timeout_s: float = 10.0) -> dict:
    _, data = await post_completion(url, b"{}", LLMConnection(api_base=url, timeout_s=timeout_s), "sk-test")
    return data


async def test_a_body_in_pieces_is_read_whole_and_the_connection_reused():
    async with ScriptedServer(ok(), ok(b"Connection: keep-alive")).serving() as server:
        assert [await post(server.url), await post(server.url)] == [ANSWER, ANSWER]
    assert server.connections == 1


async def test_a_chunked_body_with_trailers_and_an_interim_response():
    chunks = [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
              b"%x;ext=1\r\n%s\r\n" % (5, RAW[:5]), b"%X\r\n%s\r\n" % (len(RAW) - 5, RAW[5:]),
              b"0\r\nX-Trailer: t\r\n", b"\r\n"]
    async with ScriptedServer(chunks, ok()).serving() as server:
        assert [await post(server.url), await post(server.url)] == [ANSWER, ANSWER]
    assert server.connections == 1  # the chunked response ended exactly: the connection was reused


@pytest.mark.parametrize("reply", [
    [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n", RAW, ScriptedServer.CLOSE],  # to the end
    [*ok(b"Connection: close"), ScriptedServer.CLOSE],
    [b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(RAW), RAW), ScriptedServer.CLOSE],
], ids=["body to the end", "connection close", "http 1.0"])
async def test_a_connection_the_server_ends_is_never_reused(reply):
    async with ScriptedServer(reply, ok()).serving() as server:
        assert [await post(server.url), await post(server.url)] == [ANSWER, ANSWER]
    assert server.connections == 2


async def test_a_connection_with_bytes_after_its_response_is_not_reused():
    head, first, rest = ok()
    async with ScriptedServer([head, first, rest + b"HTTP/1.1 200 OK\r\n"], ok()).serving() as server:
        assert [await post(server.url), await post(server.url)] == [ANSWER, ANSWER]
    assert server.connections == 2


@pytest.mark.parametrize("reply", [None, [b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{", ScriptedServer.CLOSE],
                                   [b"HTTP/2 200\r\n\r\n"], [b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"]],
                         ids=["no answer", "cut short", "not http/1", "malformed header"])
async def test_a_broken_answer_is_a_connection_error(reply):
    async with ScriptedServer(reply).serving() as server:
        with pytest.raises(ProviderHTTPError) as caught:
            await post(server.url)
    assert caught.value.status_code == 500 and cause_of(caught.value) == "connection"
    assert isinstance(caught.value.__cause__.__cause__, httpcore.RemoteProtocolError)


async def test_an_answer_slower_than_the_timeout_is_a_timeout():
    async with ScriptedServer([b"HTTP/1.1 200 OK\r\n", b"Content-Length: 2\r\n"]).serving() as server:  # no end
        with pytest.raises(ProviderHTTPError) as caught:
            await post(server.url, timeout_s=0.3)
    assert caught.value.status_code == 408 and cause_of(caught.value) == "timeout"


async def test_a_refused_connection_is_a_connection_error():
    async with ScriptedServer().serving() as server:
        url = server.url
    with pytest.raises(ProviderHTTPError) as caught:
        await post(url)  # the server is gone: nothing listens on its port
    assert cause_of(caught.value) == "connection"


async def test_no_body_for_a_204_and_the_connection_stays_usable():
    async with ScriptedServer([b"HTTP/1.1 204 No Content\r\n\r\n"], ok()).serving() as server:
        port = int(server.url.split(":")[2].split("/")[0])
        connection = HTTP11Connection(httpcore.Origin(b"http", b"127.0.0.1", port))
        for status, body in ((204, b""), (200, RAW)):
            response = await connection.handle_async_request(httpcore.Request(
                "POST", server.url, headers=[(b"Host", b"127.0.0.1"), (b"Content-Length", b"2")], content=b"{}"))
            assert (response.status, b"".join([part async for part in response.stream])) == (status, body)
            assert connection.is_available()
        await connection.aclose()
    assert not connection.is_available() and server.connections == 1


async def test_https_with_the_pool_s_ssl_context(tmp_path):
    """TLS through the context the pool is given (here one trusting a self-signed certificate for 127.0.0.1)."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate: apt-get install openssl")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    trusting = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
    server = await asyncio.start_server(ScriptedServer(ok())._serve, "127.0.0.1", 0, ssl=served)
    port = server.sockets[0].getsockname()[1]
    async with server:
        connection = HTTP11Connection(httpcore.Origin(b"https", b"127.0.0.1", port), trusting)
        response = await connection.handle_async_request(httpcore.Request(
            "POST", f"https://127.0.0.1:{port}/v1", headers=[(b"Host", b"127.0.0.1"), (b"Content-Length", b"2")],
            content=b"{}"))
        assert (response.status, b"".join([part async for part in response.stream])) == (200, RAW)
        await connection.aclose()
        with pytest.raises(httpcore.ConnectError):  # the default context does not trust the certificate
            await HTTP11Connection(httpcore.Origin(b"https", b"127.0.0.1", port)).handle_async_request(
                httpcore.Request("POST", f"https://127.0.0.1:{port}/v1", content=b"{}"))


# -- framing now done by llhttp (httptools): what it refuses or reads that the hand-written parsing did not cover

async def request(connection: HTTP11Connection, url: str, method: str = "POST") -> tuple[int, list, bytes]:
    """One request straight on the connection: its status, headers and whole body."""
    response = await connection.handle_async_request(httpcore.Request(
        method, url, headers=[(b"Host", b"127.0.0.1"), (b"Content-Length", b"2")], content=b"{}"))
    return response.status, response.headers, b"".join([part async for part in response.stream])


def connection_to(server: ScriptedServer) -> HTTP11Connection:
    return HTTP11Connection(httpcore.Origin(b"http", b"127.0.0.1", int(server.url.split(":")[2].split("/")[0])))


@pytest.mark.parametrize("reply", [
    [b"HTTP/1.1 200 OK\r\nX-A: b\r\n folded\r\nContent-Length: 2\r\n\r\n{}"],
    [b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"],
    [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"],
    [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2x\r\n{}\r\n0\r\n\r\n"],
], ids=["obsolete line folding", "http 2.0 status line", "length and chunks", "bad chunk size"])
async def test_a_response_llhttp_refuses_is_a_connection_error(reply):
    async with ScriptedServer(reply).serving() as server:
        with pytest.raises(ProviderHTTPError) as caught:
            await post(server.url)
    assert cause_of(caught.value) == "connection"
    assert isinstance(caught.value.__cause__.__cause__, httpcore.RemoteProtocolError)


async def test_chunk_extensions_quoted_and_leading_zeros_are_read():
    chunks = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
              b'005;name="a;b";x\r\n%s\r\n' % RAW[:5], b"%04x\r\n%s\r\n0\r\n\r\n" % (len(RAW) - 5, RAW[5:])]
    async with ScriptedServer(chunks, ok()).serving() as server:
        assert [await post(server.url), await post(server.url)] == [ANSWER, ANSWER]
    assert server.connections == 1


async def test_a_head_response_ends_with_its_head_and_the_connection_is_reused():
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Pad: v \r\n\r\n" % len(RAW)  # the length a GET would have
    async with ScriptedServer([head], ok()).serving() as server:
        connection = connection_to(server)
        status, headers, body = await request(connection, server.url, "HEAD")
        assert (status, body, headers[-1]) == (200, b"", (b"X-Pad", b"v"))  # value's trailing space dropped
        assert connection.is_available()
        assert (await request(connection, server.url))[::2] == (200, RAW)
        await connection.aclose()
    assert server.connections == 1


async def test_bytes_after_a_head_response_make_the_connection_unusable():
    async with ScriptedServer([b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"]).serving() as server:
        connection = connection_to(server)
        assert (await request(connection, server.url, "HEAD"))[::2] == (200, b"")
        assert not connection.is_available()
        await connection.aclose()


async def test_the_read_timeout_is_between_pieces_not_for_the_whole_response():
    answer = {"ok": "x" * 40}
    raw = json.dumps(answer).encode()  # one byte a piece, 10 ms apart: over 0.5 s in all, against a 0.2 s timeout
    pieces = [b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(raw), *(raw[i:i + 1] for i in range(len(raw)))]
    async with ScriptedServer(pieces).serving() as server:
        assert await post(server.url, timeout_s=0.2) == answer
