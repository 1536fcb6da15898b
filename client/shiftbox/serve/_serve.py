"""`shiftbox serve`'s gateway: a domain's tools for any MCP client, over HTTP (one episode per path name or MCP
session) or stdio (the process is one episode), each session recorded by `GatewaySessions`."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shiftbox_servers.kit import EPISODE_SCOPE_KEY

from ..errors import RecordWriteError
from ..tasks import GoalShifts, Instructions, Task, UserScenario
from ..trajectory import TRAJECTORIES_FILE, read_trajectories
from ..world import Gateway, open_world, serve_http
from ._sessions import CALLS_FILE, GatewaySessions

OPEN_SESSION_TASK = "open-session"


def open_session_task(domain: str) -> Task:
    """The task of sessions with no task given: no goals, no gold actions; TUE and TCRR still apply."""
    return Task(id=OPEN_SESSION_TASK, domain=domain, user_scenario=UserScenario(
        instructions=Instructions(reason_for_call="free use of the tools through `shiftbox serve`"),
        goal_shifts=GoalShifts(required_shifts=0, goals=[])))


def stopped_message(out: Path, ended: int) -> str:
    total = len(read_trajectories(out))
    return (f"stopped: {ended} open sessions closed; {out / TRAJECTORIES_FILE} holds {total} sessions. "
            f"Score them with `shiftbox metrics {out}`")


async def serve_sessions(domain: str, servers: str, snapshot_dir: Path, task: Task, out: Path, transport: str,
                         port: int, log: Callable[[str], None], *, dependency_graph: bool = False,
                         graph_refusal: bool = False) -> int:
    """Serve the domain's tools through the recording gateway until the client or a signal stops it; every
    session is written to `out` (a prepared run directory). Returns how many sessions were still open."""
    async with open_world(domain, servers=servers, snapshot_dir=snapshot_dir, dependency_graph=dependency_graph,
                          graph_refusal=graph_refusal) as world:
        sessions = GatewaySessions(world, task, out, log)
        try:
            rebuilt = sessions.recover()
            if rebuilt:
                log(f"rebuilt {rebuilt} sessions cut short by a crash from {out / CALLS_FILE}")
            gateway = Gateway(world, sessions.route)
            if transport == "stdio":
                await _serve_stdio(gateway, sessions, out, log)
            else:
                await _serve_http(gateway, sessions, port, log)
        finally:
            with anyio.CancelScope(shield=True):  # whatever stopped us, every open session is written
                ended = await sessions.end_all()
        return ended


async def _serve_stdio(gateway: Gateway, sessions: GatewaySessions, out: Path, log: Callable[[str], None]) -> None:
    """Until the client closes stdin, or SIGINT / SIGTERM: the session is written, then the process exits at
    once (stdin is read by a thread that no cancellation reaches)."""
    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                code = 0
                with anyio.CancelScope(shield=True):
                    try:
                        log(stopped_message(out, await sessions.end_all()))
                    except RecordWriteError as exc:
                        log(f"error: {exc}")
                        code = 2
                sys.stderr.flush()
                os._exit(code)

    async with anyio.create_task_group() as tg:
        tg.start_soon(on_signal)
        await gateway.run_stdio()
        tg.cancel_scope.cancel()


class ClientSessions:
    """ASGI middleware of the gateway's MCP endpoint: which MCP sessions (Mcp-Session-Id) use which episode,
    and the standard session close (DELETE with Mcp-Session-Id), which ends the episode's gateway session
    once its last client has left. The episode of a request is its path's (/episodes/<name>/mcp), else,
    on plain /mcp, its MCP session's own."""

    def __init__(self, app: Any, sessions: GatewaySessions):
        self.app, self.sessions = app, sessions

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        client = None
        if scope["type"] == "http" and scope.get("path", "").rstrip("/") == "/mcp":
            client = Headers(scope=scope).get("mcp-session-id")
        if not client:
            await self.app(scope, receive, send)
            return
        episode_id = scope.get(EPISODE_SCOPE_KEY) or client
        if scope.get("method") == "DELETE":  # written before the client hears back: closed means recorded
            try:
                await self.sessions.client_left(episode_id, client)
            except RecordWriteError as exc:
                await not_written(exc)(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        self.sessions.client_seen(episode_id, client)
        await self.app(scope, receive, send)


def not_written(exc: RecordWriteError) -> Response:
    """The answer to a session close whose trajectory could not be written (a full disk): 507 Insufficient Storage,
    the message naming the file and the cause (the session has ended; its trajectory is written later)."""
    return JSONResponse({"ended": True, "error": str(exc)}, status_code=507)


async def _serve_http(gateway: Gateway, sessions: GatewaySessions, port: int, log: Callable[[str], None]) -> None:
    async def end_session(request: Request) -> Response:
        try:
            ended = await sessions.end(request.path_params["episode_id"], dropped=True)
        except RecordWriteError as exc:
            return not_written(exc)
        return JSONResponse({"ended": ended}, status_code=200 if ended else 404)

    app = gateway.http_app()
    app.app.router.routes.append(Route("/episodes/{episode_id}", end_session, methods=["DELETE"]))
    app.app = ClientSessions(app.app, sessions)  # inside the episode-path router: sees the episode of the path
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:  # before the URL is out
        async with serve_http(app, port) as base_url:
            log(f"gateway for {gateway.world.domain.name} at {base_url}/episodes/<name>/mcp "
                f"(one fresh database per name); Ctrl-C to stop")
            sys.stderr.flush()
            async for _ in signals:
                return
