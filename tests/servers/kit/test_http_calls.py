"""Plain tools/call POSTs answered by the kit in the request's task (SessionCalls): the same bytes as the SDK's
session answers, and only for live sessions whose negotiated version the kit has seen."""

from __future__ import annotations

import json

import httpx
import pytest

from shiftbox_servers.kit import SessionCalls

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


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
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
