"""tools/call over streamable HTTP answered in the request's own task, with the SDK's checks and bytes.

The SDK's handshake-era transport hands each POST to its session's task over memory streams, where its
dispatcher starts a task for the request, and hands the answer back the same way. A POST that is a plain
tools/call (name and arguments only) on a live session whose negotiated protocol version the kit has seen
is answered here instead, with the checks the SDK would make and the same bytes. On 2026-07-28 (no
handshake: each POST carries its version and client in `params._meta`) the SDK answers in the request's
task already, but through its whole handler chain (a per-request connection, runner, context and
middleware, its params models, the tool manager); a tools/call of name, arguments and `_meta` that passes
the SDK's entry checks is answered here with the kit's validated call. Anything else (and anything
unusual about the call) goes to the SDK as before.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import anyio
import pydantic_core
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
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_invalid_x_mcp_header,
    x_mcp_header_map,
)
from mcp_types import JSONRPCError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from ._episode import connection_episode
from ._errors import is_refusal
from ._jsonrpc import is_request_id, remember
from ._protocol import MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from ._server import DomainServer

REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
MODERN_CALL_KEYS = frozenset({"name", "arguments", "_meta"})
MODERN_VERSIONS = frozenset(v.encode("latin-1") for v in MODERN_PROTOCOL_VERSIONS)
SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode("latin-1")
JSON_TYPE = CONTENT_TYPE_JSON.encode("latin-1")
ROUTING_HEADERS = tuple(h.encode("latin-1") for h in (MCP_PROTOCOL_VERSION_HEADER, MCP_METHOD_HEADER, MCP_NAME_HEADER))
"""The headers a 2026-07-28 POST routes by: the SDK refuses one given twice or differing from the body."""
CHECKED_HEADERS = (b"accept", b"content-type", b"host", b"origin")
"""What the SDK transport's header checks read (`_headers_pass`)."""
VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1")
COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))
"""`json.dumps(..., separators=(",", ":"))` (how the SDK's 2026-07-28 entry writes its answer) made once."""


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
        self._passed: set[tuple[Any, ...]] = set()
        """Header values that passed `_headers_pass`."""
        self._mirrored = frozenset(name for name, tool in server.sdk_tools.items()
                                   if find_invalid_x_mcp_header(tool.parameters) or x_mcp_header_map(tool.parameters))
        """Tools whose arguments a 2026-07-28 call mirrors into `Mcp-Param-*` headers (the SDK compares them;
        the kit leaves their calls to it). Any other tool's headers the SDK never checks."""
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
        repeated = False  # a routing header given twice (the SDK refuses such a 2026-07-28 POST)
        for name, value in scope["headers"]:
            if name in headers:
                repeated = repeated or name in ROUTING_HEADERS
            else:
                headers[name] = value
        if headers.get(VERSION_HEADER) in MODERN_VERSIONS:
            return not repeated and await self._modern_call(scope, headers, message, receive, send)
        session_id = headers.get(SESSION_HEADER, b"").decode("latin-1")
        version = self.versions.get(session_id)
        if "user" in scope or version is None or headers.get(VERSION_HEADER) != version.encode("latin-1"):
            return False
        transport = self._open_session(session_id)
        if transport is None or not await self._headers_pass(scope, receive, headers, modern=False):
            return False
        episode_id = connection_episode(scope, session_id)
        assert episode_id is not None  # a session the version lookup found names its episode
        answer = self._answer(message, version, episode_id)
        if answer is None:
            return False
        await Response(answer, status_code=200,
                       headers={"Content-Type": CONTENT_TYPE_JSON, MCP_SESSION_ID_HEADER: session_id})(
            scope, receive, send)
        timeout = self.manager.session_idle_timeout
        if transport.idle_scope is not None and timeout is not None and transport.idle_scope.deadline != math.inf:
            transport.idle_scope.deadline = anyio.current_time() + timeout
        return True

    async def _modern_call(self, scope: Scope, headers: dict[bytes, bytes], message: Any, receive: Receive,
                           send: Send) -> bool:
        """A 2026-07-28 POST: answered as the SDK's single-exchange entry answers it (JSON responses), after
        the checks it makes (Host/Origin and Content-Type, Accept, routing headers given once and equal to
        the body, the `_meta` envelope and its version), when it is a tools/call the kit answers itself."""
        if not is_call_request(message):
            return False
        params = message.get("params")
        if (not isinstance(params, dict) or not params.keys() <= MODERN_CALL_KEYS or "name" not in params
                or params["name"] in self._mirrored or "user" in scope or not self.manager.json_response):
            return False
        if not await self._headers_pass(scope, receive, headers, modern=True):
            return False
        # the only headers the SDK's classification reads
        routing = {name.decode("latin-1"): headers[name].decode("latin-1") for name in ROUTING_HEADERS if name in headers}
        route = classify_inbound_request(message, headers=routing)
        if not isinstance(route, InboundModernRoute):
            return False
        bound = connection_episode(scope, headers.get(SESSION_HEADER, b"").decode("latin-1"))
        episode_id = self.server.call_episode(bound, params)
        if episode_id is None:
            return False
        answer = self._result(message, params, route.protocol_version, episode_id)
        if answer is None:
            return False
        if isinstance(answer, JSONRPCError):
            status, wire = ERROR_CODE_HTTP_STATUS.get(answer.error.code, 200), answer.model_dump(
                mode="json", by_alias=True, exclude_none=True)
        else:  # the SDK's dump of its JSONRPCResponse: the result is a JSON-mode dict already
            status, wire = 200, response(message["id"], answer)
        body = COMPACT_JSON.encode(wire).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-length", str(len(body)).encode()), (b"content-type", JSON_TYPE)]})
        await send({"type": "http.response.body", "body": body})
        return True

    async def _headers_pass(self, scope: Scope, receive: Receive, headers: dict[bytes, bytes], *, modern: bool
                            ) -> bool:
        """The SDK transport's header checks of a POST (Accept, Content-Type, Host and Origin; the handshake-era
        transport's own Content-Type check too), each set of values that passed remembered: they are a
        function of those four headers, and a client sends the same ones on every call."""
        key = (modern, *(headers.get(name) for name in CHECKED_HEADERS))
        if key in self._passed:
            return True
        request = Request(scope, receive)
        if (not check_accept_headers(request)[0] or (not modern and not is_json_content(request))
                or await self._security.validate_request(request, is_post=True) is not None):
            return False
        remember(self._passed, key)
        return True

    def _answer(self, message: Any, version: str, episode_id: str) -> str | None:
        """The JSON-RPC answer to a plain tools/call, as the SDK's transport writes it; None: not one."""
        if not is_call_request(message):
            return None
        params = message.get("params")
        if not isinstance(params, dict) or not params.keys() <= {"name", "arguments"} or "name" not in params:
            return None
        answer = self._result(message, params, version, episode_id)
        if answer is None or isinstance(answer, JSONRPCError):
            return None if answer is None else answer.model_dump_json(by_alias=True, exclude_unset=True)
        return response_json(message["id"], answer)

    def _result(self, message: dict[str, Any], params: dict[str, Any], version: str, episode_id: str
                ) -> dict[str, Any] | JSONRPCError | None:
        """The wire result of a tools/call (or its JSON-RPC error) as the kit's middleware would give it (arguments
        it refuses answered as refused, the rest by `answer_validated_call`); None: the SDK answers."""
        checked = self.server.check_arguments(params)
        try:
            if is_refusal(checked):
                result = self.server.wire_result(version, checked)
            else:
                answered = self.server.answer_validated_call(params, version, episode_id, checked)
                if answered is None:
                    return None
                result = answered
        except MCPError as exc:
            return JSONRPCError(jsonrpc="2.0", id=message["id"], error=exc.error)
        return result


def is_call_request(message: Any) -> bool:
    """A JSON-RPC 2.0 tools/call request of only the envelope's keys, its id one MCP accepts: what the fast path
    may take (its params checked by the caller)."""
    return (isinstance(message, dict) and message.keys() <= REQUEST_KEYS and message.get("jsonrpc") == "2.0"
            and message.get("method") == "tools/call" and is_request_id(message.get("id")))


def response_json(request_id: Any, result: dict[str, Any]) -> str:
    """What the SDK's handshake-era session writes for a result, its `JSONRPCResponse`'s JSON (non-finite floats as
    null, the model's default), without building the model around the result."""
    return pydantic_core.to_json(response(request_id, result), inf_nan_mode="null").decode()


def response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC response as the SDK's `JSONRPCResponse` dumps (its fields in order; `result` already JSON-mode)."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def first_values(scope: Scope, names: tuple[bytes, ...]) -> tuple[bytes | None, ...]:
    """The first value of each header in `names` (None: absent), as Starlette's `Request.headers` reads them."""
    found: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        if name in names:
            found.setdefault(name, value)
    return tuple(found.get(name) for name in names)


def is_json_content(request: Request) -> bool:
    """The SDK transport's Content-Type check: application/json among the type's comma-separated parts."""
    content_type = request.headers.get("content-type", "")
    return any(part.strip() == CONTENT_TYPE_JSON for part in content_type.split(";")[0].split(","))


async def read_body(receive: Receive) -> bytes | None:
    """A request's body as Starlette's `Request.body` reads it, without its stream machinery; None: the client
    went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.request":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)
        elif message["type"] == "http.disconnect":
            return None


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands over an already-read body once, then the connection's own messages."""
    messages: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replaying() -> Message:
        return messages.pop() if messages else await receive()

    return replaying
