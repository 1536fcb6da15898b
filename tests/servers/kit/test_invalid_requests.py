"""A request the server refuses never runs, on every transport and protocol version.

JSON-RPC 2.0 (as MCP restricts it): a request's id is a string or an integer; a request whose id is anything
else (1.5, 2.0, 1e3, true, null, an object) is an Invalid Request (-32600), and a notification (no id) is
never answered. Either way a `tools/call` must not execute: after each, the episode's state digest is the one
it had before. Also the protocol errors MCP prescribes: an unknown prompt name and a `_meta` episode that is
no string are Invalid params (-32602).
"""

from __future__ import annotations

import json
from importlib.metadata import version

import httpx
import pytest

from shiftbox_servers.kit import DomainServer
from tests.servers.kit.test_stdio_malformed import RawStdio

INVALID_REQUEST, INVALID_PARAMS = -32600, -32602
LEGACY, MODERN = "2025-06-18", "2026-07-28"
BAD_IDS = ["1.5", "2.0", "1e3", "true", "null", "{}", "[1]"]
ADD_PAYEE = {"name": "add_payee", "arguments": {"customer_id": "cust_a", "name": "Injected Payee"}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def call_with_id(raw_id: str, params: dict = ADD_PAYEE) -> bytes:
    """A tools/call whose id is `raw_id` written verbatim (json.dumps would write 1e3 as 1000.0)."""
    return b'{"jsonrpc":"2.0","id":' + raw_id.encode() + b',"method":"tools/call","params":' + json.dumps(
        params).encode() + b"}"


NOTIFICATION_CALL = b'{"jsonrpc":"2.0","method":"tools/call","params":' + json.dumps(ADD_PAYEE).encode() + b"}"


# -- HTTP --------------------------------------------------------------------------------------


@pytest.fixture
def http(banking_http):
    server, _, client = banking_http
    return server, client


async def open_legacy(client: httpx.AsyncClient, path: str) -> dict[str, str]:
    """An initialize handshake on `path`; the headers its session's requests carry."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    answer = await client.post(path, content=json.dumps(init), headers=ACCEPT)
    headers = ACCEPT | {"mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
    ready = await client.post(path, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers)
    assert ready.status_code == 202
    return headers


MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN,  # what every 2026-07-28 request carries
               "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
               "io.modelcontextprotocol/clientCapabilities": {}}


async def modern_post(client: httpx.AsyncClient, path: str, body: bytes) -> httpx.Response:
    """POST `body` as a 2026-07-28 request: with the per-request `_meta` (protocol version, client identity)
    and the routing headers (method, name) it carries; the id is kept as written."""
    message = json.loads(body)
    params = message.setdefault("params", {})
    params["_meta"] = params.get("_meta", {}) | MODERN_META
    headers = ACCEPT | {"mcp-protocol-version": MODERN, "mcp-method": message["method"]}
    name = params.get("uri" if message["method"] == "resources/read" else "name")
    if name is not None:
        headers["mcp-name"] = name
    raw_id = body.split(b'"id":', 1)[1].split(b',"method"', 1)[0] if b'"id":' in body else None
    message.pop("id", None)
    encoded = json.dumps(message).encode()
    if raw_id is not None:
        encoded = b'{"id":' + raw_id + b"," + encoded[1:]
    return await client.post(path, content=encoded, headers=headers)


def digest(server: DomainServer, episode_id: str) -> str:
    return server.episodes.get(episode_id).digest()


def assert_error(answer: httpx.Response, code: int, what: str) -> dict:
    assert answer.headers.get("content-type", "").startswith("application/json"), (what, answer.status_code)
    message = answer.json()
    assert message.get("error", {}).get("code") == code and "result" not in message, (what, message)
    return message


@pytest.mark.anyio
@pytest.mark.parametrize("learned", [False, True], ids=["sdk-path", "kit-fast-path"])
async def test_http_legacy_session_refuses_a_call_with_an_invalid_id_and_runs_nothing(http, learned):
    server, client = http
    headers = await open_legacy(client, "/episodes/legacy/mcp")
    if learned:  # a first valid call teaches the kit the session's version: later plain calls take its fast path
        first = await client.post("/episodes/legacy/mcp", content=call_with_id(
            "1", {"name": "get_account", "arguments": {"account_id": "acc_a1"}}), headers=headers)
        assert first.status_code == 200 and not first.json()["result"].get("isError")
    before = digest(server, "legacy")
    for raw_id in BAD_IDS:
        answer = await client.post("/episodes/legacy/mcp", content=call_with_id(raw_id), headers=headers)
        assert answer.status_code == 400, (raw_id, answer.status_code, answer.text)
        assert_error(answer, INVALID_REQUEST, raw_id)
        assert digest(server, "legacy") == before, f"id {raw_id}: the refused call ran"
    # a notification (no id at all) is never answered, and never runs either
    answer = await client.post("/episodes/legacy/mcp", content=NOTIFICATION_CALL, headers=headers)
    assert answer.status_code == 202 and not answer.content
    assert digest(server, "legacy") == before, "a tools/call notification ran"
    # the session still serves real work
    ok = await client.post("/episodes/legacy/mcp", content=call_with_id('"w"'), headers=headers)
    assert not ok.json()["result"].get("isError"), ok.json()
    assert digest(server, "legacy") != before


@pytest.mark.anyio
async def test_http_modern_refuses_a_call_with_an_invalid_id_and_runs_nothing(http):
    server, client = http
    before = digest(server, "modern")
    for raw_id in BAD_IDS:
        answer = await modern_post(client, "/episodes/modern/mcp", call_with_id(raw_id))
        assert answer.status_code == 400, (raw_id, answer.status_code, answer.text)
        assert_error(answer, INVALID_REQUEST, raw_id)
        assert digest(server, "modern") == before, f"id {raw_id}: the refused call ran"
    answer = await modern_post(client, "/episodes/modern/mcp", NOTIFICATION_CALL)
    # the SDK's answer to a notification POST on this wire, which the transport spec leaves to the server (accept
    # with 202 or refuse with a 4xx): mcp 2.0 refuses it (400), mcp >= 2.2 acknowledges and drops it (202)
    major, minor = (int(part) for part in version("mcp").split(".")[:2])
    assert answer.status_code == (400 if (major, minor) < (2, 2) else 202)
    assert digest(server, "modern") == before, "a tools/call notification ran"
    ok = await modern_post(client, "/episodes/modern/mcp", call_with_id('"w"'))
    assert not ok.json()["result"].get("isError"), ok.json()
    assert digest(server, "modern") != before


async def poster(client: httpx.AsyncClient, version: str):
    """A function POSTing one message to `/mcp` as a client of protocol `version` does."""
    if version == MODERN:
        async def post(message: dict) -> httpx.Response:
            return await modern_post(client, "/mcp", json.dumps(message, separators=(",", ":")).encode())
        return post
    headers = await open_legacy(client, "/mcp")

    async def post_legacy(message: dict) -> httpx.Response:
        return await client.post("/mcp", headers=headers, content=json.dumps(message).encode())
    return post_legacy


@pytest.mark.anyio
@pytest.mark.parametrize("version", [LEGACY, MODERN])
async def test_http_unknown_prompt_is_invalid_params(http, version):
    _, client = http
    post = await poster(client, version)
    prompt = await post({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "no_such_prompt"}})
    message = assert_error(prompt, INVALID_PARAMS, "unknown prompt")
    assert "no_such_prompt" in message["error"]["message"] and "policy" in message["error"]["message"]
    known = await post({"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "policy"}})
    assert known.json()["result"]["messages"], known.json()


@pytest.mark.anyio
@pytest.mark.parametrize("version", [LEGACY, MODERN])
async def test_http_non_string_meta_episode_is_invalid_params_and_runs_nothing(http, version):
    server, client = http
    post = await poster(client, version)
    before = digest(server, "default")
    for n, value in enumerate([5, None, True, ["e"], {"id": "e"}]):
        params = ADD_PAYEE | {"_meta": {"shiftbox/episode": value}}
        answer = await post({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call", "params": params})
        message = assert_error(answer, INVALID_PARAMS, f"_meta episode {value!r}")
        assert "shiftbox/episode" in message["error"]["message"], message
        read = await post({"jsonrpc": "2.0", "id": 20 + n, "method": "resources/read",
                           "params": {"uri": "shiftbox://episode/digest", "_meta": {"shiftbox/episode": value}}})
        assert_error(read, INVALID_PARAMS, f"resources/read with _meta episode {value!r}")
    assert digest(server, "default") == before


# -- stdio -------------------------------------------------------------------------------------


@pytest.fixture
def stdio():
    raw = RawStdio()
    raw.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).encode())
    for _ in range(10):  # a cold start on a busy machine can take longer than one wait
        got, _problem = raw.collect(lambda got: any(m.get("id") == "init" for m in got))
        if got:
            break
    assert any(m.get("id") == "init" for m in got), "the stdio server did not answer initialize"
    raw.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield raw
    raw.close()


def stdio_answer(raw: RawStdio, line: bytes, id: str | int) -> dict:
    """Send `line`, then a ping with id `ping-<id>`; the one message that answered `line` (None: none did)."""
    raw.send(line)
    raw.send(json.dumps({"jsonrpc": "2.0", "id": f"ping-{id}", "method": "ping"}).encode())
    got = raw.until(lambda got: any(m.get("id") == f"ping-{id}" for m in got), f"ping after {line!r}")
    others = [m for m in got if m.get("id") != f"ping-{id}"]
    assert len(others) <= 1, others
    return others[0] if others else None


def stdio_digest(raw: RawStdio, n: int, meta: dict | None = None) -> str:
    """The episode's digest, read with `meta` as the request's `_meta` (MODERN_META: as a 2026-07-28 client)."""
    read = {"jsonrpc": "2.0", "id": f"digest-{n}", "method": "resources/read",
            "params": {"uri": "shiftbox://episode/digest", **({"_meta": meta} if meta else {})}}
    raw.send(json.dumps(read).encode())
    got = raw.until(lambda got: any(m.get("id") == f"digest-{n}" for m in got), "digest read")
    return json.loads(got[-1]["result"]["contents"][0]["text"])["digest"]


STDIO_PAYEE = {"name": "add_payee", "arguments": {"customer_id": "cust_0001", "name": "Injected Payee"}}


@pytest.mark.timeout(120)
def test_stdio_refuses_a_call_with_an_invalid_id_and_runs_nothing(stdio):
    before = stdio_digest(stdio, 0)
    for n, raw_id in enumerate(BAD_IDS):
        answer = stdio_answer(stdio, call_with_id(raw_id, STDIO_PAYEE), n)
        assert answer is not None and answer.get("error", {}).get("code") == INVALID_REQUEST, (raw_id, answer)
        assert stdio_digest(stdio, n + 1) == before, f"id {raw_id}: the refused call ran"
    notification = b'{"jsonrpc":"2.0","method":"tools/call","params":' + json.dumps(STDIO_PAYEE).encode() + b"}"
    assert stdio_answer(stdio, notification, "notification") is None
    assert stdio_digest(stdio, 100) == before, "a tools/call notification ran"
    ok = stdio_answer(stdio, call_with_id('"w"', STDIO_PAYEE), "ok")
    assert not ok["result"].get("isError"), ok
    assert stdio_digest(stdio, 101) != before


@pytest.mark.timeout(120)
def test_stdio_unknown_prompt_is_invalid_params(stdio):
    answer = stdio_answer(stdio, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
                                             "params": {"name": "no_such_prompt"}}).encode(), 1)
    assert answer["error"]["code"] == INVALID_PARAMS, answer
    assert "no_such_prompt" in answer["error"]["message"]


@pytest.mark.timeout(120)
def test_stdio_non_string_meta_episode_is_invalid_params_and_runs_nothing(stdio):
    before = stdio_digest(stdio, 0)
    params = STDIO_PAYEE | {"_meta": {"shiftbox/episode": 5}}
    answer = stdio_answer(stdio, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                             "params": params}).encode(), 2)
    assert answer["error"]["code"] == INVALID_PARAMS and "shiftbox/episode" in answer["error"]["message"], answer
    assert stdio_digest(stdio, 1) == before
