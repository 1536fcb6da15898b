"""The server factory: one domain's tools over one snapshot, as an MCP server with episodes."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version as package_version
from typing import TYPE_CHECKING, Any

import anyio
import pydantic_core
from pydantic import BaseModel, ValidationError

from ._domain import POLICY_PROMPT, Domain
from ._episode import (
    CLOSE_META_KEY,
    Episode,
    EpisodeStore,
    current_episode_id,
    in_episode,
    is_full,
)
from ._errors import DomainError, ErrorKind, FailedCall, error_wire, is_refusal, result_model
from ._jsonrpc import remember
from ._outputs import ToolOutput, tool_output
from ._protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LATEST_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSIONS,
    SERVER_INFO_META_KEY,
    loaded_model,
    result_dump,
)
from ._requests import (
    EpisodeAccessError,
    RequestRefused,
    as_sdk_errors,
    choose_episode,
    params_episode_id,
    sdk_error,
)
from ._snapshot import Snapshot
from ._tools import ToolSpec, describe_validation_error, not_unicode_error

if TYPE_CHECKING:  # the MCP SDK is loaded by the transports that speak MCP (`_binding`), never by the kit's core,
    # which loads the protocol's models (`mcp_types`) only where one is asked for (`_protocol`)
    from mcp.server.context import CallNext, ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp_types import CallToolResult, Implementation
    from mcp_types import Tool as McpTool
    from starlette.types import ASGIApp

logger = logging.getLogger("shiftbox.server")

SERVER_VERSION = package_version("shiftbox-servers")
STATE_DIGEST_URI = "shiftbox://episode/digest"
STATE_DIFF_URI = "shiftbox://episode/diff"
POLICY_URI = "shiftbox://policy"
READ_THE_POLICY = f"Read the policy (prompt '{POLICY_PROMPT}' or resource {POLICY_URI}) before acting."
"""What a server's (and the recording gateway's) instructions tell an agent of the policy."""
SNAPSHOT_URI = "shiftbox://snapshot"
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


PROBE_RESULT = result_dump(content=[{"type": "text", "text": PROBE}], structuredContent={PROBE: PROBE}, isError=False)
"""The probe result's dump (`CallToolResult`), shaped without the protocol's models."""


@dataclass(frozen=True)
class ServerIdentity:
    """A server's identity, `initialize`'s serverInfo (the protocol's `Implementation`, its attribute names), held
    without the protocol's models: `wire()` is its JSON dump, `DomainServer.info` the model."""

    name: str
    version: str
    description: str

    def wire(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "description": self.description}


@dataclass(frozen=True)
class ServerResource:
    """One resource the server serves: its URI, MIME type and reader (the SDK binding registers each as it is)."""

    uri: str
    mime_type: str
    read: Callable[[], str | Awaitable[str]]


class DomainServer:
    """One domain and snapshot, with the episode store behind its tools: called in process as it is
    (`DirectSession`), or served over MCP by the SDK's `MCPServer` (`mcp`, built the first time a transport asks)."""

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
            domain.check_graph_mode()
            self.graph.check_tools([spec.name for spec in self.tools])
        self.episodes = EpisodeStore(snapshot, max_episodes=max_episodes, idle_timeout_s=idle_timeout_s)
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
            f"sha256={m.sha256}. {READ_THE_POLICY}"
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
        self.identity = ServerIdentity(name=f"shiftbox-{domain.name}", version=SERVER_VERSION, description=description)
        """The server's identity (`initialize`'s serverInfo; `info`: as the protocol's model)."""
        self.instructions = instructions
        self._server_info = self.identity.wire()
        """What the SDK stamps on every 2026-era result as `_meta["io.modelcontextprotocol/serverInfo"]` (its
        `Server.server_info_stamp`: the identity's wire dump)."""
        self._params_passed: set[tuple[Any, ...]] = set()
        """(version, `_meta` as JSON) of tools/call params that passed the SDK's params check (`_params_pass`)."""
        self._adapters: dict[str, tuple[Any, Any, Any]] = {}
        """Tool name -> (its metadata, output model, the SDK's validator of its results) (`_output_adapter`)."""
        self._envelopes: dict[tuple[str, bool], dict[str, Any] | bool] = {}
        """Per protocol version and `surface` (`wire_result`), the wire envelope of a structured tool result (`_wire_structured`); False: the
        SDK's shaping did not keep the probe's content as given, so every result is shaped by `wire_result`."""
        self._checked: BaseModel | None = None
        """The middleware's strict parse of the arguments of the call `_answer_call` is answering (set just before
        that synchronous call, so never another call's)."""
        self.resources = {r.uri: r for r in (
            ServerResource(STATE_DIGEST_URI, "application/json", self.state_digest),
            ServerResource(STATE_DIFF_URI, "application/json", self.state_diff),
            ServerResource(SNAPSHOT_URI, "application/json", self.snapshot_manifest),
            ServerResource(POLICY_URI, "text/markdown", self.policy_text))}
        """URI -> the resource (`resources/read`), in the order they are listed."""
        self.prompt_names = frozenset({POLICY_PROMPT})
        """The prompts `prompts/get` serves (any other name is refused before the SDK's handler)."""

    @functools.cached_property
    def info(self) -> Implementation:
        """The server's identity as the protocol's model (`identity`)."""
        from mcp_types import Implementation

        return Implementation.model_validate(self._server_info)

    @functools.cached_property
    def mcp(self) -> MCPServer:
        """The SDK's `MCPServer` of this server (its tools, resources, prompt and episode middleware), for the
        transports that speak MCP (stdio, HTTP, the SDK's in-memory client); built on first use."""
        from ._binding import mcp_server

        return mcp_server(self)

    @functools.cached_property
    def sdk_tools(self) -> dict[str, Tool]:
        """Tool name -> the SDK's registration of it (`_mcp_tool`), in declaration order; built on first use."""
        return {spec.name: self._mcp_tool(spec) for spec in self.tools}

    def tool_description(self, spec: ToolSpec) -> str:
        """What `tools/list` says of a tool: its docstring, with the dependency graph's conditions in that mode."""
        return spec.description if self.graph is None else self.graph.describe(spec.name, spec.description)

    def input_schema(self, spec: ToolSpec) -> dict[str, Any] | None:
        """The input schema `tools/list` publishes for a tool (closed: no other keys); None: one only the SDK derives
        (`kit_parsable`)."""
        if spec.input_schema is not None:
            schema = dict(spec.input_schema)
        elif kit_parsable(spec):
            schema = sdk_input_schema(spec)
        else:
            return None
        # The published schema is closed, like the validator behind it.
        schema["additionalProperties"] = False
        return schema

    @functools.cached_property
    def outputs(self) -> dict[str, ToolOutput]:
        """Tool name -> what it publishes of its results (`tool_output`), derived without the SDK."""
        return {spec.name: tool_output(spec.fn.__name__, spec.signature.return_annotation) for spec in self.tools}

    def listed_tools(self) -> list[McpTool]:
        """`tools/list`'s tools, as the SDK lists them (`MCPServer.list_tools`), made by the kit."""
        from mcp_types import Tool as McpTool

        return [McpTool.model_validate(tool) for tool in self.wire_tools()]

    def wire_tools(self) -> list[dict[str, Any]]:
        """`listed_tools` as their models dump them (`Tool`: its aliases, in its order, without the fields left None),
        made without the protocol's models; the caller's own copy (of `_wire_listing`)."""
        return copy.deepcopy(self._wire_listing)

    @functools.cached_property
    def _wire_listing(self) -> list[dict[str, Any]]:
        """The listing `wire_tools` copies, made once: what it reads (the tools, their schemas, descriptions and
        output schemas) is fixed for the server's life. Never handed out: its parts are the tools' own."""
        listed = []
        for spec in self.tools:
            schema = self.input_schema(spec)
            if schema is None:
                schema = self.sdk_tools[spec.name].parameters
            tool = {"name": spec.name, "description": self.tool_description(spec), "inputSchema": schema}
            output_schema = self.outputs[spec.name].output_schema
            if output_schema is not None:
                tool["outputSchema"] = output_schema
            tool["annotations"] = spec.annotations.wire()
            listed.append(tool)
        return listed

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
        from mcp.server.mcpserver.tools import Tool

        from ._sdk import keep_error_results, results_metadata

        async def call(**kwargs: Any) -> Any:
            return result_model(self.run_tool(spec, current_episode_id.get(), kwargs))

        functools.update_wrapper(call, spec.fn)
        del call.__wrapped__  # type: ignore[attr-defined]
        description = self.tool_description(spec)
        parsable = kit_parsable(spec)
        # Made without parameters, the SDK builds no argument model now: the kit's strict model gives the published
        # schema, and the SDK's own model is built on its first use; made without structured output, the SDK
        # builds no output schema of its own: the results' metadata is made once per return type.
        signature = spec.signature
        call.__signature__ = signature.replace(parameters=[]) if parsable else signature  # type: ignore[attr-defined]
        tool = Tool.from_function(call, name=spec.name, description=description, annotations=spec.annotations.model(),
                                  structured_output=False)
        call.__signature__ = signature  # type: ignore[attr-defined]
        schema = self.input_schema(spec)
        if schema is None:
            schema = tool.parameters
            schema["additionalProperties"] = False  # closed, like the validator behind it
        tool.parameters = schema
        return keep_error_results(tool, arguments_of=call if parsable else None,
                                  results=results_metadata(spec.fn.__name__, signature.return_annotation))

    def run_tool(self, spec: ToolSpec, episode_id: str, arguments: dict[str, Any]) -> Any:
        """Run one validated call atomically in its episode; domain failures become kinded errors.

        The episode's clock moves only if the call changed the database (`Episode.atomic`). In
        graph-refusal mode a call whose required steps have not succeeded is refused before it runs. A failure is a
        `FailedCall` (the SDK is handed its model: `result_model`).
        """
        try:
            episode = self.episodes.get(episode_id)
        except DomainError as exc:
            return error_wire(exc.kind, str(exc))
        episode.tool_calls += 1
        if self.refusing and self.graph is not None:
            refused = self.graph.refusal(spec.name, episode.succeeded)
            if refused is not None:
                return refused
        try:
            with episode.atomic():
                result = spec.fn(episode, **arguments)
        except DomainError as exc:
            return error_wire(exc.kind, str(exc), field=exc.field)
        except Exception as exc:
            if is_full(exc):
                return error_wire(ErrorKind.CAPACITY, f"episode {episode_id!r} has reached its size limit, so "
                                    f"{spec.name} could not write; no change was made. Reads still work; for more "
                                    "writes, start a new episode")
            logger.exception("tool %s crashed in episode %s", spec.name, episode_id)
            return error_wire(ErrorKind.INTERNAL, f"{spec.name} failed inside the server; no change was made")
        episode.succeeded.add(spec.name)
        return result

    async def _episode_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        """The SDK's view of each request: episodes chosen, calls checked and answered by the kit (`_episode_step`);
        a refusal is the SDK's JSON-RPC error."""
        with as_sdk_errors():
            return await self._episode_step(ctx, call_next)

    async def _episode_step(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        from ._binding import request_episode_id

        if ctx.request_id is None:  # a notification (no handler runs a tool for one): never a call
            return await call_next(ctx)
        if ctx.method == "prompts/get":
            self._check_prompt_name(ctx.params or {})
        if ctx.method not in ("tools/call", "resources/read"):
            params_episode_id(ctx.params)  # a malformed episode key is refused on every request
            return await call_next(ctx)
        try:
            episode_id = request_episode_id(ctx)
        except EpisodeAccessError as exc:
            if ctx.method == "tools/call":
                return self.wire_result(ctx.protocol_version, error_wire(ErrorKind.INVALID_ARGUMENTS, str(exc)))
            raise RequestRefused(INVALID_PARAMS, str(exc)) from None
        with in_episode(episode_id):
            if ctx.method == "tools/call":
                checked = self.check_arguments(ctx.params or {})
                if is_refusal(checked):  # shaped as the SDK shapes a handler's result (it trusts a
                    return self.wire_result(ctx.protocol_version, checked)  # middleware's)
                self._checked = checked
                try:
                    answered = self._answer_call(ctx, episode_id)
                finally:
                    self._checked = None
                if answered is not None:
                    return answered
            result = await call_next(ctx)
        if ctx.method == "resources/read":
            self.after_read(episode_id, ctx.params)
        return result

    def after_read(self, episode_id: str, params: dict[str, Any] | None) -> None:
        """After a resource read: an episode read with the close flag (`_meta["shiftbox/close"]`, the harness's
        last read, of its final digest) is ended."""
        meta = (params or {}).get("_meta") or {}
        if isinstance(meta, dict) and meta.get(CLOSE_META_KEY) is True:
            self.episodes.drop(episode_id, "ended by its final digest read")

    def _check_prompt_name(self, params: dict[str, Any]) -> None:
        """An unknown prompt is Invalid params (-32602), as MCP prescribes (the SDK answers code 0 or -32603)."""
        name = params.get("name")
        if not isinstance(name, str) or name not in self.prompt_names:
            raise RequestRefused(INVALID_PARAMS, f"unknown prompt {name!r}; this server has: "
                                                 f"{', '.join(sorted(self.prompt_names))}")

    def check_arguments(self, params: dict[str, Any]) -> Any:
        """Strict validation of raw arguments, before the SDK's lenient parsing can coerce them: the error result
        of arguments it refuses, else the kit's model of the arguments (`kit_arguments`)."""
        name = params.get("name")
        spec = self.tools.get(name) if isinstance(name, str) else None
        if spec is None:
            known = ", ".join(s.name for s in self.tools)
            return error_wire(ErrorKind.UNKNOWN_TOOL, f"unknown tool {name!r}; this server has: {known}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return error_wire(ErrorKind.INVALID_ARGUMENTS, f"arguments for {name} must be a JSON object")
        not_unicode = not_unicode_error(name, arguments)  # also in keys, which pydantic would echo raw
        if not_unicode is not None:
            return not_unicode
        try:
            return spec.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            message, fields = describe_validation_error(spec, exc)
            return error_wire(ErrorKind.INVALID_ARGUMENTS, message, fields=fields)

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
        except (EpisodeAccessError, RequestRefused):
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
        metadata = tool.fn_metadata
        return self._run_answered(name, episode_id, arguments, version, metadata,
                                  self._output_adapter(name, metadata), metadata.convert_result)

    def direct_call(self, params: dict[str, Any], version: str, episode_id: str,
                    checked: BaseModel) -> dict[str, Any] | None:
        """`answer_validated_call` without the SDK (the in-process session, `DirectSession`): the same steps, with
        the kit's own derivation of the tool's results (`outputs`) for the SDK's. None where only the SDK's lenient
        parse of the arguments can tell what the call means (`kit_arguments`)."""
        name = params["name"]
        arguments = self.kit_arguments(name, params.get("arguments") or {}, checked)
        if arguments is None:
            return None
        output = self.outputs[name]
        return self._run_answered(name, episode_id, arguments, version, output, output.adapter,
                                  functools.partial(checked_result, output), surface=False)

    def _run_answered(self, name: str, episode_id: str, arguments: dict[str, Any], version: str, metadata: Any,
                      adapter: Any, convert: Callable[[Any], CallToolResult], surface: bool = True) -> dict[str, Any]:
        """Run a parsed call and shape its result for the wire: a plain structured result by `structured_parts`,
        any other by `convert` (the SDK's `convert_result`, or `checked_result`); `surface`: as `wire_result`."""
        structured = None
        try:
            raw = self.run_tool(self.tools.specs[name], episode_id, arguments)
            structured = structured_parts(metadata, adapter, raw)
            # a failure as it is (both conversions hand a failed result on unchanged: `keep_error_results`)
            result = raw if isinstance(raw, FailedCall) else None if structured is not None else convert(raw)
        except Exception:  # a result that breaks the tool's own output model: the SDK's crash answer (its dump)
            logger.exception("Tool %r raised an unexpected exception", name)
            structured, result = None, result_dump(content=[{"type": "text", "text": f"Error executing tool {name}"}],
                                                   isError=True)
        if structured is not None:
            return self._wire_structured(version, *structured, surface=surface)
        return self.wire_result(version, result, surface=surface)

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
            methods().validate_client_request("tools/call", version, params)
        except (KeyError, ValueError, ValidationError):
            return False
        if key is not None:
            remember(self._params_passed, key)
        return True

    def _wire_structured(self, version: str, text: str, structured: Any, surface: bool = True) -> dict[str, Any]:
        """`wire_result` of the SDK's conversion of a structured result (`structured_parts`), without building and
        re-validating its model: the version's envelope, shaped once by `wire_result` from a probe result of the
        same shape, is filled in. Structured content the SDK's final JSON dump would change (a float that is no
        finite number) takes `wire_result`. `surface`: as `wire_result`."""
        envelope = self._envelopes.get((version, surface))
        if envelope is None:
            envelope = self._envelopes[version, surface] = structured_envelope(
                self.wire_result(version, copy.deepcopy(PROBE_RESULT), surface=surface))
        if envelope is False or type(structured) is not dict or not json_stable(structured):
            from mcp_types import CallToolResult, TextContent

            return self.wire_result(version, CallToolResult(content=[TextContent(type="text", text=text)],
                                                            structured_content=structured), surface=surface)
        wire = dict(envelope)  # its keys in the envelope's order; the envelope's values are never changed
        wire["content"] = [{**envelope["content"][0], "text": text}]
        wire["structuredContent"] = structured
        return wire

    def wire_result(self, version: str, result: BaseModel | dict[str, Any], method: str = "tools/call", *,
                    surface: bool = True) -> dict[str, Any]:
        """A result (a tools/call's, or `method`'s; its model, or the model's JSON dump, then the caller's to give)
        as the SDK's runner shapes a handler's for the wire (`ServerRunner._serialize`): its per-version fields, and
        on 2026-07-28 `resultType` and the serverInfo stamp (made once here, not copied per call: the result is
        written out, never changed). `surface=False` (the in-process session, which parses the result into the same
        model again): on the latest version, whose result models hold every field of the kit's results, the model's
        own dump, without loading the per-version models (`methods`); the keys' order may differ from the wire's,
        the parsed result does not."""
        data = result if isinstance(result, dict) else result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            wire = data if not surface and version == LATEST_PROTOCOL_VERSION else (
                methods().serialize_server_result(method, version, data))
        except ValidationError:
            logger.exception("handler for %r returned an invalid result", method)
            raise sdk_error(RequestRefused(INTERNAL_ERROR, "Handler returned an invalid result")) from None
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
            raise RequestRefused(INTERNAL_ERROR, str(exc), {"uri": uri}) from None

    # async: episode state is only ever touched on the event loop (the SDK runs plain functions in
    # worker threads, where a read could race a DELETE or the eviction timer closing the database)
    async def state_digest(self) -> str:
        """The episode's state digest (for the harness, not the agent)."""
        ep = self.episode(STATE_DIGEST_URI)
        tool_calls, now = ep.tool_calls, ep.now_iso()  # as of the state the digest is of
        return json.dumps({"episode": ep.id, "digest": await ep.read_digest(), "tool_calls": tool_calls,
                           "now": now})

    async def state_diff(self) -> str:
        """Rows the episode added, removed or changed relative to the snapshot."""
        return json.dumps(await self.episode(STATE_DIFF_URI).read_diff(), sort_keys=True)

    def snapshot_manifest(self) -> str:
        """The snapshot manifest (version, sha256, clock start, row counts)."""
        return self.snapshot.manifest.model_dump_json()

    def policy_text(self) -> str:
        """The agent policy for this domain."""
        return self.domain.policy

    # -- HTTP ----------------------------------------------------------------------------------

    def http_app(self, host: str = "127.0.0.1") -> ASGIApp:
        """Streamable HTTP at `/mcp` and `/episodes/<id>/mcp`; `DELETE /episodes/<id>` drops one."""
        from ._binding import http_app

        return http_app(self, host)


def methods() -> Any:
    """The protocol's per-version request and result models (`mcp_types.methods`), imported when a result is first
    shaped for the wire: building them is about a quarter of a second that a run's start-up need not wait for."""
    from mcp_types import methods

    return methods


def kit_parsable(spec: ToolSpec) -> bool:
    """Whether the kit's strict model of a tool's arguments names them as the SDK's argument model does (which renames
    a parameter named like a method of pydantic's `BaseModel`), so its parse and schema can stand for the SDK's."""
    return not any(callable(getattr(BaseModel, field, None)) for field in spec.arguments_model.model_fields)


def sdk_input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The input schema the SDK derives from a tool's signature (`Tool.from_function`), from the kit's strict model
    of the same parameters (`kit_parsable`): the same but for the title the SDK gives its model, and the closing
    `additionalProperties` the kit adds last."""
    schema = copy.deepcopy(spec.arguments_schema)
    schema["title"] = f"{spec.fn.__name__}Arguments"
    schema.pop("additionalProperties", None)
    return schema


def decodable_fields(spec: ToolSpec) -> tuple[str, ...]:
    """A tool's arguments the SDK's parse decodes a JSON text in (`FuncMetadata.pre_parse_json`): those not typed
    `str`."""
    return tuple(name for name, field in spec.arguments_model.model_fields.items() if field.annotation is not str)


def structured_parts(metadata: Any, adapter: Any, raw: Any) -> tuple[str, Any] | None:
    """The text and structured content the SDK's `FuncMetadata.convert_result` makes of a tool's plain structured
    result (a dict, a string, or an instance of the tool's output model exactly), with its steps: the text (a string
    as it is, else JSON), the output model's validation (by `adapter`, the SDK's or the kit's `ToolOutput`'s) and
    JSON-mode dump. None: any other result, or no `adapter`, which the SDK (or `checked_result`) converts."""
    output_model = metadata.output_model
    if (output_model is None or metadata.output_schema is None or adapter is None
            or not (type(raw) is dict or type(raw) is str or type(raw) is output_model)):
        return None
    text = raw if type(raw) is str else pydantic_core.to_json(raw, fallback=str, indent=2).decode()
    validated = adapter.validate_python({"result": raw} if metadata.wrap_output else raw, by_alias=True, by_name=True)
    if isinstance(validated, BaseModel):
        return text, validated.model_dump(mode="json", by_alias=True)
    return text, adapter.dump_python(validated, mode="json", by_alias=True)


def checked_result(output: ToolOutput, raw: Any) -> CallToolResult:
    """A tool's `CallToolResult` as the SDK's `convert_result` hands it on: a success's structured content checked
    against the output model (a failure raises: the crash answer). Every other result of a domain tool is a plain
    structured one (`structured_parts`); anything else is refused here (TypeError), never converted another way."""
    result_type = loaded_model("CallToolResult")  # a tool that returned one has loaded the protocol's models
    if result_type is None or not isinstance(raw, result_type):
        raise TypeError(f"a domain tool returned {type(raw).__name__}, which the kit does not convert; return a "
                        "pydantic model of the tool's output, a dict, a string or a CallToolResult")
    if output.adapter is not None and not raw.is_error:
        output.adapter.validate_python(raw.structured_content)
    return raw


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
