"""tools/call over streamable HTTP answered in the request's own task, on sessions the SDK established.

The SDK's handshake-era transport hands each POST to its session's task over memory streams, where its
dispatcher starts a task for the request, and hands the answer back the same way. A POST that is a plain
tools/call (name and arguments only) on a live session whose negotiated protocol version the kit has seen
is answered here instead, with the checks the SDK would make and the same bytes; anything else (and
anything unusual about this one) goes to the SDK as before.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import (
    CONTENT_TYPE_JSON,
    MCP_SESSION_ID_HEADER,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import JSONRPCError, JSONRPCResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from ._episode import EPISODE_SCOPE_KEY
from ._jsonrpc import is_request_id

if TYPE_CHECKING:
    from ._server import DomainServer

REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode("latin-1")
VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1")


class SessionCalls:
    """Answers plain tools/call POSTs of established handshake-era sessions without the SDK's session task.

    The session's negotiated version is learned from the SDK's own context on the session's first
    tools/call (which the SDK brings); a call is taken here only when its `MCP-Protocol-Version` header
    names that version. The session must still be open in the SDK's session manager (its private
    `_server_instances`: without it every call goes to the SDK), and its idle countdown restarts as the
    SDK's transport would restart it.
    """

    def __init__(self, server: DomainServer, manager: StreamableHTTPSessionManager):
        self.server = server
        self.manager = manager
        self.versions: dict[str, str] = {}
        """Session id -> the protocol version its `initialize` negotiated."""
        self._security = TransportSecurityMiddleware(manager.security_settings)
        server.on_handshake_call = self.learn

    def learn(self, ctx: ServerRequestContext[Any, Any]) -> None:
        request = ctx.request
        session_id = request.headers.get(MCP_SESSION_ID_HEADER) if isinstance(request, Request) else None
        if session_id and session_id not in self.versions:
            if len(self.versions) >= 2 * len(self._sessions()) + 100:  # forget sessions that have ended
                self.versions = {s: v for s, v in self.versions.items() if s in self._sessions()}
            self.versions[session_id] = ctx.protocol_version

    def _sessions(self) -> dict[str, StreamableHTTPServerTransport]:
        sessions = getattr(self.manager, "_server_instances", None)
        return sessions if isinstance(sessions, dict) else {}

    def _open_session(self, session_id: str) -> StreamableHTTPServerTransport | None:
        transport = self._sessions().get(session_id)
        if transport is None or transport.is_terminated:  # ended (mcp 2.0 keeps a terminated one in its table)
            self.versions.pop(session_id, None)
            return None
        if not transport.is_json_response_enabled:
            return None
        idle = transport.idle_scope
        return None if idle is not None and idle.cancel_called else transport

    async def __call__(self, scope: Scope, message: Any, receive: Receive, send: Send) -> bool:
        """Whether this answered the POST whose body the router has read and parsed (`message`)."""
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name, value)
        session_id = headers.get(SESSION_HEADER, b"").decode("latin-1")
        version = self.versions.get(session_id)
        if "user" in scope or version is None or headers.get(VERSION_HEADER) != version.encode("latin-1"):
            return False
        transport = self._open_session(session_id)
        request = Request(scope, receive)
        if (transport is None or not check_accept_headers(request)[0] or not is_json_content(request)
                or await self._security.validate_request(request, is_post=True) is not None):
            return False
        answer = self._answer(message, version, scope.get(EPISODE_SCOPE_KEY) or session_id)
        if answer is None:
            return False
        await Response(answer, status_code=200,
                       headers={"Content-Type": CONTENT_TYPE_JSON, MCP_SESSION_ID_HEADER: session_id})(
            scope, receive, send)
        timeout = self.manager.session_idle_timeout
        if transport.idle_scope is not None and timeout is not None and transport.idle_scope.deadline != math.inf:
            transport.idle_scope.deadline = anyio.current_time() + timeout
        return True

    def _answer(self, message: Any, version: str, episode_id: str) -> str | None:
        """The JSON-RPC answer to a plain tools/call, as the SDK's transport writes it; None: not one."""
        if not (isinstance(message, dict) and message.keys() <= REQUEST_KEYS and message.get("jsonrpc") == "2.0"
                and message.get("method") == "tools/call" and is_request_id(message.get("id"))):
            return None
        params = message.get("params")
        if not isinstance(params, dict) or not params.keys() <= {"name", "arguments"} or "name" not in params:
            return None
        rejected = self.server.reject_arguments(params)
        try:
            if rejected is not None:
                result = rejected.model_dump(by_alias=True, mode="json", exclude_none=True)
            else:
                answered = self.server.answer_validated_call(params, version, episode_id)
                if answered is None:
                    return None
                result = answered
        except MCPError as exc:
            return JSONRPCError(jsonrpc="2.0", id=message["id"], error=exc.error).model_dump_json(
                by_alias=True, exclude_unset=True)
        return JSONRPCResponse(jsonrpc="2.0", id=message["id"], result=result).model_dump_json(
            by_alias=True, exclude_unset=True)


def is_json_content(request: Request) -> bool:
    """The SDK transport's Content-Type check: application/json among the type's comma-separated parts."""
    content_type = request.headers.get("content-type", "")
    return any(part.strip() == CONTENT_TYPE_JSON for part in content_type.split(";")[0].split(","))


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands over an already-read body once, then the connection's own messages."""
    messages: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replaying() -> Message:
        return messages.pop() if messages else await receive()

    return replaying
