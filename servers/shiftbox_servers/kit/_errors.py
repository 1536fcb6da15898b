"""Error kinds every domain server reports, so clients can tell failure causes apart without parsing text.

A failed call is an `isError` result without `structuredContent`: every tool publishes an output
schema, which an error does not match, and clients that validate (the TypeScript SDK, MCP Inspector)
would reject the whole result. The error travels as JSON text for any client and model, and under
`_meta["shiftbox/error"]` for machines.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ._protocol import result_dump

if TYPE_CHECKING:  # the protocol's models load when a failed call is first made (`_protocol`)
    from mcp_types import CallToolResult


class ErrorKind(StrEnum):
    """Machine-readable cause of a failed tool call (carried in `_meta["shiftbox/error"].kind`)."""

    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_FOUND = "not_found"
    PRECONDITION_FAILED = "precondition_failed"
    CONFLICT = "conflict"
    UNKNOWN_TOOL = "unknown_tool"
    CAPACITY = "capacity"
    INTERNAL = "internal"


class DomainError(Exception):
    """A failure the agent should see: the message is shown, the kind is machine-readable (`DomainServer.run_tool`
    makes it a kinded error result; no SDK exception type is needed, so the kit loads without the MCP SDK)."""

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


ERROR_META_KEY = "shiftbox/error"
"""The result `_meta` key holding a failed call's `{kind, message, ...}`."""


class FailedCall(dict[str, Any]):
    """A failed tool call's result as its model (`CallToolResult`) dumps it: what the kit's own steps answer (its
    checks, `DomainServer.run_tool`), so that no protocol model is built in process; `failed_result` is the model.
    A type of its own, never mistaken for a tool's plain structured result (a `dict`)."""


def error_wire(kind: ErrorKind, message: str, **details: Any) -> FailedCall:
    """A failed tool call of `kind` (`FailedCall`); details that are None are left out."""
    error: dict[str, Any] = {"kind": kind.value, "message": message}
    error.update({k: v for k, v in details.items() if v is not None})
    return failed_wire(error)


def failed_wire(error: dict[str, Any]) -> FailedCall:
    """The one shape of a failed tool call: `{"error": error}` as text, `error` in `_meta` (no structured content)."""
    return FailedCall(result_dump(_meta={ERROR_META_KEY: error}, content=[
        {"type": "text", "text": json.dumps({"error": error}, sort_keys=True)}], isError=True))


def error_result(kind: ErrorKind, message: str, **details: Any) -> CallToolResult:
    """`error_wire` as the protocol's model."""
    return result_model(error_wire(kind, message, **details))


def failed_result(error: dict[str, Any]) -> CallToolResult:
    """`failed_wire` as the protocol's model."""
    return result_model(failed_wire(error))


def is_refusal(checked: Any) -> bool:
    """Whether `DomainServer.check_arguments` refused the call (its `FailedCall`) rather than parsing its arguments."""
    return isinstance(checked, FailedCall)


def result_model(result: Any) -> Any:
    """A failed call's result as the protocol's model (a `FailedCall` parsed, as a client parses it); any other result
    as it is."""
    if not isinstance(result, FailedCall):
        return result
    from mcp_types import CallToolResult

    return CallToolResult.model_validate(result)


def result_error(result: CallToolResult | dict[str, Any]) -> dict[str, Any] | None:
    """The `{kind, message, ...}` of a failed call made by a shiftbox server, or None; `result` as the client parses
    it, or its wire dict (`isError`, `_meta`)."""
    if isinstance(result, dict):
        is_error, meta = result.get("isError"), result.get("_meta")
    else:
        is_error, meta = result.is_error, result.meta
    error = (meta or {}).get(ERROR_META_KEY) if is_error else None
    return error if isinstance(error, dict) and isinstance(error.get("kind"), str) else None
