"""Requests made without httpx (`_http_bare`): the head is byte for byte what httpx's client sends, for every URL it
takes (any other URL, or key, goes through httpx's client); a run posts that way until an answer needs httpx's
response, and then the client it makes shares the same pool; the preflight's listing is sent so too, with its
errors named as httpx names them and the endpoint asked once."""

from __future__ import annotations

import asyncio
import errno
import socket

import httpx
import pytest

from shiftbox.llm import LLMConnection, LLMEndpoint, check_endpoints
from shiftbox.llm import _openai_http as fast_http
from shiftbox.llm._http_bare import bare_head
from shiftbox.llm._http_client import shared_ssl_context
from shiftbox.llm._openai_http import ProviderHTTPError, post_completion
from shiftbox.testing import Reply, fake_openai
from tests.client.llm.test_http_pool import CountingServer, fresh_fast_path_client

pytestmark = pytest.mark.anyio


PLAIN = ["http://127.0.0.1:8000/v1/chat/completions", "http://localhost/v1/chat/completions",
         "http://localhost:80/chat/completions", "http://my-host.internal:9000/openai/v1.2/chat/completions/",
         "http://10.0.0.2:65535", "http://vllm:8000/", "http://a-1.b2.local:1/~user/x_y-z"]
REWRITTEN = ["https://api.openai.com/v1/chat/completions", "http://LOCALHOST:8000/v1", "http://h/a b",
             "http://h/v1/../x", "http://h/./x", "http://h/v1?x=1", "http://h/v1#x", "http://user@h/v1",
             "http://h:99999/v1", "http://h/%41", "http://[::1]:8000/v1", "http://h..i/v1", "http://-h/v1"]


def wire(request: httpx.Request) -> bytes:
    """An httpx request's head as HTTP/1.1 puts it on the wire: the request line, each header, a blank line."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode(), request.url.raw_path)]
    lines += [b"%s: %s" % (name, value) for name, value in request.headers.raw]
    return b"\r\n".join(lines) + b"\r\n\r\n"


@pytest.mark.parametrize("url", PLAIN)
async def test_the_head_is_the_one_httpx_client_sends(url):
    body = b'{"model": "m"}'
    async with httpx.AsyncClient() as client:
        post = client.build_request("POST", url, content=body, headers={"Authorization": "Bearer sk-1",
                                                                           "Content-Type": "application/json"})
        get = client.build_request("GET", url, headers={"Authorization": "Bearer sk-1"})
    head = bare_head(b"POST", url, "sk-1", True)
    assert head.before + str(len(body)).encode() + head.after == wire(post)
    assert bare_head(b"GET", url, "sk-1", False).before == wire(get)
    origin = post.url
    assert head.origin == (b"http", origin.raw_host, origin.port or 80)


@pytest.mark.parametrize("url", REWRITTEN)
def test_a_url_httpx_would_rewrite_or_encrypt_takes_httpx_client(url):
    assert bare_head(b"POST", url, "sk-1", True) is None


@pytest.mark.parametrize("key", ["sk 1", "sk-é", ""])
def test_a_key_httpx_would_encode_otherwise_takes_httpx_client(key):
    assert bare_head(b"POST", PLAIN[0], key, True) is None


async def post(url: str) -> dict:
    _, data = await post_completion(url, b"{}", LLMConnection(api_base=url, timeout_s=10.0), "sk-test")
    return data


async def test_a_run_posts_without_httpx_client_until_an_answer_needs_one_which_then_shares_the_pool():
    loop = asyncio.get_running_loop()
    replies = [Reply.text("one"), Reply.error(503, "busy", headers={"retry-after": "7"}), Reply.text("three")]
    with fake_openai(replies) as server:
        url = f"{server.base_url}/chat/completions"
        async with fresh_fast_path_client():
            assert (await post(url))["choices"][0]["message"]["content"] == "one"
            assert loop not in fast_http._clients and fast_http._pools[loop].idle_count == 1
            with pytest.raises(ProviderHTTPError) as caught:
                await post(url)
            response = caught.value.response
            assert response.headers["retry-after"] == "7" and str(response.request.url) == url
            assert fast_http._clients[loop]._transport._pool is fast_http._pools[loop]   # one pool for both
            assert fast_http._pools[loop].ssl_context is shared_ssl_context()   # for https: the process's one
            assert (await post(url))["choices"][0]["message"]["content"] == "three"
        assert [h["authorization"] for h in server.headers] == ["Bearer sk-test"] * 3


async def test_a_cookie_set_on_a_request_sent_without_httpx_is_sent_back_after():
    async with CountingServer(set_cookie=b"lb=node-3").running() as server, fresh_fast_path_client():
        assert [await post(server.url) for _ in range(3)] == [{"ok": True}] * 3
    assert [b"\r\nCookie: lb=node-3\r\n" in request for request in server.received] == [False, True, True]


def listing(base: str, timeout_s: float = 5.0) -> list[str]:
    return check_endpoints([LLMEndpoint(model="openai/fake-model", api_base=base)], timeout_s=timeout_s)


def test_the_preflight_lists_models_without_httpx_and_words_a_refused_key_as_before(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0002")
    with fake_openai(["never"], api_key="sk-right") as server:
        problems = listing(server.base_url)
    assert server.rejected == [("GET", "/v1/models")]
    assert len(problems) == 1 and "authentication failed for model openai/fake-model" in problems[0]
    assert "Incorrect API key provided: sk-w*****0002." in problems[0]


def test_the_preflight_words_a_silent_endpoint_as_no_answer_in_time(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fine")
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        base = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        problems = listing(base, timeout_s=0.3)
    assert problems == [f"cannot reach model openai/fake-model at {base}: no answer within 0.3 s; fix: start the "
                        "model server there, or give its address with --agent-arg api_base=URL"]


def test_the_preflight_words_a_refused_connection_with_the_systems_reason(monkeypatch):
    """A refused connection is named as httpx names the failure (ConnectError), with the reason the system gave, and
    not asked again through httpx's client (whose words were 'All connection attempts failed')."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fine")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    problems = listing(base)
    reason = f"[Errno {errno.ECONNREFUSED}] Connect call failed ('127.0.0.1', {port})"
    assert problems == [f"cannot reach model openai/fake-model at {base}: ConnectError(\"{reason}\"); "
                        "fix: start the model server there, or give its address with --agent-arg api_base=URL"]


def test_the_preflight_asks_a_listing_that_fails_after_it_was_sent_once(monkeypatch):
    """A listing that failed other than by a timeout was sent again through httpx's client, for httpx's words: the
    endpoint was asked twice. It is asked once; the problem says what broke, where, and the fix."""
    from shiftbox.testing.fake_openai import Answer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fine")
    with fake_openai(["never"]) as server:
        asked: list[str] = []

        def cut_short(method, target, headers, raw):  # promises 100 bytes, sends 2 and hangs up
            asked.append(f"{method} {target}")
            return Answer(200, (("Content-Length", "100"), ("Connection", "close")), b"{}")

        monkeypatch.setattr(server, "answer", cut_short)
        base = server.base_url
        problems = listing(base)
    assert asked == ["GET /v1/models"]  # was twice
    # worded as a run's request sent the same way names it (httpx's name for the failure, the fast path's message)
    assert problems == [f"cannot reach model openai/fake-model at {base}: RemoteProtocolError('Server disconnected "
                        "without sending a complete response.'); fix: start the model server there, or give its "
                        "address with --agent-arg api_base=URL"]


def test_no_proxy_variable_means_no_proxy_without_importing_urllib_request(monkeypatch):
    """Where urllib reads proxies from the environment alone (not macOS or Windows), no `*_proxy` variable means none
    (urllib.request, about 5 ms of start-up, stays unimported); a variable set is read as httpx reads it."""
    import os
    import sys

    from shiftbox.llm._http_bare import no_proxies

    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)
    if sys.platform not in ("darwin", "win32"):
        with monkeypatch.context() as blocked:
            blocked.setitem(sys.modules, "urllib.request", None)  # importing it now would raise
            assert no_proxies() is True
    monkeypatch.setenv("no_proxy", "localhost")
    assert no_proxies() is True  # a variable, but no proxy in it
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert no_proxies() is False
