"""Plain tools/call POSTs answered by the kit in the request's task (SessionCalls): the same bytes as the SDK's
session answers, and only for live sessions whose negotiated version the kit has seen; on 2026-07-28 (no
sessions) the same bytes as the SDK's single-exchange entry, after the checks it makes."""

from __future__ import annotations

import json

import httpx
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from shiftbox_servers.kit import EPISODE_META_KEY, SessionCalls

pytestmark = pytest.mark.anyio

CALLS = [
    {"name": "get_account", "arguments": {"account_id": "acc_a1"}},
    {"name": "get_account", "arguments": {"account_id": "acc_zz"}},
    {"name": "get_account", "arguments": {"account_id": 5}},
    {"name": "get_account", "arguments": {"account_id": "acc_a1", "extra": 1}},
    {"name": "get_account"},
    {"name": "get_account", "arguments": [1]},
    {"name": "no_such_tool", "arguments": {}},
    {"name": "add_payee", "arguments": {"customer_id": "cust_a", "name": "  Gas   Co "}},
    {"name": "add_payee", "arguments": {"customer_id": "cust_a", "name": "Gas Co"}},
    {"name": "get_transactions", "arguments": {"account_id": "acc_a1"}},
    {"name": "add_payee", "arguments": {"customer_id": "cust_a", "name": "Ünï \"Co\" ✓"}},  # non-ASCII
]


class Session:
    def __init__(self, client: httpx.AsyncClient, path: str, version: str):
        self.client, self.path, self.version, self.id, self.next = client, path, version, None, 0

    async def post(self, message: dict, *, version_header: bool = True) -> httpx.Response:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self.id:
            headers["mcp-session-id"] = self.id
            if version_header:
                headers["mcp-protocol-version"] = self.version
        return await self.client.post(self.path, content=json.dumps(message), headers=headers)

    async def open(self) -> None:
        answer = await self.request("initialize", {"protocolVersion": self.version, "capabilities": {},
                                                   "clientInfo": {"name": "t", "version": "1"}})
        self.id = answer.headers["mcp-session-id"]
        assert (await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202

    async def request(self, method: str, params: dict, *, version_header: bool = True) -> httpx.Response:
        self.next += 1
        return await self.post({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params},
                               version_header=version_header)


@pytest.fixture
def http(banking_http):
    server, app, client = banking_http
    return server, app.calls, client


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
async def test_same_bytes_as_the_sdks_session(http, monkeypatch, version):
    _, calls, client = http
    answered = []
    answer = SessionCalls._answer
    monkeypatch.setattr(SessionCalls, "_answer", lambda self, *a: answered.append(answer(self, *a)) or answered[-1])
    fast, through_sdk = Session(client, "/episodes/a/mcp", version), Session(client, "/episodes/b/mcp", version)
    await fast.open()
    await through_sdk.open()
    for params in CALLS:
        got = await fast.request("tools/call", params)
        # without the version header the kit leaves the call to the SDK (which then assumes its negotiated one)
        expected = await through_sdk.request("tools/call", params, version_header=False)
        assert got.status_code == expected.status_code == 200
        assert got.content == expected.content, params
        assert got.headers["mcp-session-id"] == fast.id
        assert got.headers["content-type"] == expected.headers["content-type"]
    assert len([a for a in answered if a is not None]) == len(CALLS) - 1  # the first call taught the version
    assert calls.versions[fast.id] == version


async def test_other_requests_and_ended_sessions_go_to_the_sdk(http):
    server, calls, client = http
    session = Session(client, "/episodes/c/mcp", "2025-06-18")
    await session.open()
    await session.request("tools/call", CALLS[0])
    assert session.id in calls.versions
    listed = await session.request("tools/list", {})
    assert listed.status_code == 200 and "tools" in listed.json()["result"]
    wrong_version = await session.request("tools/call", CALLS[0] | {"_meta": {"progressToken": 1}})
    assert not wrong_version.json()["result"].get("isError")
    deleted = await client.delete("/mcp", headers={"mcp-session-id": session.id, "mcp-protocol-version": "2025-06-18"})
    assert deleted.status_code == 200
    gone = await session.request("tools/call", CALLS[0])
    assert gone.status_code == 404  # the SDK's answer for an ended session
    assert session.id not in calls.versions


async def test_without_the_sdks_session_table_no_call_is_taken(http, monkeypatch):
    """`_server_instances` is private to the SDK: without it, the kit answers nothing itself."""
    _, calls, client = http
    session = Session(client, "/episodes/d/mcp", "2025-06-18")
    await session.open()
    await session.request("tools/call", CALLS[0])
    assert calls._open_session(session.id) is not None
    monkeypatch.delattr(calls.manager, "_server_instances")
    assert calls._open_session(session.id) is None


# -- 2026-07-28: no handshake, each POST carries its protocol version and client in params._meta ---------

MODERN = "2026-07-28"
ENVELOPE = {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_INFO_META_KEY: {"name": "t", "version": "1"},
            CLIENT_CAPABILITIES_META_KEY: {}}
MODERN_CALLS = [{**params, "_meta": ENVELOPE} for params in CALLS] + [
    {"name": "add_payee", "arguments": {"customer_id": "cust_a", "name": "Café Ünïcode ✓"}, "_meta": ENVELOPE},
    {"name": "get_account", "arguments": {"account_id": "acc_a1"}, "_meta": {**ENVELOPE, "progressToken": 3}},
]


def modern_headers(message: dict, **changes: str | None) -> dict[str, str]:
    """The headers the SDK's client sends with a 2026-07-28 POST, with `changes` (None: left out)."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": MODERN, "mcp-method": message["method"]}
    name = (message.get("params") or {}).get("name")
    if isinstance(name, str):
        headers["mcp-name"] = name
    headers.update(changes)
    return {k: v for k, v in headers.items() if v is not None}


@pytest.fixture
def sdk_entries(monkeypatch):
    """How many POSTs reached the SDK's 2026-07-28 entry (`handle_modern_request`)."""
    from mcp.server import streamable_http_manager

    entries = []
    entry = streamable_http_manager.handle_modern_request

    async def counting(*args, **kwargs):
        entries.append(1)
        return await entry(*args, **kwargs)

    monkeypatch.setattr(streamable_http_manager, "handle_modern_request", counting)
    return entries


async def both_paths(app, client, path_fast: str, path_sdk: str, message: dict, headers: dict | list
                     ) -> tuple[httpx.Response, httpx.Response]:
    """The same POST answered with the kit's fast path on, then by the SDK alone (the router's `calls` off)."""
    got = await client.post(path_fast, content=json.dumps(message), headers=headers)
    calls, app.calls = app.calls, None
    try:
        expected = await client.post(path_sdk, content=json.dumps(message), headers=headers)
    finally:
        app.calls = calls
    return got, expected


async def test_2026_calls_take_the_fast_path_with_the_sdks_bytes(banking_http, sdk_entries):
    _, app, client = banking_http
    for i, params in enumerate(MODERN_CALLS):
        message = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": params}
        before = len(sdk_entries)
        got, expected = await both_paths(app, client, "/episodes/a/mcp", "/episodes/b/mcp", message,
                                          modern_headers(message))
        assert len(sdk_entries) == before + 1, f"the SDK answered the fast path's call too: {params}"
        assert got.status_code == expected.status_code, params
        assert got.content == expected.content, params
        assert got.headers["content-type"] == expected.headers["content-type"]
        assert "mcp-session-id" not in got.headers
    answer = json.loads(got.content)["result"]  # the last call: a result with the 2026-era envelope
    assert answer["resultType"] == "complete" and "io.modelcontextprotocol/serverInfo" in answer["_meta"]
    assert answer["structuredContent"]["account_id"] == "acc_a1"


async def test_2026_calls_on_the_plain_endpoint_pick_their_episode_by_meta(banking_http, sdk_entries):
    """What shiftbox's harness sends: `/mcp`, the episode in `_meta`."""
    server, app, client = banking_http
    for i, episode in enumerate(["h1", "h1", "h2"]):  # each call runs twice: once per path
        params = {"name": "add_payee", "arguments": {"customer_id": "cust_a", "name": f"Co {i}"},
                  "_meta": {**ENVELOPE, EPISODE_META_KEY: episode}}
        message = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
        got, expected = await both_paths(app, client, "/mcp", "/mcp", message, modern_headers(message))
        assert got.status_code == 200 and not got.json()["result"].get("isError")
    assert len(sdk_entries) == 3  # the SDK's answers only
    assert server.episodes.get("h1").tool_calls == 4 and server.episodes.get("h2").tool_calls == 2


def refused_variants() -> list[tuple[str, dict, dict | list]]:
    """2026-07-28 POSTs the SDK refuses or treats specially: the kit must leave each to it."""
    plain = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
             "params": {"name": "get_account", "arguments": {"account_id": "acc_a1"}, "_meta": ENVELOPE}}
    h = modern_headers(plain)

    def params(**changes):
        return {**plain, "params": {**plain["params"], **changes}}

    return [
        ("name header differs", plain, modern_headers(plain, **{"mcp-name": "get_transactions"})),
        ("no method header", plain, modern_headers(plain, **{"mcp-method": None})),
        ("method header differs", plain, modern_headers(plain, **{"mcp-method": "tools/list"})),
        ("version header twice", plain, [*h.items(), ("mcp-protocol-version", MODERN)]),
        ("body version differs", params(_meta={**ENVELOPE, PROTOCOL_VERSION_META_KEY: "2025-06-18"}), h),
        ("no envelope", params(_meta={}), h),
        ("unsupported version", params(_meta={**ENVELOPE, PROTOCOL_VERSION_META_KEY: "2099-01-01"}),
         modern_headers(plain, **{"mcp-protocol-version": "2099-01-01"})),
        ("bad client info", params(_meta={**ENVELOPE, CLIENT_INFO_META_KEY: 5}), h),
        ("no JSON accepted", plain, modern_headers(plain, accept="text/event-stream")),
        ("not JSON content", plain, modern_headers(plain, **{"content-type": "text/plain"})),
        ("foreign origin", plain, modern_headers(plain, origin="http://evil.example")),
        ("episode meta not a string", params(_meta={**ENVELOPE, EPISODE_META_KEY: 5}), h),
        ("episode meta names another episode", params(_meta={**ENVELOPE, EPISODE_META_KEY: "other"}), h),
        ("more params than the kit takes", params(task={"ttl": 1}), h),
        ("arguments the kit refuses", params(arguments={"account_id": 5}), h),
    ]


@pytest.mark.parametrize("case", [c[0] for c in refused_variants()])
async def test_2026_requests_the_sdk_refuses_get_its_answer(banking_http, case):
    _, app, client = banking_http
    _, message, headers = next(c for c in refused_variants() if c[0] == case)
    got, expected = await both_paths(app, client, "/episodes/a/mcp", "/episodes/a/mcp", message, headers)
    assert (got.status_code, got.content) == (expected.status_code, expected.content)
    assert got.headers.get("content-type") == expected.headers.get("content-type")


async def test_header_checks_still_refuse_after_a_call_passed(banking_http):
    """The kit remembers header values that passed the SDK's checks; other values are still checked."""
    _, app, client = banking_http
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "get_account", "arguments": {"account_id": "acc_a1"}, "_meta": ENVELOPE}}
    assert (await client.post("/mcp", content=json.dumps(message), headers=modern_headers(message))).status_code == 200
    for changes, status in [({"origin": "http://evil.example"}, 403), ({"host": "evil.example"}, 421),
                            ({"accept": "text/event-stream"}, 406), ({"content-type": "text/plain"}, 400)]:
        refused = await client.post("/mcp", content=json.dumps(message), headers=modern_headers(message, **changes))
        assert refused.status_code == status, changes
    assert (await client.post("/mcp", content=json.dumps(message), headers=modern_headers(message))).status_code == 200


# -- refusals carry the envelope the SDK gives every tools/call answer of the version ------------------------

REFUSALS = [
    {"name": "get_account", "arguments": {"account_id": 5}},  # the kit's strict argument check
    {"name": "no_such_tool", "arguments": {}},
    {"name": "get_account", "arguments": {"account_id": "acc_a1", "extra": 1}},
]
DOMAIN_ERROR = {"name": "get_account", "arguments": {"account_id": "acc_zz"}}  # shaped by the SDK's runner


def envelope(answer: dict) -> tuple:
    """The keys of a tools/call result and of its `_meta`, in order (what the version's wire shaping decides)."""
    result = answer["result"]
    return tuple(result), tuple(result.get("_meta") or {}), result.get("resultType")


@pytest.mark.parametrize("fast_path", [True, False])
@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, MODERN])
async def test_refusals_have_the_envelope_of_the_sdks_answers(banking_http, version, fast_path):
    """A call the kit refuses before any tool runs is shaped for the version's wire as the SDK shapes a tool's
    error result: on 2026-07-28 `resultType` and the serverInfo stamp, before it no 2026-era field."""
    _, app, client = banking_http
    calls, app.calls = app.calls, app.calls if fast_path else None
    try:
        if version == MODERN:
            async def ask(params, i):
                message = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {**params, "_meta": ENVELOPE}}
                return (await client.post("/episodes/r/mcp", content=json.dumps(message),
                                          headers=modern_headers(message))).json()
        else:
            session = Session(client, "/episodes/r/mcp", version)
            await session.open()
            await session.request("tools/call", CALLS[0], version_header=False)  # the kit learns the version

            async def ask(params, i):
                return (await session.request("tools/call", params)).json()
        expected = envelope(await ask(DOMAIN_ERROR, 1))
        for i, params in enumerate(REFUSALS):
            answer = await ask(params, i + 2)
            assert answer["result"]["isError"] is True
            assert envelope(answer) == expected, params
    finally:
        app.calls = calls
    keys, meta_keys, result_type = expected
    assert (result_type == "complete") == (version == MODERN) == ("io.modelcontextprotocol/serverInfo" in meta_keys)


@pytest.mark.parametrize("result", [
    {"content": [{"type": "text", "text": "Ünï \"q\" ✓ \n"}], "isError": False},
    {"structuredContent": {"big": 2 ** 70, "f": 1e16, "g": 0.1, "n": None, "nan": float("nan"), "inf": float("inf")}},
])
@pytest.mark.parametrize("request_id", [7, "s-1"])
def test_the_handshake_answer_is_the_sdks_jsonrpc_response(result, request_id):
    """The kit dumps a handshake-era answer without the model around it: the same JSON as the SDK's
    `JSONRPCResponse` dump, non-finite floats as null included."""
    from mcp_types import JSONRPCResponse

    from shiftbox_servers.kit._http_calls import response_json

    expected = JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result).model_dump_json(by_alias=True,
                                                                                            exclude_unset=True)
    assert response_json(request_id, result) == expected
