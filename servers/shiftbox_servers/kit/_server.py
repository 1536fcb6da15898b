"""The server factory: one domain's tools over one snapshot, as an MCP server with episodes."""

from __future__ import annotations

import functools
import json
import logging
import os
import re
from importlib.metadata import version as package_version
from typing import Any

from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ._domain import Domain
from ._episode import (
    CLOSE_META_KEY,
    DEFAULT_EPISODE,
    EPISODE_META_KEY,
    Episode,
    EpisodeStore,
    current_episode_id,
)
from ._errors import DomainError, ErrorKind, error_result
from ._snapshot import Snapshot
from ._tools import ToolSpec, describe_validation_error, not_unicode_error

logger = logging.getLogger("shiftbox.server")

SERVER_VERSION = package_version("shiftbox-servers")
STATE_DIGEST_URI = "shiftbox://episode/digest"
STATE_DIFF_URI = "shiftbox://episode/diff"
POLICY_URI = "shiftbox://policy"
SNAPSHOT_URI = "shiftbox://snapshot"
EPISODE_PATH = re.compile(r"^/episodes/([^/]+)/mcp/?$")
EPISODE_SCOPE_KEY = "shiftbox.episode"


def request_episode_id(ctx: ServerRequestContext[Any, Any]) -> str:
    """Which episode a request belongs to: `_meta` key, then HTTP path, then legacy session header."""
    meta = (ctx.params or {}).get("_meta") or {}
    if isinstance(meta, dict) and isinstance(meta.get(EPISODE_META_KEY), str):
        return meta[EPISODE_META_KEY]
    request = ctx.request
    if isinstance(request, Request):
        from_path = request.scope.get(EPISODE_SCOPE_KEY)
        if from_path:
            return from_path
        legacy = request.headers.get("mcp-session-id")
        if legacy:
            return legacy
    return DEFAULT_EPISODE


class DomainServer:
    """An `MCPServer` for one domain and snapshot, with the episode store behind its tools."""

    def __init__(
        self,
        domain: Domain,
        snapshot: Snapshot,
        *,
        max_episodes: int = 1000,
        idle_timeout_s: float = 3600.0,
        toolset: str = "default",
    ):
        self.domain = domain
        self.snapshot = snapshot
        self.toolset = toolset
        self.tools = domain.toolset(toolset)
        self.episodes = EpisodeStore(snapshot, max_episodes=max_episodes, idle_timeout_s=idle_timeout_s)
        m = snapshot.manifest
        instructions = (
            f"shiftbox {domain.name} server {SERVER_VERSION}. Snapshot {m.snapshot_id} "
            f"sha256={m.sha256}. Read the policy (prompt 'policy' or resource {POLICY_URI}) before acting."
        )
        if toolset != "default":
            instructions += f" Tool set: {toolset}."
        if domain.extra_instructions:
            instructions += "\n" + domain.extra_instructions
        self.mcp = MCPServer(
            name=f"shiftbox-{domain.name}",
            version=SERVER_VERSION,
            description=f"snapshot {m.snapshot_id} sha256={m.sha256}",
            instructions=instructions,
            log_level="WARNING",
            middleware=[self._episode_middleware],
        )
        for spec in self.tools:
            self._register_tool(spec)
        self._register_resources()

    # -- tools ---------------------------------------------------------------------------------

    def _register_tool(self, spec: ToolSpec) -> None:
        async def call(**kwargs: Any) -> Any:
            return self.run_tool(spec, current_episode_id.get(), kwargs)

        functools.update_wrapper(call, spec.fn)
        call.__signature__ = spec.signature  # type: ignore[attr-defined]
        del call.__wrapped__  # type: ignore[attr-defined]
        self.mcp.add_tool(call, name=spec.name, description=spec.description, annotations=spec.annotations)
        # The published schema is closed, like the validator behind it.
        self.mcp._tool_manager.get_tool(spec.name).parameters["additionalProperties"] = False

    def run_tool(self, spec: ToolSpec, episode_id: str, arguments: dict[str, Any]) -> Any:
        """Run one validated call atomically in its episode; domain failures become kinded errors.

        The episode's clock moves only if the call changed the database (`Episode.atomic`).
        """
        try:
            episode = self.episodes.get(episode_id)
        except DomainError as exc:
            return error_result(exc.kind, str(exc))
        episode.tool_calls += 1
        try:
            with episode.atomic():
                return spec.fn(episode, **arguments)
        except DomainError as exc:
            return error_result(exc.kind, str(exc), field=exc.field)
        except Exception:
            logger.exception("tool %s crashed in episode %s", spec.name, episode_id)
            return error_result(ErrorKind.INTERNAL, f"{spec.name} failed inside the server; no change was made")

    async def _episode_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if ctx.method not in ("tools/call", "resources/read"):
            return await call_next(ctx)
        episode_id = request_episode_id(ctx)
        token = current_episode_id.set(episode_id)
        try:
            if ctx.method == "tools/call":
                rejected = self._reject_arguments(ctx.params or {})
                if rejected is not None:
                    return rejected
            result = await call_next(ctx)
        finally:
            current_episode_id.reset(token)
        meta = (ctx.params or {}).get("_meta") or {}
        if ctx.method == "resources/read" and isinstance(meta, dict) and meta.get(CLOSE_META_KEY) is True:
            self.episodes.drop(episode_id)  # the harness's last read of an episode ends it
        return result

    def _reject_arguments(self, params: dict[str, Any]) -> Any:
        """Strict validation of raw arguments, before the SDK's lenient parsing can coerce them."""
        name = params.get("name")
        spec = self.tools.get(name) if isinstance(name, str) else None
        if spec is None:
            known = ", ".join(s.name for s in self.tools)
            return error_result(ErrorKind.UNKNOWN_TOOL, f"unknown tool {name!r}; this server has: {known}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return error_result(ErrorKind.INVALID_ARGUMENTS, f"arguments for {name} must be a JSON object")
        not_unicode = not_unicode_error(name, arguments)  # also in keys, which pydantic would echo raw
        if not_unicode is not None:
            return not_unicode
        try:
            spec.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            message, fields = describe_validation_error(spec, exc)
            return error_result(ErrorKind.INVALID_ARGUMENTS, message, fields=fields)
        return None

    # -- resources and prompts -----------------------------------------------------------------

    def episode(self) -> Episode:
        return self.episodes.get(current_episode_id.get())

    def _register_resources(self) -> None:
        mcp = self.mcp

        @mcp.resource(STATE_DIGEST_URI, mime_type="application/json")
        def state_digest() -> str:
            """The episode's state digest (for the harness, not the agent)."""
            ep = self.episode()
            return json.dumps(
                {"episode": ep.id, "digest": ep.digest(), "tool_calls": ep.tool_calls, "now": ep.now_iso()}
            )

        @mcp.resource(STATE_DIFF_URI, mime_type="application/json")
        def state_diff() -> str:
            """Rows the episode added, removed or changed relative to the snapshot."""
            return json.dumps(self.episode().diff(), sort_keys=True)

        @mcp.resource(SNAPSHOT_URI, mime_type="application/json")
        def snapshot_manifest() -> str:
            """The snapshot manifest (version, sha256, clock start, row counts)."""
            return self.snapshot.manifest.model_dump_json()

        @mcp.resource(POLICY_URI, mime_type="text/markdown")
        def policy_text() -> str:
            """The agent policy for this domain."""
            return self.domain.policy

        @mcp.prompt(name="policy", description=f"The {self.domain.name} agent policy")
        def policy_prompt() -> str:
            return self.domain.policy

    # -- HTTP ----------------------------------------------------------------------------------

    def http_app(self, host: str = "127.0.0.1") -> ASGIApp:
        """Streamable HTTP at `/mcp` and `/episodes/<id>/mcp`; `DELETE /episodes/<id>` drops one."""
        store = self.episodes

        @self.mcp.custom_route("/episodes/{episode_id}", methods=["DELETE"])
        async def drop_episode(request: Request) -> Response:
            dropped = store.drop(request.path_params["episode_id"])
            return JSONResponse({"dropped": dropped}, status_code=200 if dropped else 404)

        @self.mcp.custom_route("/healthz", methods=["GET"])
        async def healthz(request: Request) -> Response:
            m = self.snapshot.manifest
            return JSONResponse(
                {"server": self.mcp.name, "version": SERVER_VERSION, "snapshot": m.snapshot_id,
                 "sha256": m.sha256, "episodes": len(store), "rss_bytes": resident_bytes()}
            )

        inner = self.mcp.streamable_http_app(json_response=True, host=host)
        return EpisodePathRouter(inner)


def resident_bytes() -> int | None:
    """This process's resident memory (Linux), for /healthz and the load benchmark."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class EpisodePathRouter:
    """ASGI wrapper: serves `/episodes/<id>/mcp` by the `/mcp` endpoint, remembering the episode id."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            match = EPISODE_PATH.match(scope["path"])
            if match:
                scope = dict(scope, path="/mcp", raw_path=b"/mcp")
                scope[EPISODE_SCOPE_KEY] = match.group(1)
        await self.app(scope, receive, send)
