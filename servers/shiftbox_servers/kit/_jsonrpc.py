"""JSON-RPC 2.0 rules the kit applies itself, on every transport, before the SDK sees a message.

MCP's request id is a string or an integer (never null). The SDK's message models ignore unknown keys, so a
request whose id is anything else (1.5, 2.0, 1e3, true, null, an object) validates as a notification: over
the handshake-era HTTP transport it was answered 202 with no body and its method still ran. Such a request is
an Invalid Request (-32600), answered and never run.
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
INVALID_ID_MESSAGE = "Invalid Request: the id must be a string or an integer"


def is_request_id(value: Any) -> bool:
    """A request id MCP accepts: a string or an integer (a bool is no integer here; a float never is)."""
    return type(value) in (int, str)


def usable_id(value: Any) -> str | int | float | None:
    """The id to echo in an error: a string or number (a client waits on it), else None (`"id": null`)."""
    id = value.get("id") if isinstance(value, dict) else None
    return id if isinstance(id, str | int | float) and not isinstance(id, bool) else None


def error(id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


def is_response(message: dict[str, Any]) -> bool:
    """An object with `result` or `error` and no `method`: a response, which is never answered."""
    return "method" not in message and ("result" in message or "error" in message)


def invalid_id_error(message: Any) -> dict[str, Any] | None:
    """The Invalid Request error for a message that is no response and whose `id` is present but no string or
    integer; None for anything else (a valid id, a notification, a response, not an object)."""
    if not isinstance(message, dict) or "id" not in message or is_response(message):
        return None
    if is_request_id(message["id"]):
        return None
    return error(usable_id(message), INVALID_REQUEST, INVALID_ID_MESSAGE)


def remember(passed: set[tuple[Any, ...]], key: tuple[Any, ...]) -> None:
    """Add values (headers, params) that passed a check made of them alone; at most 64 sets (callers choose the values)."""
    if len(passed) >= 64:
        passed.clear()
    passed.add(key)
