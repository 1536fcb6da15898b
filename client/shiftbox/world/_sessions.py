"""Sessions of a standalone gateway (`shiftbox serve`): any MCP client, each episode a scored trajectory.

Every episode a client opens on the gateway gets a fresh database (the task's initial state applied
first, when a task is given). Each call is appended and fsynced to `calls.jsonl` as it happens, so a
crash loses nothing; when the session ends (`DELETE /episodes/<id>`, end of stdio, or shutdown) its
trajectory is appended to `trajectories.jsonl`, which `shiftbox metrics` scores like any run.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp_types import CallToolResult

from shiftbox_servers.kit import ErrorKind, error_result

from ..tasks import Task
from ..trajectory import Message, Termination, ToolCall, ToolCallRecord, Trajectory
from ._gateway import CallRoute
from ._world import (
    Episode,
    InfrastructureError,
    World,
    apply_initial_state,
    client_result,
    tool_message_content,
)

CALLS_FILE = "calls.jsonl"
ENDED_NAMES_KEPT = 10_000
"""Names of ended sessions remembered, so a call under one is refused instead of opening a new session."""
GATEWAY_AGENT, GATEWAY_USER = "mcp-client", "none"


@dataclass
class GatewaySession:
    """One client episode: the calls it made, as the messages and records of a trajectory."""

    number: int
    episode: Episode
    messages: list[Message] = field(default_factory=list)
    calls: list[ToolCallRecord] = field(default_factory=list)
    setup_calls: list[ToolCallRecord] = field(default_factory=list)
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class GatewaySessions:
    """Routes each gateway episode to its session, recording every call; writes trajectories as sessions end."""

    def __init__(self, world: World, task: Task, out: Path, writer: Any):
        self.world, self.task, self.out, self.writer = world, task, out, writer
        self._sessions: dict[str, GatewaySession] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._opened = 0
        self._calls_log = (out / CALLS_FILE).open("ab")

    def route(self, episode_id: str) -> CallRoute:
        async def call(name: str, arguments: dict[str, Any]) -> CallToolResult:
            if episode_id in self._ended:  # never reopened empty under the same name
                return error_result(ErrorKind.NOT_FOUND, f"session {episode_id!r} has ended (its trajectory is "
                                    "written); connect under a new name for a new session")
            session = await self._session(episode_id)
            async with session.lock:  # one call at a time per episode: the recorded order is the real one
                return await self._call(session, name, arguments)

        return call

    async def _session(self, episode_id: str) -> GatewaySession:
        session = self._sessions.get(episode_id)
        if session is None:
            session = GatewaySession(self._opened, self.world.episode(f"gw{self._opened}-{episode_id}"))
            self._opened += 1
            self._sessions[episode_id] = session
            async with session.lock:
                try:
                    await apply_initial_state(session.episode, self.task.initial_state.tool_calls,
                                              session.setup_calls)
                except InfrastructureError:  # never serve a session from the wrong state; the next call starts anew
                    self._sessions.pop(episode_id, None)
                    raise
        return session

    async def _call(self, session: GatewaySession, name: str, arguments: dict[str, Any]) -> CallToolResult:
        turn = len(session.calls)
        call = ToolCall(id=f"call_{turn}", name=name, arguments=arguments)
        message = Message(index=len(session.messages), role="assistant", tool_calls=[call], agent_turn=turn)
        record = await session.episode.call(name, arguments, call_id=call.id, message_index=message.index,
                                            agent_turn=turn)
        session.messages.append(message)
        session.calls.append(record)
        session.messages.append(Message(index=len(session.messages), role="tool", content=tool_message_content(record),
                                        tool_call_id=call.id, is_error=record.is_error))
        line = json.dumps({"session": session.number, "record": record.model_dump(mode="json")}, sort_keys=True)
        self._calls_log.write(line.encode() + b"\n")
        self._calls_log.flush()
        return client_result(record)

    async def end(self, episode_id: str) -> bool:
        """Close one session: its final state is read, its trajectory appended. False if it was not open."""
        session = self._sessions.pop(episode_id, None)
        if session is None:
            return False
        self._ended[episode_id] = None
        while len(self._ended) > ENDED_NAMES_KEPT:
            self._ended.popitem(last=False)
        async with session.lock:
            termination = Termination(reason="session_closed", detail=f"gateway episode {episode_id}")
            final_state: dict[str, str] = {}
            try:
                final_state[self.world.domain.name] = await session.episode.close()
            except InfrastructureError as exc:
                termination = Termination(reason="infrastructure_error", detail=str(exc), blame="infrastructure")
            await self.writer.append(Trajectory(
                simulation_id=f"{self.task.id}#{session.number}", task_id=self.task.id, trial=session.number,
                domain=self.world.domain.name, seed=0, agent=GATEWAY_AGENT, user=GATEWAY_USER,
                persona=self.task.user_scenario.persona, goals=self.task.goals,
                servers={self.world.domain.name: self.world.info}, messages=session.messages,
                tool_calls=session.calls, setup_calls=session.setup_calls, shifts=[], termination=termination,
                final_state=final_state, source_data={"gateway_episode": episode_id},
            ))
        return True

    async def end_all(self) -> int:
        ids = sorted(self._sessions, key=lambda e: self._sessions[e].number)
        for episode_id in ids:
            await self.end(episode_id)
        self._calls_log.close()
        return len(ids)
