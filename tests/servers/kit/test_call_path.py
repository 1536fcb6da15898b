"""The kit answers a validated tools/call itself (DomainServer._answer_call) with the SDK handler's exact result."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from shiftbox_servers.kit import DomainServer, get_domain
from shiftbox_servers.kit._server import without_tracing
from tests.servers.banking.conftest import write_fixture_snapshot
from tests.servers.helpers import call

pytestmark = pytest.mark.anyio

CALLS = [
    ("get_account", {"account_id": "acc_a1"}, None),
    ("get_account", {"account_id": "acc_zz"}, None),  # not_found: a domain error result
    ("get_account", {"account_id": 5}, None),  # refused by the kit's strict check before either path
    ("get_account", {"account_id": "acc_a1"}, "ep-2"),  # _meta: the params carry more than name and arguments
    ("add_payee", {"customer_id": "cust_a", "name": "  Gas   Co "}, None),  # a write: the clock moves
    ("add_payee", {"customer_id": "cust_a", "name": "Gas Co"}, None),  # conflict
    ("add_payee", {"customer_id": "cust_a", "name": "x", "deliver_type": "check"}, "ep-2"),
    ("get_transactions", {"account_id": "acc_a1"}, None),
]


MODES = ["legacy", "auto"]  # the initialize handshake; 2026-07-28 (no handshake, a per-request envelope)


async def results(server: DomainServer, mode: str) -> list[dict]:
    async with Client(server.mcp, mode=mode) as client:
        out = []
        for tool, arguments, episode in CALLS:
            result = await call(client, tool, arguments, episode)
            out.append(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        digest = await client.read_resource("shiftbox://episode/digest")
        out.append(json.loads(digest.contents[0].text))
        return out


@pytest.mark.parametrize("mode", MODES)
async def test_the_kits_answer_equals_the_sdk_handlers(tmp_path, monkeypatch, mode):
    snapshot = write_fixture_snapshot(tmp_path / "snap")
    fast = await results(DomainServer(get_domain("banking"), snapshot), mode)
    answered = []
    monkeypatch.setattr(DomainServer, "_answer_call", lambda self, ctx, episode: answered.append(1))
    through_sdk = await results(DomainServer(get_domain("banking"), snapshot), mode)
    assert answered, "the kit's own answer was not asked for"
    assert fast == through_sdk
    assert fast[0]["structuredContent"]["account_id"] == "acc_a1"
    assert fast[1]["isError"] and fast[2]["isError"]


@pytest.mark.parametrize("mode", MODES)
async def test_the_kit_answers_validated_calls_itself(tmp_path, monkeypatch, mode):
    """The SDK's tool handler is not reached for a call the kit answers, on either era's protocol."""
    snapshot = write_fixture_snapshot(tmp_path / "snap")
    server = DomainServer(get_domain("banking"), snapshot)

    async def no_sdk_handler(*args, **kwargs):
        raise AssertionError("the SDK's tool handler ran")

    monkeypatch.setattr(type(server.mcp), "call_tool", no_sdk_handler)
    async with Client(server.mcp, mode=mode) as client:
        result = await call(client, "get_account", {"account_id": "acc_a1"})
    assert not result.is_error


def test_no_opentelemetry_span_per_message(tmp_path):
    snapshot = write_fixture_snapshot(tmp_path / "snap")
    server = DomainServer(get_domain("banking"), snapshot)
    names = [type(m).__name__ for m in server.mcp.middleware]
    assert "OpenTelemetryMiddleware" not in names
    assert server._episode_middleware in server.mcp.middleware
    assert without_tracing([object()]) != []
