"""`ShiftboxEnv` served over HTTP in OpenEnv's convention (docs/rl.md), for trainers in another process or language:
`POST /reset`, `POST /step`, `GET /state`, `GET /health`, and `POST /close` to end a session.

Responses of reset and step are OpenEnv's `{"observation": {...}, "reward": ..., "done": ...}`. Unlike OpenEnv's
stateless HTTP routes, episodes persist between requests: each request names a `session_id` (any string the client
chooses; "default" when left out) and each session is a `ShiftboxEnv` of its own, all stepped concurrently in the
server's event loop. The server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._env import Observation, ShiftboxEnv

HOST = "127.0.0.1"
DEFAULT_SESSION = "default"
MAX_SESSIONS = 64


class ResetRequest(BaseModel):
    """`POST /reset`: OpenEnv's fields (`seed`, `episode_id`) and shiftbox's (`task_id`, `trial`, `session_id`)."""

    model_config = ConfigDict(extra="forbid")
    task_id: str | None = Field(None, description="the task to play (may be left out when the server has one task)")
    trial: int = Field(0, ge=0, description="the trial: with the server's seed and the task id, the simulation seed")
    seed: int | None = Field(None, description="accepted for OpenEnv clients; the simulation seed is the server's "
                                               "seed, the task id and the trial, as in a run")
    episode_id: str | None = Field(None, max_length=255, description="the episode's name in /state (default: "
                                                                     "<task_id>.<trial>.<number>)")
    session_id: str = Field(DEFAULT_SESSION, max_length=255)


class StepRequest(BaseModel):
    """`POST /step`: the policy's assistant message as `action` (`content` and/or OpenAI `tool_calls`)."""

    model_config = ConfigDict(extra="forbid")
    action: dict[str, Any]
    session_id: str = Field(DEFAULT_SESSION, max_length=255)
    timeout_s: float | None = Field(None, description="accepted for OpenEnv clients; not used")
    request_id: str | None = Field(None, description="accepted for OpenEnv clients; not used")


class CloseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    session_id: str = Field(DEFAULT_SESSION, max_length=255)


@dataclass
class _Session:
    env: ShiftboxEnv
    episode_id: str | None = None
    task_id: str | None = None
    trial: int = 0
    step_count: int = 0
    episodes: int = 0
    done: bool = False
    reward: float | None = None
    info: dict[str, Any] | None = None


class HttpError(Exception):
    """A request the server refuses: its HTTP status and a message naming the fix."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class EnvSessions:
    """The server's sessions: one `ShiftboxEnv` each, made on a session's first reset with the server's options."""

    def __init__(self, make_env: Callable[[], ShiftboxEnv], max_sessions: int = MAX_SESSIONS):
        self._make_env = make_env
        self.max_sessions = max_sessions
        self.sessions: dict[str, _Session] = {}
        self.tasks = make_env_checked(make_env)

    def _session(self, session_id: str, create: bool = False) -> _Session:
        if session_id not in self.sessions:
            if not create:
                raise HttpError(404, f"no session {session_id!r}: POST /reset with this session_id first")
            if len(self.sessions) >= self.max_sessions:
                raise HttpError(503, f"{self.max_sessions} sessions are open: POST /close one first")
            self.sessions[session_id] = _Session(self._make_env())
        return self.sessions[session_id]

    async def reset(self, request: ResetRequest) -> dict[str, Any]:
        task_id = request.task_id
        if task_id is None:
            if len(self.tasks) != 1:
                raise HttpError(400, f"name the task: task_id is one of {', '.join(self.tasks)}")
            task_id = self.tasks[0]
        if task_id not in self.tasks:
            raise HttpError(404, f"no task {task_id!r}: task_id is one of {', '.join(self.tasks)}")
        session = self._session(request.session_id, create=True)
        observation = await session.env.reset(task_id, trial=request.trial)
        session.episodes += 1
        session.episode_id = request.episode_id or f"{task_id}.{request.trial}.{session.episodes}"
        session.task_id, session.trial, session.step_count = task_id, request.trial, 0
        session.done, session.reward, session.info = False, None, None
        return _response(observation, None, False, None)

    async def step(self, request: StepRequest) -> dict[str, Any]:
        session = self._session(request.session_id)
        if session.done:
            raise HttpError(409, f"episode {session.episode_id!r} is done: POST /reset to start another")
        observation, reward, done, info = await session.env.step(request.action)
        session.step_count += 1
        if done:
            session.done, session.reward, session.info = True, reward, info
        return _response(observation, reward, done, info)

    def state(self, session_id: str) -> dict[str, Any]:
        """OpenEnv's state (`episode_id`, `step_count`) and the episode's task, trial, end, reward, and once done its
        `metrics` and `trajectory` as JSON."""
        session = self._session(session_id)
        state = {"episode_id": session.episode_id, "step_count": session.step_count, "session_id": session_id,
                 "task_id": session.task_id, "trial": session.trial, "done": session.done, "reward": session.reward}
        if session.info is not None:
            state["metrics"] = session.info["metrics"].model_dump(mode="json")
            state["trajectory"] = session.info["trajectory"].model_dump(mode="json")
        return state

    async def close(self, session_id: str) -> dict[str, Any]:
        session = self.sessions.pop(session_id, None)
        if session is None:
            raise HttpError(404, f"no session {session_id!r}")
        await session.env.close()
        return {"session_id": session_id, "closed": True}

    async def close_all(self) -> None:
        for session_id in sorted(self.sessions):
            await self.sessions.pop(session_id).env.close()


def make_env_checked(make_env: Callable[[], ShiftboxEnv]) -> list[str]:
    """The options checked once at start (an environment made and dropped; it holds nothing until a reset): a bad one
    fails the server's start with `ShiftboxEnv`'s own error. Returns the task ids, sorted."""
    env = make_env()
    if not env.tasks:
        raise ValueError("the environment server needs tasks (a task file or a list of tasks)")
    return sorted(env.tasks)


def _response(observation: Observation, reward: float | None, done: bool, info: dict[str, Any] | None) -> dict[str, Any]:
    """OpenEnv's reset/step answer; the observation also carries the episode's `metrics` once done."""
    body = observation.model_dump(mode="json")
    if info is not None and "metrics" in info:
        body["metrics"] = info["metrics"].model_dump(mode="json")
    return {"observation": body, "reward": reward, "done": done}


def env_server_app(make_env: Callable[[], ShiftboxEnv], max_sessions: int = MAX_SESSIONS) -> Any:
    """The Starlette app serving `make_env`'s environments (one per session)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    sessions = EnvSessions(make_env, max_sessions)

    def handler(model: type[BaseModel] | None,
                call: Callable[[Any], Awaitable[dict[str, Any]] | dict[str, Any]]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> JSONResponse:
            try:
                if model is None:
                    argument: Any = request.query_params.get("session_id", DEFAULT_SESSION)
                else:
                    raw = await request.body()
                    argument = model.model_validate(json.loads(raw) if raw.strip() else {})
                result = call(argument)
                if not isinstance(result, dict):
                    result = await result
                return JSONResponse(result)
            except HttpError as exc:
                return JSONResponse({"detail": str(exc)}, status_code=exc.status)
            except (ValueError, TypeError) as exc:  # a malformed request: JSON, fields, the message
                return JSONResponse({"detail": str(exc)}, status_code=422)
            except RuntimeError as exc:  # EnvironmentInUse (a call while another runs), a step before reset
                return JSONResponse({"detail": str(exc)}, status_code=409)

        return endpoint

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await sessions.close_all()

    routes = [
        Route("/health", handler(None, lambda _: {"status": "healthy"}), methods=["GET"]),
        Route("/reset", handler(ResetRequest, sessions.reset), methods=["POST"]),
        Route("/step", handler(StepRequest, sessions.step), methods=["POST"]),
        Route("/state", handler(None, sessions.state), methods=["GET"]),
        Route("/close", handler(CloseRequest, lambda r: sessions.close(r.session_id)), methods=["POST"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.sessions = sessions
    return app


def serve_env(tasks: Any, *, port: int = 8770, max_sessions: int = MAX_SESSIONS,
              on_ready: Callable[[str], None] | None = None, **options: Any) -> None:
    """Serve `ShiftboxEnv(tasks, **options)` sessions on http://127.0.0.1:PORT until interrupted (Ctrl-C, SIGTERM);
    every session's episode is ended and its server stopped on the way out. `on_ready` gets the base URL."""
    import uvicorn

    if options.get("world") is not None:
        raise TypeError("world= cannot be given to the environment server: each session holds its own server")
    app = env_server_app(lambda: ShiftboxEnv(tasks, **options), max_sessions)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    url = f"http://{HOST}:{sock.getsockname()[1]}"

    async def run() -> None:
        async def announce() -> None:
            while not server.started:
                await asyncio.sleep(0.05)
            if on_ready is not None:
                on_ready(url)

        announcer = asyncio.get_running_loop().create_task(announce())
        try:
            await server.serve(sockets=[sock])
        finally:
            announcer.cancel()

    with contextlib.closing(sock):
        asyncio.run(run())
