"""The fake OpenAI-compatible server: raw HTTP behaviour, and litellm talking to it (sync, streaming, tools, errors)."""

from __future__ import annotations

import importlib
import json
import re
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from shiftbox.llm import import_litellm, price_usd
from shiftbox.testing import FakeOpenAI, Reply, ToolCallReply, count_tokens, fake_openai

fake_openai_module = importlib.import_module("shiftbox.testing.fake_openai")  # the package's name is the function

HI = [{"role": "user", "content": "hi"}]

# litellm 1.106.2's streaming code trips two harmless pydantic warnings; keep the output readable.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]


@pytest.fixture(autouse=True, params=fake_openai_module.TRANSPORTS)
def transport(request, monkeypatch) -> str:
    """Every test here runs on each transport (the event loop's and the thread-per-connection one)."""
    monkeypatch.setattr(fake_openai_module, "DEFAULT_TRANSPORT", request.param)
    return request.param


@pytest.fixture(scope="module")
def litellm():
    return import_litellm()


def post(server: FakeOpenAI, body: dict[str, Any], path: str = "/chat/completions",
         headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(server.base_url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def post_raw(server: FakeOpenAI, raw: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(server.base_url + "/chat/completions", data=raw,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def get(server: FakeOpenAI, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(server.base_url + path, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


# -- raw HTTP ----------------------------------------------------------------------------------------


def test_binds_loopback_with_ephemeral_port_and_stops() -> None:
    with fake_openai([]) as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert server.address == ("127.0.0.1", server.port)
        assert server.port > 0
    with pytest.raises(RuntimeError):
        _ = server.base_url


def test_plain_completion_is_deterministic() -> None:
    script = [Reply.text("Hello, how can I help?")]
    body = {"model": "fake-model", "messages": HI}
    with fake_openai(script) as a, fake_openai(script) as b:
        status_a, raw_a = post(a, body)
        status_b, raw_b = post(b, body)
    assert status_a == status_b == 200
    assert raw_a == raw_b
    data = json.loads(raw_a)
    assert data["id"] == "chatcmpl-fake-000001"
    assert data["created"] == 1_700_000_000
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "Hello, how can I help?"}
    assert data["choices"][0]["finish_reason"] == "stop"
    prompt = count_tokens(json.dumps({"messages": HI, "tools": []}, sort_keys=True, separators=(",", ":")))
    assert data["usage"] == {"prompt_tokens": prompt, "completion_tokens": count_tokens("Hello, how can I help?"),
                             "total_tokens": prompt + count_tokens("Hello, how can I help?")}
    assert a.requests == [body]


def test_models_endpoint_lists_the_model() -> None:
    with fake_openai([], model="my-model") as server:
        status, data = get(server, "/models")
        assert status == 200
        assert [m["id"] for m in data["data"]] == ["my-model"]
        assert get(server, "/models/my-model")[1]["id"] == "my-model"
        assert get(server, "/nope")[0] == 404


def test_script_exhausted_is_a_500_and_recorded() -> None:
    with fake_openai(["only one"]) as server:
        assert post(server, {"messages": HI})[0] == 200
        assert server.remaining == 0
        status, raw = post(server, {"messages": HI})
    assert status == 500
    assert "script exhausted" in json.loads(raw)["error"]["message"]
    assert len(server.errors) == 1 and "request 2" in server.errors[0]


def test_a_body_that_is_not_json_or_nested_too_deep_is_a_400_naming_the_problem() -> None:
    """Bodies are read as shiftbox reads its JSON inputs: one nested past the parser's recursion is refused with
    the input reader's message, not a server error; a well-formed one 101 levels deep is answered."""
    with fake_openai(["deep enough"]) as server:
        deep = {"messages": HI, "x": json.loads("[" * 101 + "]" * 101)}
        assert post(server, deep)[0] == 200
        status, raw = post_raw(server, b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        assert status == 400 and "nested" in json.loads(raw)["error"]["message"]
        status, raw = post_raw(server, b'{"messages": [')
        assert status == 400 and "not JSON (line 1, column 15" in json.loads(raw)["error"]["message"]
    assert len(server.requests) == 1 and len(server.errors) == 2


def test_callable_script_sees_the_request() -> None:
    def script(body: dict[str, Any]) -> Reply | str:
        return f"you said {body['messages'][-1]['content']}"

    with fake_openai(script) as server:
        status, raw = post(server, {"messages": [{"role": "user", "content": "ping"}]})
    assert status == 200
    assert json.loads(raw)["choices"][0]["message"]["content"] == "you said ping"


def test_callable_script_error_becomes_500() -> None:
    def script(body: dict[str, Any]) -> Reply:
        raise ValueError("no idea")

    with fake_openai(script) as server:
        status, raw = post(server, {"messages": HI})
    assert status == 500
    assert "no idea" in json.loads(raw)["error"]["message"]
    assert server.errors and "ValueError" in server.errors[0]


def test_raw_stream_format() -> None:
    reply = Reply.tool_call("get_user", {"user_id": "u1"}, content="Checking.", chunk_size=4)
    with fake_openai([reply]) as server:
        status, raw = post(server, {"messages": HI, "stream": True,
                                    "stream_options": {"include_usage": True}})
    assert status == 200
    events = [line.removeprefix("data: ") for line in raw.decode().split("\n\n") if line]
    assert all(line.startswith("data: ") for line in raw.decode().split("\n\n") if line)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["id"] for c in chunks} == {"chatcmpl-fake-000001"}
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "Checking."
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0] == {"index": 0, "id": "call_1_0", "type": "function",
                        "function": {"name": "get_user", "arguments": ""}}
    assert "".join(c["function"]["arguments"] for c in calls) == '{"user_id":"u1"}'
    assert len(calls) > 2  # the arguments arrived in several pieces
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


def test_api_key_is_enforced_when_given() -> None:
    with fake_openai(["ok"], api_key="sk-right") as server:
        assert post(server, {"messages": HI}, headers={"Authorization": "Bearer sk-wrong"})[0] == 401
        assert server.requests == []
        assert post(server, {"messages": HI}, headers={"Authorization": "Bearer sk-right"})[0] == 200


def test_a_wrong_or_missing_key_is_refused_as_openai_refuses_it_and_counted() -> None:
    """OpenAI's 401 bodies: type invalid_request_error; a wrong key is named masked, never in full."""
    with fake_openai(["ok"], api_key="sk-right") as server:
        status, raw = post(server, {"messages": HI}, headers={"Authorization": "Bearer sk-wrong-key-1234"})
        error = json.loads(raw)["error"]
        assert status == 401 and (error["type"], error["code"]) == ("invalid_request_error", "invalid_api_key")
        assert error["message"].startswith("Incorrect API key provided: sk-w") and "sk-wrong-key-1234" not in raw.decode()
        assert "1234" in error["message"] and "platform.openai.com/account/api-keys" in error["message"]
        status, raw = post(server, {"messages": HI})
        error = json.loads(raw)["error"]
        assert status == 401 and error["message"].startswith("You didn't provide an API key.")
        assert get(server, "/models")[0] == 401
    assert server.requests == [] and server.rejected == [("POST", "/v1/chat/completions"),
                                                         ("POST", "/v1/chat/completions"), ("GET", "/v1/models")]


def test_permission_denied_refuses_every_request_with_a_403() -> None:
    with fake_openai(["ok"], permission_denied="Project `proj_x` does not have access to model `fake-model`") as server:
        status, raw = post(server, {"messages": HI})
        assert status == 403 and json.loads(raw)["error"]["message"].startswith("Project `proj_x` does not have")
        assert get(server, "/models")[0] == 403
    assert server.requests == [] and len(server.rejected) == 2


# -- through litellm ---------------------------------------------------------------------------------


def test_litellm_non_streaming(litellm) -> None:
    with fake_openai([Reply.text("Hello there!")]) as server:
        response = litellm.completion(model="openai/fake-model", api_base=server.base_url,
                                      api_key="sk-test", messages=HI, temperature=0)
    assert response.choices[0].message.content == "Hello there!"
    assert response.id == "chatcmpl-fake-000001"
    assert response.usage.completion_tokens == count_tokens("Hello there!")
    assert server.requests[0]["model"] == "fake-model"  # litellm strips the provider prefix
    assert server.requests[0]["messages"] == HI
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    usage = response.usage  # a model litellm has no price for costs 0.0
    assert price_usd(litellm, "openai/fake-model", usage.prompt_tokens, usage.completion_tokens) == 0.0


def test_litellm_streaming_text(litellm) -> None:
    text = "Sure, I can help you change your flight."
    with fake_openai([Reply.text(text, chunk_size=5)]) as server:
        stream = litellm.completion(**server.litellm_kwargs(), messages=HI, stream=True,
                                    stream_options={"include_usage": True})
        chunks = list(stream)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) == len(range(0, len(text), 5))
    assert "".join(pieces) == text
    assert server.requests[0]["stream"] is True
    built = litellm.stream_chunk_builder(chunks, messages=HI)
    assert built.choices[0].message.content == text
    assert built.usage.completion_tokens == count_tokens(text)


def test_litellm_tool_calls_round_trip(litellm) -> None:
    tools = [{"type": "function", "function": {
        "name": "get_user", "description": "Look up a user",
        "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}},
                       "required": ["user_id"]}}}]
    script = [Reply.tools(("get_user", {"user_id": "u1"}),
                          ToolCallReply(name="get_order", arguments={"order_id": "o9"}, id="call_custom")),
              Reply.text("Your order o9 has shipped.")]
    with fake_openai(script) as server:
        kw = server.litellm_kwargs()
        first = litellm.completion(**kw, messages=HI, tools=tools)
        message = first.choices[0].message
        assert first.choices[0].finish_reason == "tool_calls"
        calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
        assert calls == [("call_1_0", "get_user", {"user_id": "u1"}),
                         ("call_custom", "get_order", {"order_id": "o9"})]
        history = [*HI, message.model_dump(exclude_none=True),
                   {"role": "tool", "tool_call_id": "call_1_0", "content": '{"name": "Ann"}'},
                   {"role": "tool", "tool_call_id": "call_custom", "content": '{"status": "shipped"}'}]
        second = litellm.completion(**kw, messages=history, tools=tools)
    assert second.choices[0].message.content == "Your order o9 has shipped."
    assert server.requests[0]["tools"] == tools
    sent = server.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == ["call_1_0", "call_custom"]
    assert sent[1]["tool_calls"][0]["function"] == {"name": "get_user", "arguments": '{"user_id":"u1"}'}
    assert sent[3] == {"role": "tool", "tool_call_id": "call_custom", "content": '{"status": "shipped"}'}


def test_litellm_streaming_tool_calls(litellm) -> None:
    reply = Reply.tools(("get_user", {"user_id": "u1"}), ("get_order", {"order_id": "o1", "lines": [1, 2, 3]}),
                        content="Let me check.", chunk_size=6)
    with fake_openai([reply]) as server:
        chunks = list(litellm.completion(**server.litellm_kwargs(), messages=HI, stream=True))
    deltas = [c.choices[0].delta.tool_calls[0] for c in chunks
              if c.choices and c.choices[0].delta.tool_calls]
    # first delta of each call carries id and name, the rest only argument fragments
    heads = [d for d in deltas if d.id]
    assert [(d.index, d.id, d.function.name) for d in heads] == [(0, "call_1_0", "get_user"),
                                                                 (1, "call_1_1", "get_order")]
    assert all(d.function.name is None for d in deltas if not d.id)
    built = litellm.stream_chunk_builder(chunks, messages=HI)
    message = built.choices[0].message
    assert message.content == "Let me check."
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == [
        ("call_1_0", "get_user", {"user_id": "u1"}),
        ("call_1_1", "get_order", {"order_id": "o1", "lines": [1, 2, 3]})]
    assert built.choices[0].finish_reason == "tool_calls"


def test_litellm_rate_limit_surfaces(litellm) -> None:
    with fake_openai([Reply.rate_limit("slow down")]) as server, pytest.raises(litellm.RateLimitError) as info:
        litellm.completion(**server.litellm_kwargs(), messages=HI, max_retries=0)
    assert "slow down" in str(info.value)
    assert len(server.requests) == 1


def test_litellm_server_error_surfaces(litellm) -> None:
    with fake_openai([Reply.error(500, "boom")]) as server, pytest.raises(litellm.InternalServerError):
        litellm.completion(**server.litellm_kwargs(), messages=HI, max_retries=0)


def test_litellm_retries_then_succeeds(litellm) -> None:
    with fake_openai([Reply.error(503, "busy", headers={"retry-after-ms": "10"}), "fine"]) as server:
        response = litellm.completion(**server.litellm_kwargs(), messages=HI, max_retries=1)
    assert response.choices[0].message.content == "fine"
    assert len(server.requests) == 2


def test_litellm_timeout_on_delay(litellm) -> None:
    with fake_openai([Reply.text("late").delayed(1.0)]) as server, pytest.raises(litellm.Timeout):
        litellm.completion(**server.litellm_kwargs(), messages=HI, max_retries=0, timeout=0.2)


def test_litellm_wrong_api_key_is_authentication_error(litellm) -> None:
    with fake_openai(["ok"], api_key="sk-right") as server, pytest.raises(litellm.AuthenticationError):
        litellm.completion(model="openai/fake-model", api_base=server.base_url, api_key="sk-wrong",
                           messages=HI, max_retries=0)


def test_answers_64_clients_opening_connections_at_once() -> None:
    """64 concurrent clients each on a new connection (the bench's concurrency 64 on the litellm path) are all
    answered: with the stdlib's listen backlog of 5, the connections over it were reset ("Connection error")."""
    import asyncio

    import httpx

    async def one(base_url: str) -> int | str:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30, connect=5)) as client:  # a fresh connection
            try:
                return (await client.post(base_url + "/chat/completions", json={"model": "m", "messages": HI})).status_code
            except httpx.TransportError as exc:
                return repr(exc)

    async def rounds(base_url: str) -> list[int | str]:
        answers: list[int | str] = []
        for _ in range(3):
            answers += await asyncio.gather(*(one(base_url) for _ in range(64)))
        return answers

    with fake_openai(lambda body: Reply.text("hi")) as server:
        answers = asyncio.run(rounds(server.base_url))
    assert [a for a in answers if a != 200] == []
    assert len(server.requests) == 3 * 64


# -- the transports answer with the same bytes ----------------------------------------------------------


DATE = re.compile(rb"\r\nDate: [^\r]*\r\n")


def exchange(port: int, request: bytes) -> bytes:
    """One request on a new connection (it asks to be closed), and every byte of the answer, the Date masked."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return DATE.sub(b"\r\nDate: -\r\n", data, count=1)


def http(method: str, path: str, body: bytes = b"", headers: str = "", chunked: bool = False) -> bytes:
    framing = ("Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {len(body)}\r\n") if body else ""
    payload = (f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n") if chunked else body
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{headers}{framing}\r\n".encode()
            + payload)


def conversation_script() -> list[Reply | str]:
    tool = Reply.tool_call("get_user", {"user_id": "u1"}, content="Checking.", chunk_size=4)
    return ["hello", tool, tool, Reply.rate_limit("slow down", headers={"retry-after": "1"}),
            Reply(status=200, body="not json"), Reply(status=599, body={"odd": True}),
            Reply.text("late", headers={"x-extra": "1"}).delayed(0.05), "streamed with usage", "chunked in"]


def conversation(port: int) -> list[bytes]:
    """A conversation touching every kind of answer: completions, streams, errors, refusals, routes, bad bodies."""
    ask = json.dumps({"model": "fake-model", "messages": HI}).encode()
    stream = json.dumps({"messages": HI, "stream": True, "stream_options": {"include_usage": True}}).encode()
    key = "Authorization: Bearer sk-right\r\n"
    requests = [http("POST", "/v1/chat/completions", ask, key), http("POST", "/v1/chat/completions", ask, key),
                http("POST", "/chat/completions/", stream, key), http("POST", "/v1/chat/completions", ask, key),
                http("POST", "/v1/chat/completions", ask, key), http("POST", "/v1/chat/completions", ask, key),
                http("POST", "/v1/chat/completions", ask, key), http("POST", "/v1/chat/completions?x=1", stream, key),
                http("POST", "/v1/chat/completions", ask, key, chunked=True),
                http("POST", "/v1/chat/completions", ask, key),  # the script is exhausted: a 500
                http("POST", "/v1/chat/completions", b"[1, 2", key), http("POST", "/v1/chat/completions", b"[1]", key),
                http("POST", "/v1/embeddings", ask, key), http("POST", "/v1/chat/completions", ask),
                http("POST", "/v1/chat/completions", ask, "Authorization: Bearer sk-wrong-key-1234\r\n"),
                http("GET", "/v1/models", headers=key), http("GET", "/models/fake-model", headers=key),
                http("GET", "/v1/nope", headers=key), http("GET", "/v1/models")]
    return [exchange(port, request) for request in requests]


def test_the_transports_answer_a_conversation_with_the_same_bytes() -> None:
    """The event loop's transport sends what the thread-per-connection one (the stdlib's HTTP server) sends, byte
    for byte but the Date's value: status lines, headers and their order, bodies, streamed chunks."""
    answers = {}
    for transport in fake_openai_module.TRANSPORTS:
        with fake_openai(conversation_script(), api_key="sk-right", transport=transport) as server:
            answers[transport] = conversation(server.port)
        assert len(server.requests) == 10 and len(server.rejected) == 3 and len(server.errors) == 3
    threads, loop = answers["threads"], answers["loop"]
    assert [a.split(b"\r\n", 1)[0] for a in loop] == [a.split(b"\r\n", 1)[0] for a in threads]
    assert loop == threads
    assert threads[0].startswith(b"HTTP/1.1 200 OK\r\nServer: shiftbox-fake-openai/1 \r\nDate: -\r\n"
                                 b"Content-Type: application/json\r\nContent-Length: ")
    assert b"Transfer-Encoding: chunked\r\n" in threads[2] and threads[2].endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
    assert threads[3].startswith(b"HTTP/1.1 429 Too Many Requests\r\n") and b"\r\nretry-after: 1\r\n" in threads[3]
    assert threads[5].startswith(b"HTTP/1.1 599 \r\n")


def test_kept_alive_connection_answers_in_order_and_the_date_is_a_date() -> None:
    """Two requests on one connection (the second after a delayed answer) are answered in order."""
    import http.client

    with fake_openai([Reply.text("first").delayed(0.05), "second"]) as server:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        contents = []
        for _ in range(2):
            connection.request("POST", "/v1/chat/completions", body=json.dumps({"messages": HI}),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            assert re.fullmatch(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT", response.getheader("Date"))
            contents.append(json.loads(response.read())["choices"][0]["message"]["content"])
        connection.close()
    assert contents == ["first", "second"]


def test_stop_closes_the_port_the_connections_and_the_thread() -> None:
    """After stop() nothing is left: the serving thread has ended, the port refuses, an open connection is closed."""
    before = set(threading.enumerate())
    server = FakeOpenAI(["a", "b"]).start()
    port = server.port
    kept = socket.create_connection(("127.0.0.1", port), timeout=10)
    body = json.dumps({"messages": HI}).encode()
    kept.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    answer = kept.recv(65536)
    while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < int(
            re.search(rb"Content-Length: (\d+)", answer)[1]):  # the thread-per-connection server writes head and body apart
        answer += kept.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200 OK")
    server.stop()
    server.stop()  # twice is harmless
    assert set(threading.enumerate()) - before == set()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    kept.settimeout(5)
    assert kept.recv(65536) == b""
    kept.close()


def test_an_unknown_transport_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown transport 'uvicorn': use one of loop, threads"):
        FakeOpenAI([], transport="uvicorn")
