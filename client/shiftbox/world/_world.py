"""Servers for a run and episodes on them, behind one interface whatever the transport.

`open_world(domain, servers=...)` starts (or embeds) the domain server once per run; every
simulation then opens its own episode on it (`_meta["shiftbox/episode"]`), so one server process
serves every simulation. Every tool call goes through `Episode.call`, the one recorder.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from shiftbox_servers.kit import (
    CLOSE_META_KEY,
    EPISODE_META_KEY,
    STATE_DIFF_URI,
    STATE_DIGEST_URI,
    Domain,
    DomainServer,
    Snapshot,
    get_domain,
    http_server_process,
)

from ..trajectory import ServerInfo, ToolCallRecord

ServerMode = Literal["inproc", "stdio", "http", "docker"]
SERVER_MODES: tuple[str, ...] = ("inproc", "stdio", "http", "docker")


class InfrastructureError(Exception):
    """The server could not be reached or answered outside the protocol: not the agent's fault."""


@dataclass
class CallOutcome:
    result: Any
    is_error: bool
    error_kind: str | None
    latency_ms: float


def _outcome(result: CallToolResult, latency_ms: float) -> CallOutcome:
    structured = result.structured_content
    if structured is None:
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        structured = text
    kind = None
    if result.is_error:
        kind = structured.get("error", {}).get("kind") if isinstance(structured, dict) else "unknown"
    return CallOutcome(structured, bool(result.is_error), kind, latency_ms)


def episode_id_for(*parts: str) -> str:
    """A valid episode id from arbitrary parts (task ids may hold any character)."""
    return re.sub(r"[^A-Za-z0-9_.:-]", "-", ".".join(parts))[:128]


@dataclass
class Episode:
    """One simulation's private database on one domain server."""

    world: World
    id: str
    calls: int = 0

    @property
    def _meta(self) -> dict[str, Any]:
        return {EPISODE_META_KEY: self.id}

    async def call(self, name: str, arguments: dict[str, Any], *, call_id: str, message_index: int,
                   agent_turn: int | None) -> ToolCallRecord:
        """Call a tool in this episode and return the record the trajectory keeps."""
        start = time.perf_counter()
        try:
            result = await self.world.client.call_tool(name, arguments, meta=self._meta)
        except Exception as exc:  # transport failure: the call may or may not have happened
            raise InfrastructureError(f"{name} on {self.world.domain.name}: {type(exc).__name__}: {exc}") from exc
        outcome = _outcome(result, (time.perf_counter() - start) * 1000)
        self.calls += 1
        return ToolCallRecord(
            call_id=call_id, message_index=message_index, agent_turn=agent_turn, domain=self.world.domain.name,
            name=name, arguments=arguments, result=outcome.result, is_error=outcome.is_error,
            error_kind=outcome.error_kind, timing={"latency_ms": round(outcome.latency_ms, 3)},
        )

    async def _read(self, uri: str, close: bool = False) -> Any:
        meta = dict(self._meta)
        if close:
            meta[CLOSE_META_KEY] = True
        try:
            res = await self.world.client.read_resource(uri, meta=meta)
        except Exception as exc:
            raise InfrastructureError(f"reading {uri}: {type(exc).__name__}: {exc}") from exc
        return json.loads(res.contents[0].text)

    async def digest(self) -> str:
        return (await self._read(STATE_DIGEST_URI))["digest"]

    async def diff(self) -> dict[str, Any]:
        return await self._read(STATE_DIFF_URI)

    async def close(self) -> str:
        """End the episode on the server; returns its final state digest."""
        return (await self._read(STATE_DIGEST_URI, close=True))["digest"]


@dataclass
class World:
    """A connected domain server: its identity, its tools, and a client to open episodes with."""

    domain: Domain
    mode: ServerMode
    client: Client
    info: ServerInfo
    tools: list[dict[str, Any]] = field(default_factory=list)

    def episode(self, episode_id: str) -> Episode:
        return Episode(self, episode_id)


def _server_target(domain: Domain, snapshot: Snapshot, mode: ServerMode) -> Any:
    if mode == "inproc":
        return DomainServer(domain, snapshot, max_episodes=100_000).mcp
    if mode == "stdio":
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "shiftbox_servers", domain.name, "--snapshot", str(snapshot.directory),
                  "--max-episodes", "100000"],
        )
    raise ValueError(mode)


@contextlib.asynccontextmanager
async def open_world(domain_name: str, *, servers: ServerMode = "inproc",
                     snapshot_dir: Path | None = None) -> AsyncIterator[World]:
    """Start or embed the domain server for the length of a run and connect to it."""
    if servers not in SERVER_MODES:
        raise ValueError(f"unknown --servers {servers!r}; choose one of {', '.join(SERVER_MODES)}")
    domain = get_domain(domain_name)
    snapshot_dir = snapshot_dir or domain.default_snapshot_dir()
    snapshot = Snapshot.load(snapshot_dir)  # fail early, with the snapshot's own message
    async with contextlib.AsyncExitStack() as stack:
        if servers == "http":
            base = await stack.enter_async_context(
                http_server_process(domain.name, snapshot_dir, "--max-episodes", "100000"))
            target: Any = f"{base}/mcp"
        elif servers == "docker":  # a container per run, pinned and checked (_docker.py)
            from ._docker import docker_server

            container = await stack.enter_async_context(docker_server(domain.name, snapshot.manifest))
            target = container.transport
        else:
            target = _server_target(domain, snapshot, servers)
        client = await stack.enter_async_context(Client(target))
        info = client.server_info
        m = snapshot.manifest
        if servers == "docker":
            container.check(info, m)
        if info is None or m.sha256 not in (info.description or ""):
            raise InfrastructureError(
                f"the {domain.name} server does not report snapshot sha256 {m.sha256[:12]}…; "
                f"it answered {info!r}")
        listed = await client.list_tools()
        tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
        yield World(domain, servers, client,
                    ServerInfo(name=info.name, version=info.version, snapshot=m.snapshot_id,
                               snapshot_sha256=m.sha256,
                               image_id=container.image.id if servers == "docker" else None), tools)
