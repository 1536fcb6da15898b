"""The recording gateway: a domain's tools as one MCP endpoint for any MCP client, every call recorded.

External agents and desktop MCP clients connect to the gateway, never to the domain server. The
gateway names each request's episode by its connection alone (HTTP path `/episodes/<key>/mcp`, legacy
`Mcp-Session-Id`, else the default episode; `_meta["shiftbox/episode"]` never selects one and is
refused when it names another) and hands the call to the route registered for that key, which
executes it through the harness's one recorder (`EpisodeClient.call`). A run's gateway keys its routes by
per-episode random tokens, so an agent can reach no episode but the one whose URL it was given.
Clients see the tools and the policy; the state resources (digest, diff) stay with the harness.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from shiftbox_servers.kit import (
    DEFAULT_EPISODE,
    EPISODE_META_KEY,
    POLICY_PROMPT,
    POLICY_URI,
    READ_THE_POLICY,
    SERVER_VERSION,
    EpisodePathRouter,
    ErrorKind,
    connection_episode_id,
    error_result,
    meta_episode_id,
    serve_stdio,
)

from ..errors import unwrapped_errors
from ._world import World

CallRoute = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]
"""Executes one tool call for one episode: (tool name, arguments) -> the MCP result to return."""



@dataclass(frozen=True)
class McpClientInfo:
    """The MCP client on the other end, as it names itself (`clientInfo` of its `initialize` request, or of each
    request's envelope in newer protocol versions)."""

    name: str
    version: str

    @property
    def agent(self) -> str:
        """How a gateway session made by this client is recorded as `Trajectory.agent`."""
        return f"mcp-client:{self.name}@{self.version}" if self.version else f"mcp-client:{self.name}"


def request_client(ctx: Any) -> McpClientInfo | None:
    """The client that sent the request `ctx` belongs to (None when it did not name itself)."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    if info is None or not getattr(info, "name", None):
        return None
    return McpClientInfo(name=str(info.name), version=str(getattr(info, "version", "") or ""))


RouteLookup = Callable[[str, McpClientInfo | None], CallRoute | None]
"""Finds the route of an episode id for the calling client (None: nobody serves that episode)."""


class Gateway:
    """An MCP server mirroring `world`'s tools; `tools/call` goes to the route of the request's episode."""

    def __init__(self, world: World, routes: RouteLookup):
        self.world = world
        self._routes = routes
        domain = world.domain
        self.server = Server(
            f"shiftbox-{domain.name}-gateway",
            version=SERVER_VERSION,
            description=f"recording gateway for {world.info.name} {world.info.version}, snapshot "
                        f"{world.info.snapshot} sha256={world.info.snapshot_sha256}",
            instructions=f"shiftbox {domain.name} tools. {READ_THE_POLICY}",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
        )
        self._tools = [types.Tool.model_validate(t) for t in world.tools]

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        episode_id = connection_episode_id(ctx) or DEFAULT_EPISODE
        named = meta_episode_id(ctx)
        if named is not None and named != episode_id:
            return error_result(ErrorKind.INVALID_ARGUMENTS, f"_meta[{EPISODE_META_KEY!r}] cannot select an "
                                "episode on the gateway: each connection serves the episode of its URL only")
        route = self._routes(episode_id, request_client(ctx))
        if route is None:
            return error_result(ErrorKind.NOT_FOUND, f"episode {episode_id!r} is not open on this gateway; "
                                                     "connect to the URL the harness gave you (SHIFTBOX_MCP_URL)")
        return await route(params.name, dict(params.arguments or {}))

    async def _list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=POLICY_PROMPT, description=self.world.domain.policy_description)])

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != POLICY_PROMPT:  # Invalid params, as MCP prescribes for an unknown prompt
            raise MCPError(INVALID_PARAMS, f"unknown prompt {params.name!r}; this gateway has: {POLICY_PROMPT}")
        text = types.TextContent(type="text", text=self.world.domain.policy)
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])

    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=POLICY_URI, name="policy", mime_type="text/markdown")])

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if str(params.uri) != POLICY_URI:  # Invalid params, as for an unknown prompt (MCP retired -32002)
            raise MCPError(INVALID_PARAMS, f"unknown resource {params.uri}; this gateway has: {POLICY_URI}")
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=POLICY_URI, text=self.world.domain.policy, mime_type="text/markdown")])

    def http_app(self) -> Any:
        """Streamable HTTP at `/mcp` and `/episodes/<id>/mcp` (127.0.0.1 only)."""
        return EpisodePathRouter(self.server.streamable_http_app(json_response=True, host="127.0.0.1"))

    async def run_stdio(self) -> None:
        """Serve one client over stdin/stdout (one process, one episode: the default one), every line answered
        as a domain server's stdio answers it (`serve_stdio`: an invalid request is refused, never run)."""
        await serve_stdio(self.server)


async def _run_uvicorn(server: uvicorn.Server, sock: socket.socket) -> None:
    """uvicorn's serve loop without its signal capture: Ctrl-C stays with the harness, which owns shutdown."""
    if not server.config.loaded:
        server.config.load()
    server.lifespan = server.config.lifespan_class(server.config)
    await server.startup(sockets=[sock])
    if not server.should_exit:
        await server.main_loop()
    if server.started:
        await server.shutdown(sockets=[sock])


@contextlib.asynccontextmanager
async def serve_http(app: Any, port: int = 0) -> AsyncIterator[str]:
    """Serve an ASGI app on 127.0.0.1 inside the current event loop; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); choose another --port") from exc
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    with unwrapped_errors(), contextlib.closing(sock):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run_uvicorn, server, sock)
            try:
                with anyio.fail_after(30):
                    while not server.started:
                        if server.should_exit:
                            raise RuntimeError("the gateway's HTTP server did not start")
                        await anyio.sleep(0.01)
                yield f"http://127.0.0.1:{sock.getsockname()[1]}"
            finally:
                server.should_exit = True


@dataclass(frozen=True)
class GatewayLink:
    """One episode's place on a run's gateway: the URL its agent connects to, and where its calls go."""

    url: str
    attach: Callable[[CallRoute], None]


class RunGateway:
    """The gateway of one run: simulations attach their episode's route and hand the URL to their agent.

    The URL holds a random token, not the episode id: it cannot be guessed from another simulation's
    URL, the task or the run, and it is the only way to that simulation's route."""

    def __init__(self, world: World):
        self._routes: dict[str, CallRoute] = {}
        self._tokens: dict[str, str] = {}
        self.gateway = Gateway(world, lambda episode_id, client: self._routes.get(episode_id))
        self.base_url = ""

    def link(self, episode_id: str) -> GatewayLink:
        """A fresh URL for the episode's agent; calls to it go to the route attached through the link."""
        self.detach(episode_id)
        token = self._tokens[episode_id] = secrets.token_urlsafe(24)
        return GatewayLink(f"{self.base_url}/episodes/{token}/mcp", functools.partial(self._attach, token))

    def _attach(self, token: str, route: CallRoute) -> None:
        self._routes[token] = route

    def detach(self, episode_id: str) -> None:
        token = self._tokens.pop(episode_id, None)
        if token is not None:
            self._routes.pop(token, None)


@contextlib.asynccontextmanager
async def open_run_gateway(world: World) -> AsyncIterator[RunGateway]:
    """Start a run's gateway over HTTP on a free 127.0.0.1 port for the length of the run."""
    run_gateway = RunGateway(world)
    async with serve_http(run_gateway.gateway.http_app()) as base_url:
        run_gateway.base_url = base_url
        yield run_gateway
