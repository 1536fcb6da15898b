"""One simulation on several domain servers at once (`open_world("banking,airline")`).

Each domain's server runs as `--servers` says and each simulation opens one episode on every one of them. The
agent sees one tool list, every name namespaced (`banking__get_account`, `shiftbox_servers.kit.namespaced`); a
call is routed to its domain's episode and recorded with the name the agent used and the domain that ran it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import (
    Domain,
    ErrorKind,
    domain_list,
    error_wire,
    get_domain,
    namespaced,
    split_namespaced,
)

from ..trajectory import ServerInfo, ToolCallRecord
from ._world import EpisodeClient, World, call_outcome


def namespaced_tool(domain: str, tool: dict[str, Any]) -> dict[str, Any]:
    """A server's tool definition as the cross-domain agent sees it: the name namespaced, the rest as published."""
    return {**tool, "name": namespaced(domain, tool["name"])}


@dataclass
class CrossEpisode:
    """One simulation's episodes, one per domain, behind one `ToolSession`."""

    world: CrossWorld
    id: str
    final_states: dict[str, str] | None = None

    def _episodes(self) -> dict[str, EpisodeClient]:
        return {name: world.episode(self.id) for name, world in self.world.worlds.items()}

    async def call(self, name: str, arguments: dict[str, Any], *, call_id: str, message_index: int,
                   agent_turn: int | None) -> ToolCallRecord:
        """Route `domain__tool` to that domain's episode; a name that names no joined domain is answered here
        as an unknown tool (kind `unknown_tool`, recorded with domain "")."""
        parts = split_namespaced(name)
        world = self.world.worlds.get(parts[0]) if parts else None
        if parts is None or world is None:
            known = ", ".join(self.world.worlds)
            outcome = call_outcome(error_wire(ErrorKind.UNKNOWN_TOOL, f"unknown tool {name!r}: tools are named "
                                                                    f"<domain>__<tool>, domains: {known}"), 0.0)
            return ToolCallRecord(call_id=call_id, message_index=message_index, agent_turn=agent_turn, domain="",
                                  name=name, arguments=arguments, result=outcome.result, is_error=True,
                                  error_kind=outcome.error_kind, timing={"latency_ms": 0.0})
        record = await world.episode(self.id).call(parts[1], arguments, call_id=call_id,
                                                   message_index=message_index, agent_turn=agent_turn)
        record.name = name  # what the agent called; `record.domain` says which server ran it
        return record

    async def close(self) -> str:
        """Close every domain's episode; returns their combined digest (`final_states` holds each one)."""
        from shiftbox_servers.kit import combined_state_digest

        self.final_states = {name: await episode.close() for name, episode in self._episodes().items()}
        return combined_state_digest(self.final_states, list(self.final_states))


@dataclass
class CrossWorld:
    """Connected domain servers seen as one world: the cross-domain `Domain` view, the namespaced tools."""

    domain: Domain
    worlds: dict[str, World]

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [namespaced_tool(name, t) for name, world in self.worlds.items() for t in world.tools]

    @property
    def servers(self) -> dict[str, ServerInfo]:
        return {name: world.info for name, world in self.worlds.items()}

    @property
    def read_only_retries(self) -> int:
        return next(iter(self.worlds.values())).read_only_retries

    @read_only_retries.setter
    def read_only_retries(self, value: int) -> None:
        for world in self.worlds.values():
            world.read_only_retries = value

    def episode(self, episode_id: str) -> CrossEpisode:
        return CrossEpisode(self, episode_id)

    def is_read_only(self, name: str) -> bool:
        parts = split_namespaced(name)
        world = self.worlds.get(parts[0]) if parts else None
        return world is not None and world.is_read_only(parts[1])

    async def close_episode(self, episode: Any) -> dict[str, str]:
        """Each domain's final state digest (`Trajectory.final_state`)."""
        if isinstance(episode, CrossEpisode):
            await episode.close()
            return dict(episode.final_states or {})
        return {self.domain.name: await episode.close()}

    async def recover(self) -> None:
        for world in self.worlds.values():
            await world.recover()


def snapshot_dirs(domains: Sequence[str], snapshot_dir: Path | str | None) -> list[Path | None]:
    """One snapshot directory per domain from `--snapshot` (directories separated by commas, in `--domain`'s
    order; none: each domain's default)."""
    if snapshot_dir is None:
        return [None] * len(domains)
    dirs = [Path(p.strip()) for p in str(snapshot_dir).split(",")]
    if len(dirs) != len(domains):
        raise ValueError(f"--snapshot names {len(dirs)} directories for {len(domains)} domains "
                         f"({', '.join(domains)}); give one per domain, separated by commas, or none")
    return list(dirs)


@contextlib.asynccontextmanager
async def open_cross_world(spec: str, open_one: Any, *, snapshot_dir: Path | str | None = None,
                           **options: Any) -> AsyncIterator[CrossWorld]:
    """Every domain of `spec` ("banking,airline") opened with `open_one` (`open_domain_world`), seen as one world."""
    names = domain_list(spec)
    view = get_domain(spec)  # KeyError naming an unknown domain, before any server starts
    async with contextlib.AsyncExitStack() as stack:
        worlds = {}
        for name, directory in zip(names, snapshot_dirs(names, snapshot_dir), strict=True):
            worlds[name] = await stack.enter_async_context(open_one(name, snapshot_dir=directory, **options))
        yield CrossWorld(view, worlds)
