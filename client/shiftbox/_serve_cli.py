"""`shiftbox serve`: the recording gateway for any MCP client, each session a trajectory `shiftbox metrics` scores."""

from __future__ import annotations

import os
import signal
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from shiftbox_servers.kit import SnapshotError, get_domain
from shiftbox_servers.kit._server import EPISODE_SCOPE_KEY

from ._run import (
    RUN_FILE,
    TRAJECTORIES_FILE,
    RunConfig,
    RunDirError,
    RunFileError,
    RunMetadata,
    prepare_run_dir,
    read_trajectories,
    task_file_digest,
)
from ._run_cli import fail
from .tasks import GoalShifts, Instructions, Task, TaskFile, UserScenario, load_task_file
from .world import SERVER_MODES, Gateway, InfrastructureError, open_world, serve_http
from .world._sessions import CALLS_FILE, GATEWAY_AGENT, GATEWAY_USER, GatewaySessions, run_dir_lock

err = Console(stderr=True, soft_wrap=True)
OPEN_SESSION_TASK = "open-session"


def open_session_task(domain: str) -> Task:
    """The task of sessions with no task given: no goals, no gold actions; TUE and TCRR still apply."""
    return Task(id=OPEN_SESSION_TASK, domain=domain, user_scenario=UserScenario(
        instructions=Instructions(reason_for_call="free use of the tools through `shiftbox serve`"),
        goal_shifts=GoalShifts(required_shifts=0, goals=[])))


def serve(
    domain: Annotated[str, typer.Option(help="domain whose tools to serve (banking, retail, airline)")],
    out: Annotated[Path, typer.Option(help="directory for the session log (a run directory)")] = Path("runs/serve"),
    transport: Annotated[str, typer.Option(help="http (127.0.0.1) or stdio")] = "http",
    port: Annotated[int, typer.Option(help="HTTP port on 127.0.0.1 (0: any free port)")] = 8766,
    servers: Annotated[str, typer.Option(help=f"how the domain server runs behind the gateway: {'|'.join(SERVER_MODES)}")] = "inproc",
    snapshot: Annotated[Path | None, typer.Option(help="snapshot directory (default: the domain's)")] = None,
    tasks: Annotated[Path | None, typer.Option(help="a task file: sessions attempt --task-id from it and are "
                                                    "scored against it (its initial state is applied first)")] = None,
    task_id: Annotated[str | None, typer.Option(help="the task of every session (needs --tasks)")] = None,
    resume: Annotated[bool, typer.Option(help="accepted for compatibility: --out is always reopened, each "
                                              "launch adding new sessions", hidden=True)] = False,
) -> None:
    """Serve a domain's tools to any MCP client through the recording gateway; every call is recorded.

    Each episode gets a fresh database: over HTTP, connect to http://127.0.0.1:PORT/episodes/<name>/mcp (one episode per name; clients on plain /mcp get one per MCP session); over stdio the process is one episode.

    OUT is a session log that any number of launches share: each session gets the next number (open-session#0, #1, …). Calls are appended to OUT/calls.jsonl as they happen; each session's trajectory is appended to OUT/trajectories.jsonl when it ends (the client closes its MCP session, HTTP DELETE /episodes/<name>, end of stdio, SIGINT or SIGTERM), sessions cut short by a crash are rebuilt from calls.jsonl at the next start, and `shiftbox metrics OUT` scores them.

    Example: shiftbox serve --domain banking --port 8766 --out runs/desktop
    """
    if transport not in ("http", "stdio"):
        raise fail(f"--transport {transport!r} is not http or stdio")
    if servers not in SERVER_MODES:
        raise fail(f"--servers {servers!r} is not one of {', '.join(SERVER_MODES)}")
    try:
        dom = get_domain(domain)
    except KeyError as exc:
        raise fail(str(exc.args[0])) from None
    task = _session_task(domain, tasks, task_id)
    snapshot_dir = snapshot or dom.default_snapshot_dir()
    task_file = TaskFile(domain=domain, source=f"shiftbox serve ({tasks or 'no task'})", tasks=[task])
    config = RunConfig(domain=domain, tasks_sha256=task_file_digest(task_file), agent=GATEWAY_AGENT,
                       user=GATEWAY_USER, servers=servers, snapshot=str(snapshot_dir))
    metadata = RunMetadata(config=config, shiftbox_version=version("shiftbox"), simulations=0)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with run_dir_lock(out):  # launches at the same moment (a desktop client starting two) take turns
            prepare_run_dir(out, metadata, task_file, resume=(out / RUN_FILE).exists())
    except (RunDirError, RunFileError, OSError) as exc:
        raise fail(str(exc)) from None
    try:
        ended = anyio.run(_serve, domain, servers, snapshot_dir, task, out, transport, port)
    except (SnapshotError, InfrastructureError, RunFileError, OSError) as exc:
        raise fail(str(exc)) from None
    _stopped(out, ended)


def _stopped(out: Path, ended: int) -> None:
    total = len(read_trajectories(out))
    err.print(f"stopped: {ended} open sessions closed; {out / TRAJECTORIES_FILE} holds {total} sessions. "
              f"Score them with `shiftbox metrics {out}`")


def _session_task(domain: str, tasks: Path | None, task_id: str | None) -> Task:
    if tasks is None:
        if task_id is not None:
            raise fail("--task-id needs --tasks FILE")
        return open_session_task(domain)
    try:
        task_file = load_task_file(tasks)
    except (OSError, ValueError) as exc:
        raise fail(str(exc)) from None
    if task_file.domain != domain:
        raise fail(f"{tasks} holds {task_file.domain} tasks, not {domain}")
    chosen = [t for t in task_file.tasks if t.id == task_id]
    if not chosen:
        raise fail(f"give --task-id, one of: {', '.join(t.id for t in task_file.tasks[:10])}"
                   + (" …" if len(task_file.tasks) > 10 else ""))
    return chosen[0]


async def _serve(domain: str, servers: str, snapshot_dir: Path, task: Task, out: Path, transport: str,
                 port: int) -> int:
    async with open_world(domain, servers=servers, snapshot_dir=snapshot_dir) as world:
        sessions = GatewaySessions(world, task, out)
        try:
            rebuilt = sessions.recover()
            if rebuilt:
                err.print(f"rebuilt {rebuilt} sessions cut short by a crash from {out / CALLS_FILE}")
            gateway = Gateway(world, sessions.route)
            if transport == "stdio":
                await _serve_stdio(gateway, sessions, out)
            else:
                await _serve_http(gateway, sessions, port)
        finally:
            with anyio.CancelScope(shield=True):  # whatever stopped us, every open session is written
                ended = await sessions.end_all()
        return ended


async def _serve_stdio(gateway: Gateway, sessions: GatewaySessions, out: Path) -> None:
    """Until the client closes stdin, or SIGINT / SIGTERM: the session is written, then the process exits at
    once (stdin is read by a thread that no cancellation reaches)."""
    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                with anyio.CancelScope(shield=True):
                    ended = await sessions.end_all()
                _stopped(out, ended)
                sys.stderr.flush()
                os._exit(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(on_signal)
        await gateway.run_stdio()
        tg.cancel_scope.cancel()


class _ClientSessions:
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
            await self.sessions.client_left(episode_id, client)
            await self.app(scope, receive, send)
            return
        self.sessions.client_seen(episode_id, client)
        await self.app(scope, receive, send)


async def _serve_http(gateway: Gateway, sessions: GatewaySessions, port: int) -> None:
    async def end_session(request: Request) -> Response:
        ended = await sessions.end(request.path_params["episode_id"], dropped=True)
        return JSONResponse({"ended": ended}, status_code=200 if ended else 404)

    app = gateway.http_app()
    app.app.router.routes.append(Route("/episodes/{episode_id}", end_session, methods=["DELETE"]))
    app.app = _ClientSessions(app.app, sessions)  # inside the episode-path router: sees the episode of the path
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:  # before the URL is out
        async with serve_http(app, port) as base_url:
            err.print(f"gateway for {gateway.world.domain.name} at {base_url}/episodes/<name>/mcp "
                      f"(one fresh database per name); Ctrl-C to stop", highlight=False)
            sys.stderr.flush()
            async for _ in signals:
                return
