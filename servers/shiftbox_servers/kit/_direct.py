"""A `DomainServer` called in process, without MCP: what shiftbox's harness asks of a server (its identity, its tools,
calls in an episode, the final digest read), answered by the kit's own steps, with what the SDK's client gets from
the same server over MCP (tests/servers/kit/test_direct_session.py compares them). No MCP SDK is loaded, but for a
call only the SDK's lenient argument parse can answer (a JSON text in an argument not typed `str`), taken by it; the
protocol's models only for the answers asked for as models (the harness reads the `wire_` ones: their JSON dumps)."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._episode import in_episode
from ._errors import is_refusal
from ._protocol import INVALID_PARAMS, LATEST_PROTOCOL_VERSION, result_dump
from ._requests import RequestRefused, as_sdk_errors, choose_episode, sdk_error

if TYPE_CHECKING:
    from mcp_types import CallToolResult, Implementation, ListToolsResult, ReadResourceResult

    from ._server import DomainServer


class DirectSession:
    """The subset of the SDK's `Client` the harness uses (`server_info`, `list_tools`, `call_tool`, `read_resource`),
    on a `DomainServer` in this process; entered (`async with`), it runs the server's idle-episode eviction as an MCP
    transport does. Answers are shaped for `version`, the protocol the SDK's client and server agree on; a refusal
    raises the SDK's `MCPError`, as its client does (the SDK is loaded then, for the error's type)."""

    def __init__(self, server: DomainServer, version: str = LATEST_PROTOCOL_VERSION):
        self.server = server
        self.version = version
        self._lifespan: contextlib.AbstractAsyncContextManager[Any] | None = None

    async def __aenter__(self) -> DirectSession:
        self._lifespan = self.server._lifespan(None)
        await self._lifespan.__aenter__()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        lifespan, self._lifespan = self._lifespan, None
        return await lifespan.__aexit__(kind, exc, tb) if lifespan is not None else None

    @property
    def server_info(self) -> Implementation:
        return self.server.info

    async def list_tools(self) -> ListToolsResult:
        from mcp_types import ListToolsResult

        return ListToolsResult(tools=self.server.listed_tools())

    def wire_tools(self) -> list[dict[str, Any]]:
        """`list_tools`'s tools as their JSON dumps (`DomainServer.wire_tools`)."""
        return self.server.wire_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, *,
                        meta: dict[str, Any] | None = None) -> CallToolResult:
        """tools/call: the kit's strict check, the call run in its episode, its result as the client parses it."""
        from mcp_types import CallToolResult

        return CallToolResult.model_validate(await self.wire_call(name, arguments, meta=meta))

    async def wire_call(self, name: str, arguments: dict[str, Any] | None = None, *,
                        meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """`call_tool`'s result as the wire dict the client would parse it from (`wire_result(surface=False)`), for
        callers that read it as it is (the harness's world): no model is built. Shared parts (the serverInfo stamp)
        are never to be changed."""
        server = self.server
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta is not None:
            params["_meta"] = meta
        episode_id = self._episode(params)
        with in_episode(episode_id):
            checked = server.check_arguments(params)
            if is_refusal(checked):
                return server.wire_result(self.version, checked, surface=False)
            wire = server.direct_call(params, self.version, episode_id, checked)
            return wire if wire is not None else await self._sdk_call(params, episode_id, checked)

    async def read_resource(self, uri: str, *, meta: dict[str, Any] | None = None) -> ReadResourceResult:
        """resources/read in the request's episode; read with the close flag, the episode ends (`after_read`)."""
        from mcp_types import ReadResourceResult

        return ReadResourceResult.model_validate(await self.wire_read(uri, meta=meta))

    async def wire_read(self, uri: str, *, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """`read_resource`'s result as the wire dict the client would parse it from (as `wire_call`'s)."""
        server = self.server
        resource = server.resources.get(uri)
        if resource is None:
            raise sdk_error(RequestRefused(INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri}))
        params = {"uri": uri, "_meta": meta}
        episode_id = self._episode(params)
        with in_episode(episode_id), as_sdk_errors():
            text = resource.read()
            if not isinstance(text, str):
                text = await text
        server.after_read(episode_id, params)
        read = result_dump(ttlMs=0, cacheScope="private",  # `ReadResourceResult`'s, its cache defaults first
                           contents=[{"uri": uri, "mimeType": resource.mime_type, "text": text}])
        return server.wire_result(self.version, read, method="resources/read", surface=False)

    def _episode(self, params: dict[str, Any]) -> str:
        with as_sdk_errors():
            return choose_episode(None, params)

    async def _sdk_call(self, params: dict[str, Any], episode_id: str, checked: Any) -> dict[str, Any]:
        """A call only the SDK's lenient parse can answer: its handler's steps, as it answers them in process."""
        wire = self.server.answer_validated_call(params, self.version, episode_id, checked)
        if wire is not None:
            return wire
        from mcp.shared.exceptions import MCPError
        from mcp_types import CallToolResult, TextContent

        try:
            result = await self.server.mcp.call_tool(params["name"], params.get("arguments") or {})
        except MCPError:
            raise
        except Exception as exc:  # what the SDK's tools/call handler answers for a tool's failure
            result = CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
        return self.server.wire_result(self.version, result, surface=False)
