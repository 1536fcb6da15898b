"""Servers for a run and episodes on them, behind one interface whatever the transport.

`open_world(domain, servers=...)` starts (or embeds) the domain server once per run; every
simulation then opens its own episode on it (`_meta["shiftbox/episode"]`), so one server process
serves every simulation. Every tool call goes through `EpisodeClient.call`, the one recorder; the
orchestrator talks to any `ToolSession` (this, or replay's transcript and drift-checking episodes).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import anyio
import anyio.abc

from shiftbox_servers.kit import (
    CLOSE_META_KEY,
    DEFAULT_TOOLSET,
    DEPENDENCY_GRAPH_MARK,
    EPISODE_META_KEY,
    GRAPH_REFUSAL_MARK,
    STATE_DIGEST_URI,
    DirectSession,
    Domain,
    DomainServer,
    Snapshot,
    ToolContract,
    describe_changes,
    failed_result,
    get_domain,
    http_server_process,
    not_unicode_error,
    published_contract,
    result_error,
    tool_contract,
)

from .._stopwatch import timed
from ..errors import InfrastructureError, ToolContractError, unwrapped_errors
from ..trajectory import ServerInfo, ToolCallRecord
from ._output_schemas import SchemaCheckedSession, compile_output_schemas

if TYPE_CHECKING:  # the SDK's client serves the modes that speak MCP (stdio, http, docker) and is loaded by them only;
    # in process, the protocol's models are loaded only where one is asked for (`client_result`)
    from mcp import Client as SdkClient
    from mcp_types import CallToolResult

ServerMode = Literal["inproc", "stdio", "http", "docker"]
SERVER_MODES: tuple[str, ...] = ("inproc", "stdio", "http", "docker")


@dataclass
class CallOutcome:
    result: Any
    is_error: bool
    error_kind: str | None
    latency_ms: float


def call_outcome(result: dict[str, Any], latency_ms: float) -> CallOutcome:
    """The recorded result: the structured content, or the text; a shiftbox error (`_meta`) as
    `{"error": {kind, message, ...}}` with its kind, any other error of kind "unknown". `result` as its wire dict
    (`World.call_tool`)."""
    error = result_error(result)
    if error is not None:
        return CallOutcome({"error": error}, True, error["kind"], latency_ms)
    recorded, is_error = result.get("structuredContent"), bool(result.get("isError"))
    if recorded is None:
        recorded = "\n".join(result_texts(result))
    return CallOutcome(recorded, is_error, "unknown" if is_error else None, latency_ms)


def result_texts(result: dict[str, Any] | None) -> list[str]:
    """The text of each content item of a tool result's wire dict ("" for an item that is not text), none for no
    result."""
    if result is None:
        return []
    return [c.get("text", "") if isinstance(c, dict) else "" for c in result.get("content") or ()]


def tool_message_content(record: ToolCallRecord) -> str:
    """What the agent sees of a tool result: the structured content as JSON, or the text."""
    result = record.result
    return result if isinstance(result, str) else json.dumps(result, sort_keys=True)


def client_result(record: ToolCallRecord) -> CallToolResult:
    """The MCP result of a recorded call: as the server sent it, or rebuilt from the record (replay)."""
    from mcp_types import CallToolResult, TextContent

    sent = record._client_result
    if sent is not None:  # the result's wire dict (`World.call_tool`), parsed as the SDK's client parses it
        return CallToolResult.model_validate(sent)
    error = record.result.get("error") if record.is_error and isinstance(record.result, dict) else None
    if isinstance(error, dict):
        return failed_result(error)
    return CallToolResult(content=[TextContent(type="text", text=tool_message_content(record))],
                          structured_content=record.result if isinstance(record.result, dict) else None,
                          is_error=record.is_error)


async def apply_initial_state(episode: ToolSession, calls: Sequence[Any], records: list[ToolCallRecord]) -> None:
    """Make a task's initial-state calls (`function_name`, `params`) in `episode`, appending each record
    (setup_<i>) to `records`; a rejected call is an InfrastructureError: the conversation would start
    from the wrong state."""
    for i, spec in enumerate(calls):
        record = await episode.call(spec.function_name, dict(spec.params), call_id=f"setup_{i}",
                                    message_index=-1, agent_turn=None)
        records.append(record)
        if record.is_error:
            raise InfrastructureError(f"initial state call {spec.function_name} failed: {record.result}")


def episode_id_for(*parts: str) -> str:
    """A valid episode id from arbitrary parts (task ids may hold any character); over-long ones keep
    a hash of the whole, so different parts never collapse into one id."""
    joined = re.sub(r"[^A-Za-z0-9_.:-]", "-", ".".join(parts))
    if len(joined) > 128:
        joined = joined[:111] + "." + hashlib.sha256(joined.encode()).hexdigest()[:16]
    return joined


@runtime_checkable
class ToolSession(Protocol):
    """The tools of one simulation, as the orchestrator uses them: every call recorded, then closed.

    Implemented by `EpisodeClient` (a live server) and by replay's `TranscriptEpisode` and
    `DriftCheckingEpisode`."""

    id: str
    """The episode id (unique per simulation attempt; `episode_id_for`)."""

    async def call(self, name: str, arguments: dict[str, Any], *, call_id: str, message_index: int,
                   agent_turn: int | None) -> ToolCallRecord:
        """Call tool `name` and return the record the trajectory keeps: a tool's error is a record; an
        unreachable server raises InfrastructureError, a replay drift ReplayDivergence."""
        ...

    async def close(self) -> str:
        """End the episode; returns its final state digest."""
        ...


@dataclass
class EpisodeClient:
    """One simulation's private database on one domain server (the server's `Episode`), seen from the harness."""

    world: World
    id: str

    @property
    def _meta(self) -> dict[str, Any]:
        return {EPISODE_META_KEY: self.id}

    async def call(self, name: str, arguments: dict[str, Any], *, call_id: str, message_index: int,
                   agent_turn: int | None) -> ToolCallRecord:
        """Call a tool in this episode and return the record the trajectory keeps.

        A call holding a lone surrogate ("\\ud83d", which UTF-8 cannot carry) is the agent's mistake: it is
        answered here with the server's `invalid_arguments` result and never sent (sending it would
        break the connection every simulation shares).
        """
        start = time.perf_counter()
        result = not_unicode_error(name, arguments)
        attempts = 1
        while result is None:
            try:
                with timed("mcp_s"):
                    result = await self.world.call_tool(name, arguments, self._meta)
            except Exception as exc:  # transport failure: the call may or may not have happened
                read_only = self.world.is_read_only(name)
                if read_only and attempts <= self.world.read_only_retries:
                    attempts += 1  # a read-only call changed nothing: it is safe to send again
                    with contextlib.suppress(Exception):
                        await self.world.recover()
                    continue
                why = ("" if read_only else " (not retried: the tool is not read-only, it may have acted)")
                raise InfrastructureError(
                    f"{name} on {self.world.domain.name}: {type(exc).__name__}: {exc}{why}") from exc
        outcome = call_outcome(result, (time.perf_counter() - start) * 1000)
        record = ToolCallRecord(
            call_id=call_id, message_index=message_index, agent_turn=agent_turn, domain=self.world.domain.name,
            name=name, arguments=arguments, result=outcome.result, is_error=outcome.is_error,
            error_kind=outcome.error_kind, timing={"latency_ms": round(outcome.latency_ms, 3)},
        )
        if attempts > 1:
            record.timing["attempts"] = attempts
        record._client_result = result
        return record

    async def close(self) -> str:
        """End the episode on the server (its state digest, read with the close flag); returns that digest."""
        try:
            with timed("mcp_s"):
                text = await self.world.read_text(STATE_DIGEST_URI, {**self._meta, CLOSE_META_KEY: True})
        except Exception as exc:
            raise InfrastructureError(f"reading {STATE_DIGEST_URI}: {type(exc).__name__}: {exc}") from exc
        return json.loads(text)["digest"]


@dataclass
class World:
    """A connected domain server: its identity, its tools, and a client to open episodes with."""

    domain: Domain
    client: Client
    info: ServerInfo
    tools: list[dict[str, Any]] = field(default_factory=list)
    reconnect: Callable[[], Awaitable[None]] | None = field(default=None, repr=False)
    read_only_retries: int = 0
    """How often a read-only call (annotation `readOnlyHint`) is sent again after a transport failure
    (`shiftbox run --retry-infra N` sets N). Any other call is never resent: it may have acted."""

    def episode(self, episode_id: str) -> EpisodeClient:
        return EpisodeClient(self, episode_id)

    async def call_tool(self, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
        """One tools/call on the server, its result as its wire dict (in process, as the kit shapes it, never parsed
        into the protocol's model: `SchemaCheckedSession.wire_call`; else the SDK client's result dumped)."""
        return await self.client.wire_call(name, arguments, meta=meta)

    async def read_text(self, uri: str, meta: dict[str, Any]) -> str:
        """The text of resource `uri` (its first contents) read on the server."""
        return await self.client.read_text(uri, meta=meta)

    @property
    def servers(self) -> dict[str, ServerInfo]:
        """Domain -> the server's identity (`Trajectory.servers`)."""
        return {self.domain.name: self.info}

    async def close_episode(self, episode: ToolSession) -> dict[str, str]:
        """End `episode`; domain -> its final state digest (`Trajectory.final_state`)."""
        return {self.domain.name: await episode.close()}

    def is_read_only(self, name: str) -> bool:
        """The server declares tool `name` read-only (`readOnlyHint`, and not `destructiveHint`)."""
        for tool in self.tools:
            if tool.get("name") == name:
                hints = tool.get("annotations") or {}
                return hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True
        return False

    async def recover(self) -> None:
        """After an infrastructure error: if the server no longer answers, start it again and reconnect."""
        if self.reconnect is not None:
            await self.reconnect()


@dataclass(frozen=True)
class ServerOptions:
    """How the run's servers are configured beyond the domain and snapshot (each a `shiftbox-server` option)."""

    toolset: str = DEFAULT_TOOLSET
    dependency_graph: bool = False
    graph_refusal: bool = False

    def args(self) -> list[str]:
        """The `shiftbox-server` arguments for these options (none for the defaults)."""
        return ([] if self.toolset == DEFAULT_TOOLSET else ["--toolset", self.toolset]) + \
            (["--dependency-graph"] if self.dependency_graph else []) + \
            (["--graph-refusal"] if self.graph_refusal else [])

    def marks(self) -> list[str]:
        """The words a server in these modes ends its description with (its identity in `initialize`)."""
        return ([DEPENDENCY_GRAPH_MARK] if self.dependency_graph else []) + \
            ([GRAPH_REFUSAL_MARK] if self.graph_refusal else [])


def _inproc_server(domain: Domain, snapshot: Snapshot, options: ServerOptions) -> DomainServer:
    """The run's server in this process (`--servers inproc`)."""
    return DomainServer(domain, snapshot, max_episodes=100_000, toolset=options.toolset,
                        dependency_graph=options.dependency_graph, graph_refusal=options.graph_refusal)


def _server_target(domain: Domain, snapshot: Snapshot, mode: ServerMode, options: ServerOptions) -> Any:
    if mode == "stdio":  # the transport, not its parameters: `Client(StdioServerParameters)` needs mcp >= 2.2
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        return stdio_client(StdioServerParameters(
            command=sys.executable,
            args=["-m", "shiftbox_servers", domain.name, "--snapshot", str(snapshot.directory),
                  "--max-episodes", "100000", *options.args()],
        ), errlog=server_errlog())
    raise ValueError(mode)


def server_errlog() -> Any:
    """Where a server process's stderr goes: this process's `sys.stderr` when it is a file (the child needs its
    descriptor), else the process's own stderr (`sys.__stderr__`: under a test runner's or a notebook's stream).
    Named here because the SDK's default binds `sys.stderr` as it is when the SDK is imported, which is now late."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return sys.__stderr__


@contextlib.asynccontextmanager
async def _connect(domain: Domain, snapshot: Snapshot, mode: ServerMode,
                   options: ServerOptions) -> AsyncIterator[tuple[Client, str | None]]:
    """Start the server (when it is a process or container of its own) and a client connected to it;
    with the container's image id, after checking the container against the run's pins. In process, the kit's
    server is called directly (`DirectSession`: no MCP transport, no MCP SDK), its results checked as a client does."""
    async with contextlib.AsyncExitStack() as stack:
        if mode == "inproc":
            session = await stack.enter_async_context(DirectSession(_inproc_server(domain, snapshot, options)))
            yield SchemaCheckedSession(session), None
            return
        from mcp import Client as SdkClient

        container = None
        if mode == "http":
            base = await stack.enter_async_context(
                http_server_process(domain.name, snapshot.directory, "--max-episodes", "100000", *options.args()))
            target: Any = f"{base}/mcp"
        elif mode == "docker":  # a container per connection, pinned and checked (_docker.py)
            from ._docker import docker_server

            container = await stack.enter_async_context(
                docker_server(domain.name, snapshot.manifest, *options.args()))
            target = container.transport
        else:
            target = _server_target(domain, snapshot, mode, options)
        client = await stack.enter_async_context(SdkClient(target))
        compile_output_schemas(client)
        if container is not None:
            container.check(client.server_info, snapshot.manifest)
        yield SdkClientSession(client), container.image.id if container is not None else None


def _dump(result: Any) -> dict[str, Any]:
    """A protocol model as its wire dict (the JSON dump the in-process session gives the world)."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


class SdkClientSession:
    """The SDK's client, entered, as the world holds a session: the in-process session's calls (`wire_tools`,
    `wire_call`, `read_text`), its answers the SDK's models dumped, so the world reads one shape whatever the
    transport. `session` is the client's `ClientSession` (its results' check: `compile_output_schemas`)."""

    def __init__(self, client: SdkClient):
        self.client = client
        self.session = client.session

    @property
    def server_info(self) -> Any:
        return self.client.server_info

    async def wire_tools(self) -> list[dict[str, Any]]:
        return [_dump(tool) for tool in (await self.client.list_tools()).tools]

    async def wire_call(self, name: str, arguments: dict[str, Any] | None = None, *,
                        meta: dict[str, Any] | None = None) -> dict[str, Any]:
        return _dump(await self.client.call_tool(name, arguments, meta=meta))

    async def read_text(self, uri: str, *, meta: dict[str, Any] | None = None) -> str:
        return (await self.client.read_resource(uri, meta=meta)).contents[0].text


Client = SdkClientSession | SchemaCheckedSession
"""What the world holds: the SDK's client, or in process the kit's session, as one shape (`_connect` picks it):
`server_info`, `wire_tools`, `wire_call` (results as their wire dicts), `read_text`."""


class _Connection:
    """A client held in a task of its own, so a server dying mid-run fails the calls in flight (an
    infrastructure error for those simulations) instead of cancelling the whole run."""

    def __init__(self, connect: Callable[[], contextlib.AbstractAsyncContextManager[tuple[Client, str | None]]]):
        self._connect = connect
        self._stop = anyio.Event()
        self.client: Client | None = None
        self.image_id: str | None = None
        self.error: BaseException | None = None

    async def start(self, tg: anyio.abc.TaskGroup) -> Client:
        ready = anyio.Event()
        tg.start_soon(self._hold, ready)
        await ready.wait()
        if self.client is None:
            if isinstance(self.error, InfrastructureError):  # already says what went wrong and how to fix it
                raise self.error
            raise InfrastructureError(f"could not connect to the server: {self.error!r}") from self.error
        return self.client

    async def _hold(self, ready: anyio.Event) -> None:
        try:
            async with self._connect() as (client, image_id):
                self.client, self.image_id = client, image_id
                ready.set()
                await self._stop.wait()
        except Exception as exc:  # the server went away (or never came): recorded, never raised into the run
            self.error = exc
        finally:
            ready.set()

    def stop(self) -> None:
        self._stop.set()


async def _identify(client: Client, domain: Domain, snapshot: Snapshot, image_id: str | None,
                    options: ServerOptions) -> tuple[ServerInfo, list[dict[str, Any]]]:
    """The server's identity and tools; refuses a server that serves another snapshot, or whose dependency-graph
    modes are not the ones asked for."""
    info = client.server_info
    m = snapshot.manifest
    toolset = options.toolset
    if info is None or m.sha256 not in (info.description or ""):
        raise InfrastructureError(
            f"the {domain.name} server does not report snapshot sha256 {m.sha256[:12]}…; "
            f"it answered {info!r}")
    words = (info.description or "").split()
    shown = [w for w in words if w in (DEPENDENCY_GRAPH_MARK, GRAPH_REFUSAL_MARK)]
    if shown != options.marks():
        raise InfrastructureError(
            f"the {domain.name} server runs graph modes {shown or 'none'}, but the run asked for "
            f"{options.marks() or 'none'}; it answered {info.description!r} (a server image older than "
            "--dependency-graph / --graph-refusal? rebuild the images)")
    tools = await client.wire_tools()
    contract = tool_contract(tools)
    expected = await _expected_contract(domain, snapshot, options)
    if expected is not None and expected.digest != contract.digest:
        raise ToolContractError(
            f"the {domain.name} server's tool contract (tool set {toolset!r}) is not the one snapshot "
            f"{m.snapshot_id} expects: {describe_changes(expected, contract)}. Results would not be comparable "
            "with runs on the expected tools. If the tools changed on purpose, rebuild the snapshots "
            "(`shiftbox snapshots build`) and the images (`containers/build-images.sh`); otherwise run "
            "the server version the snapshot was built for.")
    return ServerInfo(name=info.name, version=info.version, snapshot=m.snapshot_id, snapshot_sha256=m.sha256,
                      image_id=image_id, toolset=toolset, dependency_graph=options.dependency_graph,
                      graph_refusal=options.graph_refusal,
                      tool_contract=contract.digest,
                      tool_schemas={t["name"]: t.get("inputSchema") or {} for t in tools}
                      if domain.snapshot_tools is not None else None), tools


async def _expected_contract(domain: Domain, snapshot: Snapshot, options: ServerOptions) -> ToolContract | None:
    """The contract the server must publish: the snapshot's stamp (plain descriptions); in dependency-graph mode,
    this kit's rendering of the graph over the same tools, once the kit's plain tools match the stamp."""
    stamped = snapshot.manifest.tool_contracts.get(options.toolset)
    if stamped is None or not options.dependency_graph:
        return stamped
    if (await published_contract(DomainServer(domain, snapshot, toolset=options.toolset))).digest != stamped.digest:
        return stamped  # the kit itself drifted from the snapshot: the check names the tools
    return await published_contract(DomainServer(domain, snapshot, toolset=options.toolset, dependency_graph=True))


async def _answers(client: Client) -> bool:
    """Whether the server still answers: its tools listed within 10 s (in process, always)."""
    try:
        with anyio.fail_after(10):
            await client.wire_tools()
        return True
    except Exception:
        return False


@contextlib.asynccontextmanager
async def open_domain_world(domain_name: str, *, servers: ServerMode = "inproc", snapshot_dir: Path | str | None = None,
                            toolset: str = DEFAULT_TOOLSET, dependency_graph: bool = False,
                            graph_refusal: bool = False) -> AsyncIterator[World]:
    """One domain's server for the length of a run, connected (what `open_world` opens per domain)."""
    if servers not in SERVER_MODES:
        raise ValueError(f"unknown --servers {servers!r}; choose one of {', '.join(SERVER_MODES)}")
    domain = get_domain(domain_name)
    domain.toolset(toolset)  # KeyError naming the tool sets there are
    options = ServerOptions(toolset, dependency_graph, graph_refusal)
    # fail early, with the snapshot's own message
    snapshot = Snapshot.load(Path(snapshot_dir) if snapshot_dir else domain.default_snapshot_dir())
    connections: list[_Connection] = []
    lock = anyio.Lock()
    with unwrapped_errors():
        async with anyio.create_task_group() as tg:

            async def connect() -> Client:
                connection = _Connection(lambda: _connect(domain, snapshot, servers, options))
                connections.append(connection)
                return await connection.start(tg)

            async def reconnect() -> None:
                async with lock:
                    if await _answers(world.client):
                        return
                    connections[-1].stop()
                    world.client = await connect()

            try:
                client = await connect()
                info, tools = await _identify(client, domain, snapshot, connections[-1].image_id, options)
                world = World(domain, client, info, tools, reconnect=reconnect)
                yield world
            finally:
                for connection in connections:
                    connection.stop()
