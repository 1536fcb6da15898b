"""The harness refuses a server result that breaks the tool's output schema, with its compiled check."""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as McpTool
from pydantic import BaseModel

from shiftbox.errors import InfrastructureError
from shiftbox.world import CompiledOutputSchemas, compile_output_schemas, open_world
from shiftbox.world._output_schemas import SchemaCheckedSession

pytestmark = pytest.mark.anyio
MCP_VERSION = tuple(int(part) for part in version("mcp").split(".")[:2])


class Item(BaseModel):
    item_id: str
    count: int


class Unchecked(FuncMetadata):
    """A tool's metadata that sends the tool's `CallToolResult` as it is (every mcp release checks it otherwise)."""

    def convert_result(self, result):
        return result


def lying_server(answers: list[dict | None]) -> MCPServer:
    """A server publishing `Item` as `lookup`'s output schema that sends whatever `answers` holds next,
    unchecked (the SDK's own check of a result is its tool metadata's, replaced here)."""

    async def lookup() -> Item:
        structured = answers.pop(0)
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(structured))],
                              structured_content=structured)

    tool = Tool.from_function(lookup)
    assert tool.output_schema is not None
    metadata = tool.fn_metadata  # keep the published schema, drop the server's own check
    tool.fn_metadata = Unchecked(arg_model=metadata.arg_model, output_schema=metadata.output_schema,
                                 output_model=metadata.output_model, wrap_output=metadata.wrap_output)
    return MCPServer(name="lying", tools=[tool])


@pytest.mark.parametrize(("sent", "error"), [
    ({"item_id": "i1", "count": "three"}, "Invalid structured content returned by tool lookup"),
    ({"item_id": "i1"}, "Invalid structured content returned by tool lookup"),
    (None, "has an output schema but did not return structured content"),
])
async def test_a_result_breaking_the_output_schema_is_refused(sent, error):
    answers = [{"item_id": "i0", "count": 2}, sent]
    async with Client(lying_server(answers)) as client:
        check = compile_output_schemas(client)
        await client.list_tools()  # as the harness does first; an unlisted tool goes to the SDK, which lists
        ok = await client.call_tool("lookup", {})
        assert ok.structured_content == {"item_id": "i0", "count": 2} and check.accepted == 1
        with pytest.raises(RuntimeError, match=error):
            await client.call_tool("lookup", {})
        assert check.accepted == 1


async def test_a_schema_that_does_not_compile_falls_back_to_the_sdks_check():
    async with Client(lying_server([{"item_id": "i0", "count": 2}, {"item_id": "i1", "count": "x"}])) as client:
        check = compile_output_schemas(client)
        await client.list_tools()
        client.session._tool_output_schemas["lookup"] = {"$ref": "https://example.invalid/item.json"}
        with pytest.raises(Exception) as refused:  # noqa: B017 - the SDK's own check, whose error is its own
            await client.call_tool("lookup", {})
        if MCP_VERSION >= (2, 2):  # mcp 2.0 raises jsonschema's unresolvable-reference error as it is
            assert refused.match("Invalid schema for tool lookup")
        assert check.accepted == 0


class LyingSession:
    """An in-process session (what `SchemaCheckedSession` wraps) publishing `Item` as `lookup`'s output schema and
    answering whatever `answers` holds next."""

    def __init__(self, answers: list[dict | None]):
        self.answers = answers
        self.identity = None
        self.server = self
        self.calls = 0

    def wire_tools(self) -> list[dict]:
        return [McpTool(name="lookup", input_schema={"type": "object"}, output_schema=Item.model_json_schema())
                .model_dump(mode="json", by_alias=True, exclude_none=True)]

    async def wire_call(self, name, arguments=None, *, meta=None) -> dict:
        structured = self.answers.pop(0)
        content = [TextContent(type="text", text=json.dumps(structured))]
        result = CallToolResult(content=content) if structured is None else CallToolResult(
            content=content, structured_content=structured)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)


@pytest.mark.parametrize(("sent", "error"), [
    ({"item_id": "i1", "count": "three"}, "Invalid structured content returned by tool lookup"),
    ({"item_id": "i1"}, "Invalid structured content returned by tool lookup"),
    (None, "has an output schema but did not return structured content"),
])
async def test_in_process_a_result_breaking_the_output_schema_is_refused_as_the_sdk_refuses_it(sent, error):
    session = SchemaCheckedSession(LyingSession([{"item_id": "i0", "count": 2}, sent]))
    assert (await session.wire_call("lookup", {}))["structuredContent"] == {"item_id": "i0", "count": 2}
    with pytest.raises(RuntimeError, match=error):
        await session.wire_call("lookup", {})
    async with Client(lying_server([sent])) as client:  # the SDK's client refuses it with the same words
        await client.list_tools()
        with pytest.raises(RuntimeError, match=error):
            await client.call_tool("lookup", {})


async def test_the_in_process_harness_checks_results_against_their_schemas_and_records_a_refusal():
    async with open_world("banking") as world:
        assert isinstance(world.client, SchemaCheckedSession)
        record = await world.episode("schemas").call("get_account", {"account_id": "acc_00001"}, call_id="c0",
                                                     message_index=0, agent_turn=0)
        assert not record.is_error
        world.client._schemas["get_account"] = {"type": "object", "required": ["no_such_field"]}
        with pytest.raises(InfrastructureError, match="Invalid structured content returned by tool get_account"):
            await world.episode("schemas").call("get_account", {"account_id": "acc_00001"}, call_id="c1",
                                                message_index=1, agent_turn=1)


async def test_the_harness_checks_results_with_compiled_schemas_and_records_a_refusal():
    async with open_world("banking", servers="stdio") as world:  # a client of the SDK's (the modes that speak MCP)
        check = world.client.session.validate_tool_result.__self__
        assert isinstance(check, CompiledOutputSchemas)
        record = await world.episode("schemas").call("get_account", {"account_id": "acc_00001"}, call_id="c0",
                                                     message_index=0, agent_turn=0)
        assert not record.is_error and check.accepted == 1
        world.client.session._tool_output_schemas["get_account"] = {
            "type": "object", "required": ["no_such_field"]}
        with pytest.raises(InfrastructureError, match="Invalid structured content returned by tool get_account"):
            await world.episode("schemas").call("get_account", {"account_id": "acc_00001"}, call_id="c1",
                                                message_index=1, agent_turn=1)
