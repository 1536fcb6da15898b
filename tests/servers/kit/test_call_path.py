"""The kit answers a validated tools/call itself (DomainServer._answer_call) with the SDK handler's exact result."""

from __future__ import annotations

import importlib.metadata
import json

import pytest
from mcp import Client
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, CallToolResult
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

from shiftbox_servers.kit import DomainServer, get_domain
from shiftbox_servers.kit._binding import without_tracing
from shiftbox_servers.kit._errors import result_model
from shiftbox_servers.kit._server import structured_parts
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


VERSIONS = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
SDK_KEEPS_RESULT_VALIDATOR = hasattr(FuncMetadata, "_output_adapter")
"""An mcp without `FuncMetadata._output_adapter` (2.0) has no validator for the kit to keep: every structured result
then goes through the SDK's own conversion, as the byte comparisons check."""


@pytest.mark.parametrize("version", VERSIONS)
def test_structured_results_are_shaped_as_the_sdk_shapes_them(tmp_path, version):
    """The kit fills the version's envelope with a structured result's text and content (`_wire_structured`):
    the same dict, key order included, as the SDK's conversion and wire shaping of the same result."""
    server = DomainServer(get_domain("banking"), write_fixture_snapshot(tmp_path / "snap"))
    shaped_by_the_kit = 0
    for name, arguments in [("get_account", {"account_id": "acc_a1"}), ("get_account", {"account_id": "acc_zz"}),
                            ("get_transactions", {"account_id": "acc_a1"})]:
        metadata = server.sdk_tools[name].fn_metadata
        raw = result_model(server.run_tool(server.tools.specs[name], "e", metadata.validate_arguments(arguments)))
        variants = [raw]
        if name == "get_account" and type(raw) is metadata.output_model:  # as a dict, odd values
            variants += [raw.model_dump(), {**raw.model_dump(), "masked_number": "Ünïcode ✓ \"q\" \u2022"},
                         raw.model_copy(update={"current_balance": float("nan")}),
                         raw.model_copy(update={"available_balance": float("-inf")})]
        for result in variants:
            expected = server.wire_result(version, metadata.convert_result(result))
            parts = structured_parts(metadata, server._output_adapter(name, metadata), result)
            got = expected if parts is None else server._wire_structured(version, *parts)
            shaped_by_the_kit += parts is not None
            assert json.dumps(got) == json.dumps(expected), (name, result)
            if version == LATEST_PROTOCOL_VERSION:  # the in-process session's shaping: the same result once parsed
                direct = server.wire_result(version, metadata.convert_result(result), surface=False)
                if parts is not None:
                    assert server._wire_structured(version, *parts, surface=False) == direct
                assert CallToolResult.model_validate(direct) == CallToolResult.model_validate(expected)
    if SDK_KEEPS_RESULT_VALIDATOR:
        assert shaped_by_the_kit == 6 and server._envelopes[version, True] is not False
    else:
        assert shaped_by_the_kit == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_a_remembered_params_check_never_passes_other_meta(tmp_path, version):
    """The SDK's params check is remembered per version and `_meta` only: an invalid `_meta` after a valid one
    (and on another version) is still checked, and refused."""
    server = DomainServer(get_domain("banking"), write_fixture_snapshot(tmp_path / "snap"))
    params = {"name": "get_account", "arguments": {"account_id": "acc_a1"}, "_meta": {"progressToken": 1}}
    if version in MODERN_PROTOCOL_VERSIONS:
        envelope = {PROTOCOL_VERSION_META_KEY: version, CLIENT_CAPABILITIES_META_KEY: {}}
        params["_meta"] |= envelope
    bad = {**params, "_meta": {**params["_meta"], "progressToken": {"not": "a token"}}}
    for _ in range(2):
        assert server._params_pass(params, version)
        assert not server._params_pass(bad, version)
        assert server.answer_validated_call(bad, version, "e") is None
    if version not in MODERN_PROTOCOL_VERSIONS:  # the same `_meta` lacks the 2026-era envelope
        assert not server._params_pass(params, MODERN_PROTOCOL_VERSIONS[0])
    assert not server._params_pass({**params, "_meta": 5}, version)


@pytest.mark.skipif(not SDK_KEEPS_RESULT_VALIDATOR,
                    reason=f"mcp {importlib.metadata.version('mcp')} has no FuncMetadata._output_adapter, so the kit "
                           "keeps no validator (test_structured_results_are_shaped_as_the_sdk_shapes_them checks "
                           "that): this test runs in `make env`'s environment, whose mcp has one")
def test_the_remembered_output_validator_follows_the_tools_metadata(tmp_path):
    """The kit keeps the SDK's validator of a tool's results; a tool whose output model is replaced gets the new
    model's validator, never the old one."""
    server = DomainServer(get_domain("banking"), write_fixture_snapshot(tmp_path / "snap"))
    metadata = server.sdk_tools["get_account"].fn_metadata
    first = server._output_adapter("get_account", metadata)
    assert first is server._output_adapter("get_account", metadata)
    account_list = server.sdk_tools["get_accounts"].fn_metadata.output_model
    assert account_list.__name__ == "AccountList" and metadata.output_model.__name__ == "Account"
    metadata.output_model = account_list
    second = server._output_adapter("get_account", metadata)
    assert second is not first
    assert second.validate_python({"customer_id": "c", "accounts": []}) == account_list(customer_id="c", accounts=[])
