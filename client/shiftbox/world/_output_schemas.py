"""Tool results checked against their listed output schemas by a validator compiled once per schema.

The mcp client re-validates every structured result with `jsonschema` (`ClientSession.validate_tool_result`):
about 1 ms for a retail order, ten times what the tool takes on the server. `CompiledOutputSchemas`
compiles each schema the session has listed once with jsonschema-rs (same draft, formats not asserted,
`$ref`s resolved within the schema only) and accepts a result that passes it in microseconds; every other
case — a rejected result, a tool not yet listed, a schema that does not compile — goes to the SDK's own
check, which raises its usual `RuntimeError`. So a server result that breaks its schema is still refused.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
from mcp import Client
from mcp.client.session import ClientSession
from mcp_types import CallToolResult


def _no_remote_refs(uri: str) -> Any:
    raise ValueError(f"output schemas resolve $ref within themselves only, not {uri}")


class CompiledOutputSchemas:
    """The `validate_tool_result` of one session, with the happy path on compiled validators."""

    def __init__(self, session: ClientSession):
        self._session = session
        self._sdk_check = session.validate_tool_result
        self._compiled: dict[str, tuple[dict[str, Any], Any]] = {}  # tool -> (the schema compiled, validator)
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
        compiled = self._compiled.get(name)
        if compiled is None or compiled[0] is not schema:
            try:
                validator = jsonschema_rs.validator_for(schema, validate_formats=False, retriever=_no_remote_refs)
            except Exception:  # an invalid or unresolvable schema: the SDK's check says so
                return False
            compiled = self._compiled[name] = (schema, validator)
        try:
            return compiled[1].is_valid(result.structured_content)
        except (TypeError, ValueError):  # not JSON (a Python object from an in-process server): the SDK decides
            return False


def compile_output_schemas(client: Client) -> CompiledOutputSchemas:
    """Make the entered `client` check tool results with compiled output schemas; returns that check."""
    check = CompiledOutputSchemas(client.session)
    client.session.validate_tool_result = check.validate_tool_result  # type: ignore[method-assign]
    return check
