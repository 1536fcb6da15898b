"""The server factory: one domain's tools over one snapshot, as an MCP server with episodes."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import re
from collections.abc import AsyncIterator, Callable
from importlib.metadata import version as package_version
from typing import Any

import anyio
import pydantic_core
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    SERVER_INFO_META_KEY,
    CallToolResult,
    TextContent,
)
from mcp_types import methods as protocol_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ._domain import Domain
from ._episode import (
    CLOSE_META_KEY,
    DEFAULT_EPISODE,
    EPISODE_META_KEY,
    EPISODE_SCOPE_KEY,
    Episode,
    EpisodeStore,
    current_episode_id,
    is_full,
)
from ._errors import DomainError, ErrorKind, error_result
from ._http_calls import SessionCalls, first_values, read_body, remember, replay
from ._jsonrpc import invalid_id_error
from ._sdk import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    RequestBodyLimitMiddleware,
    keep_error_results,
    results_metadata,
)
from ._snapshot import Snapshot
from ._tools import ToolSpec, describe_validation_error, not_unicode_error

logger = logging.getLogger("shiftbox.server")

SERVER_VERSION = package_version("shiftbox-servers")
STATE_DIGEST_URI = "shiftbox://episode/digest"
STATE_DIFF_URI = "shiftbox://episode/diff"
POLICY_URI = "shiftbox://policy"
SNAPSHOT_URI = "shiftbox://snapshot"
EPISODE_PATH = re.compile(r"^/episodes/([^/]+)/mcp/?$")
ORIGIN_HEADERS = (b"host", b"origin")
"""What the SDK's DNS-rebinding check of a request reads (`TransportSecurityMiddleware.validate_request`)."""
DEPENDENCY_GRAPH_MARK = "dependency-graph"
"""Appended to the server's description (its identity in `initialize`) when its tool descriptions carry the
dependency graph's preconditions and postconditions."""
GRAPH_REFUSAL_MARK = "graph-refusal"
"""Appended after it when the server also refuses calls whose required tools have not succeeded."""
PLAIN_CALL_KEYS = frozenset({"name", "arguments"})
"""tools/call params with only these keys (name and arguments checked by the kit) need no further shape check."""
CALL_KEYS_WITH_META = frozenset({"name", "arguments", "_meta"})
JSON_DOCUMENT_STARTS = frozenset("[{n")
"""First characters of the JSON texts the SDK's argument parse decodes from a string (`FuncMetadata.pre_parse_json`:
arrays, objects, null; a decoded string, number or boolean, an `int` to Python, is left as sent)."""
PROBE = "shiftbox-probe"
"""Text and key of the probe result whose wire shape gives a version's envelope (`structured_envelope`)."""


class EpisodeAccessError(Exception):
    """A request names an episode its connection may not select."""


def meta_episode_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """`_meta["shiftbox/episode"]` of the request, if it names one (`params_episode_id`)."""
    return params_episode_id(ctx.params)


def params_episode_id(params: dict[str, Any] | None) -> str | None:
    """`_meta["shiftbox/episode"]` of request params, if it names one; a value that is no string is refused
    (Invalid params), never ignored: the call would otherwise run in another episode than the one meant."""
    meta = (params or {}).get("_meta") or {}
    if not isinstance(meta, dict) or EPISODE_META_KEY not in meta:
        return None
    value = meta[EPISODE_META_KEY]
    if not isinstance(value, str):
        raise MCPError(INVALID_PARAMS, f"_meta[{EPISODE_META_KEY!r}] must be a string naming an episode, not "
                                       f"{json.dumps(value)[:100]}")
    return value


def connection_episode_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The episode the connection itself names: the HTTP path `/episodes/<id>/mcp`, else the legacy
    `Mcp-Session-Id` header; None on the plain endpoint, stdio and in-process connections."""
    request = ctx.request
    if isinstance(request, Request):
        return request.scope.get(EPISODE_SCOPE_KEY) or request.headers.get("mcp-session-id") or None
    return None


def request_episode_id(ctx: ServerRequestContext[Any, Any]) -> str:
    """Which episode a request belongs to.

    A connection that names an episode (an episode URL; the legacy session header) is bound to it:
    `_meta["shiftbox/episode"]` naming another episode is refused (`EpisodeAccessError`). Only a
    connection that names none (the plain `/mcp` endpoint, stdio, in-process: what shiftbox's own
    harness holds) selects episodes with `_meta`; without it, the process's default episode.
    """
    return choose_episode(connection_episode_id(ctx), ctx.params)


def choose_episode(bound: str | None, params: dict[str, Any] | None) -> str:
    """`request_episode_id` from the episode the connection names (`bound`) and the request's params."""
    named = params_episode_id(params)
    if bound is not None:
        if named is not None and named != bound:
            raise EpisodeAccessError(
                f"this connection serves episode {bound!r} only; _meta[{EPISODE_META_KEY!r}] cannot select "
                f"episode {named!r} (only the plain /mcp endpoint selects episodes by _meta)")
        return bound
    return named if named is not None else DEFAULT_EPISODE


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
        dependency_graph: bool = False,
        graph_refusal: bool = False,
    ):
        self.domain = domain
        self.snapshot = snapshot
        self.toolset = toolset
        self.tools = domain.tools_for(snapshot, toolset)
        if graph_refusal and not dependency_graph:
            raise ValueError("graph refusal enforces the dependency graph's steps, so it needs dependency-graph "
                             "mode: pass dependency_graph=True too (--dependency-graph --graph-refusal)")
        self.graph = domain.dependency_graph if dependency_graph else None
        """The dependency graph its tool descriptions carry (VitaBench mode), or None: the plain descriptions."""
        self.refusing = graph_refusal
        """Whether a call whose required steps have not succeeded is refused (a shiftbox option)."""
        if self.graph is not None:
            self.graph.check_tools([spec.name for spec in self.tools])
        self.episodes = EpisodeStore(snapshot, max_episodes=max_episodes, idle_timeout_s=idle_timeout_s)
        self.sdk_tools = {spec.name: self._mcp_tool(spec) for spec in self.tools}
        self._decodable: dict[str, tuple[str, ...] | None] = {
            spec.name: decodable_fields(spec) if kit_parsable(spec) else None for spec in self.tools}
        """Tool name -> its arguments the SDK's parse would decode a JSON text in (`kit_arguments`); None: the kit
        never hands on its own parse of the tool's arguments."""
        self.on_handshake_call: Callable[[ServerRequestContext[Any, Any]], None] | None = None
        """Told of each handshake-era tools/call the SDK's session brought (the HTTP calls fast path learns
        the session's negotiated version from it)."""
        m = snapshot.manifest
        instructions = (
            f"shiftbox {domain.name} server {SERVER_VERSION}. Snapshot {m.snapshot_id} "
            f"sha256={m.sha256}. Read the policy (prompt 'policy' or resource {POLICY_URI}) before acting."
        )
        if toolset != "default":
            instructions += f" Tool set: {toolset}."
        description = f"snapshot {m.snapshot_id} sha256={m.sha256}"
        if self.graph is not None:
            instructions += (" Dependency-graph mode: each tool's description lists its preconditions and "
                             "postconditions.")
            description += f" {DEPENDENCY_GRAPH_MARK}"
        if self.refusing:
            instructions += (" A tool refuses to run until the tools it requires have succeeded in this episode; "
                             "its error names what to call first.")
            description += f" {GRAPH_REFUSAL_MARK}"
        if domain.extra_instructions:
            instructions += "\n" + domain.extra_instructions
        self.mcp = MCPServer(
            name=f"shiftbox-{domain.name}",
            version=SERVER_VERSION,
            description=description,
            instructions=instructions,
            log_level="WARNING",
            middleware=[self._episode_middleware],
            lifespan=self._lifespan,
            tools=list(self.sdk_tools.values()),
        )
        self.mcp.middleware[:] = without_tracing(self.mcp.middleware)
        self._server_info = self.mcp._lowlevel_server.server_info_stamp
        """What the SDK stamps on every 2026-era result as `_meta["io.modelcontextprotocol/serverInfo"]`."""
        self._params_passed: set[tuple[Any, ...]] = set()
        """(version, `_meta` as JSON) of tools/call params that passed the SDK's params check (`_params_pass`)."""
        self._adapters: dict[str, tuple[Any, Any, Any]] = {}
        """Tool name -> (its metadata, output model, the SDK's validator of its results) (`_output_adapter`)."""
        self._envelopes: dict[str, dict[str, Any] | bool] = {}
        """Per protocol version, the wire envelope of a structured tool result (`_wire_structured`); False: the
        SDK's shaping did not keep the probe's content as given, so every result is shaped by `wire_result`."""
        self._checked: BaseModel | None = None
        """The middleware's strict parse of the arguments of the call `_answer_call` is answering (set just before
        that synchronous call, so never another call's)."""
        self._register_resources()

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: Any) -> AsyncIterator[dict[str, Any]]:
        """While the server runs (each transport enters this once), idle episodes are evicted on a timer."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._evict_idle_forever)
            try:
                yield {}
            finally:
                tg.cancel_scope.cancel()

    async def _evict_idle_forever(self) -> None:
        interval = min(60.0, max(0.05, self.episodes.idle_timeout_s / 4))
        while True:
            await anyio.sleep(interval)
            self.episodes.evict_idle()

    # -- tools ---------------------------------------------------------------------------------

    def _mcp_tool(self, spec: ToolSpec) -> Tool:
        """The SDK's registration of one domain tool (handed to `MCPServer(tools=...)`, in declaration order)."""

        async def call(**kwargs: Any) -> Any:
            return self.run_tool(spec, current_episode_id.get(), kwargs)

        functools.update_wrapper(call, spec.fn)
        del call.__wrapped__  # type: ignore[attr-defined]
        description = spec.description if self.graph is None else self.graph.describe(spec.name, spec.description)
        parsable = kit_parsable(spec)
        # Made without parameters, the SDK builds no argument model now: the kit's strict model gives the published
        # schema, and the SDK's own model is built on its first use; made without structured output, the SDK
        # builds no output schema of its own: the results' metadata is made once per return type.
        signature = spec.signature
        call.__signature__ = signature.replace(parameters=[]) if parsable else signature  # type: ignore[attr-defined]
        tool = Tool.from_function(call, name=spec.name, description=description, annotations=spec.annotations,
                                  structured_output=False)
        call.__signature__ = signature  # type: ignore[attr-defined]
        if spec.input_schema is not None:
            tool.parameters = dict(spec.input_schema)
        elif parsable:
            tool.parameters = sdk_input_schema(spec)
        # The published schema is closed, like the validator behind it.
        tool.parameters["additionalProperties"] = False
        return keep_error_results(tool, arguments_of=call if parsable else None,
                                  results=results_metadata(spec.fn.__name__, signature.return_annotation))

    def run_tool(self, spec: ToolSpec, episode_id: str, arguments: dict[str, Any]) -> Any:
        """Run one validated call atomically in its episode; domain failures become kinded errors.

        The episode's clock moves only if the call changed the database (`Episode.atomic`). In
        graph-refusal mode a call whose required steps have not succeeded is refused before it runs.
        """
        try:
            episode = self.episodes.get(episode_id)
        except DomainError as exc:
            return error_result(exc.kind, str(exc))
        episode.tool_calls += 1
        if self.refusing and self.graph is not None:
            refused = self.graph.refusal(spec.name, episode.succeeded)
            if refused is not None:
                return refused
        try:
            with episode.atomic():
                result = spec.fn(episode, **arguments)
        except DomainError as exc:
            return error_result(exc.kind, str(exc), field=exc.field)
        except Exception as exc:
            if is_full(exc):
                return error_result(ErrorKind.CAPACITY, f"episode {episode_id!r} has reached its size limit, so "
                                    f"{spec.name} could not write; no change was made. Reads still work; for more "
                                    "writes, start a new episode")
            logger.exception("tool %s crashed in episode %s", spec.name, episode_id)
            return error_result(ErrorKind.INTERNAL, f"{spec.name} failed inside the server; no change was made")
        episode.succeeded.add(spec.name)
        return result

    async def _episode_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        if ctx.request_id is None:  # a notification (no handler runs a tool for one): never a call
            return await call_next(ctx)
        if ctx.method == "prompts/get":
            self._check_prompt_name(ctx.params or {})
        if ctx.method not in ("tools/call", "resources/read"):
            meta_episode_id(ctx)  # a malformed episode key is refused on every request
            return await call_next(ctx)
        try:
            episode_id = request_episode_id(ctx)
        except EpisodeAccessError as exc:
            if ctx.method == "tools/call":
                return self.wire_result(ctx.protocol_version, error_result(ErrorKind.INVALID_ARGUMENTS, str(exc)))
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        token = current_episode_id.set(episode_id)
        try:
            if ctx.method == "tools/call":
                checked = self.check_arguments(ctx.params or {})
                if isinstance(checked, CallToolResult):  # shaped as the SDK shapes a handler's result (it trusts a
                    return self.wire_result(ctx.protocol_version, checked)  # middleware's)
                self._checked = checked
                try:
                    answered = self._answer_call(ctx, episode_id)
                finally:
                    self._checked = None
                if answered is not None:
                    return answered
            result = await call_next(ctx)
        finally:
            current_episode_id.reset(token)
        meta = (ctx.params or {}).get("_meta") or {}
        if ctx.method == "resources/read" and isinstance(meta, dict) and meta.get(CLOSE_META_KEY) is True:
            self.episodes.drop(episode_id, "ended by its final digest read")  # the harness's last read
        return result

    def _check_prompt_name(self, params: dict[str, Any]) -> None:
        """An unknown prompt is Invalid params (-32602), as MCP prescribes (the SDK answers code 0 or -32603)."""
        name = params.get("name")
        if not isinstance(name, str) or name not in self.prompt_names:
            raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; this server has: "
                                           f"{', '.join(sorted(self.prompt_names))}")

    def check_arguments(self, params: dict[str, Any]) -> Any:
        """Strict validation of raw arguments, before the SDK's lenient parsing can coerce them: the error result
        of arguments it refuses, else the kit's model of the arguments (`kit_arguments`)."""
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
            return spec.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            message, fields = describe_validation_error(spec, exc)
            return error_result(ErrorKind.INVALID_ARGUMENTS, message, fields=fields)

    def kit_arguments(self, name: str, arguments: dict[str, Any], checked: BaseModel) -> dict[str, Any] | None:
        """The keyword arguments the SDK's lenient parse makes of `arguments`, taken from the kit's strict parse of
        them (`checked`) instead of parsed again: for arguments the strict check passed, the lax parse gives the same
        values, unless it first decodes a string argument holding a JSON array, object or null (an argument not typed
        `str`), where None: the SDK parses them."""
        decodable = self._decodable.get(name)
        if decodable is None:
            return None
        for key in decodable:
            value = arguments.get(key)
            if isinstance(value, str) and value.lstrip()[:1] in JSON_DOCUMENT_STARTS:
                return None
        return dict(checked.__dict__)  # its fields' values (`dict(checked)` first looks for a `keys` it lacks, slowly)

    def _answer_call(self, ctx: ServerRequestContext[Any, Any], episode_id: str) -> dict[str, Any] | None:
        """The wire result of a tools/call the kit has validated, made by the kit (`answer_validated_call`)
        rather than by the SDK's tool handler; None (the SDK answers) before a handshake-era connection's
        `initialize` (a 2026-era connection is born ready)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            if ctx.session.client_params is None:
                return None
            if self.on_handshake_call is not None:
                self.on_handshake_call(ctx)
        return self.answer_validated_call(ctx.params or {}, ctx.protocol_version, episode_id, self._checked)

    @staticmethod
    def call_episode(bound: str | None, params: dict[str, Any]) -> str | None:
        """`choose_episode` for the HTTP fast path; None where it refuses (the SDK then answers the refusal)."""
        try:
            return choose_episode(bound, params)
        except (EpisodeAccessError, MCPError):
            return None

    def answer_validated_call(self, params: dict[str, Any], version: str, episode_id: str,
                              checked: BaseModel | None = None) -> dict[str, Any] | None:
        """The wire result of a tools/call whose name and arguments the kit has checked, on a connection of
        protocol `version`, with the SDK tool handler's own steps (its params check, lenient argument
        parse, result conversion and its shaping of the result for the version's wire), so the bytes are
        the same: the SDK's per-call context, tool lookup and second params check cost about a tenth of an
        HTTP tools/call. None (the SDK answers) where its steps could differ: params beyond name and
        arguments that fail its params check, arguments its lenient parse refuses. `checked`: the kit's strict
        parse of the arguments (`check_arguments`), which stands for the lenient one where it gives the same.
        """
        if not params.keys() <= PLAIN_CALL_KEYS and not self._params_pass(params, version):
            return None
        name = params["name"]
        tool = self.sdk_tools[name]
        raw_arguments = params.get("arguments") or {}
        arguments = None if checked is None else self.kit_arguments(name, raw_arguments, checked)
        if arguments is None:
            try:
                arguments = tool.fn_metadata.validate_arguments(raw_arguments)
            except Exception:
                return None
        structured = None
        try:
            raw = self.run_tool(self.tools.specs[name], episode_id, arguments)
            structured = structured_parts(tool.fn_metadata, self._output_adapter(name, tool.fn_metadata), raw)
            result = None if structured is not None else tool.fn_metadata.convert_result(raw)
        except Exception:  # a result that breaks the tool's own output model: the SDK's crash answer
            logger.exception("Tool %r raised an unexpected exception", name)
            structured, result = None, CallToolResult(
                content=[TextContent(type="text", text=f"Error executing tool {name}")], is_error=True)
        if structured is not None:
            return self._wire_structured(version, *structured)
        return self.wire_result(version, result)

    def _output_adapter(self, name: str, metadata: Any) -> Any:
        """The SDK's validator of tool `name`'s results (`FuncMetadata._output_adapter`, kept in a private attribute
        that costs more to read than to use), asked for again when the tool's metadata or output model changes;
        None: no output model, or an mcp without it."""
        kept = self._adapters.get(name)
        if kept is None or kept[0] is not metadata or kept[1] is not metadata.output_model:
            adapter_of = getattr(metadata, "_output_adapter", None)
            output_model = metadata.output_model
            adapter = adapter_of(output_model) if adapter_of is not None and output_model is not None else None
            kept = self._adapters[name] = (metadata, output_model, adapter)
        return kept[2]

    def _params_pass(self, params: dict[str, Any], version: str) -> bool:
        """The SDK's params check of a tools/call whose name and arguments the kit has checked. Its model
        validates each field on its own, so with no params but name, arguments and `_meta` only `_meta` can fail
        it: a pass is remembered per version and `_meta` (as JSON), which a client sends the same on every call."""
        key = None
        if params.keys() <= CALL_KEYS_WITH_META:
            try:
                key = (version, pydantic_core.to_json(params.get("_meta")))
            except pydantic_core.PydanticSerializationError:
                key = None
            if key is not None and key in self._params_passed:
                return True
        try:
            protocol_methods.validate_client_request("tools/call", version, params)
        except (KeyError, ValueError, ValidationError):
            return False
        if key is not None:
            remember(self._params_passed, key)
        return True

    def _wire_structured(self, version: str, text: str, structured: Any) -> dict[str, Any]:
        """`wire_result` of the SDK's conversion of a structured result (`structured_parts`), without building and
        re-validating its model: the version's envelope, shaped once by `wire_result` from a probe result of the
        same shape, is filled in. Structured content the SDK's final JSON dump would change (a float that is no
        finite number) takes `wire_result`."""
        envelope = self._envelopes.get(version)
        if envelope is None:
            envelope = self._envelopes[version] = structured_envelope(self.wire_result(version, CallToolResult(
                content=[TextContent(type="text", text=PROBE)], structured_content={PROBE: PROBE})))
        if envelope is False or type(structured) is not dict or not json_stable(structured):
            return self.wire_result(version, CallToolResult(content=[TextContent(type="text", text=text)],
                                                            structured_content=structured))
        wire = dict(envelope)  # its keys in the envelope's order; the envelope's values are never changed
        wire["content"] = [{**envelope["content"][0], "text": text}]
        wire["structuredContent"] = structured
        return wire

    def wire_result(self, version: str, result: CallToolResult) -> dict[str, Any]:
        """A tools/call result as the SDK's runner shapes a handler's for the wire (`ServerRunner._serialize`):
        its per-version fields, and on 2026-07-28 `resultType` and the serverInfo stamp (made once here, not
        copied per call: the result is written out, never changed)."""
        try:
            wire = protocol_methods.serialize_server_result(
                "tools/call", version, result.model_dump(by_alias=True, mode="json", exclude_none=True))
        except ValidationError:
            logger.exception("handler for %r returned an invalid result", "tools/call")
            raise MCPError(code=INTERNAL_ERROR, message="Handler returned an invalid result") from None
        if version in MODERN_PROTOCOL_VERSIONS:
            if wire.get("resultType") is None:
                wire["resultType"] = "complete"
            meta = wire.get("_meta")
            if meta is None or (isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None):
                wire["_meta"] = {**(meta or {}), SERVER_INFO_META_KEY: self._server_info}
        return wire

    # -- resources and prompts -----------------------------------------------------------------

    def episode(self, uri: str) -> Episode:
        """The request's episode, for the resource `uri` (a closed or invalid one: an error naming it, what the SDK
        answers for a `ResourceError` since mcp 2.2, raised as such because mcp 2.0 answered only "Error reading
        resource" for one)."""
        try:
            return self.episodes.get(current_episode_id.get())
        except DomainError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc), data={"uri": uri}) from None

    def _register_resources(self) -> None:
        mcp = self.mcp

        # async: episode state is only ever touched on the event loop (the SDK runs plain functions in
        # worker threads, where a read could race a DELETE or the eviction timer closing the database)
        @mcp.resource(STATE_DIGEST_URI, mime_type="application/json")
        async def state_digest() -> str:
            """The episode's state digest (for the harness, not the agent)."""
            ep = self.episode(STATE_DIGEST_URI)
            tool_calls, now = ep.tool_calls, ep.now_iso()  # as of the state the digest is of
            return json.dumps({"episode": ep.id, "digest": await ep.read_digest(), "tool_calls": tool_calls,
                               "now": now})

        @mcp.resource(STATE_DIFF_URI, mime_type="application/json")
        async def state_diff() -> str:
            """Rows the episode added, removed or changed relative to the snapshot."""
            return json.dumps(await self.episode(STATE_DIFF_URI).read_diff(), sort_keys=True)

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

        self.prompt_names = frozenset(prompt.name for prompt in mcp._prompt_manager.list_prompts())
        """The prompts `prompts/get` serves (any other name is refused before the SDK's handler)."""

    # -- HTTP ----------------------------------------------------------------------------------

    def http_app(self, host: str = "127.0.0.1") -> ASGIApp:
        """Streamable HTTP at `/mcp` and `/episodes/<id>/mcp`; `DELETE /episodes/<id>` drops one."""
        store = self.episodes

        @self.mcp.custom_route("/episodes/{episode_id}", methods=["DELETE"])
        async def drop_episode(request: Request) -> Response:
            episode_id = request.path_params["episode_id"]
            dropped = store.drop(episode_id, f"dropped by DELETE /episodes/{episode_id}")
            return JSONResponse({"dropped": dropped}, status_code=200 if dropped else 404)

        @self.mcp.custom_route("/healthz", methods=["GET"])
        async def healthz(request: Request) -> Response:
            m = self.snapshot.manifest
            return JSONResponse(
                {"server": self.mcp.name, "version": SERVER_VERSION, "snapshot": m.snapshot_id,
                 "sha256": m.sha256, "episodes": len(store), "rss_bytes": resident_bytes()}
            )

        inner = self.mcp.streamable_http_app(json_response=True, host=host)
        manager = self.mcp.session_manager
        return EpisodePathRouter(inner, host, mcp_endpoint=manager.handle_request, calls=SessionCalls(self, manager),
                                 max_body_size=manager.max_request_body_size)


def kit_parsable(spec: ToolSpec) -> bool:
    """Whether the kit's strict model of a tool's arguments names them as the SDK's argument model does (which renames
    a parameter named like a method of pydantic's `BaseModel`), so its parse and schema can stand for the SDK's."""
    return not any(callable(getattr(BaseModel, field, None)) for field in spec.arguments_model.model_fields)


def sdk_input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The input schema the SDK derives from a tool's signature (`Tool.from_function`), from the kit's strict model
    of the same parameters (`kit_parsable`): the same but for the title the SDK gives its model, and the closing
    `additionalProperties` the kit adds last."""
    schema = spec.arguments_model.model_json_schema(by_alias=True)
    schema["title"] = f"{spec.fn.__name__}Arguments"
    schema.pop("additionalProperties", None)
    return schema


def decodable_fields(spec: ToolSpec) -> tuple[str, ...]:
    """A tool's arguments the SDK's parse decodes a JSON text in (`FuncMetadata.pre_parse_json`): those not typed
    `str`."""
    return tuple(name for name, field in spec.arguments_model.model_fields.items() if field.annotation is not str)


def structured_parts(metadata: Any, adapter: Any, raw: Any) -> tuple[str, Any] | None:
    """The text and structured content the SDK's `FuncMetadata.convert_result` makes of a tool's plain structured
    result (a dict, or an instance of the tool's output model exactly), with its steps: the JSON text, the output
    model's validation (by `adapter`, the SDK's) and JSON-mode dump. None: any other result, or no `adapter`,
    which the SDK converts."""
    output_model = metadata.output_model
    if (output_model is None or metadata.output_schema is None or adapter is None
            or not (type(raw) is dict or type(raw) is output_model)):
        return None
    text = pydantic_core.to_json(raw, fallback=str, indent=2).decode()
    validated = adapter.validate_python({"result": raw} if metadata.wrap_output else raw, by_alias=True, by_name=True)
    if isinstance(validated, BaseModel):
        return text, validated.model_dump(mode="json", by_alias=True)
    return text, adapter.dump_python(validated, mode="json", by_alias=True)


def structured_envelope(probe: dict[str, Any]) -> dict[str, Any] | bool:
    """A version's wire envelope of structured results, from the wire shape of the probe result (`PROBE` as its
    text and its structured content's one key); False where the shaping changed either."""
    content = probe.get("content")
    kept = (isinstance(content, list) and len(content) == 1 and content[0] == {"type": "text", "text": PROBE}
            and probe.get("structuredContent") == {PROBE: PROBE})
    return probe if kept else False


def json_stable(value: Any) -> bool:
    """Whether JSON-mode output is left as it is by another JSON-mode dump: always, but for a float that is no
    finite number (a float field keeps NaN; the SDK's dump of its result, typed `Any`, makes it null)."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is float:
            if not math.isfinite(item):
                return False
        elif kind is dict:
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
    return True


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
