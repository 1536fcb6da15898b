"""Calling a domain server through a real MCP client (so strictness and errors are what clients see)."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp_types import CallToolResult

from shiftbox_servers.kit import EPISODE_META_KEY


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None,
               episode: str | None = None) -> CallToolResult:
    meta = {EPISODE_META_KEY: episode} if episode else None
    return await client.call_tool(tool, arguments or {}, meta=meta)


async def ok(client: Client, tool: str, arguments: dict[str, Any] | None = None,
             episode: str | None = None) -> dict[str, Any]:
    result = await call(client, tool, arguments, episode)
    assert not result.is_error, f"{tool} failed: {result.structured_content or result.content}"
    return result.structured_content


async def fails(client: Client, tool: str, arguments: dict[str, Any] | None, kind: str,
                episode: str | None = None) -> dict[str, Any]:
    result = await call(client, tool, arguments, episode)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
    error = result.structured_content["error"]
    assert error["kind"] == kind, f"expected {kind}, got {error}"
    return error


async def digest(client: Client, episode: str | None = None) -> str:
    import json

    meta = {EPISODE_META_KEY: episode} if episode else None
    res = await client.read_resource("shiftbox://episode/digest", meta=meta)
    return json.loads(res.contents[0].text)["digest"]
