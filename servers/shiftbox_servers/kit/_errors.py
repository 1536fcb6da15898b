"""Error kinds every domain server reports, so clients can tell failure causes apart without parsing text."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent


class ErrorKind(StrEnum):
    """Machine-readable cause of a failed tool call (carried in `structuredContent.error.kind`)."""

    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_FOUND = "not_found"
    PRECONDITION_FAILED = "precondition_failed"
    CONFLICT = "conflict"
    UNKNOWN_TOOL = "unknown_tool"
    CAPACITY = "capacity"
    INTERNAL = "internal"


class DomainError(ToolError):
    """A failure the agent should see: the message is shown, the kind is machine-readable."""

    kind: ErrorKind = ErrorKind.PRECONDITION_FAILED

    def __init__(self, message: str, *, kind: ErrorKind | None = None, field: str | None = None):
        super().__init__(message)
        if kind is not None:
            self.kind = kind
        self.field = field


class InvalidArguments(DomainError):
    kind = ErrorKind.INVALID_ARGUMENTS


class NotFound(DomainError):
    kind = ErrorKind.NOT_FOUND


class PreconditionFailed(DomainError):
    kind = ErrorKind.PRECONDITION_FAILED


class Conflict(DomainError):
    kind = ErrorKind.CONFLICT


def error_result(kind: ErrorKind, message: str, **details: Any) -> CallToolResult:
    """The one shape of a failed tool call: text for the agent, `{error: {kind, message, ...}}` for machines."""
    error: dict[str, Any] = {"kind": kind.value, "message": message}
    error.update({k: v for k, v in details.items() if v is not None})
    return CallToolResult(
        content=[TextContent(type="text", text=f"Error ({kind.value}): {message}")],
        structured_content={"error": error},
        is_error=True,
    )
