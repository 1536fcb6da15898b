"""The SDK binding of a `DomainServer`: its `MCPServer` (tools, resources, prompt, episode middleware), the HTTP app
around it and the episode its HTTP connection names. Imported the first time a transport that speaks MCP needs it
(stdio, HTTP, the SDK's in-memory client): the kit's core and the in-process session never load the MCP SDK."""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pydantic_core
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ._domain import POLICY_PROMPT
from ._episode import EPISODE_SCOPE_KEY, connection_episode
from ._http_calls import SessionCalls, first_values, read_body, replay
from ._jsonrpc import invalid_id_error, remember
from ._requests import as_sdk_errors, choose_episode, params_episode_id
from ._sdk import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware

if TYPE_CHECKING:
    from ._server import DomainServer

EPISODE_PATH = re.compile(r"^/episodes/([^/]+)/mcp/?$")
ORIGIN_HEADERS = (b"host", b"origin")
"""What the SDK's DNS-rebinding check of a request reads (`TransportSecurityMiddleware.validate_request`)."""


def meta_episode_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """`_meta["shiftbox/episode"]` of the request, if it names one (`params_episode_id`; a malformed one: the SDK's
    Invalid params error)."""
    with as_sdk_errors():
        return params_episode_id(ctx.params)


def mcp_server(server: DomainServer) -> MCPServer:
    """`server` as the SDK's `MCPServer`: its identity, tools in declaration order, resources, the policy prompt and
    the episode middleware (the SDK's tracing span per message left out)."""
    mcp = MCPServer(
        name=server.identity.name,
        version=server.identity.version,
        description=server.identity.description,
        instructions=server.instructions,
        log_level="WARNING",
        middleware=[server._episode_middleware],
        lifespan=server._lifespan,
        tools=list(server.sdk_tools.values()),
    )
    mcp.middleware[:] = without_tracing(mcp.middleware)
    for resource in server.resources.values():
        mcp.resource(resource.uri, mime_type=resource.mime_type)(refusals_as_sdk_errors(resource.read))

    @mcp.prompt(name=POLICY_PROMPT, description=server.domain.policy_description)
    def policy_prompt() -> str:
        return server.domain.policy
    return mcp


def refusals_as_sdk_errors(read: Callable[[], Any]) -> Callable[[], Any]:
    """A resource reader (sync or async, its name and docstring kept: the SDK lists them) whose refusals are the SDK's
    errors, which its resource handler answers as they are (any other exception: "Error reading resource")."""
    if inspect.iscoroutinefunction(read):
        @functools.wraps(read)
        async def read_async() -> Any:
            with as_sdk_errors():
                return await read()

        return read_async

    @functools.wraps(read)
    def read_sync() -> Any:
        with as_sdk_errors():
            return read()

    return read_sync


def connection_episode_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The episode the connection itself names (`connection_episode`: the HTTP path `/episodes/<id>/mcp`, else the
    legacy `Mcp-Session-Id` header); None on the plain endpoint, stdio and in-process connections."""
    request = ctx.request
    if isinstance(request, Request):
        return connection_episode(request.scope, request.headers.get("mcp-session-id"))
    return None


def request_episode_id(ctx: ServerRequestContext[Any, Any]) -> str:
    """Which episode a request belongs to.

    A connection that names an episode (an episode URL; the legacy session header) is bound to it:
    `_meta["shiftbox/episode"]` naming another episode is refused (`EpisodeAccessError`). Only a
    connection that names none (the plain `/mcp` endpoint, stdio, in-process: what shiftbox's own
    harness holds) selects episodes with `_meta`; without it, the process's default episode.
    """
    return choose_episode(connection_episode_id(ctx), ctx.params)


def without_tracing(middleware: list[Any]) -> list[Any]:
    """The SDK's middleware chain without its OpenTelemetry span per message (the SDK: "drop it from this
    list to opt out"): shiftbox installs no exporter, and the span cost about 3% of an HTTP tools/call."""
    return [m for m in middleware if type(m).__name__ != "OpenTelemetryMiddleware"]


def resident_bytes() -> int | None:
    """This process's resident memory (Linux), for /healthz and the load benchmark."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def http_app(server: DomainServer, host: str) -> ASGIApp:
    """`DomainServer.http_app`: the SDK's streamable HTTP app of `server`, its episode routes, behind the router."""
    mcp, store = server.mcp, server.episodes

    @mcp.custom_route("/episodes/{episode_id}", methods=["DELETE"])
    async def drop_episode(request: Request) -> Response:
        episode_id = request.path_params["episode_id"]
        dropped = store.drop(episode_id, f"dropped by DELETE /episodes/{episode_id}")
        return JSONResponse({"dropped": dropped}, status_code=200 if dropped else 404)

    @mcp.custom_route("/healthz", methods=["GET"])
    async def healthz(request: Request) -> Response:
        m = server.snapshot.manifest
        return JSONResponse(
            {"server": mcp.name, "version": server.identity.version, "snapshot": m.snapshot_id,
             "sha256": m.sha256, "episodes": len(store), "rss_bytes": resident_bytes()}
        )

    inner = mcp.streamable_http_app(json_response=True, host=host)
    manager = mcp.session_manager
    return EpisodePathRouter(inner, host, mcp_endpoint=manager.handle_request, calls=SessionCalls(server, manager),
                             max_body_size=manager.max_request_body_size)


def transport_security(host: str) -> TransportSecuritySettings | None:
    """The Host/Origin checks the SDK gives the MCP endpoint of a server bound to `host` (None: none)."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class EpisodePathRouter:
    """ASGI wrapper: serves `/episodes/<id>/mcp` by the `/mcp` endpoint, remembering the episode id.

    Every HTTP request, custom routes (`DELETE /episodes/<id>`, `/healthz`) included, first passes the
    Host/Origin checks the SDK applies to the MCP endpoint, so a web page reached through DNS
    rebinding can neither call tools nor drop episodes. Every POST to the MCP endpoint is read once (bounded
    as the SDK bounds it, `max_body_size`) and a request whose id is no string or integer is answered
    Invalid Request (400, -32600) here: the SDK's handshake-era transport took it for a notification.

    `mcp_endpoint`, when given, serves the MCP endpoint's requests directly (the SDK's session manager),
    past the Starlette app's middleware and routing, which its transport does not need (about 3% of a
    tools/call's instructions); everything else (custom routes, the lifespan) still goes to `app`.
    `calls`, when given, answers the plain tools/call POSTs of established sessions first (`SessionCalls`).
    """

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", *, mcp_endpoint: ASGIApp | None = None,
                 calls: SessionCalls | None = None, max_body_size: int = DEFAULT_MAX_REQUEST_BODY_SIZE):
        self.app = app
        self.mcp_endpoint = mcp_endpoint
        self.calls = calls
        settings = transport_security(host)
        self._security = TransportSecurityMiddleware(settings) if settings is not None else None
        self._passed: set[tuple[Any, ...]] = set()
        """Host and Origin values that passed `_security`."""
        self._post = RequestBodyLimitMiddleware(self._serve_post, max_body_size)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if self._security is not None and (key := first_values(scope, ORIGIN_HEADERS)) not in self._passed:
                refused = await self._security.validate_request(Request(scope, receive))
                if refused is not None:
                    await refused(scope, receive, send)
                    return
                remember(self._passed, key)  # the check reads these two headers only
            match = EPISODE_PATH.match(scope["path"])
            if match:
                scope = dict(scope, path="/mcp", raw_path=b"/mcp")
                scope[EPISODE_SCOPE_KEY] = match.group(1)
            if scope["path"] == "/mcp" and scope["method"] == "POST":
                await self._post(scope, receive, send)
                return
            if self.mcp_endpoint is not None and scope["path"] == "/mcp":
                await self.mcp_endpoint(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _serve_post(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A POST to the MCP endpoint, its body already bounded: refused, answered by `calls`, or passed on."""
        body = await read_body(receive)
        if body is None:
            return
        try:
            message = pydantic_core.from_json(body)
        except ValueError:
            message = None  # the SDK answers its parse error
        refusal = invalid_id_error(message)
        if refusal is not None:
            await JSONResponse(refusal, status_code=400)(scope, receive, send)
            return
        receive = replay(body, receive)
        if self.calls is not None and await self.calls(scope, message, receive, send):
            return
        await (self.mcp_endpoint or self.app)(scope, receive, send)
