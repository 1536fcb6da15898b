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


IN_PROCESS_CALLS = """
import anyio, json, sys
from shiftbox.world import open_world

async def main():
    async with open_world("banking", graph_refusal=True, dependency_graph=True) as world:
        episode = world.episode("models")
        calls = [("get_customer_by_id", {"customer_id": "cust_0001"}), ("get_customer_by_id", {"customer_id": "x"}),
                 ("get_customer_by_id", {"customer_id": 5}), ("no_such_tool", {}),
                 ("get_customer_by_id", {"customer_id": "\\ud83d"}), ("authorize_payment_request", {"request_id": "req_0001"})]
        records = [await episode.call(name, arguments, call_id=f"c{i}", message_index=i, agent_turn=i)
                   for i, (name, arguments) in enumerate(calls)]
        digest = await episode.close()
    return [(r.is_error, r.error_kind) for r in records], digest

kinds, digest = anyio.run(main)
print(json.dumps({"kinds": kinds, "digest": digest, "models": sorted(m for m in sys.modules if m.startswith("mcp"))}))
"""


def test_in_process_a_run_loads_no_protocol_model_for_results_failures_or_the_digest():
    """The in-process world's answers are the kit's wire dicts, failures included (`FailedCall`): its listing, calls
    (a result, a domain error, refused arguments, an unknown tool, a lone surrogate, a graph refusal) and final digest
    read load neither the MCP SDK nor the protocol's models (`mcp_types`, about 0.2 s of CPU to import)."""
    import subprocess
    import sys

    from tests.servers.kit.test_direct_session import REPO

    done = subprocess.run([sys.executable, "-c", IN_PROCESS_CALLS], capture_output=True, text=True, timeout=300,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["kinds"] == [[False, None], [True, "not_found"], [True, "invalid_arguments"], [True, "unknown_tool"],
                            [True, "invalid_arguments"], [True, "precondition_failed"]]
    assert len(out["digest"]) == 64 and out["models"] == []
