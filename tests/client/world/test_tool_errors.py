"""A failed tool call, from the server's result to the trajectory record and back (replay, gateway)."""

from __future__ import annotations

import json

import pytest

from shiftbox.world import client_result, open_world, tool_message_content
from shiftbox_servers.kit import ERROR_META_KEY

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("name", "arguments", "kind", "detail"), [
    ("get_account", {"account_id": 5}, "invalid_arguments", {"fields": ["account_id"]}),
    ("get_account", {"account_id": "acc_99999"}, "not_found", {"field": "account_id"}),
    ("get_acount", {}, "unknown_tool", {}),
])
async def test_errors_are_recorded_with_their_kind_and_rebuilt_as_the_server_sent_them(name, arguments, kind,
                                                                                     detail):
    async with open_world("banking") as world:
        record = await world.episode("errors").call(name, arguments, call_id="c0", message_index=0, agent_turn=0)
    sent = client_result(record)  # as the server sent it (in process: its wire dict, parsed as a client does)
    # on the wire: no structured content (it would not match the tool's output schema), the error in _meta
    assert sent.is_error and sent.structured_content is None
    error = sent.meta[ERROR_META_KEY]
    assert error["kind"] == kind and error["message"] and {k: error[k] for k in detail} == detail
    assert [json.loads(c.text) for c in sent.content] == [{"error": error}]
    # recorded as before the wire format changed: {"error": {...}} and its kind
    assert (record.is_error, record.error_kind, record.result) == (True, kind, {"error": error})
    # an agent in the harness is shown the very text any other MCP client gets
    assert tool_message_content(record) == sent.content[0].text
    # rebuilt from the record (replay, the gateway): the same result the server sent (but for `_meta` the
    # protocol layer adds, such as the server's identity under 2026-07-28)
    saved = record.model_validate(record.model_dump())
    assert saved._client_result is None
    rebuilt = client_result(saved)
    assert rebuilt.meta == {ERROR_META_KEY: error}
    assert rebuilt.model_dump(exclude={"meta"}) == sent.model_dump(exclude={"meta"})


async def test_in_process_a_call_is_recorded_from_the_kits_wire_dict_without_parsing_it(monkeypatch):
    """The in-process world reads the kit's wire dict of a result as it is: no protocol model is parsed per call
    (`CallToolResult.model_validate`), only where one is asked for (`client_result`: the gateway, `shiftbox serve`)."""
    from mcp_types import CallToolResult

    parsed = []
    validate = CallToolResult.model_validate
    monkeypatch.setattr(CallToolResult, "model_validate",
                        classmethod(lambda cls, *args, **kwargs: parsed.append(1) or validate(*args, **kwargs)))
    async with open_world("banking") as world:
        episode = world.episode("wire")
        ok = await episode.call("get_account", {"account_id": "acc_00001"}, call_id="c0", message_index=0,
                                agent_turn=0)
        failed = await episode.call("get_account", {"account_id": "acc_99999"}, call_id="c1", message_index=1,
                                    agent_turn=1)
    assert parsed == []
    assert not ok.is_error and ok.result["account_id"] == "acc_00001"
    assert (failed.is_error, failed.error_kind) == (True, "not_found")
    sent = client_result(ok)
    assert parsed == [1] and sent.structured_content == ok.result
