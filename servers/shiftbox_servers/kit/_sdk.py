"""What differs between the mcp releases shiftbox allows (`mcp>=2.0.0`): the SDK names that moved, and the one
behaviour shiftbox relies on that changed, each handled here once."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import CallToolResult

try:  # mcp >= 2.2: the body limit is with the other request checks
    from mcp.server.transport_security import (
        DEFAULT_MAX_REQUEST_BODY_SIZE,
        RequestBodyLimitMiddleware,
    )
except ImportError:  # mcp 2.0, 2.1: beside the session manager (the same middleware, on POST bodies)
    from mcp.server.streamable_http_manager import (
        DEFAULT_MAX_REQUEST_BODY_SIZE,
        RequestBodyLimitMiddleware,
    )

__all__ = ["DEFAULT_MAX_REQUEST_BODY_SIZE", "RequestBodyLimitMiddleware", "keep_error_results"]


class _ErrorResultsAsReturned(FuncMetadata):
    """A tool's metadata that hands a failed `CallToolResult` on as returned, as mcp >= 2.2 does: mcp 2.0 checked
    its (absent) structured content against the tool's output schema and answered a bare "Error executing tool"
    instead, losing the kinded error (`_meta["shiftbox/error"]`)."""

    def convert_result(self, result: Any) -> Any:
        if isinstance(result, CallToolResult) and result.is_error:
            return result
        return super().convert_result(result)


def keep_error_results(tool: Tool) -> Tool:
    """`tool` with metadata that returns a domain tool's failed results unchanged (on every mcp release)."""
    metadata = tool.fn_metadata
    tool.fn_metadata = _ErrorResultsAsReturned(arg_model=metadata.arg_model, output_schema=metadata.output_schema,
                                               output_model=metadata.output_model, wrap_output=metadata.wrap_output)
    return tool
