"""Tool results checked against their listed output schemas by a validator compiled once per schema.

The mcp client re-validates every structured result with `jsonschema` (`ClientSession.validate_tool_result`):
about 1 ms for a retail order, ten times what the tool takes on the server. `CompiledOutputSchemas`
compiles each schema the session has listed once with jsonschema-rs (same draft, formats not asserted,
`$ref`s resolved within the schema only) and accepts a result that passes it in microseconds; every other
case — a rejected result, a tool not yet listed, a schema that does not compile — goes to the SDK's own
check, which raises its usual `RuntimeError`. So a server result that breaks its schema is still refused.
The in-process session (no MCP client: `SchemaCheckedSession`) is checked by the same compiled validators and
refuses a result as the SDK's client does, with a `RuntimeError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import ClientSession
    from mcp_types import CallToolResult

    from shiftbox_servers.kit import DirectSession


def _no_remote_refs(uri: str) -> Any:
    raise ValueError(f"output schemas resolve $ref within themselves only, not {uri}")


class CompiledValidators:
    """Tool name -> its output schema's compiled validator, compiled again when the schema (its object) changes."""

    def __init__(self) -> None:
        self._compiled: dict[str, tuple[dict[str, Any], Any]] = {}  # tool -> (the schema compiled, validator)

    def validator(self, name: str, schema: dict[str, Any]) -> Any:
        """The compiled validator of `schema`; raises (ValueError, jsonschema_rs errors) for one that does not compile."""
        compiled = self._compiled.get(name)
        if compiled is None or compiled[0] is not schema:
            validator = jsonschema_rs.validator_for(schema, validate_formats=False, retriever=_no_remote_refs)
            compiled = self._compiled[name] = (schema, validator)
        return compiled[1]


class CompiledOutputSchemas:
    """The `validate_tool_result` of one session, with the happy path on compiled validators."""

    def __init__(self, session: ClientSession):
        self._session = session
        self._sdk_check = session.validate_tool_result
        self._validators = CompiledValidators()
        self.accepted = 0
        """Results accepted by a compiled validator (the rest went to the SDK's check)."""

    async def validate_tool_result(self, name: str, result: CallToolResult) -> None:
        """Return if `result` conforms to tool `name`'s output schema; raise as the SDK does otherwise."""
        if self._accepts(name, result):
            self.accepted += 1
            return
        await self._sdk_check(name, result)

    def _accepts(self, name: str, result: CallToolResult) -> bool:
        # The schema the SDK itself would check against (its cache of the last listing); a re-listing
        # stores a new dict, so identity tells a stale validator.
        schemas = getattr(self._session, "_tool_output_schemas", None)
        schema = schemas.get(name) if isinstance(schemas, dict) else None
        if schema is None or result.structured_content is None:
            return False
        try:
            validator = self._validators.validator(name, schema)
        except Exception:  # an invalid or unresolvable schema: the SDK's check says so
            return False
        try:
            return validator.is_valid(result.structured_content)
        except (TypeError, ValueError):  # not JSON (a Python object from an in-process server): the SDK decides
            return False


def compile_output_schemas(client: Client) -> CompiledOutputSchemas:
    """Make the entered `client` check tool results with compiled output schemas; returns that check."""
    check = CompiledOutputSchemas(client.session)
    client.session.validate_tool_result = check.validate_tool_result  # type: ignore[method-assign]
    return check


class SchemaCheckedSession:
    """An in-process `DirectSession` as the world holds a client (its `Client`: `server_info`, `wire_tools`,
    `wire_call`, `read_text`), each successful tool result checked against the tool's listed output schema as the
    SDK's client checks it (`ClientSession.validate_tool_result`: a result without structured content, or with
    content its schema refuses, raises `RuntimeError`). The world reads its `wire_` answers and `read_text` (the
    results' JSON dumps: no protocol model is built in a run), as it reads the SDK's client's (`SdkClientSession`)."""

    def __init__(self, session: DirectSession):
        self.session = session
        self.server_info = session.server.identity
        """The server's name, version and description (`initialize`'s serverInfo, not as the protocol's model)."""
        self._tools = session.wire_tools()
        """The server's tools, listed once (`wire_tools`: the world reads them as they are)."""
        self._schemas = {tool["name"]: tool.get("outputSchema") for tool in self._tools}
        self._validators = CompiledValidators()

    async def wire_tools(self) -> list[dict[str, Any]]:
        """The server's tools as listed when the session was made (`DirectSession.wire_tools`), the listing whose
        output schemas are checked: the world's to read, never to change."""
        return self._tools

    async def read_text(self, uri: str, *, meta: dict[str, Any] | None = None) -> str:
        """The text of resource `uri` (its first contents), read from the session's wire dict."""
        return (await self.session.wire_read(uri, meta=meta))["contents"][0]["text"]

    async def wire_call(self, name: str, arguments: dict[str, Any] | None = None, *,
                        meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """A tools/call as the session's wire dict of its result (`DirectSession.wire_call`), a successful one checked
        against the tool's output schema (`check`)."""
        wire = await self.session.wire_call(name, arguments, meta=meta)
        if not wire.get("isError"):
            self.check(name, wire.get("structuredContent"), "structuredContent" in wire)
        return wire

    def check(self, name: str, structured: Any, sent: bool) -> None:
        """Return if a result's structured content (`sent`: present, if only as null) conforms to tool `name`'s
        output schema (or it has none); raise `RuntimeError` else."""
        schema = self._schemas.get(name)
        if schema is None:
            return
        if structured is None and not sent:
            raise RuntimeError(f"Tool {name} has an output schema but did not return structured content")
        try:
            validator = self._validators.validator(name, schema)
        except Exception as exc:
            raise RuntimeError(f"Invalid schema for tool {name}: {exc}") from exc
        error = next(validator.iter_errors(structured), None)
        if error is not None:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {error.message}")
